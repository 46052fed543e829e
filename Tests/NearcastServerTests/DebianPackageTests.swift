import Foundation
import NearcastTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The Debian package (issue 30), as an operator meets it: built by `make deb`, checked by
/// lintian (no error, no warning), then installed into a Debian 12 of its own (debootstrap, in a temporary directory:
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
        // `make test-package` makes it first (`make deb`: the release build, as shipped).
        let built = (try? FileManager.default.contentsOfDirectory(atPath: Repository.path(".build/deb"))) ?? []
        guard let deb = built.first(where: { $0.hasPrefix("nearcast_") && $0.hasSuffix(".deb") }) else {
            throw TestFailure("no package in .build/deb: run `make deb` (make test-package does)")
        }
        let lintian = try TestSupport.run(
            try TestSupport.tool("lintian"), ["--fail-on", "error,warning", Repository.path(".build/deb/\(deb)")],
            timeout: 300)
        #expect(lintian.status == 0, "lintian: \(lintian.stdout) \(lintian.stderr)")

        let dir = try TemporaryDirectory("nearcast-deb")
        let root = dir.file("root")
        try Self.must("debootstrap", ["--variant=minbase", "bookworm", root, Self.mirror], timeout: 600)
        try FileManager.default.copyItem(
            atPath: Repository.path(".build/deb/\(deb)"), toPath: root + "/tmp/nearcast.deb")
        @discardableResult func inRoot(_ args: [String], timeout: Double = 120) throws -> String {
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
        /// with the unit's capabilities, /proc and /sys mounted (Swift reads a program's arguments
        /// there, libbpf the CPUs).
        // The host's bpffs as the unit sees /sys/fs/bpf (one mount: the pins outlive each daemon), its
        // pin root the user's as the unit's ExecStartPre makes it.
        let bpffs = try TemporaryBPFFS()
        try FileManager.default.createDirectory(atPath: bpffs.path + "/nearcast", withIntermediateDirectories: true)
        let user = try inRoot(["id", "-u", "nearcast"]).trimmingCharacters(in: .whitespacesAndNewlines)
        chown(bpffs.path + "/nearcast", uid_t(user) ?? 0, gid_t(user) ?? 0)
        func asTheUnit(_ command: String) -> [String] {
            let caps = "+bpf,+net_admin,+perfmon,+net_bind_service"
            return [
                "netns", "exec", ns, "unshare", "--mount", "--propagation", "private", "sh", "-c",
                "mount -t proc proc \(root)/proc && mount -t sysfs sysfs \(root)/sys && mount --bind \(bpffs.path) "
                    + "\(root)/sys/fs/bpf && exec chroot "
                    + "\(root) setpriv --reuid=nearcast --regid=nearcast --init-groups --inh-caps=\(caps) "
                    + "--ambient-caps=\(caps) \(command)",
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

        #expect(daemon.stop() == 0)

        // The operator's own config (a conffile): the fast path on a veth whose other end is a
        // client's namespace, kept attached when the daemon stops (keep-on-exit), as an upgrade
        // wants it.
        let (client, serverEnd, clientEnd) = (ns + "c", ns + "s", ns + "p")
        try Self.must("ip", ["netns", "add", client])
        defer { _ = try? TestSupport.run(try TestSupport.tool("ip"), ["netns", "del", client]) }
        try Self.must(
            "ip", ["link", "add", serverEnd, "netns", ns, "type", "veth", "peer", clientEnd, "netns", client])
        try Self.must("ip", ["-n", ns, "addr", "add", "198.19.0.1/24", "dev", serverEnd])
        try Self.must("ip", ["-n", client, "addr", "add", "198.19.0.2/24", "dev", clientEnd])
        try Self.must("ip", ["-n", ns, "link", "set", serverEnd, "up"])
        try Self.must("ip", ["-n", client, "link", "set", clientEnd, "up"])
        // Native XDP on a veth sends what it transmits only to a peer with a program of its own.
        try Self.must(
            "ip",
            [
                "-n", client, "link", "set", "dev", clientEnd, "xdpdrv", "obj", Repository.bpfObject("xdp_pass.bpf.o"),
                "sec", "xdp",
            ])
        let config = root + "/etc/nearcast/nearcast.yaml"
        try """
        # the operator's own
        listen: ["198.19.0.1:53"]
        zones: [{ origin: example.net., file: zones/example.net.zone }]
        api: { listen: "127.0.0.1:8053", tokens: tokens }
        state-dir: /var/lib/nearcast
        xdp: { interfaces: ["\(serverEnd):native"], keep-on-exit: true }

        """.write(toFile: config, atomically: true, encoding: .utf8)
        func ask(_ name: String) throws -> String {
            try Self.must(
                "ip",
                [
                    "netns", "exec", client, try TestSupport.tool("dig"), "@198.19.0.1", name, "A", "+short",
                    "+tries=2", "+time=1",
                ])
        }
        let stats = bpffs.path + "/nearcast/nc_stats"
        func answeredByXDP() throws -> Int {
            let out = try Self.must("bpftool", ["-j", "map", "dump", "pinned", stats])
            // Per CPU, the named fields under "formatted" (the map has BTF).
            return out.components(separatedBy: "\"answered\":").dropFirst().compactMap {
                Int($0.prefix { $0.isNumber })
            }.reduce(0, +)
        }
        func mapID() throws -> String {
            let out = try Self.must("bpftool", ["map", "show", "pinned", stats])
            return String(out.prefix { $0 != ":" })
        }
        daemon = try start()
        #expect(daemon.log.contains("kept=cap_net_admin,cap_bpf"), "what a running fast path needs: \(daemon.log)")
        let before = try answeredByXDP()
        #expect(try ask("api.example.net") == "192.0.2.81\n")
        #expect(try answeredByXDP() > before, "answered by XDP")
        let maps = try mapID()

        // A rebuilt package of a higher version, over the running one.
        let unpacked = dir.file("unpacked")
        try Self.must("dpkg-deb", ["-R", Repository.path(".build/deb/\(deb)"), unpacked])
        let control = unpacked + "/DEBIAN/control"
        try (try String(contentsOfFile: control, encoding: .utf8))
            .replacingOccurrences(of: "Version: 0.6.0\n", with: "Version: 0.6.0+rebuilt1\n")
            .write(toFile: control, atomically: true, encoding: .utf8)
        try Self.must("dpkg-deb", ["-b", unpacked, root + "/tmp/nearcast-rebuilt.deb"])
        try inRoot(["dpkg", "-i", "--force-confold", "/tmp/nearcast-rebuilt.deb"])
        #expect(try inRoot(["dpkg-query", "-W", "-f", "${Version}", "nearcast"]) == "0.6.0+rebuilt1")
        #expect(try String(contentsOfFile: config, encoding: .utf8).hasPrefix("# the operator's own"), "conffile kept")
        #expect(try String(contentsOfFile: root + "/etc/nearcast/tokens", encoding: .utf8) == tokens, "tokens kept")
        // The restart the upgrade asks for: between the two daemons XDP answers alone.
        #expect(daemon.stop() == 0)
        #expect(try ask("www.example.net") == "192.0.2.80\n", "answered with no daemon running")
        daemon = try start()
        #expect(try mapID() == maps, "the maps kept")
        #expect(!daemon.log.contains("replaced-program=none"), "the new program in the old one's place: \(daemon.log)")
        #expect(try ask("api.example.net") == "192.0.2.81\n", "the change made before the upgrade is served after it")
        #expect(daemon.stop() == 0)
        try Self.must("ip", ["-n", ns, "link", "set", "dev", serverEnd, "xdpdrv", "off"])

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
