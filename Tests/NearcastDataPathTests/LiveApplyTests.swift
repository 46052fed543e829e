import DNSWire
import NearcastAnswers
import NearcastTestSupport
import NearcastZones
import Testing
import XDPFuzz

@testable import NearcastDataPath

/// A change written into the live generation (FastPath.apply) on the real program: right after it,
/// XDP answers as the slow path of the changed zone does, byte for byte, for the names that changed,
/// came or went, and those around them; and only the records of what changed were written.
@Suite(.serialized, .timeLimit(.minutes(2))) struct LiveApplyTests {
    static let before = XDPProgramTests.zoneText
    /// The serial moved on (the negative answer's SOA changes), an address changed, a name added
    /// below a new empty non-terminal, one removed, a wildcard added.
    static let after =
        XDPProgramTests.zoneText
        .replacingOccurrences(of: "@        SOA   ns1 hostmaster 1 ", with: "@        SOA   ns1 hostmaster 2 ")
        .replacingOccurrences(of: "www      A     192.0.2.2", with: "www      A     192.0.2.3")
        .replacingOccurrences(of: "txt      TXT   \"hello\" \"world\"\n", with: "")
        + "\nnew.ent A 192.0.2.77\n*.wild2 TXT \"any\"\n"

    static func responder(_ text: String) throws -> Responder {
        let origin = XDPProgramTests.origin
        let rrs = try ZoneFileParser.parse(text: text, fileName: "xdp.zone", origin: origin)
        return Responder(
            authority: Authority(zones: [try Zone.build(origin: origin, records: rrs, sourceName: "xdp.zone")]))
    }

    @Test func aChangeWrittenIntoTheLiveGenerationIsAnsweredAsTheChangedZoneAtOnce() throws {
        let (old, new) = (try Self.responder(Self.before), try Self.responder(Self.after))
        let (first, next) = (
            AnswerImage.build(responder: old, maxSections: FastPath.sectionsCapacity),
            AnswerImage.build(responder: new, maxSections: FastPath.sectionsCapacity)
        )
        let fp = try FastPath(objectPath: XDPProgramTests.objectPath)
        try fp.configure(dnsPort: 53, udpPayload: new.maxUDPPayload)
        try fp.write(first)
        // What an image of the changed zone has that the live one has not, and what it lacks.
        let was = Dictionary(uniqueKeysWithValues: first.names.map { ($0.name, $0) })
        let changed = next.names.filter { was[$0.name] != $0 }
        let removed = Set(first.names.map(\.name)).subtracting(next.names.map(\.name))
        #expect(!changed.isEmpty && removed.count == 1)
        let generation = fp.state.withLock { $0.settings.generation }
        let applied = try #require(try fp.apply(changed, removed: Array(removed), geo: nil))
        #expect(fp.state.withLock { $0.settings.generation } == generation, "no new generation")
        #expect(applied.removed == 1 && applied.written <= changed.count + 1, "\(applied)")

        var answered = 0
        let names =
            next.names.map { DNSName(uncheckedWireForTests: $0.name).description } + [
                "txt.example.test.", "nope.example.test.", "x.new.ent.example.test.", "ent.example.test.",
                "a.wild2.example.test.", "wild2.example.test.",
            ]
        for name in names {
            for type in [RRType.a, .aaaa, .txt, .mx, .https, .soa, .ns] {
                let p = Packet(payload: XDPProgramTests.query(name, type))
                let out = try fp.program.testRun(p.bytes)
                guard out.returnValue == XDPProgramTests.XDP_TX else { continue }
                let reply = try #require(p.parseReply(out.data))
                #expect(reply.payload == new.respond(to: p.payload, transport: .udp), "\(name) \(type)")
                answered += 1
            }
        }
        #expect(answered > 50, "\(answered)")
        // The name that went is NXDOMAIN from XDP, the new one and its empty non-terminal answered.
        for (name, type, rcode) in [
            ("txt.example.test.", RRType.txt, RCode.nxDomain), ("new.ent.example.test.", .a, .noError),
            ("ent.example.test.", .a, .noError), ("www.example.test.", .a, .noError),
        ] {
            let p = Packet(payload: XDPProgramTests.query(name, type))
            let out = try fp.program.testRun(p.bytes)
            #expect(out.returnValue == XDPProgramTests.XDP_TX, "\(name)")
            let reply = try #require(p.parseReply(out.data))
            #expect(try DNSMessage(wire: reply.payload).rcode == rcode, "\(name)")
        }
        // A whole generation of the changed zone afterwards finds every record in place.
        #expect(try fp.write(next).written == 0)
    }
}
