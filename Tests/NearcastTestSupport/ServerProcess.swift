import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A server a test started (nearcastd, nsd, kxdpgun…), its standard output and error in one log,
/// stopped and reaped by `stop()` with a deadline.
public final class ServerProcess: Sendable {
    public let child: ChildProcess

    public init(_ path: String, _ arguments: [String], environment: [String: String]? = nil) throws {
        child = try ChildProcess(path, arguments, environment: environment)
    }

    /// Everything the server has printed so far.
    public var log: String { child.output }
    public var isRunning: Bool { child.isRunning }
    public var exitStatus: Int32? { child.exitStatus }

    /// Waits until `probe` succeeds (the server answers), or fails after `timeout` seconds, or as
    /// soon as the server exits, with its log.
    public func waitUntilReady(timeout: Double = 15, probe: () -> Bool) throws {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let status = child.exitStatus {
                throw TestFailure("\(child.commandLine) exited early (\(status)):\n\(child.tail())")
            }
            if probe() { return }
            usleep(20_000)
        }
        throw TestFailure("\(child.commandLine) was not ready within \(timeout) s:\n\(child.tail())")
    }

    /// Waits up to `timeout` seconds for the server to exit on its own; its status, or nil.
    @discardableResult
    public func waitForExit(timeout: Double) -> Int32? { child.wait(timeout: timeout) }

    /// Sends `signal`, waits up to `timeout` seconds for the exit (then SIGKILL), removes the log and
    /// returns the exit status: the code, or 128 + the signal that ended it.
    @discardableResult
    public func stop(signal: Int32 = SIGTERM, timeout: Double = 10) -> Int32 {
        stopReadingLog(signal: signal, timeout: timeout).status
    }

    /// `stop`, and what the server had printed by the time it ended.
    public func stopReadingLog(signal: Int32 = SIGTERM, timeout: Double = 10) -> (status: Int32, log: String) {
        let status = child.stop(signal: signal, grace: timeout)
        let log = child.output
        child.removeOutput()
        return (status, log)
    }
}

/// nearcastd started for a test: it binds port 0 for DNS and the API and says on standard output
/// which ports it got (`nearcastd: dns listening on ADDR:PORT`, `nearcastd: api listening on
/// ADDR:PORT`, then `nearcastd: ready`), so no two tests can meet on a port.
public final class Daemon: Sendable {
    public let process: ServerProcess
    /// The DNS port of the first listen address (UDP and TCP).
    public let dnsPort: Int
    /// The management API's port, when it serves one.
    public let apiPort: Int?

    /// Starts `nearcastd` (the build's, or `executable`) with `arguments`, through `launcher` when
    /// given (e.g. `ip netns exec NS`), and waits until it says it is ready. `environment`:
    /// variables added to the test's own.
    public init(
        _ arguments: [String], launcher: [String] = [], executable: String? = nil, environment: [String: String] = [:],
        timeout: Double = 30
    ) throws {
        let nearcastd = try executable ?? Repository.product("nearcastd")
        let env = environment.isEmpty ? nil : ProcessInfo.processInfo.environment.merging(environment) { $1 }
        if let first = launcher.first {
            process = try ServerProcess(first, Array(launcher.dropFirst()) + [nearcastd] + arguments, environment: env)
        } else {
            process = try ServerProcess(nearcastd, arguments, environment: env)
        }
        do {
            let p = process
            try p.waitUntilReady(timeout: timeout) { p.log.contains("nearcastd: ready\n") }
        } catch {
            process.stop(signal: SIGKILL)
            throw error
        }
        let ports = Self.ports(in: process.log)
        guard let dns = ports["dns"]?.first else { throw TestFailure("nearcastd said no DNS port:\n\(process.log)") }
        dnsPort = dns
        apiPort = ports["api"]?.first
    }

    /// The ports a daemon's log says it listens on, by kind (dns, api), in the order bound.
    public static func ports(in log: String) -> [String: [Int]] {
        var out: [String: [Int]] = [:]
        for line in log.split(separator: "\n") where line.hasPrefix("nearcastd: ") {
            let words = line.split(separator: " ")
            guard words.count == 5, words[2] == "listening", words[3] == "on", let colon = words[4].lastIndex(of: ":"),
                let port = Int(words[4][words[4].index(after: colon)...])
            else { continue }
            out[String(words[1]), default: []].append(port)
        }
        return out
    }

    public var log: String { process.log }
    public var isRunning: Bool { process.isRunning }
    /// Each thread's permitted capabilities (`ServerProcess.permittedCapabilities`).
    public var permittedCapabilities: [String: String] { process.permittedCapabilities }
    public var pid: pid_t { process.child.pid }

    /// Waits until `probe` holds (e.g. a line in the log), failing with the log after `timeout` s
    /// or as soon as the daemon exits.
    public func waitUntilReady(timeout: Double = 15, probe: () -> Bool) throws {
        try process.waitUntilReady(timeout: timeout, probe: probe)
    }

    /// The API's address for the CLI's --api.
    public var api: String { "127.0.0.1:\(apiPort ?? 0)" }

    /// dig asking this daemon (127.0.0.1 at its DNS port), `args` after the server.
    public func dig(_ args: [String]) throws -> TestSupport.Output {
        try TestSupport.run(try TestSupport.tool("dig"), ["@127.0.0.1", "-p", "\(dnsPort)"] + args)
    }

    /// What dig +short prints for `name` and `type` asked of this daemon, with `options` (+subnet=…).
    public func ask(_ name: String, _ type: String = "A", _ options: [String] = []) throws -> String {
        try dig([name, type, "+short"] + options).stdout
    }

    /// The CLI (`nearcast`) against this daemon's API, with `token` (in NEARCAST_TOKEN).
    public func cli(_ args: [String], token: String) throws -> TestSupport.Output {
        try TestSupport.run(
            try TestSupport.product("nearcast"), args + ["--api", api],
            environment: ProcessInfo.processInfo.environment.merging(["NEARCAST_TOKEN": token]) { $1 })
    }

    @discardableResult
    public func stop(signal: Int32 = SIGTERM, timeout: Double = 10) -> Int32 {
        process.stop(signal: signal, timeout: timeout)
    }

    /// `stop`, and what the daemon had printed by the time it ended.
    public func stopReadingLog(signal: Int32 = SIGTERM, timeout: Double = 10) -> (status: Int32, log: String) {
        process.stopReadingLog(signal: signal, timeout: timeout)
    }
}

extension ServerProcess {
    /// The permitted capabilities of each of the process's threads as /proc says them (CapPrm, in
    /// hex), by thread name and id.
    public var permittedCapabilities: [String: String] {
        let tasks = "/proc/\(child.pid)/task"
        var out: [String: String] = [:]
        for tid in (try? FileManager.default.contentsOfDirectory(atPath: tasks)) ?? [] {
            guard let status = try? String(contentsOfFile: "\(tasks)/\(tid)/status", encoding: .utf8),
                let line = status.split(separator: "\n").first(where: { $0.hasPrefix("CapPrm:") })
            else { continue }
            let name = (try? String(contentsOfFile: "\(tasks)/\(tid)/comm", encoding: .utf8)) ?? "?"
            out["\(name.trimmingCharacters(in: .whitespacesAndNewlines)) \(tid)"] =
                line.dropFirst("CapPrm:".count).trimmingCharacters(in: .whitespaces)
        }
        return out
    }
}
