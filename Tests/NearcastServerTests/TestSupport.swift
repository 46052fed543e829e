import DNSWire
import Foundation
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Helpers for tests that run real programs: nearcastd, dig, kdig, nsd.
enum TestSupport {
    /// The folder holding the built products (nearcastd, nearcast), next to the test bundle.
    static var productsDirectory: URL {
        let bundle = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        var dir = bundle.deletingLastPathComponent()
        // Swift Testing may run from inside the .xctest bundle on some toolchains.
        if dir.lastPathComponent.hasSuffix(".xctest") { dir = dir.deletingLastPathComponent() }
        return dir
    }

    static func product(_ name: String) throws -> String {
        let path = productsDirectory.appendingPathComponent(name).path
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw TestFailure("\(name) is not built at \(path); run `swift build --build-tests` first")
        }
        return path
    }

    static var fixtures: URL { Bundle.module.resourceURL!.appendingPathComponent("Fixtures") }

    static func tool(_ name: String) throws -> String {
        for dir in ["/usr/bin", "/usr/sbin", "/bin", "/sbin", "/usr/local/bin", "/usr/local/sbin"] {
            let p = dir + "/" + name
            if FileManager.default.isExecutableFile(atPath: p) { return p }
        }
        throw TestFailure("\(name) is not installed; run tools/install-deps.sh")
    }

    /// A port free now on 127.0.0.1 and ::1 for UDP and TCP, and never handed out before in this
    /// process: tests run in parallel, and two of them (or a daemon's DNS and API ports) must not
    /// get the same port between one's check and its server's bind.
    static func freePort() throws -> Int {
        for _ in 0..<50 {
            let port = Int.random(in: 20000..<60000)
            guard handedOut.withLock({ $0.insert(port).inserted }) else { continue }
            if portIsFree(port) { return port }
        }
        throw TestFailure("no free port found")
    }

    private static let handedOut = Mutex<Set<Int>>([])

    private static func portIsFree(_ port: Int) -> Bool {
        for (family, type) in [(AF_INET, SOCK_DGRAM), (AF_INET, SOCK_STREAM), (AF_INET6, SOCK_DGRAM), (AF_INET6, SOCK_STREAM)] {
            let fd = socket(family, Int32(type.rawValue), 0)
            guard fd >= 0 else { return false }
            defer { close(fd) }
            var one: Int32 = 1
            setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
            let ok: Bool
            if family == AF_INET {
                var a = sockaddr_in()
                a.sin_family = sa_family_t(AF_INET)
                a.sin_port = in_port_t(port).bigEndian
                a.sin_addr.s_addr = inet_addr("127.0.0.1")
                ok = withUnsafePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } } == 0
            } else {
                var a = sockaddr_in6()
                a.sin6_family = sa_family_t(AF_INET6)
                a.sin6_port = in_port_t(port).bigEndian
                a.sin6_addr = in6addr_loopback
                ok = withUnsafePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) } } == 0
            }
            if !ok { return false }
        }
        return true
    }

    struct Output {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    /// Runs a program to completion (killed after `timeout` seconds) and captures its output.
    @discardableResult
    static func run(_ path: String, _ args: [String], timeout: Double = 20, environment: [String: String]? = nil) throws -> Output {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: path)
        p.arguments = args
        if let environment { p.environment = environment }
        // Output goes to files, so a full pipe can never block the program.
        let tmp = FileManager.default.temporaryDirectory
        let outURL = tmp.appendingPathComponent("nearcast-run-\(UUID().uuidString).out")
        let errURL = tmp.appendingPathComponent("nearcast-run-\(UUID().uuidString).err")
        FileManager.default.createFile(atPath: outURL.path, contents: nil)
        FileManager.default.createFile(atPath: errURL.path, contents: nil)
        defer {
            try? FileManager.default.removeItem(at: outURL)
            try? FileManager.default.removeItem(at: errURL)
        }
        p.standardOutput = try FileHandle(forWritingTo: outURL)
        p.standardError = try FileHandle(forWritingTo: errURL)
        p.standardInput = FileHandle.nullDevice
        try p.run()
        let deadline = Date().addingTimeInterval(timeout)
        while p.isRunning && Date() < deadline { usleep(10_000) }
        if p.isRunning {
            p.terminate()
            p.waitUntilExit()
            throw TestFailure("\(path) \(args.joined(separator: " ")) did not finish in \(timeout) s")
        }
        p.waitUntilExit()
        let o = (try? Data(contentsOf: outURL)) ?? Data()
        let e = (try? Data(contentsOf: errURL)) ?? Data()
        return Output(status: p.terminationStatus, stdout: String(decoding: o, as: UTF8.self), stderr: String(decoding: e, as: UTF8.self))
    }
}

struct TestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ d: String) { description = d }
}

/// A server process started for a test, stopped (and reaped) by `stop()`.
final class ServerProcess: @unchecked Sendable {
    // @unchecked: used from one test at a time; Process itself is thread-safe for these calls.
    let process = Process()
    let stderrFile: URL

    init(_ path: String, _ args: [String]) throws {
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = args
        stderrFile = FileManager.default.temporaryDirectory.appendingPathComponent("nearcast-test-\(UUID().uuidString).log")
        FileManager.default.createFile(atPath: stderrFile.path, contents: nil)
        let h = try FileHandle(forWritingTo: stderrFile)
        process.standardError = h
        process.standardOutput = h
        process.standardInput = FileHandle.nullDevice
        try process.run()
    }

    var log: String { (try? String(contentsOf: stderrFile, encoding: .utf8)) ?? "" }

    /// Waits until `probe` succeeds (the server answers), or fails after `timeout` seconds.
    func waitUntilReady(timeout: Double = 15, probe: () -> Bool) throws {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if !process.isRunning { throw TestFailure("server exited early (\(process.terminationStatus)):\n\(log)") }
            if probe() { return }
            usleep(50_000)
        }
        throw TestFailure("server did not answer within \(timeout) s:\n\(log)")
    }

    /// Sends `signal` and waits for the exit; returns the exit status.
    @discardableResult
    func stop(signal: Int32 = SIGTERM, timeout: Double = 10) -> Int32 {
        if process.isRunning {
            kill(process.processIdentifier, signal)
            let deadline = Date().addingTimeInterval(timeout)
            while process.isRunning && Date() < deadline { usleep(10_000) }
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        }
        process.waitUntilExit()
        try? FileManager.default.removeItem(at: stderrFile)
        return process.terminationStatus
    }
}

/// A minimal blocking DNS client over UDP and TCP, for tests that need exact bytes.
enum RawClient {
    static func sockaddr(_ host: String, _ port: Int) -> (Int32, Data) {
        if host.contains(":") {
            var a = sockaddr_in6()
            a.sin6_family = sa_family_t(AF_INET6)
            a.sin6_port = in_port_t(port).bigEndian
            _ = inet_pton(AF_INET6, host, &a.sin6_addr)
            return (AF_INET6, Data(bytes: &a, count: MemoryLayout<sockaddr_in6>.size))
        }
        var a = sockaddr_in()
        a.sin_family = sa_family_t(AF_INET)
        a.sin_port = in_port_t(port).bigEndian
        a.sin_addr.s_addr = inet_addr(host)
        return (AF_INET, Data(bytes: &a, count: MemoryLayout<sockaddr_in>.size))
    }

    static func setTimeout(_ fd: Int32, _ seconds: Double) {
        var tv = timeval(tv_sec: Int(seconds), tv_usec: Int((seconds - Double(Int(seconds))) * 1e6))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    }

    /// Sends one datagram and returns the reply whose ID and question match the query (as a resolver
    /// would: a stray late datagram on a reused port is ignored). Resends up to `tries` times.
    static func udp(_ query: [UInt8], host: String = "127.0.0.1", port: Int, timeout: Double = 1, tries: Int = 3) -> [UInt8]? {
        let (family, addr) = sockaddr(host, port)
        let fd = socket(family, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        setTimeout(fd, timeout)
        var buf = [UInt8](repeating: 0, count: 65536)
        for _ in 0..<tries {
            let sent = addr.withUnsafeBytes { a in
                query.withUnsafeBytes { q in
                    sendto(fd, q.baseAddress, q.count, 0, a.baseAddress!.assumingMemoryBound(to: Glibc.sockaddr.self), socklen_t(a.count))
                }
            }
            guard sent == query.count else { return nil }
            while true {
                let n = recv(fd, &buf, buf.count, 0)
                if n <= 0 { break }  // timeout: send again
                let reply = Array(buf[0..<n])
                if matches(reply, query) { return reply }
            }
        }
        return nil
    }

    /// Whether `reply` answers `query`: same ID and, when both carry one, the same question
    /// (compared case-insensitively).
    static func matches(_ reply: [UInt8], _ query: [UInt8]) -> Bool {
        guard reply.count >= 12, reply[0] == query[0], reply[1] == query[1] else { return false }
        guard let q = try? DNSMessage(wire: query), let r = try? DNSMessage(wire: reply) else { return true }
        return r.questions.isEmpty || q.questions.isEmpty || r.questions == q.questions
    }

    /// Opens a TCP connection; the caller closes it.
    static func tcpConnect(host: String = "127.0.0.1", port: Int, timeout: Double = 2) -> Int32? {
        let (family, addr) = sockaddr(host, port)
        let fd = socket(family, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        setTimeout(fd, timeout)
        let ok = addr.withUnsafeBytes { a in
            connect(fd, a.baseAddress!.assumingMemoryBound(to: Glibc.sockaddr.self), socklen_t(a.count))
        }
        if ok != 0 {
            close(fd)
            return nil
        }
        return fd
    }

    static func tcpSend(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } == bytes.count
    }

    /// Reads exactly `count` bytes, or nil on EOF or timeout.
    static func tcpRead(_ fd: Int32, _ count: Int) -> [UInt8]? {
        var out: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: count)
        while out.count < count {
            let n = recv(fd, &buf, count - out.count, 0)
            if n <= 0 { return nil }
            out += buf[0..<n]
        }
        return out
    }

    /// Reads one length-prefixed DNS message.
    static func tcpReadMessage(_ fd: Int32) -> [UInt8]? {
        guard let len = tcpRead(fd, 2) else { return nil }
        return tcpRead(fd, Int(len[0]) << 8 | Int(len[1]))
    }

    static func tcp(_ query: [UInt8], host: String = "127.0.0.1", port: Int) -> [UInt8]? {
        guard let fd = tcpConnect(host: host, port: port) else { return nil }
        defer { close(fd) }
        guard tcpSend(fd, [UInt8(query.count >> 8), UInt8(query.count & 0xFF)] + query) else { return nil }
        return tcpReadMessage(fd)
    }

    static func query(_ name: String, _ type: RRType, id: UInt16 = 1, edns: EDNS? = nil, qclass: RRClass = .in) -> [UInt8] {
        var h = DNSHeader()
        h.id = id
        return try! DNSMessage(header: h, questions: [DNSQuestion(name: try! DNSName(name), type: type, qclass: qclass)], edns: edns).serialize()
    }
}
