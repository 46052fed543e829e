import Foundation
import NearcastTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The Debian package (issue 30), as an operator meets it: built by `make deb` and checked by
/// lintian, then installed into a Debian 12 of its own (debootstrap, in a temporary directory:
/// nothing of this host's is installed or changed), started as the unit starts it, upgraded to a
/// rebuilt package with the operator's files kept, removed and purged.
@Suite(.serialized, .timeLimit(.minutes(12))) struct DebianPackageTests {
    /// A command run to its end, failing the test with its output when it does not succeed.
    @discardableResult
    static func must(_ tool: String, _ args: [String], timeout: Double = 120) throws -> String {
        let out = try TestSupport.run(try TestSupport.tool(tool), args, timeout: timeout)
        guard out.status == 0 else {
            throw TestFailure("\(tool) \(args.joined(separator: " ")): \(out.stderr)\(out.stdout)")
        }
        return out.stdout
    }

    /// The Debian mirror this host's apt uses (its sources), for the one debootstrap makes.
    static var mirror: String {
        let sources = (try? FileManager.default.contentsOfDirectory(atPath: "/etc/apt/sources.list.d")) ?? []
        for file in sources.map({ "/etc/apt/sources.list.d/" + $0 }) + ["/etc/apt/sources.list"] {
            let text = (try? String(contentsOfFile: file, encoding: .utf8)) ?? ""
            for word in text.split(whereSeparator: { $0 == " " || $0 == "\n" })
            where word.hasPrefix("http") && word.hasSuffix("/debian") {
                return String(word)
            }
        }
        return "http://deb.debian.org/debian"
    }

    @Test func installStartUpgradeRemoveAndPurgeOnDebian12() throws {
        let make = try TestSupport.run(
            try TestSupport.tool("make"), ["-C", Repository.root.path, "-o", "build", "-o", "deps", "deb"],
            timeout: 600)
        #expect(
            make.status == 0, "make deb (lintian included): \(make.stdout.suffix(3000)) \(make.stderr.suffix(3000))")
        let debs = try FileManager.default.contentsOfDirectory(atPath: Repository.path(".build/deb"))
        guard let deb = debs.first(where: { $0.hasPrefix("nearcast_") && $0.hasSuffix(".deb") }) else {
            throw TestFailure("no package in .build/deb: \(debs)")
        }

        let dir = try TemporaryDirectory("nearcast-deb")
        let root = dir.file("root")
        try Self.must("debootstrap", ["--variant=minbase", "bookworm", root, Self.mirror], timeout: 600)
        try FileManager.default.copyItem(
            atPath: Repository.path(".build/deb/\(deb)"), toPath: root + "/tmp/nearcast.deb")
        func inRoot(_ args: [String], timeout: Double = 120) throws -> String {
            try Self.must("chroot", [root] + args, timeout: timeout)
        }

        // Installed with what it depends on, from the mirror.
        try inRoot(["apt-get", "install", "-y", "-q", "/tmp/nearcast.deb"], timeout: 600)
        #expect(try inRoot(["getent", "passwd", "nearcast"]).contains("/var/lib/nearcast"), "its own user")
        #expect(try inRoot(["stat", "-c", "%a %G", "/etc/nearcast/tokens"]) == "640 nearcast\n")
        #expect(
            try inRoot(["stat", "-c", "%U", "/etc/nearcast/zones"]) == "nearcast\n", "record changes written there")
        let tokens = try String(contentsOfFile: root + "/etc/nearcast/tokens", encoding: .utf8)
        guard let admin = tokens.split(separator: "\n").first(where: { $0.hasPrefix("admin ") }) else {
            throw TestFailure("no admin token made: \(tokens)")
        }
        #expect(admin.count == "admin ".count + 32, "a token of its own: \(admin)")
        for page in ["man8/nearcastd.8.gz", "man1/nearcast.1.gz", "man5/nearcast.yaml.5.gz"] {
            #expect(FileManager.default.fileExists(atPath: root + "/usr/share/man/" + page), "\(page)")
        }

        // Started as the unit starts it: the user nearcast with the unit's capabilities, in a network
        // namespace of its own (the sample config listens on 127.0.0.1:53), its state directory made as
        // systemd's StateDirectory= makes it.
        let ns = "ncdeb\(getpid() % 10000)"
        try Self.must("ip", ["netns", "add", ns])
        defer { _ = try? TestSupport.run(try TestSupport.tool("ip"), ["netns", "del", ns]) }
        try Self.must("ip", ["-n", ns, "link", "set", "lo", "up"])
        try inRoot(["install", "-d", "-o", "nearcast", "-g", "nearcast", "-m", "700", "/var/lib/nearcast"])
        /// `command` as the unit runs the daemon: in the namespace, in the Debian, as the user nearcast
        /// with the unit's capabilities, /proc mounted (Swift reads a program's arguments there).
        func asTheUnit(_ command: String) -> [String] {
            let caps = "+bpf,+net_admin,+perfmon,+net_bind_service"
            return [
                "netns", "exec", ns, "unshare", "--mount", "--propagation", "private", "sh", "-c",
                "mount -t proc proc \(root)/proc && exec chroot \(root) setpriv --reuid=nearcast --regid=nearcast "
                    + "--init-groups --inh-caps=\(caps) --ambient-caps=\(caps) \(command)",
            ]
        }
        func start() throws -> ServerProcess {
            let d = try ServerProcess(
                try TestSupport.tool("ip"), asTheUnit("/usr/sbin/nearcastd --config /etc/nearcast/nearcast.yaml"))
            try d.waitUntilReady { d.log.contains("nearcastd: ready\n") }
            return d
        }
        func dig(_ name: String) throws -> String {
            try Self.must("ip", ["netns", "exec", ns, try TestSupport.tool("dig"), "@127.0.0.1", name, "A", "+short"])
        }
        @discardableResult
        func cli(_ args: String) throws -> String {
            try Self.must(
                "ip", asTheUnit("/usr/bin/nearcast \(args) --api 127.0.0.1:8053 --token-file /etc/nearcast/tokens"))
        }
        var daemon = try start()
        defer { daemon.stop(signal: SIGKILL) }
        #expect(try dig("www.example.net") == "192.0.2.80\n", "the sample zone answered")
        try cli("record add example.net. api A 192.0.2.81")
        let added = try dig("api.example.net")
        #expect(added == "192.0.2.81\n", "a record changed through the API: \(added)")
        #expect(daemon.log.contains("kept=none"), "no capability kept without XDP: \(daemon.log)")

        // The operator's edit of the config (a conffile); then a rebuilt package, a higher version.
        let config = root + "/etc/nearcast/nearcast.yaml"
        try (try String(contentsOfFile: config, encoding: .utf8) + "# the operator's own line\n")
            .write(toFile: config, atomically: true, encoding: .utf8)
        let unpacked = dir.file("unpacked")
        try Self.must("dpkg-deb", ["-R", Repository.path(".build/deb/\(deb)"), unpacked])
        let control = unpacked + "/DEBIAN/control"
        try (try String(contentsOfFile: control, encoding: .utf8))
            .replacingOccurrences(of: "Version: 0.6.0\n", with: "Version: 0.6.0+rebuilt1\n")
            .write(toFile: control, atomically: true, encoding: .utf8)
        try Self.must("dpkg-deb", ["-b", unpacked, root + "/tmp/nearcast-rebuilt.deb"])
        try inRoot(["dpkg", "-i", "--force-confold", "/tmp/nearcast-rebuilt.deb"])
        #expect(try inRoot(["dpkg-query", "-W", "-f", "${Version}", "nearcast"]) == "0.6.0+rebuilt1")
        #expect(try String(contentsOfFile: config, encoding: .utf8).contains("# the operator's own line"))
        #expect(try String(contentsOfFile: root + "/etc/nearcast/tokens", encoding: .utf8) == tokens, "tokens kept")
        #expect(daemon.stop() == 0)
        daemon = try start()
        #expect(try dig("api.example.net") == "192.0.2.81\n", "the change made before the upgrade is served after it")
        #expect(daemon.stop() == 0)

        // Removed: the program goes, the configuration stays; purged: that goes too.
        try inRoot(["dpkg", "-r", "nearcast"])
        #expect(!FileManager.default.fileExists(atPath: root + "/usr/sbin/nearcastd"))
        #expect(
            FileManager.default.fileExists(atPath: config)
                && FileManager.default.fileExists(atPath: root + "/etc/nearcast/tokens"))
        try inRoot(["dpkg", "-P", "nearcast"])
        for gone in ["/etc/nearcast/nearcast.yaml", "/etc/nearcast/tokens", "/var/lib/nearcast"] {
            #expect(!FileManager.default.fileExists(atPath: root + gone), "\(gone) purged")
        }
    }
}
