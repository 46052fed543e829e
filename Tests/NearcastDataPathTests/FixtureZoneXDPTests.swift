import DNSWire
import Foundation
import NearcastAnswers
import NearcastTestSupport
import NearcastZones
import Testing
import XDPFuzz

@testable import NearcastDataPath

/// The real program, loaded with the image of the zone the reference-server differential test serves
/// (against NSD and Knot), asked that test's queries: what it answers equals the slow path's reply
/// byte for byte (and the slow path agrees with NSD and Knot there), and everything else passes
/// unchanged. So the comparison holds with XDP on as with it off.
@Suite(.timeLimit(.minutes(2))) struct FixtureZoneXDPTests {
    @Test func everyDifferentialQueryIsAnsweredAsTheSlowPathAnswersIt() throws {
        let origin = try DNSName("example.test.")
        let zone = try Zone.load(
            path: TestSupport.fixtures.appendingPathComponent("example.test.zone").path, origin: origin)
        let responder = Responder(authority: Authority(zones: [zone]))
        // The program verified while the image is written, as the daemon loads it.
        let fastPath = try FastPath(objectPath: Repository.program, verifyBeside: true)
        try fastPath.configure(dnsPort: 53, udpPayload: responder.maxUDPPayload)
        try fastPath.answer(queriesTo: Packet.servers)
        try fastPath.write(AnswerImage.build(responder: responder, maxSections: FastPath.sectionsCapacity))
        try fastPath.programLoaded()

        var answered = 0
        var passed = 0
        var answeredDNAME = 0
        for (i, (name, type, edns)) in Fixtures.differentialQueries.enumerated() {
            let query = RawClient.query(name, type, id: UInt16(truncatingIfNeeded: i), edns: edns)
            let frame = Packet(payload: query)
            let out = try fastPath.program.testRun(frame.bytes)
            switch out.returnValue {
            case 3:  // XDP_TX
                let reply = try #require(frame.parseReply(out.data))
                #expect(reply.ipChecksumOK && reply.udpChecksumOK)
                #expect(reply.payload == responder.respond(to: query, transport: .udp), "\(name) \(type)")
                answered += 1
                if type == .dname { answeredDNAME += 1 }
            case 2:  // XDP_PASS
                #expect(out.data == frame.bytes, "a passed frame is not changed")
                passed += 1
            default:
                Issue.record("\(name) \(type): verdict \(out.returnValue)")
            }
        }
        #expect(answered > 300 && passed > 300, "answered \(answered), passed \(passed)")
        #expect(answeredDNAME > 0, "a DNAME at its owner is answered from XDP")
    }

    /// The fixture signed ahead (NSEC, then NSEC3): without the DO bit XDP answers as for the
    /// unsigned zone; with it, each positive answer XDP holds is sent with its signatures (but
    /// where the name's record has no room left for them: the apex and `types`, whose many
    /// types fill it; and RRSIG's own, the slow path's), and so is a NODATA (NSEC), with the name's proof after the zone's signed SOA;
    /// the questions whose proofs depend on more than the name (NXDOMAIN, wildcards, referrals)
    /// pass, for the slow path (counted as `pass_dnssec`). Every reply is the slow path's byte
    /// for byte. The names below the hashed owner names of NSEC3, which are no names of the
    /// zone, are answered NXDOMAIN.
    @Test(arguments: [false, true]) func aSignedZoneIsAnsweredWithItsSignaturesAndItsProofsPassed(nsec3: Bool)
        throws
    {
        let dir = try TemporaryDirectory.url("nearcast-signed-xdp")
        defer { try? FileManager.default.removeItem(at: dir) }
        let signed = try SignedFixture.make(in: dir, nsec3: nsec3)
        let zone = try Zone.load(path: signed.zoneFile.path, origin: DNSName(SignedFixture.origin))
        #expect(zone.isSigned)
        let responder = Responder(authority: Authority(zones: [zone]))
        let fastPath = try FastPath(objectPath: Repository.program)
        try fastPath.configure(dnsPort: 53, udpPayload: responder.maxUDPPayload)
        try fastPath.answer(queriesTo: Packet.servers)
        try fastPath.write(AnswerImage.build(responder: responder, maxSections: FastPath.sectionsCapacity))
        let full: Set<String> = ["example.test.", "types.example.test."]

        var (answered, answeredWithDO, passedWithDO, answeredHashed, signedNODATA) = (0, 0, 0, 0, 0)
        for (i, (name, type, edns)) in signed.queries().enumerated() {
            let query = RawClient.query(name, type, id: UInt16(truncatingIfNeeded: i), edns: edns)
            let frame = Packet(payload: query)
            let out = try fastPath.program.testRun(frame.bytes)
            let inZone = name.hasSuffix("example.test.")
            switch out.returnValue {
            case 3:  // XDP_TX
                let reply = try #require(frame.parseReply(out.data))
                #expect(reply.payload == responder.respond(to: query, transport: .udp), "\(name) \(type)")
                answered += 1
                if edns?.dnssecOK == true, inZone {
                    answeredWithDO += 1
                    let message = try DNSMessage(wire: reply.payload)
                    let proof = message.answers.isEmpty ? message.authority : message.answers
                    #expect(
                        proof.contains { $0.type == .rrsig } && message.edns?.dnssecOK == true,
                        "\(name) \(type): signed, DO echoed")
                    if message.answers.isEmpty { signedNODATA += 1 }
                }
                if signed.hashedOwners.contains(where: { name == "x." + $0 }) { answeredHashed += 1 }
            case 2:  // XDP_PASS
                #expect(out.data == frame.bytes, "a passed frame is not changed")
                guard var plain = edns, plain.dnssecOK, inZone else { break }
                passedWithDO += 1
                // Its twin without DO, when XDP answers it with data, is answered with DO too.
                plain.dnssecOK = false
                let twin = try fastPath.program.testRun(
                    Packet(payload: RawClient.query(name, type, id: 1, edns: plain)).bytes)
                let twinReply = try DNSMessage(wire: try #require(responder.respond(to: query, transport: .udp)))
                #expect(
                    twin.returnValue != 3 || twinReply.answers.isEmpty || !twinReply.authority.isEmpty
                        || full.contains(name) || type == .rrsig, "\(name) \(type): passed with DO, answered without")
            default:
                Issue.record("\(name) \(type): verdict \(out.returnValue)")
            }
        }
        #expect(answered > 300, "answered \(answered)")
        #expect(answeredWithDO > 40, "answered with DO=1: \(answeredWithDO)")
        // (NSEC3's signature's owner points at the NSEC3's, past the question: those pass.)
        #expect(nsec3 || signedNODATA > 100, "signed NODATA from XDP: \(signedNODATA)")
        #expect(passedWithDO > 500, "passed with DO=1: \(passedWithDO)")
        let stats = try fastPath.statistics()
        #expect(stats.passDNSSEC > 100, "\(stats.counters)")
        // (The hashed owner names themselves have records, which the slow path answers.)
        if nsec3 { #expect(answeredHashed > 0, "a name below a hashed owner name: NXDOMAIN from XDP") }
    }

    /// The daemon writes its first generation from the image's stream, each record made as its
    /// name is (`FastPath.records`, `writeFirst`); a generation written from the whole image is
    /// what every later one is. Both answer every question of the fixture's zone and geo names,
    /// names below them, from clients in several places and over both IP versions, with the
    /// same bytes (the fuzz tests hold the stream's to the slow path).
    @Test func aFirstGenerationFromTheStreamAnswersAsOneFromTheImage() throws {
        let streamed = try FuzzTarget.fixture()
        let responder = streamed.responder
        let fromImage = try FastPath(objectPath: Repository.program)
        try fromImage.configure(dnsPort: 53, udpPayload: responder.maxUDPPayload)
        try fromImage.answer(queriesTo: Packet.servers)
        try fromImage.configureCookies(ServerCookies.Secrets(current: Array(0..<16), previous: Array(16..<32)))
        try fromImage.write(
            AnswerImage.build(responder: responder, maxSections: FastPath.sectionsCapacity), geo: responder.geo)
        #expect(streamed.fastPath.liveNames == fromImage.liveNames && fromImage.liveNames > 20)

        var answered = 0
        var id: UInt16 = 0
        let clients: [[UInt8]] = [Packet.client4, [2, 125, 160, 216], [89, 160, 20, 112], [175, 16, 199, 1]]
        for name in streamed.names + streamed.names.filter { $0 != "." }.map { "below." + $0 } {
            for type in [RRType.a, .aaaa, .mx, .txt, .ns, .soa, .cname, .https, .srv, .caa] {
                for (k, client) in clients.enumerated() {
                    id &+= 1
                    var frame = Packet(ipv6: k == 3, payload: RawClient.query(name, type, id: id))
                    frame.source4 = client
                    let (a, b) = (
                        try streamed.fastPath.program.testRun(frame.bytes),
                        try fromImage.program.testRun(frame.bytes)
                    )
                    #expect(a.returnValue == b.returnValue && a.data == b.data, "\(name) \(type) from \(client)")
                    if a.returnValue == 3 { answered += 1 }
                }
            }
        }
        #expect(answered > 1000, "answered \(answered)")
    }
}
