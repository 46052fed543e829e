import BPFKit
import DNSWire
import Foundation
import MaxMindDB
import NearcastAnswers
import NearcastConfiguration
import NearcastDataPath
import NearcastGeo
import NearcastTestSupport
import NearcastZones

/// The real XDP program with the maps of a zone and geo names, beside the slow path's Responder for
/// the same data: what the fuzzer runs frames through and compares with.
public struct FuzzTarget: Sendable {
    public let fastPath: FastPath
    public let responder: Responder
    /// The names worth asking: every name of the zone and of the geo section.
    public let names: [String]

    /// The differential tests' zone (Tests/Fixtures/example.test.zone), the four test nodes, geo
    /// names of both types and a discovery name, on the test City database.
    public static func fixture(objectPath: String = Repository.program) throws -> FuzzTarget {
        let origin = try DNSName("example.test.")
        let zone = try Zone.load(
            path: TestSupport.fixtures.appendingPathComponent("example.test.zone").path, origin: origin)
        let config = try NearcastConfig.parse(
            yaml: """
                listen: ["127.0.0.1:53"]
                geo:
                  database: \(Repository.testCityDatabase)
                \(Fixtures.fourNodes(indent: 2))
                  names:
                    - { name: geo.example.test, type: A, pool: web, answers: 2, ttl: 20 }
                    - { name: geo.example.test, type: AAAA, pool: web, answers: 3, ttl: 40 }
                    - { name: _join._udp.example.test, type: SRV, pool: web, answers: 2, port: 7946, targets: nodes.example.test }
                    - { name: _join._udp.example.test, type: A, pool: web, answers: 2 }
                """, fileName: "fuzz.yaml", baseDirectory: "")
        try config.geo.check(against: [zone])
        let table = try GeoTable.build(config.geo, database: try MaxMindDatabase(path: Repository.testCityDatabase))
        let cookies = ServerCookies(.init(current: Array(0..<16), previous: Array(16..<32)))
        let responder = Responder(authority: Authority(zones: [zone]), geo: table, cookies: cookies)
        let fastPath = try FastPath(objectPath: objectPath)
        try fastPath.configure(dnsPort: 53, udpPayload: responder.maxUDPPayload)
        try fastPath.answer(queriesTo: Packet.servers)
        try fastPath.configureCookies(cookies.secrets)
        // The first generation as the daemon writes it, from the image's stream.
        try fastPath.writeStreamed(responder, geo: table)
        let names =
            zone.names.map(\.description) + table.allNames.map(\.config.name.description)
            + table.targetNames.map(\.description)
            + [
                "nope.example.test.", "x.wild.example.test.", "a.sub.example.test.", "www.other.test.", ".",
                "hostmaster.example.test.", "nodes.example.test.",
            ]
        return FuzzTarget(fastPath: fastPath, responder: responder, names: Array(Set(names)).sorted())
    }
}

extension FuzzTarget {
    /// The zone of the master file at `path` (no geo names; cookies as the fixture's), its names table sized for it as the
    /// daemon sizes one: the differential at a zone's real size (`make fuzz-xdp ZONE=...`). The
    /// names asked are the zone's, and names below them that do not exist.
    public static func zone(path: String, origin: DNSName, objectPath: String = Repository.program) throws
        -> FuzzTarget
    {
        let zone = try Zone.load(path: path, origin: origin)
        let cookies = ServerCookies(.init(current: Array(0..<16), previous: Array(16..<32)))
        let responder = Responder(authority: Authority(zones: [zone]), cookies: cookies)
        let records = FastPath.records(
            AnswerImage.Stream(responder: responder, maxSections: FastPath.sectionsCapacity), geo: nil,
            parts: ProcessInfo.processInfo.activeProcessorCount)
        let size = FastPath.tableSize(for: records.needs)
        let fastPath = try FastPath(objectPath: objectPath, capacity: size.capacity, arenaBytes: size.arenaBytes)
        try fastPath.configure(dnsPort: 53, udpPayload: responder.maxUDPPayload)
        try fastPath.answer(queriesTo: Packet.servers)
        try fastPath.configureCookies(cookies.secrets)
        // The first generation as the daemon writes it, from the image's stream.
        guard try fastPath.writeFirst(records) != nil else { throw FuzzSetupError("the zone's records do not fit") }
        // In an order of their own, so that a seed asks the same names in every run (the trie's
        // order is its hash's, seeded anew in each process).
        let names = zone.owners.sorted(by: DNSName.wireOrder).map(\.description)
        return FuzzTarget(
            fastPath: fastPath, responder: responder,
            names: names + names.prefix(names.count / 10).map { "nx-" + $0 } + [origin.description])
    }
}

/// A fuzz target that could not be set up.
struct FuzzSetupError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

extension FastPath {
    /// Writes the first generation of `responder`'s zones and `geo` as the daemon does, from
    /// the image's stream (`records`, `writeFirst`), on every core.
    public func writeStreamed(_ responder: Responder, geo: GeoTable?) throws {
        let records = FastPath.records(
            AnswerImage.Stream(responder: responder, maxSections: FastPath.sectionsCapacity), geo: geo,
            parts: ProcessInfo.processInfo.activeProcessorCount)
        guard try writeFirst(records, geo: geo) != nil else { throw FuzzSetupError("the zone's records do not fit") }
    }
}

/// What a fuzz run saw.
public struct FuzzReport: Sendable {
    public var frames = 0
    /// Frames the kernel would not run (shorter than an Ethernet header).
    public var refused = 0
    public var passed = 0
    public var answered = 0
    /// Answers with signatures (an RRSIG in the answer section).
    public var answeredSigned = 0
    public var dropped = 0
    public var failures = 0
    /// The first failures, each with the frame in hex (enough to replay it).
    public var examples: [String] = []
    public var seconds = 0.0

    public var framesPerSecond: Double { seconds > 0 ? Double(frames) / seconds : 0 }
}

/// Feeds generated and mutated Ethernet frames through the XDP program (BPF_PROG_TEST_RUN) and
/// checks each verdict: XDP_PASS leaves the frame as it was; XDP_TX is a well-formed reply
/// (Ethernet, IP and UDP swapped, lengths and checksums right, a DNS message a strict parser
/// takes, the question echoed) whose DNS message is the slow path's reply to the same query from
/// the same client, byte for byte; XDP_DROP is for what the slow path would not answer either;
/// nothing else. Seeded: a run is replayed by its seed.
public struct XDPFuzzer {
    public let target: FuzzTarget
    var rng: SplitMix
    static let types: [RRType] = [
        .a, .aaaa, .https, .mx, .txt, .ns, .soa, .srv, .caa, .ptr, .cname, .dname, .any, .ds, .opt, RRType(65280),
    ]

    public init(target: FuzzTarget, seed: UInt64) {
        self.target = target
        rng = SplitMix(seed: seed)
    }

    /// Runs `frames` frames; `progress` is told the count every 100,000.
    public mutating func run(frames: Int, progress: ((FuzzReport) -> Void)? = nil) throws -> FuzzReport {
        var report = FuzzReport()
        let start = ContinuousClock.now
        for i in 0..<frames {
            let frame = generate(id: UInt16(truncatingIfNeeded: i))
            report.frames += 1
            guard frame.count >= 14 else {
                report.refused += 1
                continue
            }
            let out = try target.fastPath.program.testRun(frame)
            var problem: String?
            switch out.returnValue {
            case 1:
                report.dropped += 1
                problem = checkDrop(frame)
            case 2:
                report.passed += 1
                if out.data != frame { problem = "a passed frame was changed" }
            case 3:
                report.answered += 1
                problem = checkReply(to: frame, out.data)
                if let r = FrameView(out.data), let m = try? DNSMessage(wire: r.payload),
                    m.answers.contains(where: { $0.type == .rrsig })
                {
                    report.answeredSigned += 1
                }
            default: problem = "verdict \(out.returnValue)"
            }
            if let problem {
                report.failures += 1
                if report.examples.count < 20 {
                    report.examples.append("\(problem): \(frame.map { String(format: "%02x", $0) }.joined())")
                }
            }
            if (i + 1) % 100_000 == 0 {
                report.seconds = (ContinuousClock.now - start).seconds
                progress?(report)
            }
        }
        report.seconds = (ContinuousClock.now - start).seconds
        return report
    }

    /// One frame (hex) run again: its verdict, what the check says, and both replies' DNS messages.
    public func replay(_ hex: String) throws -> String {
        var frame: [UInt8] = []
        var i = hex.startIndex
        while i < hex.endIndex, let j = hex.index(i, offsetBy: 2, limitedBy: hex.endIndex) {
            frame.append(UInt8(hex[i..<j], radix: 16) ?? 0)
            i = j
        }
        let out = try target.fastPath.program.testRun(frame)
        var lines = ["verdict \(out.returnValue)"]
        if let q = FrameView(frame) {
            let slow = slowPath(q, at: FrameView(out.data).flatMap { Self.cookieTime($0.payload) })
            lines.append("query:  \((try? DNSMessage(wire: q.payload)).map { "\($0)" } ?? "unreadable")")
            lines.append("slow:   \(slow.map { $0.map { String(format: "%02x", $0) }.joined() } ?? "no reply")")
            if out.returnValue == 3, let r = FrameView(out.data) {
                lines.append("xdp:    \(r.payload.map { String(format: "%02x", $0) }.joined())")
                lines.append("check:  \(checkReply(to: frame, out.data) ?? "ok")")
            }
        }
        return lines.joined(separator: "\n")
    }

    // MARK: Frames

    /// One frame: most are queries the program may answer (some with their DNS message mutated),
    /// some have their headers mutated, some are not DNS at all.
    mutating func generate(id: UInt16) -> [UInt8] {
        let kind = Int.random(in: 0..<100, using: &rng)
        var p = Packet(
            vlanTags: Int.random(in: 0..<6, using: &rng) == 0 ? [7] : [], ipv6: Bool.random(using: &rng),
            payload: query(id: id))
        if !p.ipv6 {
            p.source4 = Self.clients4.randomElement(using: &rng)!
        } else {
            p.source6 = Self.clients6.randomElement(using: &rng)!
        }
        if Int.random(in: 0..<8, using: &rng) == 0 {
            p.trailer = [UInt8](repeating: 0, count: Int.random(in: 1...20, using: &rng))
        }
        switch kind {
        case 0..<55:
            return p.bytes
        case 55..<75:
            p.payload = rng.mutate(p.payload, edits: Int.random(in: 1...4, using: &rng))
            return p.bytes
        case 75..<92:
            return mutateHeaders(p.bytes, vlanTags: p.vlanTags.count, ipv6: p.ipv6)
        case 92..<96:
            p.dstPort = [52, 54, 5353, 0].randomElement(using: &rng)!
            return p.bytes
        default:
            return (0..<Int.random(in: 0...300, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
        }
    }

    /// Client addresses: in each network of the test database, some it has no record for, and
    /// IPv6 ones its aliases map to the IPv4 space.
    static let clients4: [[UInt8]] = [
        [198, 18, 0, 2], [192, 0, 2, 5], [198, 51, 100, 7], [203, 0, 113, 9], [198, 18, 1, 9], [8, 8, 8, 8],
        [10, 1, 2, 3],
    ]
    static let clients6: [[UInt8]] = {
        let zeros = [UInt8](repeating: 0, count: 9)
        var out: [[UInt8]] = [Packet.client6]
        for n in 1...4 {
            let head: [UInt8] = [0x20, 0x01, 0x0d, 0xb8, 0, UInt8(n)]
            out.append(head + zeros + [9])
        }
        let sixToFour: [UInt8] = [0x20, 0x02, 198, 51, 100, 7]
        out.append(sixToFour + zeros + [1])
        return out
    }()

    /// A query for a name worth asking (in a random case), of a random type, with or without EDNS
    /// (a payload size, DO, a Client Subnet, other options).
    mutating func query(id: UInt16) -> [UInt8] {
        var name = target.names.randomElement(using: &rng)!
        if Int.random(in: 0..<4, using: &rng) == 0 {  // names that do not exist below one that does
            for _ in 0..<Int.random(in: 1...3, using: &rng) {
                name = "x\(Int.random(in: 0..<1000, using: &rng))." + name
            }
        }
        name = String(name.map { Bool.random(using: &rng) ? Character($0.uppercased()) : $0 })
        var edns: EDNS?
        switch Int.random(in: 0..<7, using: &rng) {
        case 0: edns = nil
        case 1:
            edns = EDNS(udpPayloadSize: UInt16.random(in: 0...4096, using: &rng), dnssecOK: Bool.random(using: &rng))
        case 2:
            edns = EDNS(options: [
                EDNSOption(
                    code: UInt16.random(in: 3...15, using: &rng),
                    data: (0..<Int.random(in: 0...16, using: &rng)).map { UInt8($0) })
            ])
        case 3, 4:
            let family: UInt16 = Bool.random(using: &rng) ? 1 : 2
            let source = UInt8.random(in: 0...(family == 1 ? 32 : 128), using: &rng)
            var address = (0..<((Int(source) + 7) / 8)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            if source % 8 != 0, Bool.random(using: &rng) { address[address.count - 1] &= 0xFF << (8 - source % 8) }
            edns = EDNS(options: [
                ClientSubnet(family: family, sourcePrefixLength: source, scopePrefixLength: 0, address: address).option
            ])
        case 5:
            // A cookie: the client's alone, or with a server cookie made for the default client
            // address of either family (valid from there, not from a mutated source), or forged.
            let client = (0..<8).map { _ in UInt8.random(in: 0...255, using: &rng) }
            var data = client
            switch Int.random(in: 0..<4, using: &rng) {
            case 0: break
            case 1, 2:
                let address = Bool.random(using: &rng) ? Packet.client4 : Packet.client6
                let age = UInt32.random(in: 0...4000, using: &rng)
                data += target.responder.cookies!.serverCookie(
                    client: client, address: address, now: UInt32(Date().timeIntervalSince1970) - age)
            default:
                data += (0..<Int.random(in: 8...32, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            }
            edns = EDNS(
                udpPayloadSize: 1232, dnssecOK: Bool.random(using: &rng),
                options: [EDNSOption(code: EDNSOption.cookieCode, data: data)])
        default: edns = EDNS(udpPayloadSize: 1232)
        }
        var h = DNSHeader()
        h.id = id
        h.rd = Bool.random(using: &rng)
        h.cd = Int.random(in: 0..<8, using: &rng) == 0
        guard let dname = try? DNSName(name),
            let bytes = try? DNSMessage(
                header: h,
                questions: [
                    DNSQuestion(
                        name: dname,
                        type: Int.random(in: 0..<8, using: &rng) == 0
                            ? RRType(UInt16.random(in: 0...UInt16.max, using: &rng))
                            : Self.types.randomElement(using: &rng)!)
                ],
                edns: edns
            ).serialize()
        else { return [] }
        return bytes
    }

    /// `frame` with its IP or UDP header changed: a field set to a random value (lengths,
    /// version, header length, protocol, fragment bits, ports, the EtherType), or random edits
    /// anywhere past the MAC addresses; the IPv4 checksum is made right again half the time.
    mutating func mutateHeaders(_ frame: [UInt8], vlanTags: Int, ipv6: Bool) -> [UInt8] {
        var f = frame
        let l3 = 14 + 4 * vlanTags
        let l4 = l3 + (ipv6 ? 40 : 20)
        if Bool.random(using: &rng) {
            let fields: [Int] =
                ipv6
                ? [l3 - 2, l3, l3 + 4, l3 + 5, l3 + 6, l4 + 2, l4 + 3, l4 + 4, l4 + 5]
                : [l3 - 2, l3, l3 + 2, l3 + 3, l3 + 6, l3 + 7, l3 + 9, l4 + 2, l4 + 3, l4 + 4, l4 + 5]
            let at = fields.randomElement(using: &rng)!
            if at < f.count { f[at] = UInt8.random(in: 0...255, using: &rng) }
        } else {
            let head = Array(f.prefix(12))
            f = head + rng.mutate(Array(f.dropFirst(12)), edits: Int.random(in: 1...3, using: &rng))
        }
        if !ipv6, f.count >= l3 + 20, Bool.random(using: &rng) {
            f[l3 + 10] = 0
            f[l3 + 11] = 0
            let c = ~Packet.sum(Array(f[l3..<(l3 + 20)]))
            f[l3 + 10] = UInt8(c >> 8)
            f[l3 + 11] = UInt8(c & 0xFF)
        }
        return f
    }

    // MARK: Checks

    /// Why dropping `frame` is wrong (the slow path would have answered it), or nil.
    func checkDrop(_ frame: [UInt8]) -> String? {
        guard let q = FrameView(frame), q.whyKernelDrops == nil, q.dstPort == 53 else { return nil }
        return target.responder.respond(to: q.payload, transport: .udp, client: q.srcIP) == nil
            ? nil : "dropped a query the slow path answers"
    }

    /// The slow path's reply to `q`, at second `at` (nil: now): a new server cookie carries the
    /// second it was made at, and XDP's reply is compared with the slow path's at that second.
    func slowPath(_ q: FrameView, at: UInt32?) -> [UInt8]? {
        var r = target.responder
        if let at { r.clock = { UInt64(at) } }
        return r.respond(to: q.payload, transport: .udp, client: q.srcIP)
    }

    /// The time in a reply's server cookie, if it carries one.
    static func cookieTime(_ reply: [UInt8]) -> UInt32? {
        guard let c = (try? DNSMessage(wire: reply))?.edns?.options.first(where: { $0.code == EDNSOption.cookieCode }),
            c.data.count == 24
        else { return nil }
        return c.data[12...15].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
    }

    /// Why `reply` is not the reply the slow path would send to `frame`, or nil when it is.
    func checkReply(to frame: [UInt8], _ reply: [UInt8]) -> String? {
        guard let q = FrameView(frame) else { return "answered a frame that is not UDP over IP" }
        if let why = q.whyKernelDrops { return "answered a frame the kernel drops (\(why))" }
        guard let r = FrameView(reply) else { return "the reply is not UDP over IP" }
        guard r.dstMAC == q.srcMAC, r.srcMAC == q.dstMAC, r.vlanTags == q.vlanTags, r.etherType == q.etherType else {
            return "the reply's Ethernet header is not the query's swapped"
        }
        guard r.srcIP == q.dstIP, r.dstIP == q.srcIP, r.srcPort == q.dstPort, r.dstPort == q.srcPort else {
            return "the reply's addresses or ports are not the query's swapped"
        }
        if let why = r.whyMalformed { return "the reply is malformed: \(why)" }
        guard r.trailing == 0 else { return "the reply has bytes past its IP packet" }
        guard let message = try? DNSMessage(wire: r.payload), message.header.qr else {
            return "the reply is not a DNS response a strict parser takes"
        }
        guard let question = q.questionBytes, r.payload.count >= 12 + question.count,
            Array(r.payload[12..<(12 + question.count)]) == question, r.payload.prefix(2) == q.payload.prefix(2)
        else { return "the reply does not echo the query's ID and question" }
        guard r.payload == slowPath(q, at: Self.cookieTime(r.payload)) else {
            return "XDP's reply differs from the slow path's"
        }
        return nil
    }
}

/// An Ethernet frame taken apart as the kernel would: VLAN tags, IPv4 or IPv6, UDP, the payload by
/// the UDP length. Nil when it is not UDP over IP.
struct FrameView {
    var dstMAC: [UInt8]
    var srcMAC: [UInt8]
    var vlanTags: [[UInt8]] = []
    var etherType: UInt16
    var ipv6: Bool
    var ip: [UInt8]
    var srcIP: [UInt8]
    var dstIP: [UInt8]
    var udp: [UInt8]
    var srcPort: UInt16
    var dstPort: UInt16
    var payload: [UInt8]
    /// Bytes after the IP packet (Ethernet padding).
    var trailing: Int
    var ipLengthOK: Bool
    var udpLengthOK: Bool

    init?(_ f: [UInt8]) {
        guard f.count >= 14 else { return nil }
        dstMAC = Array(f[0..<6])
        srcMAC = Array(f[6..<12])
        var at = 12
        var type = UInt16(f[12]) << 8 | UInt16(f[13])
        while type == 0x8100 || type == 0x88A8 {
            guard f.count >= at + 6 else { return nil }
            vlanTags.append(Array(f[(at + 2)..<(at + 4)]))
            at += 4
            type = UInt16(f[at]) << 8 | UInt16(f[at + 1])
        }
        etherType = type
        at += 2
        let l3 = at
        let ipEnd: Int
        switch type {
        case 0x0800:
            guard f.count >= at + 20, f[at] >> 4 == 4, f[at] & 0x0F == 5, f[at + 9] == 17,
                (UInt16(f[at + 6]) << 8 | UInt16(f[at + 7])) & 0x3FFF == 0
            else { return nil }
            ipv6 = false
            ip = Array(f[at..<(at + 20)])
            srcIP = Array(f[(at + 12)..<(at + 16)])
            dstIP = Array(f[(at + 16)..<(at + 20)])
            let total = Int(f[at + 2]) << 8 | Int(f[at + 3])
            ipLengthOK = total >= 28 && l3 + total <= f.count
            ipEnd = min(f.count, l3 + total)
            at += 20
        case 0x86DD:
            guard f.count >= at + 40, f[at] >> 4 == 6, f[at + 6] == 17 else { return nil }
            ipv6 = true
            ip = Array(f[at..<(at + 40)])
            srcIP = Array(f[(at + 8)..<(at + 24)])
            dstIP = Array(f[(at + 24)..<(at + 40)])
            let length = Int(f[at + 4]) << 8 | Int(f[at + 5])
            ipLengthOK = length >= 8 && l3 + 40 + length <= f.count
            ipEnd = min(f.count, l3 + 40 + length)
            at += 40
        default: return nil
        }
        guard ipEnd >= at + 8 else { return nil }
        udp = Array(f[at..<ipEnd])
        srcPort = UInt16(udp[0]) << 8 | UInt16(udp[1])
        dstPort = UInt16(udp[2]) << 8 | UInt16(udp[3])
        let udpLength = Int(udp[4]) << 8 | Int(udp[5])
        udpLengthOK = udpLength >= 8 && udpLength <= udp.count
        payload = Array(udp[8..<max(8, min(udp.count, udpLength))])
        trailing = f.count - ipEnd
    }

    /// Why the kernel would drop the frame before a socket sees it, if it would: the IP header's
    /// checksum, or lengths that do not fit the frame.
    var whyKernelDrops: String? {
        if !ipv6 && Packet.sum(ip) != 0xFFFF { return "IPv4 header checksum" }
        if !ipLengthOK { return "IP length" }
        if !udpLengthOK { return "UDP length" }
        return nil
    }

    /// Why the reply is not well formed, if it is not: its IP header (checksum, length), its UDP
    /// length and checksum (which must be set).
    var whyMalformed: String? {
        if !ipv6 && Packet.sum(ip) != 0xFFFF { return "IPv4 header checksum" }
        if !ipLengthOK || !udpLengthOK || Int(udp[4]) << 8 | Int(udp[5]) != udp.count { return "lengths" }
        let pseudo = srcIP + dstIP + [0, 17, udp[4], udp[5]]
        if udp[6] == 0 && udp[7] == 0 { return "no UDP checksum" }
        if Packet.sum(pseudo + udp) != 0xFFFF { return "UDP checksum" }
        return nil
    }

    /// The question's bytes (name, type, class), when the payload has one question to read.
    var questionBytes: [UInt8]? {
        guard payload.count > 12 else { return nil }
        var i = 12
        while i < payload.count, payload[i] != 0 {
            guard payload[i] < 64 else { return nil }
            i += Int(payload[i]) + 1
        }
        guard i + 5 <= payload.count else { return nil }
        return Array(payload[12..<(i + 5)])
    }
}
