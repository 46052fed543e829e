import DNSWire
import Foundation
import NearcastTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Installing nearcast beside an operator's own DNS server (issue 30): the packages it installs stop
/// no server that ran before, only one a package's install started itself; `make install` puts its
/// files where it says and stops nothing.
@Suite(.serialized, .timeLimit(.minutes(3))) struct InstallTests {
    @Test func installingLeavesAnOperatorsNSDRunningAndAnswering() throws {
        let dir = try TemporaryDirectory.url("nearcast-install")
        // The operator's NSD, a daemon of its own (its parent PID 1, as a service's is), stopped
        // by its pid file at the end.
        let port = try TestSupport.unusedPort()
        let conf = try ReferenceServerDifferentialTests.nsdConfig(
            dir: dir, port: port, origin: "example.test.", file: ReferenceServerDifferentialTests.zoneFile)
        let daemonized = try TestSupport.run(try TestSupport.tool("nsd"), ["-c", conf.path])
        #expect(daemonized.status == 0, "\(daemonized.stderr)")
        defer {
            if let text = try? String(contentsOfFile: dir.path + "/nsd.pid", encoding: .utf8),
                let pid = Int32(text.trimmingCharacters(in: .whitespacesAndNewlines))
            {
                kill(pid, SIGTERM)
                _ = Self.gone(pid)
            }
        }
        func nsdAnswers() -> Bool {
            RawClient.udp(RawClient.query("www.example.test.", .a), port: port, timeout: 0.5).map {
                (try? DNSMessage(wire: $0))?.answers.isEmpty == false
            } ?? false
        }
        try poll("the operator's NSD answers", timeout: 10, interval: 0.02) { nsdAnswers() }
        // Its processes (the main one and its children), by the program they run.
        let main = try #require(
            Int32(
                String(contentsOfFile: dir.path + "/nsd.pid", encoding: .utf8).trimmingCharacters(
                    in: .whitespacesAndNewlines)))
        let ours = try Self.processes(named: "nsd").filter { Self.descends($0, from: main) }
        #expect(ours.count >= 2, "NSD's main process and its server")

        // A package to install whose install starts a server of its own, as nsd's maintainer script
        // does where nothing stops it: apt-get and dpkg-query stand-ins first in PATH, the
        // policy-rc.d the script writes in the test's directory, not the host's.
        let fake = dir.appendingPathComponent("bin")
        try FileManager.default.createDirectory(at: fake, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: "/bin/sleep", toPath: fake.appendingPathComponent("nsd").path)
        try Self.script(
            fake.appendingPathComponent("dpkg-query"),
            #"[ "$3" = nsd ] && exit 1; echo "install ok installed""#)
        try Self.script(
            fake.appendingPathComponent("apt-get"),
            """
            [ "$1" = install ] || exit 0
            nohup "\(fake.path)/nsd" 300 >/dev/null 2>&1 &
            echo $! >"\(dir.path)/started.pid"
            """)
        let policy = dir.appendingPathComponent("policy-rc.d").path
        let out = try TestSupport.run(
            Repository.root.appendingPathComponent("tools/install-deps.sh").path, ["all"], timeout: 60,
            environment: [
                "PATH": fake.path + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"),
                "POLICY_RC_D": policy,
            ])
        #expect(out.status == 0, "\(out.stdout)\(out.stderr)")
        let started = try #require(
            Int32(
                String(contentsOfFile: dir.path + "/started.pid", encoding: .utf8).trimmingCharacters(
                    in: .whitespacesAndNewlines)))
        #expect(out.stdout.contains("installing nsd") && out.stdout.contains("installed nsd"), "\(out.stdout)")
        #expect(out.stdout.contains("stopping nsd (pid \(started))"), "\(out.stdout)")
        #expect(try Self.processes(named: "nsd").isSuperset(of: ours), "the operator's NSD runs on")
        #expect(Self.gone(started), "the server the install started is stopped")
        #expect(!FileManager.default.fileExists(atPath: policy), "the policy-rc.d it wrote is removed")
        #expect(nsdAnswers())

        // make install, of the binaries of this test run (not a release build): it stops nothing.
        let root = dir.appendingPathComponent("root")
        let make = try TestSupport.run(
            try TestSupport.tool("make"),
            [
                "-C", Repository.root.path, "-o", "build", "install", "DESTDIR=\(root.path)",
                "BIN=\(Repository.productsDirectory.path)",
            ], timeout: 120)
        #expect(make.status == 0, "\(make.stdout)\(make.stderr)")
        for file in [
            "usr/local/bin/nearcastd", "usr/local/bin/nearcast", "usr/local/lib/nearcast/nearcast.bpf.o",
            "lib/systemd/system/nearcastd.service", "etc/nearcast/nearcast.yaml", "etc/nearcast/tokens",
        ] {
            #expect(FileManager.default.fileExists(atPath: root.appendingPathComponent(file).path), "\(file)")
        }
        let tokens = try FileManager.default.attributesOfItem(atPath: root.path + "/etc/nearcast/tokens")
        #expect((tokens[.posixPermissions] as? Int) == 0o600)
        #expect(try Self.processes(named: "nsd").isSuperset(of: ours))
        #expect(nsdAnswers())
    }

    /// The processes that run a program named `name` (their /proc/PID/exe), as install-deps finds
    /// them (NSD renames its processes "nsd: main" and the like).
    static func processes(named name: String) throws -> Set<Int32> {
        var out: Set<Int32> = []
        for entry in try FileManager.default.contentsOfDirectory(atPath: "/proc") {
            guard let pid = Int32(entry),
                let exe = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(entry)/exe")
            else { continue }
            if URL(fileURLWithPath: exe).lastPathComponent == name { out.insert(pid) }
        }
        return out
    }

    /// Whether `pid` is `ancestor` or one of its descendants.
    static func descends(_ pid: Int32, from ancestor: Int32) -> Bool {
        var p = pid
        for _ in 0..<64 {
            if p == ancestor { return true }
            guard p > 1, let stat = try? String(contentsOfFile: "/proc/\(p)/stat", encoding: .utf8),
                let parent = stat.split(separator: ")").last?.split(separator: " ").dropFirst().first.flatMap({
                    Int32($0)
                })
            else { return false }
            p = parent
        }
        return false
    }

    /// Whether `pid` has ended (gone, or a zombie its new parent has not reaped yet), within 5 s.
    static func gone(_ pid: Int32) -> Bool {
        (try? poll("process \(pid) ended", timeout: 5, interval: 0.02) {
            guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8) else { return true }
            return stat.split(separator: ")").last?.split(separator: " ").first == "Z"
        }) != nil
    }

    static func script(_ url: URL, _ body: String) throws {
        try ("#!/bin/sh\n" + body + "\n").write(to: url, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: url.path)
    }
}
