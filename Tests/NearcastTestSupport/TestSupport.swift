import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The short names tests use for running programs and finding files.
public enum TestSupport {
    public typealias Output = ChildProcess.Output

    /// Runs a program to completion, killed after `timeout` seconds (the test then fails with its output).
    @discardableResult
    public static func run(_ path: String, _ args: [String], timeout: Double = 20, environment: [String: String]? = nil)
        throws -> Output
    {
        try ChildProcess.run(path, args, timeout: timeout, environment: environment)
    }

    public static func product(_ name: String) throws -> String { try Repository.product(name) }
    public static func tool(_ name: String) throws -> String { try Repository.tool(name) }

    /// Tests/Fixtures.
    public static var fixtures: URL { Repository.root.appendingPathComponent("Tests/Fixtures") }

    /// A port the kernel handed out as free just now, for programs that cannot bind port 0 and say
    /// which port they got (nsd, a health check's closed port). nearcastd binds port 0 itself: use
    /// `Daemon` for it. No port is handed out twice in one run.
    public static func unusedPort() throws -> Int {
        for _ in 0..<50 {
            guard let port = kernelPort() else { continue }
            if handedOut.withLock({ $0.insert(port).inserted }) { return port }
        }
        throw TestFailure("the kernel handed out no unused port")
    }

    private static let handedOut = Mutex<Set<Int>>([])

    /// Binds TCP on 127.0.0.1 port 0, reads the port and closes; nil if that port is not also free
    /// for UDP.
    private static func kernelPort() -> Int? {
        guard let tcp = try? Loopback.bind(SOCK_STREAM, port: 0) else { return nil }
        defer { close(tcp.fd) }
        guard let udp = try? Loopback.bind(SOCK_DGRAM, port: tcp.port) else { return nil }
        close(udp.fd)
        return tcp.port
    }

    /// A self-signed certificate (EC P-256, two days) for `subjectAltName` (`DNS:node.test`,
    /// `IP:127.0.0.1`), made by openssl in a new folder under the temporary directory: the paths of
    /// the certificate (its own CA) and of its key.
    public static func selfSignedCertificate(commonName: String, subjectAltName: String) throws -> (
        cert: String, key: String
    ) {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("nearcast-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let cert = dir.appendingPathComponent("cert.pem").path
        let key = dir.appendingPathComponent("key.pem").path
        let openssl = try run(
            try tool("openssl"),
            [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2",
                "-subj", "/CN=\(commonName)", "-addext", "subjectAltName=\(subjectAltName)", "-keyout", key, "-out",
                cert,
            ])
        guard openssl.status == 0 else { throw TestFailure("openssl req: \(openssl.stderr)") }
        return (cert, key)
    }
}

/// Sockets bound on 127.0.0.1.
enum Loopback {
    /// A socket of `type` bound to `port` (0: the kernel picks), and the port it got.
    static func bind(_ type: __socket_type, port: Int) throws -> (fd: Int32, port: Int) {
        let fd = socket(AF_INET, Int32(type.rawValue), 0)
        guard fd >= 0 else { throw TestFailure("socket: \(String(cString: strerror(errno)))") }
        var a = sockaddr_in()
        a.sin_family = sa_family_t(AF_INET)
        a.sin_port = in_port_t(port).bigEndian
        a.sin_addr.s_addr = inet_addr("127.0.0.1")
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &a) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.bind(fd, $0, len) == 0 && getsockname(fd, $0, &len) == 0
            }
        }
        guard bound else {
            let error = String(cString: strerror(errno))
            close(fd)
            throw TestFailure("bind 127.0.0.1:\(port): \(error)")
        }
        return (fd, Int(UInt16(bigEndian: a.sin_port)))
    }
}

/// A port no one answers on and no one else can take while this lives: a TCP socket bound to it
/// that never listens (connections are refused), for health checks that must fail. A port closed
/// after use is no such thing: the kernel hands it to the next test that binds port 0.
public final class RefusingPort: Sendable {
    public let port: Int
    private let fd: Int32

    public init() throws {
        (fd, port) = try Loopback.bind(SOCK_STREAM, port: 0)
    }

    deinit { close(fd) }
}

extension TestSupport {
    /// Runs `body`, which blocks (waits on daemons, runs programs), on a thread of its own, so
    /// that it holds none of Swift's cooperative threads: on a 2-core machine two blocking tests
    /// would otherwise hold them all, and the timers of the tests that need them (a health
    /// monitor's) would not fire. An expectation that fails inside is reported with its file and
    /// line (and fails the run), under the name «unknown»: the thread carries no test context.
    public static func blocking<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { (c: CheckedContinuation<T, any Error>) in
            Thread.detachNewThread { c.resume(with: Result { try body() }) }
        }
    }
}

/// Work run on a thread of its own while the test goes on, joined with a deadline.
public final class BackgroundWork<T: Sendable>: Sendable {
    private let result = Mutex<Result<T, any Error>?>(nil)
    private let finished = DispatchSemaphore(value: 0)

    /// Starts `body` on a new thread.
    public init(_ body: @escaping @Sendable () throws -> T) {
        Thread.detachNewThread { [self] in
            let r = Result { try body() }
            result.withLock { $0 = r }
            finished.signal()
        }
    }

    /// What `body` returned or threw; a failure if it has not ended within `timeout` seconds.
    public func wait(timeout: Double) throws -> T {
        guard finished.wait(timeout: .now() + timeout) == .success else {
            throw TestFailure("work in the background did not end within \(timeout) s")
        }
        finished.signal()  // a second wait returns at once
        return try result.withLock { $0! }.get()
    }
}

/// A new directory for one test's files, under one directory of this test process's own, which is
/// removed with everything in it when the process exits (and, should the process have been killed,
/// by the next test process). Removal does not hang on the value's lifetime: a daemon started with
/// a file of it can outlive the test's last use of the value.
public final class TemporaryDirectory: Sendable {
    public let path: String

    public init(_ label: String = "nearcast") throws {
        path = try Self.root() + "/\(label)-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    /// A new directory's URL, for tests that build paths with URLs.
    public static func url(_ label: String = "nearcast") throws -> URL {
        URL(fileURLWithPath: try TemporaryDirectory(label).path)
    }

    /// A file holding `text`, alone in a new directory: its URL.
    public static func file(_ name: String, holding text: String) throws -> URL {
        URL(fileURLWithPath: try TemporaryDirectory(name).write(text, to: name))
    }

    /// The directory as a URL.
    public var url: URL { URL(fileURLWithPath: path) }

    /// The path of `name` in this directory.
    public func file(_ name: String) -> String { path + "/" + name }

    /// Writes `text` to `name` in this directory; its path.
    @discardableResult
    public func write(_ text: String, to name: String) throws -> String {
        try text.write(toFile: file(name), atomically: true, encoding: .utf8)
        return file(name)
    }

    private static let prefix = "nearcast-tests-"

    /// This process's directory, made once; removed at exit. Those of processes that are gone are
    /// removed first.
    private static func root() throws -> String {
        try made.withLock { made in
            let base = FileManager.default.temporaryDirectory.path
            let root = base + "/" + prefix + "\(getpid())"
            if made { return root }
            for name in (try? FileManager.default.contentsOfDirectory(atPath: base)) ?? []
            where name.hasPrefix(prefix) {
                guard let pid = Int32(name.dropFirst(prefix.count)), pid != getpid(), kill(pid, 0) != 0, errno == ESRCH
                else { continue }
                try? FileManager.default.removeItem(atPath: base + "/" + name)
            }
            try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
            atexit { TemporaryDirectory.removeRoot() }
            made = true
            return root
        }
    }

    private static let made = Mutex(false)

    private static func removeRoot() {
        try? FileManager.default.removeItem(
            atPath: FileManager.default.temporaryDirectory.path + "/" + prefix + "\(getpid())")
    }
}
