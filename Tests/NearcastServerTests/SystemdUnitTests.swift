import Foundation
import NearcastConfiguration
import NearcastTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// nearcastd as systemd runs it (issue 30, dist/nearcastd.service): readiness, reloads and the stop
/// told to the service manager (`Type=notify`, sd_notify), and the unit's reload failing on a
/// broken config without the daemon being asked, so what it serves stays.
@Suite(.timeLimit(.minutes(2))) struct SystemdUnitTests {
    @Test func readinessReloadsAndTheStopAreToldToTheManager() throws {
        let dir = try Self.directory()
        let zone = dir.appendingPathComponent("example.test.zone")
        try FileManager.default.copyItem(at: TestSupport.fixtures.appendingPathComponent("example.test.zone"), to: zone)
        let conf = dir.appendingPathComponent("nearcast.yaml")
        try """
        listen: ["127.0.0.1:0"]
        zones: [{ origin: example.test., file: \(zone.path) }]
        """.write(to: conf, atomically: true, encoding: .utf8)
        let manager = try NotifySocket(dir.appendingPathComponent("notify").path)
        let daemon = try Daemon(["--config", conf.path], environment: ["NOTIFY_SOCKET": manager.path])
        defer { daemon.stop() }

        let ready = try #require(manager.next(), "READY=1 once it answers")
        #expect(
            ready.contains("READY=1") && ready.contains("MAINPID=\(daemon.pid)") && ready.contains("STATUS=serving"))
        #expect(try Self.answers(daemon.dnsPort).contains("192.0.2.1"))

        // A reload: RELOADING=1, then READY=1 again, its outcome in STATUS.
        kill(daemon.pid, SIGHUP)
        #expect(manager.next()?.contains("RELOADING=1") == true)
        #expect(manager.next().map { $0.contains("READY=1") && $0.contains("reloaded") } == true)

        // A broken zone: the unit's ExecReload lines, run as systemd runs them, stop at the check,
        // which says where; the daemon is not signalled, and serves what it served.
        try (String(contentsOf: zone, encoding: .utf8) + "www 300 IN A 192.0.2.999\n").write(
            to: zone, atomically: true, encoding: .utf8)
        let refused = try Self.execReload(config: conf.path, mainPID: daemon.pid)
        #expect(refused.status != 0)
        #expect(refused.output.contains("example.test.zone:"), "file:line: \(refused.output)")
        #expect(manager.next(timeout: 0.5) == nil, "no reload began")
        #expect(try Self.answers(daemon.dnsPort).contains("192.0.2.1"))

        // A signal all the same (the file broken after the check): refused, and said in STATUS.
        kill(daemon.pid, SIGHUP)
        #expect(manager.next()?.contains("RELOADING=1") == true)
        let refusedStatus = manager.next()
        #expect(refusedStatus.map { $0.contains("READY=1") && $0.contains("refused") } == true)
        // Its reasons on the STATUS line: every line of the message is a field.
        #expect(
            refusedStatus?.split(separator: "\n").allSatisfy {
                ["READY=", "STATUS=", "MAINPID="].contains(where: $0.hasPrefix)
            } == true, "\(refusedStatus ?? "")")
        #expect(try Self.answers(daemon.dnsPort).contains("192.0.2.1"))

        // Mended: the unit's reload runs through.
        try String(contentsOf: TestSupport.fixtures.appendingPathComponent("example.test.zone"), encoding: .utf8)
            .replacingOccurrences(of: "www      A     192.0.2.1\n", with: "www      A     192.0.2.77\n")
            .write(to: zone, atomically: true, encoding: .utf8)
        let mended = try Self.execReload(config: conf.path, mainPID: daemon.pid)
        #expect(mended.status == 0, "\(mended.output)")
        #expect(manager.next()?.contains("RELOADING=1") == true)
        #expect(manager.next().map { $0.contains("READY=1") && $0.contains("reloaded") } == true)
        #expect(try Self.answers(daemon.dnsPort).contains("192.0.2.77"))

        #expect(daemon.stop() == 0)
        #expect(manager.next()?.contains("STOPPING=1") == true)
    }

    /// The unit as `make install` writes it passes systemd's own check.
    @Test func theUnitPassesSystemdAnalyzeVerify() throws {
        let dir = try Self.directory()
        let unit = dir.appendingPathComponent("nearcastd.service")
        try Self.unitText().write(to: unit, atomically: true, encoding: .utf8)
        let out = try TestSupport.run(try TestSupport.tool("systemd-analyze"), ["verify", unit.path])
        #expect(out.status == 0 && out.stderr.isEmpty, "\(out.stdout)\(out.stderr)")
    }

    /// The unit makes /etc read-only (ProtectSystem=full), but lets the daemon write where a record
    /// changed through the API goes: the sample config's zones' directory, which holds each zone
    /// file and its journal (ZoneJournal.path), as `make install` lays them out.
    @Test func theUnitLetsTheDaemonWriteWhereRecordEditsGo() throws {
        let unit = try Self.unitText().split(separator: "\n")
        #expect(unit.contains("ProtectSystem=full"))
        let writable = unit.filter { $0.hasPrefix("ReadWritePaths=") }.flatMap {
            $0.dropFirst("ReadWritePaths=".count).split(separator: " ").map(String.init)
        }
        let sample = try NearcastConfig.parse(
            yaml: String(contentsOf: Repository.root.appendingPathComponent("dist/nearcast.yaml"), encoding: .utf8),
            fileName: "nearcast.yaml", baseDirectory: "/etc/nearcast")
        #expect(!sample.zones.isEmpty)
        for zone in sample.zones {
            let dir = URL(fileURLWithPath: zone.path).deletingLastPathComponent().path
            #expect(writable.contains(dir), "\(zone.path): \(writable)")
        }
    }

    /// dist/nearcastd.service with this test run's binaries and object where `make install` puts its own.
    static func unitText() throws -> String {
        try String(contentsOf: Repository.root.appendingPathComponent("dist/nearcastd.service"), encoding: .utf8)
            .replacingOccurrences(of: "@SBINDIR@", with: Repository.productsDirectory.path)
            .replacingOccurrences(of: "@BINDIR@", with: Repository.productsDirectory.path)
            .replacingOccurrences(of: "@LIBDIR@", with: Repository.root.appendingPathComponent(".build/bpf").path)
    }

    /// Runs the unit's ExecReload lines in order, as systemd does, stopping at the first that fails.
    static func execReload(config: String, mainPID: pid_t) throws -> (status: Int32, output: String) {
        let lines = try unitText().split(separator: "\n").filter { $0.hasPrefix("ExecReload=") }
        #expect(lines.count == 2, "the check, then the signal")
        var output = ""
        for line in lines {
            let command = line.dropFirst("ExecReload=".count)
                .replacingOccurrences(of: "/etc/nearcast/nearcast.yaml", with: config)
                .replacingOccurrences(of: "$MAINPID", with: "\(mainPID)")
            let out = try TestSupport.run("/bin/sh", ["-c", command])
            output += out.stdout + out.stderr
            guard out.status == 0 else { return (out.status, output) }
        }
        return (0, output)
    }

    static func answers(_ port: Int) throws -> String {
        try TestSupport.run(
            try TestSupport.tool("dig"),
            ["@127.0.0.1", "-p", "\(port)", "+tries=1", "+time=1", "www.example.test", "+short"]
        ).stdout
    }

    static func directory() throws -> URL {
        let dir = try TemporaryDirectory.url("nearcast-systemd")
        return dir
    }
}

/// What systemd listens on for a `Type=notify` service's messages (sd_notify(3)): a datagram
/// socket at `path`, read by the test.
final class NotifySocket {
    let path: String
    private let fd: Int32

    init(_ path: String) throws {
        self.path = path
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw TestFailure("socket: \(errno)") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { for (i, b) in path.utf8.enumerated() { $0[i] = b } }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard bound == 0 else {
            close(fd)
            throw TestFailure("bind \(path): \(errno)")
        }
    }

    deinit {
        close(fd)
        unlink(path)
    }

    /// The next message, or nil after `timeout` seconds.
    func next(timeout: Double = 10) -> String? {
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&p, 1, Int32(timeout * 1000)) > 0 else { return nil }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let n = recv(fd, &buffer, buffer.count, 0)
        return n > 0 ? String(decoding: buffer.prefix(n), as: UTF8.self) : nil
    }
}
