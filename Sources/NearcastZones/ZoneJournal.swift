import DNSWire
import Foundation
import NearcastBasics

/// The changes made to a zone since its file was last written (docs/ARCHITECTURE.md §15), so that
/// a change is durable when one block is appended and synced, rather than when the whole zone file
/// is rewritten: as Knot's journal with `zonefile-sync`. The file sits beside the zone file
/// (`FILE.journal`) and is text, one changeset a block:
///
/// ```
/// changeset 2026112202 2026112203
/// - www.example.test. 300 IN A 192.0.2.1
/// + www.example.test. 300 IN A 192.0.2.7
/// end 2026112202 2026112203 5f1c0a9e2d4b7c13
/// ```
///
/// The end line carries a checksum (FNV-1a, 64 bits) of the block's other lines: a block cut short
/// by a crash (never acknowledged: the append had not returned) has no valid end and is dropped
/// with everything after it. The journal applies to the zone file whose SOA serial is its first
/// changeset's "before"; a file already at its last "after" holds it all (written back, then the
/// daemon stopped before the journal was trimmed).
public enum ZoneJournal {
    /// Where the journal of the zone file at `zoneFile` is kept.
    public static func path(forZoneFile zoneFile: String) -> String { zoneFile + ".journal" }

    /// The block `changeset` is appended as.
    public static func block(_ c: ZoneChangeset) -> String {
        var body = "changeset \(c.serialBefore) \(c.serialAfter)\n"
        for r in c.removed { body += "- " + ZoneText.line(r) + "\n" }
        for r in c.added { body += "+ " + ZoneText.line(r) + "\n" }
        return body + "end \(c.serialBefore) \(c.serialAfter) \(checksum(body))\n"
    }

    /// Appends `changeset` to the journal at `path` and waits for it to reach the disk.
    public static func append(_ changeset: ZoneChangeset, to path: String) throws(DurableFile.Failure) {
        try DurableFile.append(path, bytes: Array(block(changeset).utf8))
    }

    /// Replaces the journal at `path` with `changesets` (none: removes it), atomically: what a
    /// write-back of the zone file leaves to be journaled.
    public static func replace(_ path: String, with changesets: [ZoneChangeset]) throws(DurableFile.Failure) {
        if changesets.isEmpty {
            if unlink(path) != 0 && errno != ENOENT { throw DurableFile.Failure("cannot remove", path) }
            return
        }
        try DurableFile.replace(path, with: Array(changesets.map(block).joined().utf8))
    }

    /// Whether the journal at `path` holds anything.
    public static func hasChanges(_ path: String) -> Bool {
        var st = stat()
        return stat(path, &st) == 0 && st.st_size > 0
    }

    /// Drops from the journal at `path` the changesets up to the one that made `serial` (the zone
    /// file now holds them), keeping those after it as they are written: a write-back's last step,
    /// which changes wait for (ServedConfig's turn). So the changesets are found by their end lines
    /// alone (only an end line begins with `end `), not read back record by record: the 7,000
    /// changesets of ten seconds of changes took over 100 ms to read, each change meanwhile waiting.
    public static func trim(_ path: String, upTo serial: UInt32) throws(DurableFile.Failure) {
        guard let data = FileManager.default.contents(atPath: path) else { return }
        let bytes = [UInt8](data)
        let endLine = Array("end ".utf8)
        let wanted = Array(String(serial).utf8)
        var keepFrom: Int?
        var start = 0
        for i in bytes.indices where bytes[i] == UInt8(ascii: "\n") {
            let line = bytes[start..<i]
            if line.starts(with: endLine) {
                // end BEFORE AFTER CHECKSUM
                let fields = line.split(separator: UInt8(ascii: " "))
                if fields.count == 4, fields[2].elementsEqual(wanted) { keepFrom = i + 1 }
            }
            start = i + 1
        }
        guard let keepFrom else { return }
        if keepFrom == bytes.count {
            if unlink(path) != 0 && errno != ENOENT { throw DurableFile.Failure("cannot remove", path) }
            return
        }
        try DurableFile.replace(path, with: Array(bytes[keepFrom...]))
    }

    /// The whole changesets the journal at `path` holds, oldest first (none when there is no
    /// journal). A block cut short ends the journal; a block that does not read is an error.
    public static func read(_ path: String, origin: DNSName) throws(DiagnosticsError) -> [ZoneChangeset] {
        guard let data = FileManager.default.contents(atPath: path) else { return [] }
        let lines = String(decoding: data, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
        var out: [ZoneChangeset] = []
        var i = 0
        func fail(_ line: Int, _ m: String) -> DiagnosticsError {
            DiagnosticsError([Diagnostic(file: path, line: line, message: m)])
        }
        while i < lines.count, !lines[i].isEmpty {
            let head = lines[i].split(separator: " ")
            guard head.count == 3, head[0] == "changeset", let before = UInt32(head[1]), let after = UInt32(head[2])
            else {
                // The file's last line, cut short by a crash, is a block that never was acknowledged.
                if i == lines.count - 1 { break }
                throw fail(i + 1, "expected 'changeset SERIAL SERIAL', found '\(lines[i])'")
            }
            var body = String(lines[i]) + "\n"
            var removed: [ResourceRecord] = []
            var added: [ResourceRecord] = []
            i += 1
            var ended = false
            while i < lines.count {
                let line = lines[i]
                if line.hasPrefix("end ") {
                    ended = line == "end \(before) \(after) \(checksum(body))"
                    i += 1
                    break
                }
                guard line.hasPrefix("- ") || line.hasPrefix("+ ") else { break }
                body += line + "\n"
                let text = String(line.dropFirst(2)) + "\n"
                let records: [SourcedRecord]
                do { records = try ZoneFileParser.parse(text: text, fileName: path, origin: origin) } catch {
                    // A line cut short by a crash does not read either: only a whole block counts.
                    ended = false
                    break
                }
                guard records.count == 1 else { throw fail(i + 1, "one record a line") }
                if line.hasPrefix("-") { removed.append(records[0].record) } else { added.append(records[0].record) }
                i += 1
            }
            // Cut short: the append that wrote it never returned, so nothing acknowledged is lost.
            guard ended else { break }
            out.append(ZoneChangeset(serialBefore: before, serialAfter: after, removed: removed, added: added))
        }
        return out
    }

    /// `zone` (as read from its file) with the journal at `path` applied: the changesets from the
    /// zone's serial on. An error when the journal holds changes but none starts at the file's
    /// serial, nor does the last end there: the file was changed by hand while changes made
    /// through the API were not yet written to it, and which should win is the operator's call.
    public static func replay(_ path: String, onto zone: Zone, file: String) throws(DiagnosticsError) -> Zone {
        let changesets = try read(path, origin: zone.origin)
        guard let last = changesets.last, last.serialAfter != zone.serial else { return zone }
        guard let first = changesets.firstIndex(where: { $0.serialBefore == zone.serial }) else {
            throw DiagnosticsError([
                Diagnostic(
                    file: path, line: 0,
                    message:
                        "holds changes made through the API from serial \(changesets[0].serialBefore) to \(last.serialAfter), but \(file) is at serial \(zone.serial): the file was changed before they were written to it. Keep the file's version by removing \(path), or the changes by putting the file back at serial \(changesets[0].serialBefore)"
                )
            ])
        }
        var z = zone
        for c in changesets[first...] { z = try z.applying(c, source: path) }
        return z
    }

    /// FNV-1a, 64 bits, as 16 hexadecimal digits.
    static func checksum(_ text: String) -> String {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in text.utf8 {
            h ^= UInt64(b)
            h = h &* 0x100_0000_01b3
        }
        let hex = String(h, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }
}
