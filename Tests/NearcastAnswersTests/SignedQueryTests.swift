import DNSWire
import NearcastTSIG
import NearcastTestSupport
import Testing

@testable import NearcastAnswers
@testable import NearcastZones

/// How the responder answers signed queries (RFC 8945 §5.2, §5.3), at a fixed clock. Real clients'
/// verification of these replies is in the daemon's TSIGTests.
@Suite(.timeLimit(.minutes(1))) struct SignedQueryTests {
    static let now: UInt64 = 1_795_000_000
    static let key = TSIGKey(
        name: try! DNSName("xfr.example.test."), algorithm: .hmacSHA256, secret: Array("0123456789abcdef".utf8))
    static let responder: Responder = {
        let origin = try! DNSName("example.test.")
        let records = try! ZoneFileParser.parse(text: Fixtures.queryTableZone, fileName: "table.zone", origin: origin)
        let zone = try! Zone.build(origin: origin, records: records, sourceName: "table.zone")
        return Responder(authority: Authority(zones: [zone]), keys: try! TSIGKeyring([key]), clock: { now })
    }()

    static func query(_ name: String, _ type: RRType, edns: EDNS? = nil, id: UInt16 = 0x1234) throws -> [UInt8] {
        var h = DNSHeader()
        h.id = id
        return try DNSMessage(
            header: h, questions: [DNSQuestion(name: try DNSName(name), type: type, qclass: .in)], edns: edns
        ).serialize()
    }

    /// The reply's TSIG record, and the reply without it.
    static func split(_ reply: [UInt8]) throws -> (TSIGRecord, DNSMessage) {
        var m = try DNSMessage(wire: reply)
        let tsig = try #require(m.additional.popLast().flatMap(TSIGRecord.init))
        return (tsig, m)
    }

    /// A query signed with a known key gets the reply the unsigned query gets, with our TSIG
    /// record last: no error, our time, the query's ID, and a MAC of the full length.
    @Test func aSignedQueryGetsTheUnsignedReplySigned() throws {
        for edns in [nil, EDNS()] {
            let unsigned = try Self.query("www.example.test.", .a, edns: edns)
            let reply = try #require(
                Self.responder.respond(to: Self.key.sign(query: unsigned, now: Self.now - 20), transport: .udp))
            let (tsig, message) = try Self.split(reply)
            #expect(message == (try DNSMessage(wire: #require(Self.responder.respond(to: unsigned, transport: .udp)))))
            #expect(tsig.error == .verified && tsig.timeSigned == Self.now && tsig.fudge == 300)
            #expect(tsig.originalID == 0x1234 && tsig.mac.count == 32 && tsig.keyName == Self.key.name)
        }
    }

    /// A MAC cut to half the hash is accepted (§5.2.2.1); one shorter than that, or longer than
    /// the hash, makes the message FORMERR, with no TSIG record in the reply.
    @Test func truncatedMACsDownToHalfTheHashAreAccepted() throws {
        let signed = Self.key.sign(query: try Self.query("www.example.test.", .a), now: Self.now)
        for (cut, accepted) in [(16, true), (15, false), (0, false)] {
            var tsig = try #require((try DNSMessage(wire: signed)).additional.last.flatMap(TSIGRecord.init))
            tsig.mac = Array(tsig.mac.prefix(cut))
            let at = try #require(try DNSMessage.lastRecordOffset(in: signed))
            let wire = Array(signed[0..<at]) + tsig.wire
            let reply = try DNSMessage(wire: #require(Self.responder.respond(to: wire, transport: .udp)))
            if accepted {
                #expect(reply.rcode == .noError && reply.answers.count == 2 && reply.additional.last?.type == .tsig)
            } else {
                #expect(reply.rcode == .formErr && reply.additional.isEmpty, "\(cut)-byte MAC")
            }
        }
    }

    /// The time check comes after the MAC (§5.2.3): outside the fudge is NOTAUTH with BADTIME,
    /// signed, echoing the query's time and giving ours in Other Data; a bad MAC with a bad time
    /// is BADSIG, unsigned.
    @Test func aQueryOutsideItsFudgeIsBadTime() throws {
        let q = try Self.query("www.example.test.", .a)
        let late = try Self.split(
            try #require(Self.responder.respond(to: Self.key.sign(query: q, now: Self.now - 301), transport: .udp)))
        #expect(late.1.rcode == .notAuth && late.1.answers.isEmpty)
        #expect(late.0.error == .badTime && late.0.timeSigned == Self.now - 301 && late.0.mac.count == 32)
        #expect(late.0.otherData == [0x00, 0x00] + withUnsafeBytes(of: UInt32(Self.now).bigEndian, Array.init))
        let edge = try Self.split(
            try #require(Self.responder.respond(to: Self.key.sign(query: q, now: Self.now + 300), transport: .udp)))
        #expect(edge.0.error == .verified, "a time exactly at the fudge is accepted")

        var forged = Self.key
        forged.secret = Array("not the secret".utf8)
        let both = try Self.split(
            try #require(Self.responder.respond(to: forged.sign(query: q, now: Self.now - 1000), transport: .udp)))
        #expect(both.1.rcode == .notAuth && both.0.error == .badSig && both.0.mac.isEmpty)
    }

    /// A signed reply keeps within the client's size: the TSIG record is counted before the
    /// answer is fitted, so a reply that would overflow with it is truncated instead.
    @Test func theSignatureIsCountedInTheSizeLimit() throws {
        let q = try Self.query("big.example.test.", .txt, edns: EDNS(udpPayloadSize: 1232))
        let plain = try #require(Self.responder.respond(to: q, transport: .udp))
        for size: UInt16 in [512, 700, 1232] {
            let signed = Self.key.sign(
                query: try Self.query("big.example.test.", .txt, edns: EDNS(udpPayloadSize: size)), now: Self.now)
            let reply = try #require(Self.responder.respond(to: signed, transport: .udp))
            #expect(reply.count <= Int(size), "\(reply.count) bytes for a \(size)-byte limit")
            let (tsig, message) = try Self.split(reply)
            // The TSIG record: owner (18) + type, class, TTL, length (10) + algorithm (13) + times,
            // MAC size, ID, error, other length (16) + MAC (32).
            #expect(tsig.error == .verified && message.header.tc == (plain.count + 89 > Int(size)))
        }
    }

    /// Signed queries never come from the reply cache: each reply is signed at its own time.
    @Test func signedRepliesAreNeverCached() throws {
        var cache = ReplyCache()
        var clockedResponder = Self.responder
        let q = Self.key.sign(query: try Self.query("www.example.test.", .a, edns: EDNS()), now: Self.now)
        _ = cache.reply(to: q, transport: .udp, responder: clockedResponder)
        clockedResponder.clock = { Self.now + 5 }
        let again = cache.reply(to: q, transport: .udp, responder: clockedResponder)
        let second = try Self.split(try #require(again))
        #expect(second.0.timeSigned == Self.now + 5 && cache.count == 0)
    }
}
