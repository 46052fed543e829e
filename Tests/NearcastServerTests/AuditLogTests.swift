import Foundation
import NearcastServer
import Testing

/// The audit log read back from its end (`GET /v1/audit`, the dashboard's last changes).
@Suite(.timeLimit(.minutes(1))) struct AuditLogTests {
    @Test func theLastEntriesAreReadFromTheEndOldestFirstAndATornLineIsLeftOut() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("nearcast-audit-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
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
}
