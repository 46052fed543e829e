import Foundation
import NearcastTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The launcher every test starts programs with: no child can hang the suite.
@Suite(.timeLimit(.minutes(1))) struct ChildProcessTests {
    @Test func aProgramRunToCompletionGivesItsStatusAndOutputApart() throws {
        let out = try ChildProcess.run("/bin/sh", ["-c", "echo out; echo err >&2; exit 3"], timeout: 10)
        #expect(out.status == 3)
        #expect(out.stdout == "out\n")
        #expect(out.stderr == "err\n")
    }

    @Test func aChildThatNeverExitsFailsWithinItsLimitWithWhatItSaid() throws {
        let start = ContinuousClock.now
        do {
            try ChildProcess.run("/bin/sh", ["-c", "echo still here; exec sleep 600"], timeout: 1)
            Issue.record("a child that never exits must fail the run")
        } catch let failure as TestFailure {
            #expect(failure.description.contains("did not finish in 1.0 s"), "\(failure)")
            #expect(failure.description.contains("still here"), "the child's output is in the failure: \(failure)")
        }
        #expect(ContinuousClock.now - start < .seconds(10), "killed at its deadline, not waited for")
    }

    @Test func theDeadlineKillsWhatTheChildStartedToo() throws {
        // The grandchild holds the output file open: were it left alive, it would outlive the test.
        let pidFile = FileManager.default.temporaryDirectory.appendingPathComponent("nearcast-grandchild-\(getpid())")
            .path
        defer { unlink(pidFile) }
        _ = try? ChildProcess.run("/bin/sh", ["-c", "sleep 600 & echo $! >\(pidFile); wait"], timeout: 1)
        let grandchild = pid_t(
            try String(contentsOfFile: pidFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines))!
        try poll("the grandchild \(grandchild) ends", timeout: 10) { kill(grandchild, 0) != 0 }
    }

    @Test func aServerThatNeverGetsReadyFailsWithItsLog() throws {
        let server = try ServerProcess("/bin/sh", ["-c", "echo booting; exec sleep 600"])
        defer { server.stop(signal: SIGKILL) }
        #expect(throws: TestFailure.self) { try server.waitUntilReady(timeout: 0.5) { false } }
        do {
            try server.waitUntilReady(timeout: 0.5) { false }
        } catch {
            #expect("\(error)".contains("booting"), "\(error)")
        }
    }

    @Test func aServerThatExitsEarlyFailsAtOnce() throws {
        let server = try ServerProcess("/bin/sh", ["-c", "echo cannot bind; exit 1"])
        defer { server.stop() }
        let start = ContinuousClock.now
        #expect(throws: TestFailure.self) { try server.waitUntilReady(timeout: 30) { false } }
        #expect(ContinuousClock.now - start < .seconds(10))
        #expect(server.exitStatus == 1)
    }

    @Test func aStopThatTheServerIgnoresEndsInSIGKILL() throws {
        let server = try ServerProcess("/bin/sh", ["-c", "trap '' TERM; echo ignoring; while :; do sleep 1; done"])
        try server.waitUntilReady { server.log.contains("ignoring") }
        #expect(server.stop(signal: SIGTERM, timeout: 0.5) == 128 + SIGKILL)
    }

    /// Foundation's Process missed exits when many tests spawned and reaped at once; waitpid on
    /// each child's own thread cannot.
    @Test func manyChildrenAtOnceAreAllReaped() async throws {
        try await withThrowingTaskGroup(of: Int32.self) { group in
            for i in 0..<64 {
                group.addTask { try ChildProcess.run("/bin/sh", ["-c", "exit \(i % 7)"], timeout: 20).status }
            }
            var statuses: [Int32] = []
            for try await s in group { statuses.append(s) }
            #expect(statuses.sorted() == (0..<64).map { Int32($0 % 7) }.sorted())
        }
    }

    @Test func aSignalledChildReportsTheShellsStatus() throws {
        let out = try ChildProcess.run("/bin/sh", ["-c", "kill -USR1 $$"], timeout: 10)
        #expect(out.status == 128 + SIGUSR1)
    }

    @Test func daemonPortsAreReadFromItsLog() {
        let log =
            "nearcastd: dns listening on 127.0.0.1:40001\nnoise\nnearcastd: dns listening on [::1]:40001\nnearcastd: api listening on 127.0.0.1:40002\nnearcastd: ready\n"
        #expect(Daemon.ports(in: log) == ["dns": [40001, 40001], "api": [40002]])
    }
}
