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
}
