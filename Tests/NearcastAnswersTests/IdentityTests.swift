import DNSWire
import NearcastTestSupport
import Testing

@testable import NearcastAnswers
@testable import NearcastZones

/// Which server of a fleet answered (issue 30): its identity in CHAOS TXT at id.server and
/// hostname.bind (RFC 4892) and as NSID (RFC 5001), or neither where it is hidden.
@Suite(.timeLimit(.minutes(1))) struct IdentityTests {
    static func responder(identity: String?) -> Responder {
        var r = ResponderTests.responder
        r.identity = identity
        return r
    }

    @Test(arguments: ["id.server.", "hostname.bind.", "ID.Server."])
    func theIdentityIsAnsweredInChaos(_ name: String) throws {
        let reply = try Self.responder(identity: "ns1.fleet.example").ask(name, .txt, .ch)
        #expect(reply.rcode == .noError && reply.header.aa)
        let answer = try #require(reply.answers.first)
        #expect(reply.answers.count == 1 && answer.rrClass == .ch && answer.ttl == 0)
        #expect(answer.rdata == .txt([Array("ns1.fleet.example".utf8)]))
        #expect(answer.name == (try DNSName(name)), "the question's name, as asked")
        // Another type at the name: no data; another name in CHAOS (version.bind): refused.
        let a = try Self.responder(identity: "ns1.fleet.example").ask(name, .a, .ch)
        #expect(a.rcode == .noError && a.answers.isEmpty)
        #expect(try Self.responder(identity: "ns1").ask("version.bind.", .txt, .ch).rcode == .refused)
    }

    @Test func aHiddenIdentityIsRefusedAndNoNSIDIsSent() throws {
        let hidden = Self.responder(identity: nil)
        #expect(try hidden.ask("id.server.", .txt, .ch).rcode == .refused)
        let reply = try hidden.ask(
            "www.example.test.", .a, edns: EDNS(options: [EDNSOption(code: EDNSOption.nsidCode, data: [])]))
        #expect(reply.rcode == .noError && reply.edns?.options.isEmpty == true)
    }

    /// NSID is sent to those who ask for it, in every kind of reply, and to no one else.
    @Test func nsidIsInTheRepliesOfThoseWhoAskForIt() throws {
        let r = Self.responder(identity: "ns1.fleet.example")
        let nsid = EDNSOption(code: EDNSOption.nsidCode, data: Array("ns1.fleet.example".utf8))
        let asking = EDNS(options: [EDNSOption(code: EDNSOption.nsidCode, data: [])])
        for (name, rcode) in [
            ("www.example.test.", RCode.noError), ("nope.example.test.", .nxDomain), ("other.test.", .refused),
        ] {
            let reply = try r.ask(name, .a, edns: asking)
            // (A REFUSED carries an Extended DNS Error beside it.)
            #expect(reply.rcode == rcode && reply.edns?.options.first == nsid, "\(name)")
        }
        #expect(try r.ask("www.example.test.", .a, edns: EDNS()).edns?.options.isEmpty == true)
        #expect(try r.ask("www.example.test.", .a).edns == nil)
    }

    /// The reply cache keeps no reply with an NSID for those who did not ask, nor the other way.
    @Test func theReplyCacheTellsTheTwoApart() throws {
        let r = Self.responder(identity: "ns1.fleet.example")
        var cache = ReplyCache()
        func query(_ options: [EDNSOption]) throws -> [UInt8] {
            try DNSMessage(
                header: DNSHeader(), questions: [DNSQuestion(name: try DNSName("www.example.test."), type: .a)],
                edns: EDNS(options: options)
            ).serialize()
        }
        let plain = try query([])
        let asking = try query([EDNSOption(code: EDNSOption.nsidCode, data: [])])
        for q in [plain, asking, plain, asking] {
            let bytes = cache.reply(to: q, transport: .udp, responder: r)
            let reply = try DNSMessage(wire: try #require(bytes))
            let asked = q == asking
            #expect(reply.edns?.options.contains { $0.code == EDNSOption.nsidCode } == asked)
        }
    }
}
