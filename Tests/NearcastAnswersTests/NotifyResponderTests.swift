import DNSWire
import NearcastTSIG
import NearcastTestSupport
import NearcastTransfer
import Testing

@testable import NearcastAnswers
@testable import NearcastZones

/// What the responder answers a NOTIFY (RFC 1996 §3.7, §3.10), and what the listeners read of its
/// answer (`acceptedNotify`). The NOTIFY of real primaries (Knot) is in SecondaryZoneTests.
@Suite(.timeLimit(.minutes(1))) struct NotifyResponderTests {
    static let origin = try! DNSName("example.test.")
    static let primary: [UInt8] = [192, 0, 2, 1]
    static let key = TSIGKey(
        name: try! DNSName("xfr.example."), algorithm: .hmacSHA256, secret: Array(repeating: 7, count: 32))

    /// A responder for which example.test. is a secondary of 192.0.2.1 (and other.test. of
    /// 192.0.2.2 with the key), neither served yet.
    static var responder: Responder {
        var r = Responder(
            authority: Authority(zones: [], unavailable: [origin, try! DNSName("other.test.")]),
            keys: try! TSIGKeyring([key]))
        r.transfers = ZoneTransfers(primaries: [
            origin: [TransferPeer(address: primary)],
            try! DNSName("other.test."): [TransferPeer(address: [192, 0, 2, 2], key: key.name)],
        ])
        return r
    }

    static func notify(_ zone: String, signed: Bool = false) throws -> [UInt8] {
        var h = DNSHeader()
        h.id = 0x1996
        h.opcode = .notify
        h.aa = true
        let bytes = try DNSMessage(header: h, questions: [DNSQuestion(name: try DNSName(zone), type: .soa)]).serialize()
        return signed ? key.sign(query: bytes, now: Responder.systemClock()) : bytes
    }

    static func rcode(_ query: [UInt8], from client: [UInt8]) throws -> (RCode, DNSMessage) {
        let reply = try #require(responder.respond(to: query, transport: .udp, client: client))
        let m = try DNSMessage(wire: reply)
        return (m.rcode, m)
    }

    /// From the zone's primary: NOERROR, AA, opcode NOTIFY, the question; the listener reads the
    /// zone to refresh from it. From another address: REFUSED; for a zone that is not a
    /// secondary here: NOTAUTH; neither is handed on.
    @Test func aNotifyIsAcceptedFromTheZonesPrimaryOnly() throws {
        let query = try Self.notify("example.test.")
        let (rcode, m) = try Self.rcode(query, from: Self.primary)
        #expect(rcode == .noError && m.header.aa && m.header.opcode == .notify && m.header.id == 0x1996)
        #expect(m.questions == [DNSQuestion(name: Self.origin, type: .soa)])
        let reply = try #require(Self.responder.respond(to: query, transport: .udp, client: Self.primary))
        #expect(Responder.acceptedNotify(query, reply: reply) == Self.origin)

        let other = try #require(Self.responder.respond(to: query, transport: .udp, client: [192, 0, 2, 9]))
        #expect(try DNSMessage(wire: other).rcode == .refused)
        #expect(Responder.acceptedNotify(query, reply: other) == nil)
        #expect(try Self.rcode(try Self.notify("elsewhere.test."), from: Self.primary).0 == .notAuth)
    }

    /// A primary with a key: its NOTIFY must be signed with it.
    @Test func aPrimaryWithAKeyMustSignItsNotify() throws {
        let primary: [UInt8] = [192, 0, 2, 2]
        #expect(try Self.rcode(try Self.notify("other.test."), from: primary).0 == .refused)
        #expect(try Self.rcode(try Self.notify("other.test.", signed: true), from: primary).0 == .noError)
    }

    /// A query for a name of a secondary zone not served: SERVFAIL, EDE 14 (not ready).
    @Test func aSecondaryZoneNotServedIsServfail() throws {
        let (rcode, m) = try Self.rcode(
            RawClient.query("www.example.test.", .a, edns: EDNS()), from: [198, 51, 100, 1])
        #expect(rcode == .servFail)
        #expect(m.edns?.options.contains(.extendedError(.notReady)) == true)
    }
}
