import DNSWire
import NearcastTestSupport
import Testing

@testable import NearcastAnswers
@testable import NearcastZones

@Suite(.timeLimit(.minutes(1))) struct ResponderTests {
    static let origin = try! DNSName("example.test.")
    static let responder: Responder = {
        let records = try! ZoneFileParser.parse(text: Fixtures.queryTableZone, fileName: "table.zone", origin: origin)
        let zone = try! Zone.build(origin: origin, records: records, sourceName: "table.zone")
        return Responder(authority: Authority(zones: [zone]))
    }()

    struct Q: CustomStringConvertible, Sendable {
        var name: String
        var type: RRType
        var qclass: RRClass = .in
        var edns: EDNS? = nil
        var transport: Transport = .udp
        var description: String { "\(name) \(type)" }
    }

    static func rrs(_ section: [ResourceRecord]) -> [String] { section.map(\.description).sorted() }

    /// name, type → rcode, AA, answer, authority, additional (sorted, presentation format).
    static let table: [(Q, RCode, Bool, [String], [String], [String])] = [
        (
            Q(name: "www.example.test.", type: .a), .noError, true,
            ["www.example.test. 300 IN A 192.0.2.1", "www.example.test. 300 IN A 192.0.2.2"], [], []
        ),
        (
            Q(name: "www.example.test.", type: .mx), .noError, true, [],
            ["example.test. 60 IN SOA ns1.example.test. hostmaster.example.test. 2026112201 3600 600 1209600 60"], []
        ),
        (
            Q(name: "nope.example.test.", type: .a), .nxDomain, true, [],
            ["example.test. 60 IN SOA ns1.example.test. hostmaster.example.test. 2026112201 3600 600 1209600 60"], []
        ),
        // Empty non-terminals are NODATA, not NXDOMAIN.
        (
            Q(name: "c.example.test.", type: .a), .noError, true, [],
            ["example.test. 60 IN SOA ns1.example.test. hostmaster.example.test. 2026112201 3600 600 1209600 60"], []
        ),
        (
            Q(name: "b.c.example.test.", type: .txt), .noError, true, [],
            ["example.test. 60 IN SOA ns1.example.test. hostmaster.example.test. 2026112201 3600 600 1209600 60"], []
        ),
        (
            Q(name: "a.b.c.example.test.", type: .txt), .noError, true, ["a.b.c.example.test. 300 IN TXT \"deep\""], [],
            []
        ),
        // CNAME chasing.
        (
            Q(name: "alias.example.test.", type: .a), .noError, true,
            [
                "alias.example.test. 300 IN CNAME www.example.test.", "www.example.test. 300 IN A 192.0.2.1",
                "www.example.test. 300 IN A 192.0.2.2",
            ], [], []
        ),
        (
            Q(name: "alias.example.test.", type: .cname), .noError, true,
            ["alias.example.test. 300 IN CNAME www.example.test."], [], []
        ),
        (
            Q(name: "chain1.example.test.", type: .aaaa), .noError, true,
            [
                "chain1.example.test. 300 IN CNAME chain2.example.test.",
                "chain2.example.test. 300 IN CNAME www.example.test.",
                "www.example.test. 300 IN AAAA 2001:db8::1",
            ], [], []
        ),
        (
            Q(name: "loop1.example.test.", type: .a), .noError, true,
            [
                "loop1.example.test. 300 IN CNAME loop2.example.test.",
                "loop2.example.test. 300 IN CNAME loop1.example.test.",
            ], [], []
        ),
        // RFC 6604: the rcode is that of the last name in the chain.
        (
            Q(name: "dangling.example.test.", type: .a), .nxDomain, true,
            ["dangling.example.test. 300 IN CNAME nothere.example.test."],
            ["example.test. 60 IN SOA ns1.example.test. hostmaster.example.test. 2026112201 3600 600 1209600 60"], []
        ),
        (
            Q(name: "external.example.test.", type: .a), .noError, true,
            ["external.example.test. 300 IN CNAME www.other.test."], [], []
        ),
        // RFC 6672: below a DNAME, the DNAME and a CNAME made from it with its TTL, then on as for a
        // CNAME (in the zone too, where the last name decides the rcode); at its owner, its own data.
        (
            Q(name: "x.y.dn.example.test.", type: .a), .noError, true,
            [
                "dn.example.test. 300 IN DNAME \\# 16 03777777056f74686572047465737400",
                "x.y.dn.example.test. 300 IN CNAME x.y.www.other.test.",
            ], [], []
        ),
        (
            Q(name: "x.dn.example.test.", type: .cname), .noError, true,
            [
                "dn.example.test. 300 IN DNAME \\# 16 03777777056f74686572047465737400",
                "x.dn.example.test. 300 IN CNAME x.www.other.test.",
            ], [], []
        ),
        (
            Q(name: "www.back.example.test.", type: .a), .noError, true,
            [
                "back.example.test. 300 IN DNAME \\# 14 076578616d706c65047465737400",
                "www.back.example.test. 300 IN CNAME www.example.test.", "www.example.test. 300 IN A 192.0.2.1",
                "www.example.test. 300 IN A 192.0.2.2",
            ], [], []
        ),
        (
            Q(name: "nope.back.example.test.", type: .a), .nxDomain, true,
            [
                "back.example.test. 300 IN DNAME \\# 14 076578616d706c65047465737400",
                "nope.back.example.test. 300 IN CNAME nope.example.test.",
            ], ["example.test. 60 IN SOA ns1.example.test. hostmaster.example.test. 2026112201 3600 600 1209600 60"], []
        ),
        (
            Q(name: "dn.example.test.", type: .dname), .noError, true,
            ["dn.example.test. 300 IN DNAME \\# 16 03777777056f74686572047465737400"], [], []
        ),
        (
            Q(name: "dn.example.test.", type: .a), .noError, true, [],
            ["example.test. 60 IN SOA ns1.example.test. hostmaster.example.test. 2026112201 3600 600 1209600 60"], []
        ),
        // Wildcards (RFC 4592).
        (
            Q(name: "x.wild.example.test.", type: .a), .noError, true, ["x.wild.example.test. 300 IN A 192.0.2.100"],
            [], []
        ),
        (
            Q(name: "x.y.wild.example.test.", type: .txt), .noError, true,
            ["x.y.wild.example.test. 300 IN TXT \"wild\""], [], []
        ),
        (
            Q(name: "x.wild.example.test.", type: .mx), .noError, true, [],
            ["example.test. 60 IN SOA ns1.example.test. hostmaster.example.test. 2026112201 3600 600 1209600 60"], []
        ),
        (
            Q(name: "sub.wild.example.test.", type: .a), .noError, true,
            ["sub.wild.example.test. 300 IN A 192.0.2.101"], [], []
        ),
        (
            Q(name: "x.sub.wild.example.test.", type: .a), .nxDomain, true, [],
            ["example.test. 60 IN SOA ns1.example.test. hostmaster.example.test. 2026112201 3600 600 1209600 60"], []
        ),
        (
            Q(name: "wild.example.test.", type: .a), .noError, true, [],
            ["example.test. 60 IN SOA ns1.example.test. hostmaster.example.test. 2026112201 3600 600 1209600 60"], []
        ),
        (
            Q(name: "q.cw.example.test.", type: .a), .noError, true,
            [
                "q.cw.example.test. 300 IN CNAME www.example.test.", "www.example.test. 300 IN A 192.0.2.1",
                "www.example.test. 300 IN A 192.0.2.2",
            ], [], []
        ),
        // Delegation: a referral, not authoritative, with glue.
        (
            Q(name: "host.sub.example.test.", type: .a), .noError, false, [],
            ["sub.example.test. 300 IN NS ns.other.test.", "sub.example.test. 300 IN NS ns.sub.example.test."],
            ["ns.sub.example.test. 300 IN A 192.0.2.77"]
        ),
        (
            Q(name: "sub.example.test.", type: .ns), .noError, false, [],
            ["sub.example.test. 300 IN NS ns.other.test.", "sub.example.test. 300 IN NS ns.sub.example.test."],
            ["ns.sub.example.test. 300 IN A 192.0.2.77"]
        ),
        (
            Q(name: "sub.example.test.", type: .ds), .noError, true, [],
            ["example.test. 60 IN SOA ns1.example.test. hostmaster.example.test. 2026112201 3600 600 1209600 60"], []
        ),
        // Additional-section processing.
        (
            Q(name: "example.test.", type: .mx), .noError, true, ["example.test. 300 IN MX 10 mail.example.test."], [],
            ["mail.example.test. 300 IN A 192.0.2.25", "mail.example.test. 300 IN AAAA 2001:db8::25"]
        ),
        (
            Q(name: "_dns._udp.example.test.", type: .srv), .noError, true,
            ["_dns._udp.example.test. 300 IN SRV 0 1 53 ns1.example.test."], [],
            ["ns1.example.test. 300 IN A 192.0.2.53"]
        ),
        (
            Q(name: "example.test.", type: .ns), .noError, true,
            ["example.test. 300 IN NS ns.other.test.", "example.test. 300 IN NS ns1.example.test."], [],
            ["ns1.example.test. 300 IN A 192.0.2.53"]
        ),
        // Minimal ANY (RFC 8482): one RRset.
        (
            Q(name: "www.example.test.", type: .any), .noError, true,
            ["www.example.test. 300 IN A 192.0.2.1", "www.example.test. 300 IN A 192.0.2.2"], [], []
        ),
        // Not ours, not IN, no transfers.
        (Q(name: "www.other.test.", type: .a), .refused, false, [], [], []),
        (Q(name: "example.", type: .a), .refused, false, [], [], []),
        (Q(name: "www.example.test.", type: .a, qclass: .ch), .refused, false, [], [], []),
        (Q(name: "example.test.", type: .axfr, transport: .tcp), .refused, false, [], [], []),
        (Q(name: "example.test.", type: .ixfr), .refused, false, [], [], []),
        // docs/CONFORMANCE.md: AXFR over UDP is NOTIMP; meta-types are looked up (NODATA);
        // QCLASS ANY is answered from the IN data, not authoritatively.
        (Q(name: "example.test.", type: .axfr), .notImp, false, [], [], []),
        (
            Q(name: "example.test.", type: .mailb), .noError, true, [],
            ["example.test. 60 IN SOA ns1.example.test. hostmaster.example.test. 2026112201 3600 600 1209600 60"], []
        ),
        (
            Q(name: "www.example.test.", type: .maila), .noError, true, [],
            ["example.test. 60 IN SOA ns1.example.test. hostmaster.example.test. 2026112201 3600 600 1209600 60"], []
        ),
        (
            Q(name: "www.example.test.", type: .opt), .noError, true, [],
            ["example.test. 60 IN SOA ns1.example.test. hostmaster.example.test. 2026112201 3600 600 1209600 60"], []
        ),
        (
            Q(name: "www.example.test.", type: .tsig), .noError, true, [],
            ["example.test. 60 IN SOA ns1.example.test. hostmaster.example.test. 2026112201 3600 600 1209600 60"], []
        ),
        (
            Q(name: "www.example.test.", type: .a, qclass: .any), .noError, false,
            ["www.example.test. 300 IN A 192.0.2.1", "www.example.test. 300 IN A 192.0.2.2"], [], []
        ),
        (
            Q(name: "nope.example.test.", type: .a, qclass: .any), .nxDomain, false, [],
            ["example.test. 60 IN SOA ns1.example.test. hostmaster.example.test. 2026112201 3600 600 1209600 60"], []
        ),
    ]

    @Test(arguments: table.indices)
    func queryTable(index: Int) throws {
        let (q, rcode, aa, answer, authority, additional) = Self.table[index]
        let r = try Self.responder.ask(q.name, q.type, q.qclass, edns: q.edns, transport: q.transport) {
            $0.header.rd = true
        }
        #expect(r.header.id == 0x4242)
        #expect(r.header.qr)
        #expect(r.header.rd, "RD is copied")
        #expect(!r.header.ra, "no recursion offered")
        #expect(!r.header.tc)
        #expect(r.rcode == rcode, "\(q)")
        #expect(r.header.aa == aa, "\(q)")
        #expect(Self.rrs(r.answers) == answer, "\(q)")
        #expect(Self.rrs(r.authority) == authority, "\(q)")
        #expect(Self.rrs(r.additional) == additional, "\(q)")
        #expect(r.questions.count == 1 && r.questions[0].name.description == q.name)
        #expect(r.edns == nil, "no OPT in the reply to a query without one")
    }

    @Test func questionIsEchoedInTheClientsCase() throws {
        let r = try Self.responder.ask("WwW.ExAmPlE.tEsT.", .a)
        #expect(r.questions[0].name.description == "WwW.ExAmPlE.tEsT.")
        #expect(r.answers.count == 2)
    }

    @Test func truncatesWithoutEDNSAndFitsWithIt() throws {
        let plain = try Self.responder.ask("big.example.test.", .txt)
        #expect(plain.header.tc && plain.answers.isEmpty && plain.header.aa)
        let edns = try Self.responder.ask("big.example.test.", .txt, edns: EDNS(udpPayloadSize: 1232))
        #expect(!edns.header.tc && edns.answers.count == 4)
        // The client's size is capped at ours (1232): 30 × 250+ bytes does not fit even at 4096.
        let huge = try Self.responder.ask("huge.example.test.", .txt, edns: EDNS(udpPayloadSize: 4096))
        #expect(huge.header.tc && huge.answers.isEmpty && huge.edns != nil)
        let tcp = try Self.responder.ask("huge.example.test.", .txt, transport: .tcp)
        #expect(!tcp.header.tc && tcp.answers.count == 30)
        // A client size below 512 counts as 512 (RFC 6891 §6.2.5).
        let tiny = try Self.responder.ask("www.example.test.", .a, edns: EDNS(udpPayloadSize: 100))
        #expect(!tiny.header.tc && tiny.answers.count == 2)
    }

    @Test func ednsIsAnsweredWithOurSizeAndTheDOBit() throws {
        let r = try Self.responder.ask("www.example.test.", .a, edns: EDNS(udpPayloadSize: 4096, dnssecOK: true))
        #expect(r.edns?.udpPayloadSize == 1232)
        #expect(r.edns?.dnssecOK == true)
        #expect(r.edns?.version == 0)
        #expect(r.edns?.options == [])
    }

    @Test func ecsIsEchoedWithScopeZero() throws {
        let ecs = ClientSubnet(family: 1, sourcePrefixLength: 24, scopePrefixLength: 0, address: [198, 51, 100])
        let r = try Self.responder.ask("www.example.test.", .a, edns: EDNS(options: [ecs.option]))
        #expect(r.edns?.options == [ecs.option])
        #expect(r.answers.count == 2)
    }

    @Test func invalidECSIsFormErr() throws {
        let bad = EDNSOption(code: 8, data: [0, 1, 24, 0, 198, 51, 100, 7])
        let r = try Self.responder.ask("www.example.test.", .a, edns: EDNS(options: [bad]))
        #expect(r.rcode == .formErr && r.answers.isEmpty && r.edns != nil)
    }

    /// A TSIG record as a client signs a query with key `k.` (hmac-sha256, a 32-byte MAC).
    static func tsig(originalID: UInt16) throws -> ResourceRecord {
        let rdata =
            try DNSName("hmac-sha256.").wire + [0, 0, 0x69, 0x20, 0x3A, 0x5B, 0x01, 0x2C, 0, 32]
            + [UInt8](repeating: 0xAB, count: 32) + [UInt8(originalID >> 8), UInt8(originalID & 0xFF), 0, 0, 0, 0]
        return ResourceRecord(name: try DNSName("k."), type: .tsig, rrClass: .any, ttl: 0, rdata: .unknown(rdata))
    }

    /// RFC 8945 §5.2.1: a query signed with a key the server does not have
    /// is answered NOTAUTH, without data, with an unsigned TSIG whose error is BADKEY, last after
    /// our OPT; a TSIG record anywhere but last is a FORMERR.
    @Test func aQuerySignedWithAnUnknownKeyIsNotAuthWithBadKey() throws {
        for edns in [nil, EDNS()] {
            let r = try Self.responder.ask("www.example.test.", .a, edns: edns) {
                $0.additional = [try! Self.tsig(originalID: 0x4242)]
            }
            #expect(r.rcode == .notAuth && r.answers.isEmpty && r.authority.isEmpty)
            #expect((r.edns != nil) == (edns != nil))
            let t = try #require(r.additional.last)
            let key = try DNSName("k.")
            #expect(t.type == .tsig && t.name == key && t.rrClass == .any && t.ttl == 0)
            guard case .unknown(let bytes) = t.rdata else { throw TestFailure("TSIG RDATA not kept as bytes") }
            let alg = try DNSName("hmac-sha256.").wire
            #expect(Array(bytes.prefix(alg.count)) == alg)
            #expect(
                Array(bytes[(alg.count + 6)...]) == [0x01, 0x2C, 0, 0, 0x42, 0x42, 0, 17, 0, 0], "fudge, no MAC, BADKEY"
            )
        }
        // The TSIG record, then an A record after it (DNSMessage writes TSIG last: built by hand).
        var h = DNSHeader()
        h.id = 7
        var m = DNSMessage(
            header: h, questions: [DNSQuestion(name: try DNSName("www.example.test."), type: .a, qclass: .in)])
        m.additional = [try Self.tsig(originalID: 7)]
        var wire = try m.serialize()
        wire[11] = 2  // ARCOUNT
        wire += try DNSName("x.").wire + [0, 1, 0, 1, 0, 0, 0, 0, 0, 4, 192, 0, 2, 1]
        let reply = try #require(Self.responder.respond(to: wire, transport: .udp))
        #expect(try DNSMessage(wire: reply).rcode == .formErr)
    }

    @Test func ednsVersionAboveZeroIsBadVers() throws {
        let r = try Self.responder.ask("www.example.test.", .a, edns: EDNS(version: 1))
        #expect(r.rcode == .badVers)
        #expect(r.edns?.version == 0)
        #expect(r.answers.isEmpty)
    }

    /// UPDATE (and any opcode but QUERY and NOTIFY) is NOTIMP; a NOTIFY of a zone that is not a
    /// secondary here is NOTAUTH (NotifyResponderTests).
    @Test func otherOpcodesAreNotImp() throws {
        let r = try Self.responder.ask("example.test.", .soa) { $0.header.opcode = .update }
        #expect(r.rcode == .notImp && r.header.opcode == .update)
        let n = try Self.responder.ask("example.test.", .soa) { $0.header.opcode = .notify }
        #expect(n.rcode == .notAuth && n.header.opcode == .notify)
    }

    @Test func malformedQueriesAreFormErr() throws {
        let noQuestion = try Self.responder.ask("example.test.", .soa) { $0.questions = [] }
        #expect(noQuestion.rcode == .formErr)
        let two = try Self.responder.ask("example.test.", .soa) { $0.questions += $0.questions }
        #expect(two.rcode == .formErr && two.questions.isEmpty)
        let withAnswer = try Self.responder.ask("example.test.", .soa) {
            $0.answers = [ResourceRecord(name: .root, type: .a, ttl: 0, rdata: .a(IPv4Address(1, 1, 1, 1)))]
        }
        #expect(withAnswer.rcode == .formErr)
        // Garbage after a valid header: FORMERR with the ID and RD echoed.
        let garbage = try #require(
            Self.responder.respond(to: [0xAB, 0xCD, 0x01, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0xFF], transport: .udp))
        let g = try DNSMessage(wire: garbage)
        #expect(g.rcode == .formErr && g.header.id == 0xABCD && g.header.rd && g.questions.isEmpty)
    }

    @Test func responsesAndRuntsAreDropped() throws {
        var h = DNSHeader()
        h.qr = true
        let resp = try DNSMessage(header: h, questions: [DNSQuestion(name: try DNSName("example.test."), type: .a)])
            .serialize()
        #expect(Self.responder.respond(to: resp, transport: .udp) == nil)
        #expect(Self.responder.respond(to: [1, 2, 3], transport: .udp) == nil)
    }

    @Test func refusalsCarryAnExtendedError() throws {
        let out = try Self.responder.ask("www.other.test.", .a, edns: EDNS())
        #expect(out.rcode == .refused && out.edns?.options == [.extendedError(.notAuthoritative)])
        let ch = try Self.responder.ask("www.example.test.", .txt, .ch, edns: EDNS())
        #expect(ch.rcode == .refused && ch.edns?.options == [.extendedError(.notSupported)])
        let axfr = try Self.responder.ask("example.test.", .axfr, edns: EDNS(), transport: .tcp)
        #expect(axfr.rcode == .refused && axfr.edns?.options == [.extendedError(.notSupported)])
    }

    /// A DNAME at the apex of a child zone (RFC 6672 §2.3, §3): served here with its parent, the child
    /// answers below its apex with the DNAME's substitution and at its apex with its own data; the
    /// parent alone would refer the same names to the child.
    @Test func aDNAMEAtAChildsApexRedirectsBelowIt() throws {
        func zone(_ origin: String, _ text: String) throws -> Zone {
            let o = try DNSName(origin)
            return try Zone.build(
                origin: o, records: try ZoneFileParser.parse(text: text, fileName: origin, origin: o),
                sourceName: origin)
        }
        let parent = try zone(
            "example.test.", "$TTL 300\n@ SOA ns1 h 1 2 3 4 60\n@ NS ns1\nns1 A 192.0.2.53\nchild NS ns.other.test.\n")
        let child = try zone(
            "child.example.test.",
            "$TTL 300\n@ SOA ns.other.test. h 1 2 3 4 60\n@ NS ns.other.test.\n@ DNAME example.net.\n")
        let both = Responder(authority: Authority(zones: [parent, child]))
        let below = try both.ask("www.child.example.test.", .a)
        #expect(below.header.aa && below.rcode == .noError)
        let owner = try DNSName("child.example.test.")
        #expect(below.answers.map(\.type) == [.dname, .cname] && below.answers[0].name == owner)
        let target = try DNSName("www.example.net.")
        #expect(below.answers[1].rdata == .cname(target) && below.answers[1].ttl == 300)
        let apex = try both.ask("child.example.test.", .ns)
        #expect(apex.header.aa && apex.answers.map(\.type) == [.ns])
        let parentOnly = try Responder(authority: Authority(zones: [parent])).ask("www.child.example.test.", .a)
        #expect(!parentOnly.header.aa && parentOnly.answers.isEmpty && parentOnly.authority.map(\.type) == [.ns])
    }

    @Test func cdBitIsNotEchoed() throws {
        let r = try Self.responder.ask("www.example.test.", .a) { $0.header.cd = true }
        #expect(!r.header.cd && r.answers.count == 2, "CD is not echoed, as NSD and Knot do (docs/CONFORMANCE.md)")
    }
}
