import Crypto
import Foundation
import NearcastAPIModel
import NearcastBasics
import Synchronization

/// Every change made through the management API (and every reload), one JSON line each, on disk
/// before the change is acknowledged (issue 6): who, what, when, and SHA-256 digests of the state
/// before and after, so the log can be checked against the state it describes.
public final class AuditLog: Sendable {
    public let path: String
    /// Held while a line is appended and synced: one writer at a time.
    private let appending = Mutex(())

    public init(path: String) { self.path = path }

    /// One change (NearcastAPIModel's AuditEntry: the API returns them as the log keeps them).
    public typealias Entry = AuditEntry

    /// The log's size in bytes (0 when it does not exist yet): it grows with every entry.
    public var size: Int {
        var st = stat()
        return stat(path, &st) == 0 ? Int(st.st_size) : 0
    }

    /// The last `count` entries, oldest first, read from the end of the file (a line that does
    /// not parse, as a torn last line would not, is left out). Blocking file I/O: call it off
    /// Swift's cooperative pool.
    public func last(_ count: Int) -> [Entry] {
        guard count > 0, let handle = FileHandle(forReadingAtPath: path) else { return [] }
        defer { try? handle.close() }
        let end = (try? handle.seekToEnd()) ?? 0
        var window: UInt64 = 16_384
        while true {
            let start = end > window ? end - window : 0
            guard (try? handle.seek(toOffset: start)) != nil else { return [] }
            let data = (try? handle.read(upToCount: Int(end - start))) ?? Data()
            var lines = data.split(separator: UInt8(ascii: "\n"))
            if start > 0, !lines.isEmpty { lines.removeFirst() }  // the line the window cuts into
            let decoder = JSONDecoder()
            let entries = lines.compactMap { try? decoder.decode(Entry.self, from: Data($0)) }
            if entries.count >= count || start == 0 { return Array(entries.suffix(count)) }
            window *= 4
        }
    }

    /// The SHA-256 of `bytes`, in hex: what `before` and `after` hold.
    public static func digest(_ bytes: some Sequence<UInt8>) -> String {
        Hex.lowercase(SHA256.hash(data: Array(bytes)))
    }

    /// The SHA-256, in hex, of `paths` one after another, each as its path, a zero octet, the
    /// SHA-256 of its contents in hex (nothing when it cannot be read) and a zero octet: what a
    /// config and its zone files are, for `before` and `after`. A file's contents are read a piece
    /// at a time (a 10M-name zone file is 350 MB, and a copy of it whole stayed in the daemon's
    /// resident memory after each start and reload), and hashed again only when stat(2) says it
    /// changed (`FileDigests`): a fleet reloads at every node that registers, and hashing its
    /// 40 MB zone file each time was half of what a reload cost at a million names.
    public static func digest(ofFiles paths: [String]) -> String {
        var hash = SHA256()
        for path in paths {
            hash.update(data: Array(path.utf8) + [0])
            if let contents = FileDigests.shared.digest(of: path) { hash.update(data: Array(contents.utf8)) }
            hash.update(data: [0])
        }
        return Hex.lowercase(hash.finalize())
    }

    /// The SHA-256 of files' contents, kept while stat(2) says a file is the same (`FileStamp`).
    final class FileDigests: Sendable {
        static let shared = FileDigests()
        private let known = Mutex<[String: (stamp: FileStamp, digest: String)]>([:])

        /// The digest of the contents of `path`, in hex; nil when it cannot be read.
        func digest(of path: String) -> String? {
            guard let before = FileStamp(path) else { return nil }
            if let k = known.withLock({ $0[path] }), k.stamp == before { return k.digest }
            var now = timespec()
            clock_gettime(CLOCK_REALTIME, &now)
            let readFrom = Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
            guard let file = FileHandle(forReadingAtPath: path) else { return nil }
            defer { try? file.close() }
            var hash = SHA256()
            while let piece = try? file.read(upToCount: 1 << 20), !piece.isEmpty { hash.update(data: piece) }
            let digest = Hex.lowercase(hash.finalize())
            // Kept only when the file did not change while it was read, and was last changed well
            // before it was read (git's rule for its index, for the same reason): the kernel
            // stamps files with a clock of a few milliseconds' grain, so a write of the same size
            // could follow a fresh change within the same stamp, but not one 100 ms old. (Two
            // seconds, as before, made every reload in the two seconds after a zone's write-back
            // hash its 40 MB again.)
            let modified = before.modified * 1_000_000_000 + Int64(before.modifiedNanos)
            if FileStamp(path) == before, modified < readFrom - 100_000_000 {
                known.withLock { $0[path] = (before, digest) }
            }
            return digest
        }
    }

    /// Appends `entry` and waits for it to reach the disk.
    public func record(_ entry: Entry) throws(DurableFile.Failure) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let line = String(decoding: (try? encoder.encode(entry)) ?? Data(), as: UTF8.self)
        try appending.withLock { _ throws(DurableFile.Failure) in try DurableFile.append(path, line: line) }
    }

    /// An entry's time: RFC 3339 in UTC with milliseconds ("2026-11-27T02:04:51.123Z"). A format
    /// style of FoundationEssentials, made once: an `ISO8601DateFormatter` made for each entry
    /// opened an ICU date format each time, two fifths of a record change's own time.
    private static let stamp = Date.ISO8601FormatStyle(includingFractionalSeconds: true, timeZone: .gmt)

    /// An entry stamped now.
    public static func entry(
        who: String, action: String, target: String, detail: String, before: String, after: String,
        outcome: String = "done"
    ) -> Entry {
        Entry(
            time: Date().formatted(stamp), who: who, action: action, target: target, detail: detail, before: before,
            after: after, outcome: outcome)
    }
}
