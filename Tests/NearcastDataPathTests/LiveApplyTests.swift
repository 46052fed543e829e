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
        try fp.answer(queriesTo: Packet.servers)
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

    /// What the daemon does with a record change: the names it reaches, from the zone's indexes,
    /// written into the live generation (a whole generation when it reaches a delegation).
    static func change(_ fp: FastPath, _ zone: Zone, _ edit: ZoneEditor.Edit) throws -> (Zone, Responder, Bool) {
        let (after, _, changeset) = try ZoneEditor.apply(edit, to: zone, fileName: "test")
        let responder = Responder(authority: Authority(zones: [after]))
        let owners = Set((changeset.removed + changeset.added).map(\.name))
        if let (names, removed) = AnswerImage.records(
            reachedBy: [.init(before: zone, after: after, owners: owners)], responder: responder,
            maxSections: FastPath.sectionsCapacity)
        {
            if try fp.apply(names, removed: removed, geo: nil) != nil { return (after, responder, true) }
        }
        try fp.write(AnswerImage.build(responder: responder, maxSections: FastPath.sectionsCapacity))
        return (after, responder, false)
    }

    /// Each query of `expect` is answered by XDP (XDP_TX), and every query of `names` XDP answers is
    /// answered as `responder` does, byte for byte.
    static func check(
        _ fp: FastPath, _ responder: Responder, names: [String], expect: [(String, RRType)],
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        for (name, type) in expect {
            let p = Packet(payload: XDPProgramTests.query(name, type))
            #expect(
                try fp.program.testRun(p.bytes).returnValue == XDPProgramTests.XDP_TX, "\(name) \(type)",
                sourceLocation: sourceLocation)
        }
        for name in names {
            for type in [RRType.a, .aaaa, .txt, .mx, .https, .soa, .ns, .cname] {
                let p = Packet(payload: XDPProgramTests.query(name, type))
                let out = try fp.program.testRun(p.bytes)
                guard out.returnValue == XDPProgramTests.XDP_TX else { continue }
                let reply = try #require(p.parseReply(out.data), sourceLocation: sourceLocation)
                #expect(
                    reply.payload == responder.respond(to: p.payload, transport: .udp), "\(name) \(type)",
                    sourceLocation: sourceLocation)
            }
        }
    }

    /// The dependency index: a change reaches the names whose answers embed the changed data (a
    /// CNAME to it, an MX naming it), the names above it (an empty non-terminal appearing and
    /// going, a wildcard's parent), and the apex (the serial); each answered by XDP as the slow
    /// path answers right after the change. A delegation made is written as a whole generation.
    @Test func aChangeReachesWhatDependsOnItAndXDPAnswersItAtOnce() throws {
        var zone = try #require(try Self.responder(Self.before).authority.zones[XDPProgramTests.origin])
        let fp = try FastPath(objectPath: XDPProgramTests.objectPath)
        try fp.configure(dnsPort: 53, udpPayload: 1232)
        try fp.answer(queriesTo: Packet.servers)
        try fp.write(
            AnswerImage.build(
                responder: Responder(authority: Authority(zones: [zone])), maxSections: FastPath.sectionsCapacity))
        let around = [
            "example.test.", "www.example.test.", "alias.example.test.", "mail.example.test.", "x.www.example.test.",
            "a.b.c.example.test.", "b.c.example.test.", "c.example.test.", "x.c.example.test.", "deleg.example.test.",
            "x.deleg.example.test.", "nope.example.test.",
        ]
        var responder: Responder
        var inLive: Bool
        // A CNAME's target gets another address: the CNAME's chain answers it.
        (zone, responder, inLive) = try Self.change(
            fp, zone, .add(RecordInput(name: "www.example.test.", type: "A", data: "192.0.2.9")))
        #expect(inLive)
        try Self.check(fp, responder, names: around, expect: [("alias.example.test.", .a), ("www.example.test.", .a)])
        // The MX target's address changes: the apex's MX answer carries it as additional data.
        (zone, responder, inLive) = try Self.change(
            fp, zone, .add(RecordInput(name: "mail.example.test.", type: "A", data: "192.0.2.26")))
        #expect(inLive)
        try Self.check(fp, responder, names: around, expect: [("example.test.", .mx), ("example.test.", .soa)])
        // A wildcard below www: the names below www are its, no longer NXDOMAIN; and it goes again.
        (zone, responder, inLive) = try Self.change(
            fp, zone, .add(RecordInput(name: "*.www.example.test.", type: "TXT", data: "\"w\"")))
        #expect(inLive)
        try Self.check(fp, responder, names: around, expect: [("www.example.test.", .aaaa)])
        #expect(
            try fp.program.testRun(Packet(payload: XDPProgramTests.query("x.www.example.test.", .txt)).bytes)
                .returnValue == XDPProgramTests.XDP_PASS, "a wildcard's answer is the slow path's")
        (zone, responder, inLive) = try Self.change(
            fp, zone, .delete(name: "*.www.example.test.", type: "TXT", data: nil))
        try Self.check(fp, responder, names: around, expect: [("x.www.example.test.", .txt)])
        // An empty non-terminal appears with a name below it, and goes with it.
        (zone, responder, inLive) = try Self.change(
            fp, zone, .add(RecordInput(name: "a.b.c.example.test.", type: "A", data: "192.0.2.50")))
        #expect(inLive)
        try Self.check(
            fp, responder, names: around,
            expect: [("a.b.c.example.test.", .a), ("b.c.example.test.", .a), ("c.example.test.", .txt)])
        (zone, responder, inLive) = try Self.change(
            fp, zone, .delete(name: "a.b.c.example.test.", type: "A", data: nil))
        #expect(inLive)
        try Self.check(
            fp, responder, names: around, expect: [("b.c.example.test.", .a), ("a.b.c.example.test.", .a)])
        // A delegation: what lies below it changes whole, written as a whole generation.
        (zone, responder, inLive) = try Self.change(
            fp, zone, .add(RecordInput(name: "deleg.example.test.", type: "NS", data: "ns.other.test.")))
        #expect(!inLive)
        try Self.check(fp, responder, names: around, expect: [("www.example.test.", .a)])
    }

    /// A reload (the daemon's ReloadedZones): the zone file read again is compared with the zone
    /// served, and what its differing RRsets reach is written into the live generation. Each file
    /// below follows the one before; for each, every name whose record a whole image of the new
    /// file has otherwise than the image of the old one is among the names written or removed,
    /// and XDP then answers as the new zone's slow path does, byte for byte.
    @Test func aReloadWritesWhatTheFilesDifferencesReachAndXDPAnswersTheNewFile() throws {
        let edits: [(String, String)] = [
            ("www      A     192.0.2.2", "www      A     192.0.2.3"),  // a CNAME's target, and the PTR's
            ("mail     A     192.0.2.25", "mail     A     192.0.2.26"),  // the MX's additional address
            ("txt      TXT   \"hello\" \"world\"\n", "new.ent A 192.0.2.77\n"),  // a name gone, one and an ENT come
            ("*.wild   A     192.0.2.100", "*.wild   A     192.0.2.101"),
            ("alias    CNAME www", "alias    CNAME mail"),  // a chain moved to another target
            ("mail     AAAA  2001:db8::25\n", ""),  // a type gone: NODATA for it now
        ]
        var text = Self.before
        var zone = try #require(try Self.responder(text).authority.zones[XDPProgramTests.origin])
        let fp = try FastPath(objectPath: XDPProgramTests.objectPath)
        try fp.configure(dnsPort: 53, udpPayload: 1232)
        try fp.answer(queriesTo: Packet.servers)
        var image = AnswerImage.build(
            responder: Responder(authority: Authority(zones: [zone])), maxSections: FastPath.sectionsCapacity)
        try fp.write(image)
        for (step, (from, to)) in edits.enumerated() {
            #expect(text.contains(from), "step \(step)")
            text = text.replacingOccurrences(of: from, with: to)
                .replacingOccurrences(of: "hostmaster \(step + 1) ", with: "hostmaster \(step + 2) ")
            let responder = try Self.responder(text)
            let next = try #require(responder.authority.zones[XDPProgramTests.origin])
            let owners = Set(next.differences(from: zone).map(\.name))
            #expect(owners.contains(XDPProgramTests.origin), "the SOA's serial, step \(step)")
            let reached = try #require(
                AnswerImage.reached(by: .init(before: zone, after: next, owners: owners)), "step \(step)")
            let (names, removed) = AnswerImage.records(
                of: reached, in: next, responder: responder, maxSections: FastPath.sectionsCapacity)
            // What a whole image says changed is what the difference reached.
            let nextImage = AnswerImage.build(responder: responder, maxSections: FastPath.sectionsCapacity)
            let was = Dictionary(uniqueKeysWithValues: image.names.map { ($0.name, $0) })
            let changed = Set(nextImage.names.filter { was[$0.name] != $0 }.map(\.name))
            let gone = Set(image.names.map(\.name)).subtracting(nextImage.names.map(\.name))
            #expect(changed.isSubset(of: names.map(\.name)), "step \(step): \(changed.subtracting(names.map(\.name)))")
            #expect(gone.isSubset(of: removed), "step \(step)")
            #expect(reached.count < nextImage.names.count / 2, "step \(step): \(reached.count) names reached")
            #expect(try fp.apply(names, removed: removed, geo: nil) != nil, "step \(step)")
            let around =
                nextImage.names.map { DNSName(uncheckedWireForTests: $0.name).description } + [
                    "txt.example.test.", "nope.example.test.", "x.new.ent.example.test.", "a.wild.example.test.",
                ]
            try Self.check(
                fp, responder, names: around, expect: [("www.example.test.", .a), ("alias.example.test.", .a)])
            (zone, image) = (next, nextImage)
        }
        // A whole generation of the last file afterwards finds every record in place.
        #expect(try fp.write(image).written == 0)
    }

    /// The arena has room for the records of the names the table holds and a quarter more, not
    /// for every record changed at once beside the live ones (FastPath.tableSize). A generation
    /// that changes every name writes what fits, and the names that found no room go to the slow
    /// path; `write` then writes a second generation of the same image into the room the first
    /// freed, and XDP answers every name as the new zone does.
    @Test func aGenerationThatChangesEveryNameTakesASecondOneWhenTheArenaLacksRoom() async throws {
        let count = 5000
        func responder(_ last: Int) throws -> Responder {
            var text = "$ORIGIN example.test.\n$TTL 300\n@ SOA ns1 hostmaster \(last) 3600 600 1209600 60\n@ NS ns1\n"
            text += "ns1 A 192.0.2.53\n"
            for i in 0..<count { text += "n\(i) A 198.51.\(last).\(i % 250)\n" }
            let records = try ZoneFileParser.parse(text: text, fileName: "z", origin: XDPProgramTests.origin)
            let zone = try Zone.build(origin: XDPProgramTests.origin, records: records, sourceName: "z")
            return Responder(authority: Authority(zones: [zone]))
        }
        func image(_ r: Responder) -> AnswerImage {
            AnswerImage.build(responder: r, maxSections: FastPath.sectionsCapacity)
        }
        let first = image(try responder(1))
        // Sized as the daemon sizes it for `names-capacity` a quarter above the names.
        let size = FastPath.tableSize(for: first, geo: nil, capacity: count + count / 4)
        let fp = try FastPath(
            objectPath: XDPProgramTests.objectPath, capacity: size.capacity, arenaBytes: size.arenaBytes)
        try fp.configure(dnsPort: 53, udpPayload: 1232)
        try fp.answer(queriesTo: Packet.servers)
        let written = try fp.write(first)
        #expect(written.full == 0 && written.noRoom == 0 && written.entries == first.names.count, "\(written)")
        #expect(2 * FastPath.needs(first, geo: nil).recordBytes > fp.table.arenaBytes, "two generations do not fit")
        let names = (0..<count).map { "n\($0).example.test." }

        // One generation alone: what fits is answered as the new zone, the rest passed.
        let second = try responder(2)
        let partial = try fp.switchTo(try fp.prepare(image(second)))
        #expect(partial.noRoom > 0 && partial.full == partial.noRoom, "\(partial)")
        try Self.check(fp, second, names: Array(names.prefix(300)), expect: [])
        let passed = names.filter {
            (try? fp.program.testRun(Packet(payload: XDPProgramTests.query($0, .a)).bytes).returnValue)
                != XDPProgramTests.XDP_TX
        }
        #expect(!passed.isEmpty && passed.count <= partial.noRoom, "the names left out go to the slow path")

        // `write` takes the second generation itself, and so does the daemon's writer: every
        // name in, answered as the new zone.
        let completed = try fp.write(image(second))
        #expect(completed.full == 0 && completed.noRoom == 0, "\(completed)")
        try Self.check(fp, second, names: Array(names.prefix(300)), expect: names.map { ($0, .a) })
        let third = try responder(3)
        let w = try await GenerationWriter(fp).write(responder: third, geo: nil)
        #expect(w.full == 0 && w.noRoom == 0 && w.entries == first.names.count && w.written > count, "\(w)")
        try Self.check(fp, third, names: Array(names.prefix(300)), expect: names.map { ($0, .a) })
    }

    /// A table smaller than the zone (a secondary's zone of 100k names served after a start with
    /// none: the table is sized at the start): the names left out go to the slow path, and keep
    /// going there after a change. Written into the live generation, a change of the serial made
    /// XDP answer names left out NXDOMAIN (bench-transfer); the change is now declined and
    /// written as a whole generation, which places them right.
    @Test func aChangeInATableThatLeftNamesOutNeverAnswersThemNXDOMAIN() throws {
        let count = 3000
        func responder(_ serial: Int) throws -> Responder {
            var text = "$ORIGIN example.test.\n$TTL 300\n@ SOA ns1 hostmaster \(serial) 3600 600 1209600 60\n"
            text += "@ NS ns1\nns1 A 192.0.2.53\n"
            for i in 0..<count { text += "n\(i) A 198.51.100.\(i % 250)\n" }
            let records = try ZoneFileParser.parse(text: text, fileName: "z", origin: XDPProgramTests.origin)
            return Responder(
                authority: Authority(zones: [
                    try Zone.build(origin: XDPProgramTests.origin, records: records, sourceName: "z")
                ]))
        }
        let (old, new) = (try responder(1), try responder(2))
        let (first, next) = (
            AnswerImage.build(responder: old, maxSections: FastPath.sectionsCapacity),
            AnswerImage.build(responder: new, maxSections: FastPath.sectionsCapacity)
        )
        let fp = try FastPath(objectPath: XDPProgramTests.objectPath, capacity: 1024)
        try fp.configure(dnsPort: 53, udpPayload: 1232)
        try fp.answer(queriesTo: Packet.servers)
        let written = try fp.write(first)
        #expect(written.full > 0, "\(written)")
        let was = Dictionary(uniqueKeysWithValues: first.names.map { ($0.name, $0) })
        let changed = next.names.filter { was[$0.name] != $0 }
        #expect(try fp.apply(changed, removed: [], geo: nil) == nil, "declined: names are left out")
        try fp.write(next)
        var passed = 0
        for i in 0..<count {
            let p = Packet(payload: XDPProgramTests.query("n\(i).example.test.", .a))
            let out = try fp.program.testRun(p.bytes)
            guard out.returnValue == XDPProgramTests.XDP_TX else {
                passed += 1
                continue
            }
            let reply = try #require(p.parseReply(out.data))
            #expect(reply.payload == new.respond(to: p.payload, transport: .udp), "n\(i)")
        }
        #expect(passed > 0, "the names left out are passed")
    }

    /// A first generation is written as it is made, each record straight to its place. One whose
    /// records do not all fit in the arena (a table configured smaller than the zone) is written
    /// as any generation is: what fits is answered as the slow path answers, the rest is passed.
    @Test func aFirstGenerationLargerThanItsArenaWritesWhatFitsAndPassesTheRest() throws {
        var text = "$ORIGIN example.test.\n$TTL 300\n@ SOA ns1 hostmaster 1 3600 600 1209600 60\n@ NS ns1\n"
        text += "ns1 A 192.0.2.53\n"
        for i in 0..<3000 { text += "n\(i) A 198.51.100.\(i % 250)\n" }
        let zone = try Zone.build(
            origin: XDPProgramTests.origin,
            records: try ZoneFileParser.parse(text: text, fileName: "z", origin: XDPProgramTests.origin),
            sourceName: "z")
        let responder = Responder(authority: Authority(zones: [zone]))
        let image = AnswerImage.build(responder: responder, maxSections: FastPath.sectionsCapacity)
        let fp = try FastPath(
            objectPath: XDPProgramTests.objectPath, capacity: 4000,
            arenaBytes: FastPath.needs(image, geo: nil).recordBytes / 2)
        try fp.configure(dnsPort: 53, udpPayload: 1232)
        try fp.answer(queriesTo: Packet.servers)
        let written = try fp.write(image)
        #expect(written.noRoom > 0 && written.entries + written.noRoom == image.names.count, "\(written)")
        let names = (0..<3000).map { "n\($0).example.test." }
        let answered = names.filter {
            (try? fp.program.testRun(Packet(payload: XDPProgramTests.query($0, .a)).bytes).returnValue)
                == XDPProgramTests.XDP_TX
        }
        #expect(answered.count > 1000 && answered.count < 3000, "\(answered.count) answered")
        try Self.check(
            fp, responder, names: Array(names.prefix(200)) + ["example.test.", "nx.example.test."], expect: [])
    }

    /// A stream of changes written into the live generation outlasts the arena's free room: a
    /// change writes its records beside those it replaces, and once the room past the last runs
    /// out, the room of the records replaced is taken again (after a grace period) rather than a
    /// whole generation written. XDP answers each change at once all the while.
    @Test func changesOutlastTheArenasFreeRoomWithoutAWholeGeneration() throws {
        let count = 2000
        var text = "$ORIGIN example.test.\n$TTL 300\n@ SOA ns1 hostmaster 1 3600 600 1209600 60\n@ NS ns1\n"
        text += "ns1 A 192.0.2.53\n"
        for i in 0..<count { text += "n\(i) A 192.0.2.\(i % 250)\n" }
        var zone = try Zone.build(
            origin: XDPProgramTests.origin,
            records: try ZoneFileParser.parse(text: text, fileName: "z", origin: XDPProgramTests.origin),
            sourceName: "z")
        let image = AnswerImage.build(
            responder: Responder(authority: Authority(zones: [zone])), maxSections: FastPath.sectionsCapacity)
        let size = FastPath.tableSize(for: image, geo: nil, capacity: count + count / 4)
        let fp = try FastPath(
            objectPath: XDPProgramTests.objectPath, capacity: size.capacity, arenaBytes: size.arenaBytes)
        try fp.configure(dnsPort: 53, udpPayload: 1232)
        try fp.answer(queriesTo: Packet.servers)
        try fp.write(image)
        let generation = fp.state.withLock { $0.settings.generation }
        // Each change writes the name's record, the apex's and the negative answer's (the serial):
        // about 300 octets, so these write the arena's size three times over.
        let changes = 3 * fp.table.arenaBytes / 300
        var responder = Responder(authority: Authority(zones: [zone]))
        for k in 0..<changes {
            let name = "n\(k * 7 % count).example.test."
            let edit = ZoneEditor.Edit.replace(
                name: name, type: "A", RRSetInput(data: ["198.51.\(k / 250 % 250).\(k % 250)"]))
            let inLive: Bool
            (zone, responder, inLive) = try Self.change(fp, zone, edit)
            try #require(inLive, "change \(k) of \(changes) written into the live generation")
            if k % 250 == 0 { try Self.check(fp, responder, names: [name], expect: [(name, .a)]) }
        }
        #expect(fp.state.withLock { $0.settings.generation } == generation, "no whole generation")
        let names = (0..<count).filter { $0 % 9 == 0 }.map { "n\($0).example.test." }
        try Self.check(fp, responder, names: names, expect: names.map { ($0, .a) })
        // A whole generation of the zone afterwards finds every record in place.
        #expect(
            try fp.write(AnswerImage.build(responder: responder, maxSections: FastPath.sectionsCapacity)).written == 0)
    }

    /// What the daemon's writer does with a reload's differences: a few names go into the live
    /// generation; most of the names changed at once (a zone renumbered) are a new generation,
    /// switched all at once. XDP answers the new zone either way.
    @Test func aReloadThatChangesMostNamesIsSwitchedInAsOneGeneration() async throws {
        func zone(_ last: Int, _ changed: Int) throws -> Zone {
            var text = "$ORIGIN example.test.\n$TTL 300\n@ SOA ns1 hostmaster 1 3600 600 1209600 60\n@ NS ns1\n"
            text += "ns1 A 192.0.2.53\n"
            for i in 0..<1000 { text += "n\(i) A \(i < changed ? "198.51.100.\(last)" : "192.0.2.\(i % 250)")\n" }
            let records = try ZoneFileParser.parse(text: text, fileName: "z", origin: XDPProgramTests.origin)
            return try Zone.build(origin: XDPProgramTests.origin, records: records, sourceName: "z")
        }
        let fp = try FastPath(objectPath: XDPProgramTests.objectPath)
        try fp.configure(dnsPort: 53, udpPayload: 1232)
        try fp.answer(queriesTo: Packet.servers)
        let writer = GenerationWriter(fp)
        var served = try zone(1, 0)
        _ = try await writer.write(responder: Responder(authority: Authority(zones: [served])), geo: nil)
        func reload(_ next: Zone) async throws -> (Responder, switched: Bool) {
            let before = fp.state.withLock { $0.settings.generation }
            let owners = Set(next.differences(from: served).map(\.name))
            let responder = Responder(authority: Authority(zones: [next]))
            _ = try await writer.write(
                responder: responder, geo: nil, changes: [.init(before: served, after: next, owners: owners)])
            served = next
            return (responder, fp.state.withLock { $0.settings.generation } != before)
        }
        let names = ["n0.example.test.", "n9.example.test.", "n10.example.test.", "n999.example.test."]
        let few = try await reload(try zone(2, 10))
        #expect(!few.switched, "ten names written into the live generation")
        try Self.check(fp, few.0, names: names, expect: names.map { ($0, .a) })
        let most = try await reload(try zone(3, 900))
        #expect(most.switched, "nine hundred names switched in as a generation")
        try Self.check(fp, most.0, names: names, expect: names.map { ($0, .a) })
    }
}
