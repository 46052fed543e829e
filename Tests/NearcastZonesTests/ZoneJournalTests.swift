import DNSWire
import Foundation
import NearcastBasics
import NearcastTestSupport
import Testing

@testable import NearcastZones

/// The journal makes a change durable without rewriting the zone file: what was appended whole is
/// replayed onto the file it was made for, a block cut short by a crash is dropped, and a file
/// changed by hand meanwhile is named rather than guessed at.
@Suite(.timeLimit(.minutes(1))) struct ZoneJournalTests {
    static let origin = try! DNSName("example.test.")
    static let records = try! ZoneFileParser.parse(text: Fixtures.queryTableZone, fileName: "z.zone", origin: origin)
    static let zone = try! Zone.build(origin: origin, records: records, sourceName: "z.zone")

    func temporary() throws -> String {
        let dir = try TemporaryDirectory.url("nearcast-journal")
        return dir.appendingPathComponent("z.zone.journal").path
    }

    /// Three changes in a row from the fixture, and the zones they make.
    func changes() throws -> [(zone: Zone, changeset: ZoneChangeset)] {
        var zone = Self.zone
        var out: [(Zone, ZoneChangeset)] = []
        for edit in [
            ZoneEditor.Edit.add(RecordInput(name: "new", type: "A", data: "192.0.2.9")),
            .add(RecordInput(name: "www", type: "TXT", data: "\"a \\\"quoted\\\" text\"")),
            .delete(name: "www", type: "A", data: "192.0.2.1"),
        ] {
            let r = try ZoneEditor.apply(edit, to: zone, fileName: "z.zone")
            out.append((r.zone, r.changeset))
            zone = r.zone
        }
        return out
    }

    @Test func changesAppendedAreReplayedOntoTheFileTheyWereMadeFor() throws {
        let path = try temporary()
        let steps = try changes()
        for s in steps { try ZoneJournal.append(s.changeset, to: path) }
        #expect(try ZoneJournal.read(path, origin: Self.origin) == steps.map(\.changeset))
        let replayed = try ZoneJournal.replay(path, onto: Self.zone, file: "z.zone")
        #expect(Set(replayed.records) == Set(steps[2].zone.records) && replayed.serial == steps[2].zone.serial)
        // A file written back at the second change replays the third only; one at the last, none.
        #expect(
            Set(try ZoneJournal.replay(path, onto: steps[1].zone, file: "z.zone").records) == Set(steps[2].zone.records)
        )
        #expect(try ZoneJournal.replay(path, onto: steps[2].zone, file: "z.zone").serial == steps[2].zone.serial)
        // A write-back trims what the file now holds.
        let kept = ZoneJournal.block(steps[2].changeset)
        try ZoneJournal.trim(path, upTo: steps[1].zone.serial)
        #expect(try ZoneJournal.read(path, origin: Self.origin) == [steps[2].changeset])
        #expect(FileManager.default.contents(atPath: path) == Data(kept.utf8), "the changes after, as written")
        // A serial no changeset made leaves it as it is; the last one's, nothing.
        try ZoneJournal.trim(path, upTo: 12345)
        #expect(FileManager.default.contents(atPath: path) == Data(kept.utf8))
        try ZoneJournal.trim(path, upTo: steps[2].zone.serial)
        #expect(!ZoneJournal.hasChanges(path) && access(path, F_OK) != 0)
    }

    /// What a follower of a fleet's store applies: RRsets replaced whole and the serial given
    /// (the store's is derived), and the changeset that makes it, which the journal replays onto
    /// the zone it was made from. RRsets that are the same are not in it; an SOA given keeps its
    /// fields but takes the serial given; an RRset given twice (two changes of one key taken
    /// together) is the last one.
    @Test func rrsetsReplacedWholeMakeAChangesetThatReplaysToTheSameZone() throws {
        let o = Self.origin
        let www = try DNSName("www.example.test.")
        let mail = try DNSName("mail.example.test.")
        let sameAAAA = try #require(Self.zone.rrset(www, .aaaa))
        let a = RRSet(name: www, type: .a, ttl: 60, rdatas: [.a(IPv4Address(192, 0, 2, 9))])
        var soa = try #require(Self.zone.rrset(o, .soa))
        guard case .soa(var fields) = soa.rdatas[0] else { throw TestFailure("no SOA") }
        fields.minimum = 30
        fields.serial = 1  // not used
        soa.rdatas = [.soa(fields)]
        let earlier = RRSet(name: www, type: .a, ttl: 60, rdatas: [.a(IPv4Address(192, 0, 2, 8))])
        let (zone, changeset) = try Self.zone.replacing(
            [(www, .a, earlier), (www, .a, a), (www, .aaaa, sameAAAA), (mail, .aaaa, nil), (o, .soa, soa)],
            serial: 2_026_112_299, source: "store")
        #expect(zone.serial == 2_026_112_299 && changeset.serialBefore == Self.zone.serial)
        guard case .soa(let served)? = zone.soa.rdatas.first else { throw TestFailure("no SOA") }
        #expect(served.minimum == 30)
        #expect(zone.rrset(www, .a) == a && zone.rrset(mail, .aaaa) == nil)
        #expect(
            !changeset.added.contains { $0.type == .aaaa }
                && !changeset.removed.contains { $0.name == www && $0.type == .aaaa })
        let replayed = try Self.zone.applying(changeset, source: "journal")
        #expect(Set(replayed.records) == Set(zone.records) && replayed.serial == zone.serial)
        // Nothing different but the serial: a changeset of the SOA alone.
        let (_, serialOnly) = try Self.zone.replacing([(www, .aaaa, sameAAAA)], serial: 7, source: "store")
        #expect(serialOnly.added.map(\.type) == [.soa] && serialOnly.removed.map(\.type) == [.soa])
    }

    @Test func aBlockCutShortByACrashIsDroppedWithWhatFollows() throws {
        let path = try temporary()
        let steps = try changes()
        try ZoneJournal.append(steps[0].changeset, to: path)
        let whole = ZoneJournal.block(steps[1].changeset)
        for cut in [whole.count - 3, whole.count / 2, 12] {
            try DurableFile.replace(path, with: Array((ZoneJournal.block(steps[0].changeset) + whole.prefix(cut)).utf8))
            #expect(try ZoneJournal.read(path, origin: Self.origin) == [steps[0].changeset], "cut at \(cut)")
        }
        // A byte changed inside a block fails its checksum: the block is not taken.
        let flipped = whole.replacingOccurrences(of: "quoted", with: "quotes")
        #expect(flipped != whole)
        try DurableFile.replace(path, with: Array(flipped.utf8))
        #expect(try ZoneJournal.read(path, origin: Self.origin).isEmpty)
    }

    @Test func aFileChangedByHandMeanwhileIsNamedNotGuessedAt() throws {
        let path = try temporary()
        let steps = try changes()
        try ZoneJournal.append(steps[1].changeset, to: path)
        do {
            _ = try ZoneJournal.replay(path, onto: Self.zone, file: "z.zone")
            Issue.record("replayed onto a file at another serial")
        } catch {
            let m = error.diagnostics[0]
            #expect(m.file == path)
            #expect(
                m.message.contains("z.zone is at serial 2026112201")
                    && m.message.contains("from serial 2026112202 to 2026112203")
                    && m.message.contains("removing \(path)"),
                "\(m.message)")
        }
    }

    /// A journal marks the files it applies to: the one it began from, and each one a write-back
    /// made. A file at a serial its changes passed through applies only if marked (a write-back,
    /// then a crash before the trim); the same serial written by hand is named, not replayed in part,
    /// which would drop the changes before that serial without a word.
    @Test func aFileAtASerialAChangeReachedAppliesOnlyIfTheJournalMarksIt() throws {
        let path = try temporary()
        let file = String(path.dropLast(".journal".count))
        let steps = try changes()
        try ZoneText.render(Self.zone).write(toFile: file, atomically: false, encoding: .utf8)
        let base = try #require(ZoneJournal.FileMark(of: file, serial: Self.zone.serial))
        try ZoneJournal.append(steps[0].changeset, to: path, after: base)
        for s in steps.dropFirst() { try ZoneJournal.append(s.changeset, to: path) }
        #expect(try ZoneJournal.contents(path, origin: Self.origin).marks == [base])
        #expect(Set(try ZoneJournal.replay(path, onto: Self.zone, file: file).records) == Set(steps[2].zone.records))

        // By hand, at the serial the first change made, and at the last one's.
        for step in [steps[0], steps[2]] {
            try ZoneText.render(step.zone).write(toFile: file, atomically: false, encoding: .utf8)
            do {
                _ = try ZoneJournal.replay(path, onto: step.zone, file: file)
                Issue.record("a file changed by hand at serial \(step.zone.serial) was taken")
            } catch {
                #expect(error.diagnostics[0].message.contains("is not a file they were written to"), "\(error)")
            }
        }
        // Written back at the first change's serial: marked before the rename, so it applies from there.
        try ZoneText.render(steps[0].zone).write(toFile: file + ".tmp", atomically: false, encoding: .utf8)
        try ZoneJournal.mark(
            try #require(ZoneJournal.FileMark(of: file + ".tmp", serial: steps[0].zone.serial)), in: path)
        #expect(rename(file + ".tmp", file) == 0)
        #expect(
            Set(try ZoneJournal.replay(path, onto: steps[0].zone, file: file).records) == Set(steps[2].zone.records))
        // Trimmed of what that file holds, the journal keeps the later changes and the mark.
        try ZoneJournal.trim(path, upTo: steps[0].zone.serial)
        #expect(try ZoneJournal.read(path, origin: Self.origin) == steps.dropFirst().map(\.changeset))
        // A trim that leaves marks alone leaves no journal.
        try ZoneJournal.trim(path, upTo: steps[2].zone.serial)
        #expect(access(path, F_OK) != 0)
        try ZoneJournal.mark(base, in: path)
        #expect(access(path, F_OK) != 0, "no journal is begun by a mark")
    }

    /// What a crash cut short is cut off before the next append: a change acknowledged after the
    /// restart is read back, where it would have followed the cut block, unread.
    @Test func aCutShortTailIsCutOffBeforeTheNextAppend() throws {
        let path = try temporary()
        let steps = try changes()
        let mark = ZoneJournal.FileMark(serial: 1, size: 2, modifiedNanos: 3)
        for torn in [ZoneJournal.block(steps[1].changeset).prefix(30), "file 20261122".prefix(13)] {
            try ZoneJournal.append(steps[0].changeset, to: path, after: mark)
            try DurableFile.append(path, bytes: Array(torn.utf8))
            try ZoneJournal.dropCutShortTail(path, origin: Self.origin)
            try ZoneJournal.dropCutShortTail(path, origin: Self.origin)  // whole: nothing to cut
            try ZoneJournal.append(steps[1].changeset, to: path)
            let read = try ZoneJournal.contents(path, origin: Self.origin)
            #expect(read.changesets == [steps[0].changeset, steps[1].changeset] && read.marks == [mark], "\(torn)")
            unlink(path)
        }
    }
}
