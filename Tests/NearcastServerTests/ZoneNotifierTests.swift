import DNSWire
import Foundation
import Logging
import NearcastServer
import NearcastTSIG
import NearcastTestSupport
import NearcastTransfer
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// NOTIFY out (RFC 1996) to a secondary played by a UDP socket of the test: the message is the
/// zone's SOA, signed with the target's key; copies come until one is answered, and none after.
///
/// (Its time limit counts from when it is started, and the notifier's timers run on Swift's
/// cooperative threads, which the synchronous daemon tests of its run hold while they wait on their
/// daemons: it can wait behind them for more than a minute while itself taking seconds.)
@Suite(.timeLimit(.minutes(3))) struct ZoneNotifierTests {
    static let origin = try! DNSName("example.test.")
    static let key = TSIGKey(
        name: try! DNSName("xfr.example.test."), algorithm: .hmacSHA256, secret: Array("0123456789abcdef".utf8))

    /// A UDP socket on 127.0.0.1 at a port of the kernel's choosing, and that port.
    static func secondary() throws -> (fd: Int32, port: UInt16) {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        let (_, address) = RawClient.sockaddr("127.0.0.1", 0)
        _ = address.withUnsafeBytes {
            bind(fd, $0.baseAddress!.assumingMemoryBound(to: sockaddr.self), socklen_t($0.count))
        }
        var bound = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &bound) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return (fd, UInt16(bigEndian: bound.sin_port))
    }

    /// The next datagram within `seconds`, and where it came from.
    static func receive(_ fd: Int32, within seconds: Double) -> ([UInt8], sockaddr_storage, socklen_t)? {
        RawClient.setTimeout(fd, seconds)
        var buffer = [UInt8](repeating: 0, count: 4096)
        var from = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let n = withUnsafeMutablePointer(to: &from) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(fd, &buffer, buffer.count, 0, $0, &length) }
        }
        return n > 0 ? (Array(buffer[0..<n]), from, length) : nil
    }

    @Test func aNotifyIsSentAgainUntilAnsweredThenNoMore() throws {
        let (fd, port) = try Self.secondary()
        defer { close(fd) }
        let notifier = ZoneNotifier(logger: Logger(label: "test"))
        defer { notifier.stop() }
        let soa = ResourceRecord(
            name: Self.origin, type: .soa, ttl: 300,
            rdata: .soa(
                .init(
                    mname: try DNSName("ns1.example.test."), rname: try DNSName("hostmaster.example.test."),
                    serial: 2_026_112_805, refresh: 3600, retry: 600, expire: 1_209_600, minimum: 60)))
        notifier.notify(
            ZoneNotifier.Request(
                origin: Self.origin, soa: soa,
                targets: [TransferPeer(address: [127, 0, 0, 1], port: port, key: Self.key.name)],
                keys: try TSIGKeyring([Self.key])))

        let (first, _, _) = try #require(Self.receive(fd, within: 5))
        let message = try DNSMessage(wire: first)
        #expect(message.header.opcode == .notify && message.header.aa && !message.header.qr)
        #expect(message.questions == [DNSQuestion(name: Self.origin, type: .soa)])
        #expect(message.answers == [soa])
        // Signed with the key, as a server checks it.
        #expect(message.additional.last?.type == .tsig && message.additional.last?.name == Self.key.name)
        guard
            case .verified = try TSIGKeyring([Self.key]).verify(
                first, tsig: message.additional.last!, now: UInt64(Date().timeIntervalSince1970))
        else {
            Issue.record("the NOTIFY's signature does not verify")
            return
        }

        // Not answered: the same NOTIFY again, about 2 s later.
        let sent = ContinuousClock.now
        let (again, from, length) = try #require(Self.receive(fd, within: 5))
        #expect(again.prefix(2) == first.prefix(2))
        #expect(ContinuousClock.now - sent > .seconds(1))
        // Answered: no more copies (the next would have come 4 s after the second).
        var reply = Array(again.prefix(12))
        reply[2] |= 0x80
        reply[4...11] = [0, 0, 0, 0, 0, 0, 0, 0]
        var to = from
        _ = withUnsafePointer(to: &to) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(fd, reply, reply.count, 0, $0, length) }
        }
        #expect(Self.receive(fd, within: 6) == nil)
    }
}
