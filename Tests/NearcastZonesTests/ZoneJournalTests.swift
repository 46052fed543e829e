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
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("nearcast-journal-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
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
}
