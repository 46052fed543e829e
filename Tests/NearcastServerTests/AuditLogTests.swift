import Foundation
import NearcastServer
import NearcastTestSupport
import Testing

/// The audit log read back from its end (`GET /v1/audit`, the dashboard's last changes).
@Suite(.timeLimit(.minutes(2))) struct AuditLogTests {
    @Test func theLastEntriesAreReadFromTheEndOldestFirstAndATornLineIsLeftOut() throws {
        let dir = try TemporaryDirectory.url("nearcast-audit")
        let log = AuditLog(path: dir.appendingPathComponent("audit.log").path)
        #expect(log.last(5).isEmpty && log.size == 0, "no file yet")
        // Far more than the first window read from the end (16 KiB), so the window grows.
        for i in 0..<400 {
            try log.record(
                AuditLog.entry(
                    who: "write tokens:2", action: "drain", target: "node\(i)", detail: "for 600 s",
                    before: AuditLog.digest([UInt8(i & 255)]), after: AuditLog.digest([])))
        }
        #expect(log.size > 64 * 1024)
        #expect(log.last(3).map(\.target) == ["node397", "node398", "node399"])
        #expect(log.last(300).map(\.target) == (100..<400).map { "node\($0)" })
        #expect(log.last(1000).count == 400)
        // A line cut short (a crash mid-write) is not an entry.
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: log.path))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data(#"{"action":"drain","targ"#.utf8))
        try handle.close()
        #expect(log.last(2).map(\.target) == ["node398", "node399"])
    }

    /// The digest of a config and its zone files, as `before` and `after` of a reload say it: the
    /// files read a piece at a time give the digest of their bytes one after another (a file
    /// larger than a piece, one empty, one that cannot be read).
    @Test func theDigestOfFilesIsTheirPathsAndContentsDigestsOneAfterAnother() throws {
        let dir = try TemporaryDirectory.url("nearcast-digest")
        let big = (0..<(3 << 20) + 17).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let (a, b, gone) = (
            dir.appendingPathComponent("a").path, dir.appendingPathComponent("b").path, dir.path + "/gone"
        )
        try Data(big).write(to: URL(fileURLWithPath: a))
        try Data().write(to: URL(fileURLWithPath: b))
        let empty = Array(AuditLog.digest([UInt8]()).utf8)
        let whole =
            Array(a.utf8) + [0] + Array(AuditLog.digest(big).utf8) + [0] + Array(b.utf8) + [0] + empty + [0]
            + Array(gone.utf8) + [0, 0]
        #expect(AuditLog.digest(ofFiles: [a, b, gone]) == AuditLog.digest(whole))
        #expect(AuditLog.digest(ofFiles: [b, a]) != AuditLog.digest(ofFiles: [a, b]))
        // Kept while the file is the same; a change of it, even of the same size, is seen.
        var changed = big
        changed[0] ^= 1
        try Data(changed).write(to: URL(fileURLWithPath: a))
        #expect(
            AuditLog.digest(ofFiles: [a])
                == AuditLog.digest(Array(a.utf8) + [0] + Array(AuditLog.digest(changed).utf8) + [0]))
    }

    /// A file is read again only when stat(2) says it changed, or when it changed so lately that
    /// a write of the same size could still follow within the same stamp (git's racy rule): a
    /// reload hashes a 40 MB zone file once, not at every node that registers.
    @Test func aFileIsHashedAgainWhenItsStampChangesOrItChangedJustNow() throws {
        let dir = try TemporaryDirectory("nearcast-digest")
        func stamp(_ path: String) -> timespec {
            var st = stat()
            stat(path, &st)
            return st.st_mtim
        }
        func setStamp(_ path: String, _ t: timespec) { _ = utimensat(AT_FDCWD, path, [t, t], 0) }
        /// The digest of `path` holding `text`, as `digest(ofFiles:)` gives it.
        func holding(_ path: String, _ text: String) -> String {
            AuditLog.digest(Array(path.utf8) + [0] + Array(AuditLog.digest(Array(text.utf8)).utf8) + [0])
        }
        // In place (the same inode), as an editor that rewrites a file does.
        func rewrite(_ path: String, _ text: String) throws {
            try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        }
        let path = try dir.write("one", to: "old")
        let old = timespec(tv_sec: time(nil) - 10, tv_nsec: 0)
        setStamp(path, old)
        #expect(AuditLog.digest(ofFiles: [path]) == holding(path, "one"))
        // The same size under the same stamp is taken for the same file: it is not read again.
        try rewrite(path, "two")
        setStamp(path, old)
        #expect(AuditLog.digest(ofFiles: [path]) == holding(path, "one"))
        // Any other stamp is a change.
        try rewrite(path, "two")
        #expect(AuditLog.digest(ofFiles: [path]) == holding(path, "two"))
        // Changed half a second ago: well past the stamp's grain, so kept as well.
        var clock = timespec()
        clock_gettime(CLOCK_REALTIME, &clock)
        let halfASecondAgo = Int(clock.tv_sec) * 1_000_000_000 + Int(clock.tv_nsec) - 500_000_000
        let recent = timespec(tv_sec: halfASecondAgo / 1_000_000_000, tv_nsec: halfASecondAgo % 1_000_000_000)
        try rewrite(path, "six")
        setStamp(path, recent)
        #expect(AuditLog.digest(ofFiles: [path]) == holding(path, "six"))
        try rewrite(path, "sev")
        setStamp(path, recent)
        #expect(AuditLog.digest(ofFiles: [path]) == holding(path, "six"))
        // Changed just now: read each time, even under the same stamp.
        let fresh = try dir.write("thr", to: "fresh")
        let now = stamp(fresh)
        #expect(AuditLog.digest(ofFiles: [fresh]) == holding(fresh, "thr"))
        try rewrite(fresh, "fou")
        setStamp(fresh, now)
        #expect(AuditLog.digest(ofFiles: [fresh]) == holding(fresh, "fou"))
    }

    /// What a reader of the log (a person, `jq`, a SIEM) relies on: the time in RFC 3339, UTC,
    /// with milliseconds, and the digests as SHA-256 in lowercase hex.
    @Test func anEntryIsStampedInUTCWithMillisecondsAndItsDigestsAreLowercaseHex() throws {
        let before = Date()
        let entry = AuditLog.entry(
            who: "w", action: "record", target: "t.", detail: "d", before: "", after: "")
        let after = Date()
        #expect(entry.time.wholeMatch(of: /\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z/) != nil, "\(entry.time)")
        let stamped = try Date(entry.time, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true))
        #expect(stamped >= before.addingTimeInterval(-0.001) && stamped <= after)
        #expect(AuditLog.digest([]) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(
            AuditLog.digest(Array("abc".utf8))
                == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }
}
