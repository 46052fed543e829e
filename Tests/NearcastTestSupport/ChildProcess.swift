import Foundation
import Synchronization

// Testing only exists where tests are built; `swift build -c release` builds this target too.
#if canImport(Testing)
import Testing
#endif

#if canImport(Glibc)
import Glibc
#endif

/// A program a test started: spawned with posix_spawn in a process group of its own, its output in
/// files, and its exit reaped by a thread of its own blocked in `waitpid(pid)`, which returns for
/// that child whatever else the process is doing (Foundation's Process can miss a child's exit
/// when many tests spawn and reap at once, and a test then waits for ever).
///
/// Every wait has a deadline. The output files live in `TestLogs.directory` while the child runs,
/// so a watchdog that fires can show what each child said.
public final class ChildProcess: Sendable {
    /// The child's process id, which is also its process group's id.
    public let pid: pid_t
    /// The program and its arguments, for messages.
    public let commandLine: String
    /// Where the child's standard output goes (and its standard error, when `stderrPath` is nil).
    public let stdoutPath: String
    public let stderrPath: String?
    private let reaped = Reaped()

    /// What the reaper thread learns: the exit status, and a semaphore signalled when it is known.
    private final class Reaped: Sendable {
        let status = Mutex<Int32?>(nil)
        let exited = DispatchSemaphore(value: 0)
    }

    /// Starts `path` with `arguments`, standard input from /dev/null. `environment` replaces the
    /// test's own when given. With `separateStderr`, standard error goes to a file of its own.
    public init(
        _ path: String, _ arguments: [String], environment: [String: String]? = nil, separateStderr: Bool = false
    ) throws {
        commandLine = ([path] + arguments).joined(separator: " ")
        let base = TestLogs.fileStem(for: path)
        stdoutPath = base + ".log"
        stderrPath = separateStderr ? base + ".err" : nil

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        let flags = O_WRONLY | O_CREAT | O_TRUNC | O_APPEND
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, stdoutPath, flags, 0o644)
        if let stderrPath {
            posix_spawn_file_actions_addopen(&actions, 2, stderrPath, flags, 0o644)
        } else {
            posix_spawn_file_actions_adddup2(&actions, 1, 2)
        }
        Self.closeInheritedDescriptors(&actions)

        // A group of its own (so a deadline kills what the child started too), default signal
        // dispositions and an empty mask: what the test process ignores is not the child's business.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        posix_spawnattr_setpgroup(&attributes, 0)
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attributes, &none)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for s in [SIGPIPE, SIGTERM, SIGINT, SIGHUP, SIGCHLD, SIGQUIT] { sigaddset(&defaults, s) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(
            &attributes, Int16(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        defer { for p in argv { free(p) } }
        var envStrings: [UnsafeMutablePointer<CChar>?]?
        if let environment { envStrings = environment.map { strdup("\($0.key)=\($0.value)") } + [nil] }
        defer { for p in envStrings ?? [] { free(p) } }

        var child: pid_t = 0
        let rc: Int32
        if var env = envStrings {
            rc = posix_spawn(&child, path, &actions, &attributes, argv, &env)
        } else {
            rc = posix_spawn(&child, path, &actions, &attributes, argv, environ)
        }
        guard rc == 0 else {
            throw TestFailure("cannot start \(commandLine): \(String(cString: strerror(rc)))")
        }
        pid = child
        TestLogs.note(pid: child, commandLine: commandLine, logPath: stdoutPath, test: Self.currentTest)
        let reaped = reaped
        let spawned = child
        Thread.detachNewThread {
            var raw: Int32 = 0
            while waitpid(spawned, &raw, 0) == -1 && errno == EINTR {}
            reaped.status.withLock { $0 = ChildProcess.decode(raw) }
            reaped.exited.signal()
        }
    }

    /// The child gets standard input, output and error and nothing else of the test process: an
    /// inherited pipe (the test runner's) would keep whoever reads it waiting for as long as the
    /// child lives, and an inherited socket would keep a port. glibc's closefrom action where it
    /// has one (2.34 and later; not in Swift's Glibc module, so found by name), else one close
    /// action per descriptor open now.
    static func closeInheritedDescriptors(_ actions: inout posix_spawn_file_actions_t) {
        typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
        if let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np") {
            if unsafeBitCast(symbol, to: CloseFrom.self)(&actions, 3) == 0 { return }
        }
        let open = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        for fd in open.compactMap(Int32.init) where fd > 2 && fcntl(fd, F_GETFD) >= 0 {
            posix_spawn_file_actions_addclose(&actions, fd)
        }
    }

    /// The test running now, for the watchdog's report.
    static var currentTest: String? {
        #if canImport(Testing)
        return Test.current?.name
        #else
        return nil
        #endif
    }

    /// The shell's convention: the exit code, or 128 + the signal that ended the child.
    static func decode(_ raw: Int32) -> Int32 {
        let signal = raw & 0x7F
        return signal == 0 ? (raw >> 8) & 0xFF : 128 + signal
    }

    /// The exit status once the child has ended (see `decode`), nil while it runs.
    public var exitStatus: Int32? { reaped.status.withLock { $0 } }
    public var isRunning: Bool { exitStatus == nil }

    /// Waits up to `timeout` seconds for the child to end; its exit status, or nil if it still runs.
    @discardableResult
    public func wait(timeout: Double) -> Int32? {
        if let s = exitStatus { return s }
        if reaped.exited.wait(timeout: .now() + timeout) == .success {
            reaped.exited.signal()  // let every later wait see it at once
        }
        return exitStatus
    }

    /// Sends `signal` to the child's whole process group.
    public func signal(_ signal: Int32) {
        if isRunning { kill(-pid, signal) }
    }

    /// Ends the child: `signal`, then SIGKILL to the group after `grace` seconds. Returns the exit
    /// status (the reaper always sees a SIGKILLed child end).
    @discardableResult
    public func stop(signal: Int32 = SIGTERM, grace: Double = 10) -> Int32 {
        self.signal(signal)
        if let s = wait(timeout: grace) { return s }
        kill(-pid, SIGKILL)
        return wait(timeout: 30) ?? 128 + SIGKILL
    }

    /// What the child wrote to standard output (and standard error, unless kept apart).
    public var output: String { Self.read(stdoutPath) }
    /// What the child wrote to standard error when kept apart.
    public var errorOutput: String { stderrPath.map(Self.read) ?? "" }

    static func read(_ path: String) -> String {
        guard let data = FileManager.default.contents(atPath: path) else { return "" }
        return String(decoding: data, as: UTF8.self)
    }

    /// Removes the output files; the child must have ended.
    public func removeOutput() {
        unlink(stdoutPath)
        if let stderrPath { unlink(stderrPath) }
        TestLogs.forget(pid: pid)
    }

    /// The last `lines` lines of the output, for failure messages.
    public func tail(_ lines: Int = 60) -> String {
        let all = (output + errorOutput).split(separator: "\n", omittingEmptySubsequences: false)
        return all.suffix(lines).joined(separator: "\n")
    }
}

extension ChildProcess {
    /// Runs `path` to completion: killed (its whole group) after `timeout` seconds, and then the
    /// test fails with what the program said. Standard output and error are kept apart.
    @discardableResult
    public static func run(
        _ path: String, _ arguments: [String], timeout: Double = 20, environment: [String: String]? = nil
    ) throws -> Output {
        let child = try ChildProcess(path, arguments, environment: environment, separateStderr: true)
        defer { child.removeOutput() }
        guard let status = child.wait(timeout: timeout) else {
            child.stop(signal: SIGKILL)
            throw TestFailure(
                "\(child.commandLine) did not finish in \(timeout) s and was killed; it said:\n\(child.tail())")
        }
        return Output(status: status, stdout: child.output, stderr: child.errorOutput)
    }

    /// What a program run to completion printed, and how it ended.
    public struct Output: Sendable {
        public var status: Int32
        public var stdout: String
        public var stderr: String
    }
}

/// Where children's output lives while they run. Under CI the watchdog (tools/test-watchdog.sh)
/// sets NEARCAST_TEST_LOG_DIR and, if the suite overruns, prints every file still there: the
/// children that were running. Each child also leaves a `.cmd` file with its command line.
public enum TestLogs {
    public static let directory: String = {
        let dir =
            ProcessInfo.processInfo.environment["NEARCAST_TEST_LOG_DIR"]
            ?? FileManager.default.temporaryDirectory.appendingPathComponent("nearcast-test-logs-\(getpid())").path
        try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return dir
    }()

    private static let counter = Atomic<Int>(0)

    static func fileStem(for program: String) -> String {
        let n = counter.add(1, ordering: .relaxed).newValue
        return "\(directory)/\(getpid())-\(n)-\((program as NSString).lastPathComponent)"
    }

    static func note(pid: pid_t, commandLine: String, logPath: String, test: String?) {
        let text = "\(commandLine)\noutput: \(logPath)\n" + (test.map { "test: \($0)\n" } ?? "")
        FileManager.default.createFile(atPath: "\(directory)/\(pid).cmd", contents: Data(text.utf8))
    }

    static func forget(pid: pid_t) { unlink("\(directory)/\(pid).cmd") }
}

/// A test's failure with a message that says what went wrong.
public struct TestFailure: Error, CustomStringConvertible {
    public var description: String
    public init(_ d: String) { description = d }
}
