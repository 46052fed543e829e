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
/// with everything after it, and cut off the file before the next append (`dropCutShortTail`), so
/// that changes acknowledged after a restart are never appended behind it, where no reading
/// would reach them.
///
/// Between blocks, a line `file SERIAL SIZE MTIME` names a version of the zone file the daemon read
/// or wrote (`FileMark`: its SOA serial, size and modification time in nanoseconds): the file the
/// journal began from, and each file a write-back made, marked before it replaces the old one. A
/// file at a serial the journal's changesets pass through applies only if the journal marks it:
/// otherwise it was changed by hand (serials alone could not tell: a file edited by hand to a
/// serial that a change made through the API also reached had the changes after that one
/// replayed onto it, and the ones before silently lost). `replay` says which files apply.
public enum ZoneJournal {
    /// A version of a zone file: its SOA serial, size and modification time, which a copy that
    /// keeps times keeps too, and an edit changes.
    public struct FileMark: Equatable, Sendable {
        public var serial: UInt32
        public var size: Int64
        public var modifiedNanos: Int64

        public init(serial: UInt32, size: Int64, modifiedNanos: Int64) {
            (self.serial, self.size, self.modifiedNanos) = (serial, size, modifiedNanos)
        }

        /// The file at `path` as it is now, at `serial`; nil when it cannot be read.
        public init?(of path: String, serial: UInt32) {
            var st = stat()
            guard stat(path, &st) == 0 else { return nil }
            self.init(
                serial: serial, size: Int64(st.st_size),
                modifiedNanos: Int64(st.st_mtim.tv_sec) * 1_000_000_000 + Int64(st.st_mtim.tv_nsec))
        }

        var line: String { "file \(serial) \(size) \(modifiedNanos)\n" }
    }

    /// What a journal holds: its whole changesets and marks, in order, and how many of its bytes
    /// they take (what follows, cut short by a crash, is not part of it) of how many it has.
    struct Contents {
        var changesets: [ZoneChangeset] = []
        var marks: [FileMark] = []
        var wholeBytes = 0
        var bytes = 0
    }

    /// Where the journal of the zone file at `zoneFile` is kept.
    public static func path(forZoneFile zoneFile: String) -> String { zoneFile + ".journal" }

    /// The block `changeset` is appended as.
    public static func block(_ c: ZoneChangeset) -> String {
        var body = "changeset \(c.serialBefore) \(c.serialAfter)\n"
        for r in c.removed { body += "- " + ZoneText.line(r) + "\n" }
        for r in c.added { body += "+ " + ZoneText.line(r) + "\n" }
        return body + "end \(c.serialBefore) \(c.serialAfter) \(checksum(body))\n"
    }

    /// Appends `changeset` to the journal at `path` and waits for it to reach the disk. `after`:
    /// a mark written just before it, in the same write (the file a new journal begins from).
    public static func append(_ changeset: ZoneChangeset, to path: String, after mark: FileMark? = nil)
        throws(DurableFile.Failure)
    {
        try DurableFile.append(path, bytes: Array(((mark?.line ?? "") + block(changeset)).utf8))
    }

    /// Marks, in the journal at `path`, a version of its zone file the daemon wrote: appended and
    /// synced before that file replaces the one before, so that a crash before the journal is
    /// trimmed leaves a journal that applies to it. Nothing when there is no journal.
    public static func mark(_ mark: FileMark, in path: String) throws(DurableFile.Failure) {
        guard access(path, F_OK) == 0 else { return }
        try DurableFile.append(path, bytes: Array(mark.line.utf8))
    }

    /// Cuts off the journal at `path` what a crash left cut short after its last whole block, and
    /// waits for that to reach the disk: before the first change a daemon appends to a journal it
    /// did not write itself. Nothing when the journal is whole or absent.
    public static func dropCutShortTail(_ path: String, origin: DNSName) throws(DiagnosticsError) {
        let journal = try contents(path, origin: origin)
        guard journal.wholeBytes < journal.bytes else { return }
        let fd = open(path, O_WRONLY | O_CLOEXEC)
        guard fd >= 0, ftruncate(fd, off_t(journal.wholeBytes)) == 0, fdatasync(fd) == 0 else {
            if fd >= 0 { close(fd) }
            throw DiagnosticsError([
                Diagnostic(file: path, line: 0, message: "cannot cut its last block, cut short by a crash")
            ])
        }
        close(fd)
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
        // What is kept may be marks alone (the file just written among them): no journal then.
        let changesetLine = Array("changeset ".utf8)
        let keepsChanges = bytes[keepFrom...].split(separator: UInt8(ascii: "\n")).contains {
            $0.starts(with: changesetLine)
        }
        if !keepsChanges {
            if unlink(path) != 0 && errno != ENOENT { throw DurableFile.Failure("cannot remove", path) }
            return
        }
        try DurableFile.replace(path, with: Array(bytes[keepFrom...]))
    }

    /// The whole changesets the journal at `path` holds, oldest first (none when there is no
    /// journal). A block cut short ends the journal; a block that does not read is an error.
    public static func read(_ path: String, origin: DNSName) throws(DiagnosticsError) -> [ZoneChangeset] {
        try contents(path, origin: origin).changesets
    }

    /// The journal at `path`, read (empty when there is none).
    static func contents(_ path: String, origin: DNSName) throws(DiagnosticsError) -> Contents {
        var out = Contents()
        guard let data = FileManager.default.contents(atPath: path) else { return out }
        out.bytes = data.count
        let lines = String(decoding: data, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
        func fail(_ line: Int, _ m: String) -> DiagnosticsError {
            DiagnosticsError([Diagnostic(file: path, line: line, message: m)])
        }
        var i = 0
        var offset = 0  // of line i
        // A line is whole when a newline follows it: the last of `lines` never is.
        func advance() {
            offset += lines[i].utf8.count + 1
            i += 1
        }
        while i < lines.count - 1, !lines[i].isEmpty {
            let head = lines[i].split(separator: " ")
            if head.count == 4, head[0] == "file", let serial = UInt32(head[1]), let size = Int64(head[2]),
                let modified = Int64(head[3])
            {
                out.marks.append(FileMark(serial: serial, size: size, modifiedNanos: modified))
                advance()
                out.wholeBytes = offset
                continue
            }
            guard head.count == 3, head[0] == "changeset", let before = UInt32(head[1]), let after = UInt32(head[2])
            else {
                // The file's last line, cut short by a crash, is a block that never was acknowledged.
                if i == lines.count - 2 { break }
                throw fail(i + 1, "expected 'changeset SERIAL SERIAL' or 'file SERIAL SIZE MTIME', found '\(lines[i])'")
            }
            var body = String(lines[i]) + "\n"
            var removed: [ResourceRecord] = []
            var added: [ResourceRecord] = []
            advance()
            var ended = false
            while i < lines.count - 1 {
                let line = lines[i]
                if line.hasPrefix("end ") {
                    ended = line == "end \(before) \(after) \(checksum(body))"
                    advance()
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
                advance()
            }
            // Cut short: the append that wrote it never returned, so nothing acknowledged is lost.
            guard ended else { break }
            out.changesets.append(
                ZoneChangeset(serialBefore: before, serialAfter: after, removed: removed, added: added))
            out.wholeBytes = offset
        }
        return out
    }

    /// `zone` (as read from its file at `file`) with the journal at `path` applied: the changesets
    /// from the zone's serial on. The journal applies to a file at its first changeset's serial
    /// (the file it began from, or one changed by hand at that serial: the changes are replayed
    /// onto it), and to a file it marks (`FileMark`), from the changeset at the file's serial on (a
    /// file written back, then a crash before the journal was trimmed); a journal that marks
    /// nothing (written before marks were) to any file at one of its serials. Otherwise the file
    /// was changed by hand while changes made through the API were not yet written to it, which
    /// should win is the operator's call, and this is an error.
    public static func replay(_ path: String, onto zone: Zone, file: String) throws(DiagnosticsError) -> Zone {
        let journal = try contents(path, origin: zone.origin)
        let changesets = journal.changesets
        guard let last = changesets.last else { return zone }
        var from: Int?
        if changesets[0].serialBefore == zone.serial {
            from = 0
        } else if journal.marks.isEmpty
            || FileMark(of: file, serial: zone.serial).map(journal.marks.contains) == true
        {
            if last.serialAfter == zone.serial { return zone }
            from = changesets.firstIndex { $0.serialBefore == zone.serial }
        }
        guard let from else {
            throw DiagnosticsError([
                Diagnostic(
                    file: path, line: 0,
                    message:
                        "holds changes made through the API from serial \(changesets[0].serialBefore) to \(last.serialAfter), but \(file) is at serial \(zone.serial) and is not a file they were written to: the file was changed before they were written to it. Keep the file's version by removing \(path), or the changes by putting the file back at serial \(changesets[0].serialBefore)"
                )
            ])
        }
        var z = zone
        for c in changesets[from...] { z = try z.applying(c, source: path) }
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
