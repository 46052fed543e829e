import DNSWire
import NearcastAnswers
import NearcastDataPath

/// Builds and takes apart Ethernet frames carrying DNS over UDP, for the XDP tests and the fuzzer.
public struct Packet {
    public var vlanTags: [UInt16] = []
    public var ipv6 = false
    public var srcPort: UInt16 = 40000
    public var dstPort: UInt16 = 53
    public var payload: [UInt8]
    /// The client's address (the frame's source), IPv4 or IPv6 by `ipv6`.
    public var source4: [UInt8] = Packet.client4
    public var source6: [UInt8] = Packet.client6
    /// The server's address (the frame's destination).
    public var destination4: [UInt8] = Packet.server4
    public var destination6: [UInt8] = Packet.server6
    /// Bytes appended after the IP packet (Ethernet padding).
    public var trailer: [UInt8] = []

    public init(
        vlanTags: [UInt16] = [], ipv6: Bool = false, srcPort: UInt16 = 40000, dstPort: UInt16 = 53, payload: [UInt8],
        trailer: [UInt8] = []
    ) {
        self.vlanTags = vlanTags
        self.ipv6 = ipv6
        self.srcPort = srcPort
        self.dstPort = dstPort
        self.payload = payload
        self.trailer = trailer
    }

    public static let clientMAC: [UInt8] = [0x02, 0, 0, 0, 0, 0x02]
    public static let serverMAC: [UInt8] = [0x02, 0, 0, 0, 0, 0x01]
    public static let client4: [UInt8] = [198, 18, 0, 2]
    public static let server4: [UInt8] = [198, 18, 0, 1]
    public static let client6: [UInt8] = [0x20, 0x01, 0, 2] + [UInt8](repeating: 0, count: 11) + [2]
    public static let server6: [UInt8] = [0x20, 0x01, 0, 2] + [UInt8](repeating: 0, count: 11) + [1]
    /// The addresses the frames are sent to, for `FastPath.answer(queriesTo:)`.
    public static let servers: Set<LocalAddress> = [LocalAddress(octets: server4)!, LocalAddress(octets: server6)!]

    public var bytes: [UInt8] {
        var f = Self.serverMAC + Self.clientMAC
        for tag in vlanTags { f += [0x81, 0x00, UInt8(tag >> 8), UInt8(tag & 0xFF)] }
        f += ipv6 ? [0x86, 0xDD] : [0x08, 0x00]
        let udpLen = 8 + payload.count
        var udp: [UInt8] = [UInt8(srcPort >> 8), UInt8(srcPort & 0xFF), UInt8(dstPort >> 8), UInt8(dstPort & 0xFF)]
        udp += [UInt8(udpLen >> 8), UInt8(udpLen & 0xFF), 0, 0] + payload
        if ipv6 {
            f += [0x60, 0, 0, 0, UInt8(udpLen >> 8), UInt8(udpLen & 0xFF), 17, 64] + source6 + destination6
        } else {
            let total = 20 + udpLen
            var ip: [UInt8] = [0x45, 0, UInt8(total >> 8), UInt8(total & 0xFF), 0x12, 0x34, 0, 0, 64, 17, 0, 0]
            ip += source4 + destination4
            let c = ~Self.sum(ip)
            ip[10] = UInt8(c >> 8)
            ip[11] = UInt8(c & 0xFF)
            f += ip
        }
        // A partial checksum, as veth leaves it: the fast path must not trust it.
        f += udp
        return f + trailer
    }

    public static func sum(_ b: [UInt8]) -> UInt16 { AnswerImage.onesComplementSum(b) }

    /// The parts of a reply frame, with its checksums verified.
    public struct Reply {
        public var ethernetSwapped: Bool
        public var ipChecksumOK: Bool
        public var udpChecksumOK: Bool
        public var srcPort: UInt16
        public var dstPort: UInt16
        public var ttl: UInt8
        public var payload: [UInt8]
    }

    /// Takes a reply frame apart (same VLAN tags and IP version as this packet).
    public func parseReply(_ f: [UInt8]) -> Reply? {
        var at = 12 + 4 * vlanTags.count + 2
        guard f.count >= at else { return nil }
        let swapped = Array(f[0..<6]) == Self.clientMAC && Array(f[6..<12]) == Self.serverMAC
        var ipOK = true
        var pseudo: [UInt8]
        let ttl: UInt8
        if ipv6 {
            guard f.count >= at + 40 else { return nil }
            let src = Array(f[(at + 8)..<(at + 24)])
            let dst = Array(f[(at + 24)..<(at + 40)])
            ipOK = src == destination6 && dst == source6
            ttl = f[at + 7]
            pseudo = src + dst
            at += 40
        } else {
            guard f.count >= at + 20 else { return nil }
            let ip = Array(f[at..<(at + 20)])
            ipOK =
                Self.sum(ip) == 0xFFFF && Array(ip[12..<16]) == destination4 && Array(ip[16..<20]) == source4
                && Int(ip[2]) << 8 | Int(ip[3]) == f.count - at
            ttl = ip[8]
            pseudo = Array(ip[12..<20])
            at += 20
        }
        guard f.count >= at + 8 else { return nil }
        let udp = Array(f[at...])
        let len = Int(udp[4]) << 8 | Int(udp[5])
        guard len == udp.count else { return nil }
        pseudo += [0, 17, UInt8(len >> 8), UInt8(len & 0xFF)]
        let udpOK = Self.sum(pseudo + udp) == 0xFFFF && !(udp[6] == 0 && udp[7] == 0)
        return Reply(
            ethernetSwapped: swapped, ipChecksumOK: ipOK, udpChecksumOK: udpOK,
            srcPort: UInt16(udp[0]) << 8 | UInt16(udp[1]), dstPort: UInt16(udp[2]) << 8 | UInt16(udp[3]), ttl: ttl,
            payload: Array(udp[8...]))
    }
}
