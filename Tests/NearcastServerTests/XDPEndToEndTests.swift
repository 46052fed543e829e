import Foundation
import NearcastTestSupport
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// End to end with the fast path: two network namespaces joined by veth (tools/netns.sh), nearcastd
/// with XDP on the server end, the real dig on the client end. The XDP counters, read from the
/// pinned map with bpftool, prove who answered.
@Suite(.serialized, .timeLimit(.minutes(3))) struct XDPEndToEndTests {
    static let root = Repository.root
    static let prefix = "nct\(getpid() % 10000)"
    static var srv: String { "\(prefix)-srv" }
    static var cli: String { "\(prefix)-cli" }
    static var serverIf: String { "\(prefix)-s" }
    static let server = "198.18.0.1"

    /// The namespaces, the client's pass-through XDP program and a bpffs for the pins.
    final class Topology {
        /// `ip netns exec` gives a fresh /sys, where /sys/fs/bpf is no bpffs: the pins go here.
        let pins: TemporaryBPFFS
        var bpffs: URL { URL(fileURLWithPath: pins.path) }
        /// The test's own files: the config `startDaemon` writes (a test that reloads writes it anew).
        let files: TemporaryDirectory
        var configFile: URL { URL(fileURLWithPath: files.file("nearcast.yaml")) }

        init() throws {
            let tools = XDPEndToEndTests.root.appendingPathComponent("tools")
            let up = try TestSupport.run(
                tools.appendingPathComponent("netns.sh").path, ["up", XDPEndToEndTests.prefix])
            guard up.status == 0 else { throw TestFailure("netns.sh up: \(up.stderr)") }
            let pass = XDPEndToEndTests.root.appendingPathComponent(".build/bpf/xdp_pass.bpf.o").path
            let ip = try TestSupport.tool("ip")
            let xdp = try TestSupport.run(
                ip,
                [
                    "-n", XDPEndToEndTests.cli, "link", "set", "dev", "\(XDPEndToEndTests.prefix)-c", "xdpdrv", "obj",
                    pass, "sec", "xdp",
                ])
            guard xdp.status == 0 else { throw TestFailure("client XDP: \(xdp.stderr)") }
            pins = try TemporaryBPFFS()
            files = try TemporaryDirectory("nearcast-e2e")
        }

        var pinRoot: String { bpffs.appendingPathComponent("nearcast").path }

        deinit {
            _ = try? TestSupport.run(
                XDPEndToEndTests.root.appendingPathComponent("tools/netns.sh").path, ["down", XDPEndToEndTests.prefix])
        }
    }

    /// Starts nearcastd with XDP on the server end and waits until the fast path is ready and the
    /// slow path answers dig (`digReady: false`: only the former, e.g. while kxdpgun holds the
    /// client end and takes dig's replies).
    static func startDaemon(
        _ t: Topology, config: String? = nil, zone: String? = nil, listen: String = "\(server):53",
        extraArgs: [String] = [], digReady: Bool = true
    ) throws -> Daemon {
        var args = [
            "--zone", "example.test=\(zone ?? TestSupport.fixtures.appendingPathComponent("example.test.zone").path)",
            "--listen", listen, "--threads", "1", "--xdp", "\(serverIf):native", "--pin-root", t.pinRoot,
            "--bpf-object", root.appendingPathComponent(".build/bpf/nearcast.bpf.o").path,
        ]
        if let config {
            try config.write(to: t.configFile, atomically: true, encoding: .utf8)
            args += ["--config", t.configFile.path]
        }
        // Ready: the slow path listens, the fast path is attached after it, and every signal is
        // trapped (a SIGTERM from now on stops it gracefully).
        let d = try Daemon(args + extraArgs, launcher: [try TestSupport.tool("ip"), "netns", "exec", srv])
        if digReady {
            try d.waitUntilReady { (try? dig(["nope.example.test", "A"]).contains("status: NXDOMAIN")) == true }
        }
        return d
    }

    static func dig(_ args: [String], at address: String = server) throws -> String {
        try TestSupport.run(
            try TestSupport.tool("ip"),
            ["netns", "exec", cli, try TestSupport.tool("dig"), "@\(address)", "+tries=1", "+time=1"] + args
        ).stdout
    }

    /// `ip` in the server's namespace (an address added or removed).
    static func serverIP(_ args: [String]) throws {
        let r = try TestSupport.run(try TestSupport.tool("ip"), ["-n", srv] + args)
        guard r.status == 0 else { throw TestFailure("ip \(args): \(r.stderr)") }
    }

    /// The XDP counters summed over CPUs, from the pinned stats map.
    static func counters(_ t: Topology) throws -> [String: Int] {
        let out = try TestSupport.run(
            try TestSupport.tool("bpftool"), ["-j", "map", "dump", "pinned", t.pinRoot + "/nc_stats"])
        // With BTF, `bpftool -j` gives the raw bytes and, under "formatted", the named fields.
        guard out.status == 0,
            let json = try JSONSerialization.jsonObject(with: Data(out.stdout.utf8)) as? [[String: Any]],
            let formatted = json.first?["formatted"] as? [String: Any],
            let values = formatted["values"] as? [[String: Any]]
        else { throw TestFailure("bpftool map dump: \(out.stderr) \(out.stdout)") }
        var total: [String: Int] = [:]
        for v in values {
            for (k, n) in (v["value"] as? [String: Any]) ?? [:] { total[k, default: 0] += (n as? Int) ?? 0 }
        }
        return total
    }

    /// Polls the XDP counters until `reasons` (every verdict when empty) have grown by `atLeast`
    /// since `before`: what a test waits for between the steps of a load, rather than a pause.
    static func counted(
        _ t: Topology, since before: [String: Int], _ what: String, _ reasons: [String] = [], atLeast n: Int
    ) throws {
        try poll(what, timeout: 10, interval: 0.02) {
            let now = try counters(t)
            let keys = reasons.isEmpty ? Array(now.keys) : reasons
            return keys.reduce(0) { $0 + now[$1, default: 0] - before[$1, default: 0] } >= n
        }
    }

    /// What kxdpgun reported, and the XDP counters before and after it ran.
    struct Load {
        var sent: Int
        var replies: Int
        var output: String
        var before: [String: Int]
        var after: [String: Int]

        /// How much a counter grew while the load ran.
        func delta(_ reason: String) -> Int { after[reason, default: 0] - before[reason, default: 0] }
    }

    /// Runs kxdpgun from the client namespace for `seconds` at `rate` queries per second over
    /// `queries` ("NAME TYPE" lines), and `meanwhile` once it is under way. kxdpgun brings its own
    /// XDP program for the client end (it takes every reply to its ports, dig's too): the
    /// pass-through one comes off meanwhile and goes back after.
    static func underLoad(_ t: Topology, queries: String, seconds: Int, rate: Int, meanwhile: () throws -> Void = {})
        throws -> Load
    {
        let file = try TemporaryDirectory.file("nearcast-load.txt", holding: queries)
        let ip = try TestSupport.tool("ip")
        let clientIf = "\(prefix)-c"
        #expect(try TestSupport.run(ip, ["-n", cli, "link", "set", "dev", clientIf, "xdpdrv", "off"]).status == 0)
        let before = try counters(t)
        let load = try ServerProcess(
            ip,
            [
                "netns", "exec", cli, try TestSupport.tool("kxdpgun"), "-t", "\(seconds)", "-Q", "\(rate)", "-i",
                file.path, "-I", clientIf, server,
            ])
        // Under way once it has its interface ("using interface …, native mode") and its queries
        // reach the server's XDP.
        try load.waitUntilReady(timeout: 10) { load.log.contains("using interface") }
        try Self.counted(t, since: before, "kxdpgun's queries reach XDP", atLeast: 100)
        try meanwhile()
        load.waitForExit(timeout: Double(seconds) + 10)
        let output = load.log
        load.stop()
        let after = try counters(t)
        let pass = root.appendingPathComponent(".build/bpf/xdp_pass.bpf.o").path
        let restore = try TestSupport.run(
            ip, ["-force", "-n", cli, "link", "set", "dev", clientIf, "xdpdrv", "obj", pass, "sec", "xdp"])
        #expect(restore.status == 0, "\(restore.stderr)")
        // kxdpgun: "total queries: N (...)", "total replies: N (...)".
        func total(_ what: String) -> Int {
            guard let line = output.split(separator: "\n").first(where: { $0.contains("total \(what):") }) else {
                return 0
            }
            return Int(line.split(separator: " ").dropFirst(2).first ?? "") ?? 0
        }
        return Load(sent: total("queries"), replies: total("replies"), output: output, before: before, after: after)
    }

    /// With --keep-xdp the program stays attached and the maps pinned after SIGTERM; the next
    /// daemon takes them over.
    /// A start-up that fails after XDP is attached (here the API cannot bind) leaves nothing behind:
    /// the program is detached and the pins are gone, and the daemon says why and exits 1.
    @Test func aFailedStartDetachesWhatItAttached() throws {
        let t = try Topology()
        let d = try ServerProcess(
            try TestSupport.tool("ip"),
            [
                "netns", "exec", Self.srv, try TestSupport.product("nearcastd"),
                "--zone", "example.test=\(TestSupport.fixtures.appendingPathComponent("example.test.zone").path)",
                "--listen", "\(Self.server):53", "--threads", "1", "--xdp", "\(Self.serverIf):native", "--pin-root",
                t.pinRoot,
                "--bpf-object", Self.root.appendingPathComponent(".build/bpf/nearcast.bpf.o").path, "--api",
                "192.0.2.99:8053",
            ])
        d.waitForExit(timeout: 20)
        let log = d.log
        #expect(d.stop() == 1, "\(log)")
        #expect(log.contains("fast path ready") && log.contains("cannot start the management API"), "\(log)")
        let link = try TestSupport.run(try TestSupport.tool("ip"), ["-n", Self.srv, "link", "show", Self.serverIf])
        #expect(!link.stdout.contains("prog/xdp"), "detached: \(link.stdout)")
        #expect(!FileManager.default.fileExists(atPath: t.pinRoot + "/nc_names"), "unpinned")
    }

    /// As the systemd unit runs it (issue 30): a user of its own with the unit's capabilities, not
    /// CAP_SYS_ADMIN, and once started only what serving needs, in every thread: CAP_BPF (a new
    /// generation's maps) and CAP_NET_ADMIN (detaching at the stop), as the log says.
    @Test func asAUserOfItsOwnItServesAndKeepsOnlyWhatServingNeeds() throws {
        let t = try Topology()
        let uid = 64_123
        // What the user reads, where it may read it (a CI clone may be in a directory of 0700).
        let dir = try TemporaryDirectory("nearcast-user")
        chmod(dir.path, 0o755)
        let zone = try dir.write(
            try String(contentsOf: TestSupport.fixtures.appendingPathComponent("example.test.zone"), encoding: .utf8),
            to: "example.test.zone")
        let nearcastd = dir.file("nearcastd")
        try FileManager.default.copyItem(atPath: try TestSupport.product("nearcastd"), toPath: nearcastd)
        let object = dir.file("nearcast.bpf.o")
        try FileManager.default.copyItem(
            atPath: Self.root.appendingPathComponent(".build/bpf/nearcast.bpf.o").path, toPath: object)
        // The unit's ExecStartPre makes the pin root the user's.
        try FileManager.default.createDirectory(atPath: t.pinRoot, withIntermediateDirectories: true)
        chown(t.pinRoot, uid_t(uid), gid_t(uid))
        let caps = "+bpf,+net_admin,+perfmon,+net_bind_service"
        let d = try Daemon(
            [
                "--zone", "example.test=\(zone)", "--listen", "\(Self.server):53", "--threads", "1",
                "--xdp", "\(Self.serverIf):native", "--pin-root", t.pinRoot, "--bpf-object", object,
            ],
            launcher: [
                try TestSupport.tool("ip"), "netns", "exec", Self.srv, try TestSupport.tool("setpriv"),
                "--reuid=\(uid)", "--regid=\(uid)", "--clear-groups", "--inh-caps=\(caps)", "--ambient-caps=\(caps)",
            ], executable: nearcastd)
        defer { d.stop(signal: SIGKILL) }

        let before = try Self.counters(t)["answered", default: 0]
        #expect(try Self.dig(["www.example.test", "A", "+short"]).contains("192.0.2.1"))
        #expect(try Self.counters(t)["answered", default: 0] > before, "answered by XDP")
        let threads = d.permittedCapabilities
        // Bits 39 (CAP_BPF) and 12 (CAP_NET_ADMIN).
        #expect(threads.count > 4 && threads.values.allSatisfy { $0 == "0000008000001000" }, "\(threads)")
        #expect(d.log.contains("dropped=cap_net_bind_service,cap_perfmon kept=cap_net_admin,cap_bpf"), "\(d.log)")
        #expect(d.stop() == 0, "\(d.log)")
        let link = try TestSupport.run(try TestSupport.tool("ip"), ["-n", Self.srv, "link", "show", Self.serverIf])
        #expect(!link.stdout.contains("prog/xdp"), "detached with what it kept: \(link.stdout)")
    }

    @Test func keepXDPLeavesTheFastPathRunning() throws {
        let t = try Topology()
        var daemon = try Self.startDaemon(t, extraArgs: ["--keep-xdp"])
        defer { daemon.stop(signal: SIGKILL) }
        #expect(daemon.stop(signal: SIGTERM) == 0)
        let link = try TestSupport.run(try TestSupport.tool("ip"), ["-n", Self.srv, "link", "show", Self.serverIf])
            .stdout
        #expect(link.contains("prog/xdp"), "still attached")
        #expect(FileManager.default.fileExists(atPath: t.pinRoot + "/nc_stats"), "still pinned")
        #expect(try Self.dig(["www.example.test", "A", "+short"]).contains("192.0.2.1"), "still answering")
        daemon = try Self.startDaemon(t)
        #expect(!daemon.log.contains("replaced-program=none"))
        #expect(daemon.stop(signal: SIGTERM) == 0)
    }

    /// An upgrade across ABI versions (issue 3's takeover, when the map layout changed): maps pinned
    /// by another version cannot be taken over, so a new daemon pins a new set beside them,
    /// attaches the program that reads it in the old program's place and only then lets the old
    /// pins go. XDP answers throughout; the new pins are where the old ones were.
    @Test func pinnedMapsOfAnotherABIAreReplacedWithoutAGap() throws {
        let t = try Topology()
        var daemon = try Self.startDaemon(t, extraArgs: ["--keep-xdp"])
        defer { daemon.stop(signal: SIGKILL) }
        #expect(daemon.stop(signal: SIGTERM) == 0)
        // The pinned config as an instance of ABI version 99 would have written it (the first
        // field); the program left attached goes on answering from it.
        let bpftool = try TestSupport.tool("bpftool")
        let config = t.pinRoot + "/nc_config"
        let zero = ["00", "00", "00", "00"]
        let lookup = try TestSupport.run(bpftool, ["-j", "map", "lookup", "pinned", config, "key", "hex"] + zero)
        let entry = try JSONSerialization.jsonObject(with: Data(lookup.stdout.utf8)) as? [String: Any]
        let bytes = try #require(entry?["value"] as? [String], "\(lookup.stdout) \(lookup.stderr)")
        let value = ["63", "00", "00", "00"] + bytes.dropFirst(4).map { $0.replacingOccurrences(of: "0x", with: "") }
        let update = try TestSupport.run(
            bpftool, ["map", "update", "pinned", config, "key", "hex"] + zero + ["value", "hex"] + value)
        #expect(update.status == 0, "\(update.stderr)")
        func programID() throws -> String? {
            let link = try TestSupport.run(try TestSupport.tool("ip"), ["-n", Self.srv, "link", "show", Self.serverIf])
                .stdout
            return link.firstRange(of: "prog/xdp id ").map { String(link[$0.upperBound...].prefix { $0.isNumber }) }
        }
        let old = try #require(try programID())
        #expect(try Self.dig(["www.example.test", "A", "+short"]).contains("192.0.2.1"), "the old program answers")

        let load = try Self.underLoad(t, queries: "www.example.test A", seconds: 5, rate: 20_000) {
            daemon = try Self.startDaemon(t, digReady: false)
        }
        #expect(load.sent > 50_000 && load.replies >= load.sent * 99 / 100, "answered throughout: \(load.output)")
        #expect(
            daemon.log.contains("pinned maps replaced") && daemon.log.contains("written by ABI version 99"),
            "\(daemon.log)")
        let new = try #require(try programID())
        #expect(new != old, "the new program is attached")
        let after = try TestSupport.run(bpftool, ["-j", "map", "lookup", "pinned", config, "key", "hex"] + zero).stdout
        #expect(
            !after.contains("\"abi_version\": 99") && after.contains("\"abi_version\":"),
            "the new config under the pin root: \(after)")
        #expect(
            !FileManager.default.fileExists(atPath: t.pinRoot + "-next")
                && !FileManager.default.fileExists(atPath: t.pinRoot + "-old"))
        let answered = try Self.counters(t)["answered", default: 0]
        #expect(try Self.dig(["www.example.test", "A", "+short"]).contains("192.0.2.1"))
        #expect(
            try Self.counters(t)["answered", default: 0] > answered,
            "answered by the new program, counted in the new maps")
        #expect(daemon.stop(signal: SIGTERM) == 0)
        #expect(!FileManager.default.fileExists(atPath: t.pinRoot + "/nc_stats"), "unpinned at the stop")
    }

    /// A flood from kxdpgun (AF_XDP, open loop, far beyond what the slow path answers), five misses
    /// (names a wildcard covers: only the slow path answers them) to every hot query: XDP keeps answering the hot ones, hands the slow path no more than its
    /// budget, answers the other misses TC=1, and the slow path still answers afterwards.
    @Test func aFloodOfMissesStaysWithinThePassBudget() throws {
        let t = try Topology()
        // Per CPU: 200 queries/s and a bucket of 50 may go to the slow path.
        let daemon = try Self.startDaemon(
            t, config: "xdp:\n  pass-rate: 200\n  pass-burst: 50\n  over-budget: truncate\n  names-capacity: 256\n")
        defer { daemon.stop() }
        #expect(daemon.log.contains("capacity=256"), "names-capacity reaches the table: \(daemon.log)")
        // Hot: an A and an MX whose reply (with the mail server's addresses) outgrows the frame's
        // tailroom on this path (an skb from kxdpgun's AF_XDP copy mode): XDP grows it at the head.
        let lines = (0..<500).map {
            $0 % 10 == 0
                ? "www.example.test A\nexample.test MX\nmiss\($0).wild.example.test A" : "miss\($0).wild.example.test A"
        }
        let seconds = 3
        let flood = try Self.underLoad(t, queries: lines.joined(separator: "\n"), seconds: seconds, rate: 200_000)
        let sent = flood.sent
        let replies = flood.replies
        #expect(sent > 100_000, "kxdpgun ran: \(flood.output)")
        let answered = flood.delta("answered")
        let passed = flood.delta("pass_miss")
        let truncated = flood.delta("limit_truncated")
        let cpus = ProcessInfo.processInfo.activeProcessorCount
        print(
            "flood: kxdpgun sent \(sent), got \(replies) replies; XDP answered \(answered), truncated \(truncated), passed \(passed)"
        )
        // Two queries in twelve are hot; all of them are answered by XDP, the flood notwithstanding.
        #expect(Double(answered) >= Double(sent) * 2 / 12 * 0.95, "hot answered \(answered) of \(sent) sent")
        #expect(flood.delta("pass_no_room") == 0, "every reply found room")
        #expect(
            Double(truncated) >= Double(sent) * 10 / 12 * 0.9,
            "above the budget, misses are answered TC=1 (\(truncated))")
        #expect(passed <= cpus * (200 * (seconds + 2) + 50), "the slow path gets no more than its budget (\(passed))")
        #expect(Double(replies) >= Double(sent) * 0.95, "kxdpgun got its replies (\(replies) of \(sent))")
        // The budget refills: a query after the flood is answered by the slow path.
        try poll("the slow path answers again once the budget refills", timeout: 5) {
            try Self.dig(["x.wild.example.test", "A"]).contains("192.0.2.100")
        }
    }

    /// Geo names answered by XDP for clients at several addresses of the client namespace (and,
    /// through a resolver, by ECS): each gets the node the test database says is nearest, and
    /// the counters show XDP answered.
    @Test func geoNamesAreAnsweredInXDPForEachClient() throws {
        let t = try Topology()
        let database = Self.root.appendingPathComponent(".build/geo/test-city.mmdb").path
        let tokens = try TemporaryDirectory.file(
            "nearcast-geo-tokens", holding: "read \(ManagementAPITests.readToken)\n")
        let daemon = try Self.startDaemon(
            t,
            config: """
                api: { listen: "127.0.0.1:8053", tokens: \(tokens.path) }
                geo:
                  database: \(database)
                \(Fixtures.fourNodes(indent: 2))
                  names: [{ name: geo.example.test, type: A, pool: web }]
                """)
        defer { daemon.stop() }
        let ip = try TestSupport.tool("ip")
        // Paris, New York and Tokyo in the test database; 198.18.0.2 (the client's own) is Strasbourg.
        for a in ["198.51.100.7", "203.0.113.9", "198.18.1.9"] {
            #expect(
                try TestSupport.run(ip, ["-n", Self.cli, "addr", "add", "\(a)/32", "dev", "\(Self.prefix)-c"]).status
                    == 0)
        }
        let before = try Self.counters(t)
        for (source, nearest) in [
            ("198.51.100.7", "192.0.2.20"), ("203.0.113.9", "192.0.2.30"), ("198.18.1.9", "192.0.2.40"),
            ("198.18.0.2", "192.0.2.10"),
        ] {
            #expect(
                try Self.dig(["-b", source, "geo.example.test", "A", "+short"]).split(separator: "\n") == [
                    Substring(nearest)
                ], "from \(source)")
        }
        // A resolver asking for a client in Tokyo: scope 24, from XDP.
        let ecs = try Self.dig(["geo.example.test", "A", "+subnet=198.18.1.0/24"])
        #expect(ecs.contains("CLIENT-SUBNET: 198.18.1.0/24/24") && ecs.contains("192.0.2.40"), "\(ecs)")
        let after = try Self.counters(t)
        #expect(after["answered_geo", default: 0] - before["answered_geo", default: 0] == 5, "answered by XDP")
        #expect(after["pass_miss", default: 0] == before["pass_miss", default: 0])

        // /metrics says where XDP sent them: by node (Paris, New York, Tokyo twice, Strasbourg's
        // Frankfurt), by zone and by type.
        let scrape = try TestSupport.run(
            ip,
            [
                "netns", "exec", Self.srv, try TestSupport.tool("curl"), "-s", "-H",
                "Authorization: Bearer \(ManagementAPITests.readToken)", "http://127.0.0.1:8053/metrics",
            ])
        let metrics = scrape.stdout
        for (node, n) in [("par1", 1.0), ("nyc1", 1), ("tyo1", 2), ("fra1", 1)] {
            #expect(
                MetricsTests.value(metrics, #"nearcast_node_answers_total{node="\#(node)",path="xdp"}"#) == n,
                "\(node): \(metrics)")
        }
        // Every answer XDP sent was of this zone, and asked an A (the daemon's start asked one too).
        let answered = ["answered", "answered_geo", "answered_nxdomain", "answered_geo_all_down"].map {
            Double(after[$0, default: 0])
        }
        .reduce(0, +)
        #expect(
            MetricsTests.value(metrics, #"nearcast_zone_answers_total{zone="example.test.",path="xdp"}"#) == answered
                && answered >= 5)
        #expect(MetricsTests.value(metrics, #"nearcast_xdp_answers_total{qtype="A"}"#) == answered)

        // nearcast explain gives the answer dig got through XDP.
        let explain = try TestSupport.run(
            ip,
            [
                "netns", "exec", Self.srv, try TestSupport.product("nearcast"), "explain", "geo.example.test", "A",
                "--client", "198.18.0.2",
                "--ecs", "198.18.1.0/24", "--api", "127.0.0.1:8053", "--token-file", tokens.path,
            ])
        #expect(explain.status == 0, "\(explain.stderr)")
        #expect(
            explain.stdout.contains("answer:    192.0.2.40  (TTL 30)") && explain.stdout.contains("ECS scope: 24"),
            "\(explain.stdout)")
    }

    /// Failover: par1's HTTP check and fra1's TCP and DNS checks target a service in the client
    /// namespace (a nearcastd); when it stops, Paris clients get another node from XDP within
    /// interval x fall + 1 s, with the pool's low TTL; par1 comes back after rise successes once the service is
    /// back, and the TTL once the pool has settled. An operator's drain and undrain from the CLI
    /// move the clients the same way. XDP answers throughout.
    @Test func aNodeThatFailsItsCheckIsSkippedAndComesBack() throws {
        let t = try Topology()
        let database = Self.root.appendingPathComponent(".build/geo/test-city.mmdb").path
        let servicePort = 8081
        let tokens = try TemporaryDirectory.file(
            "nearcast-failover-tokens", holding: "write \(ManagementAPITests.readToken)\n")
        let daemon = try Self.startDaemon(
            t,
            config: """
                api: { listen: "127.0.0.1:8053", tokens: \(tokens.path) }
                geo:
                  database: \(database)
                  nodes:
                    - id: par1
                      ipv4: 192.0.2.20
                      latitude: 48.86
                      longitude: 2.35
                      checks: [{ type: http, host: 198.18.0.2, port: \(servicePort), path: /healthz, interval: 1, timeout: 0.5, rise: 2, fall: 2 }]
                    - id: fra1
                      ipv4: 192.0.2.10
                      latitude: 50.11
                      longitude: 8.68
                      checks:
                        - { type: tcp, host: 198.18.0.2, port: 5353, interval: 1, timeout: 0.5, rise: 2, fall: 2 }
                        - { type: dns, host: 198.18.0.2, port: 5353, name: example.test, qtype: SOA, interval: 1, timeout: 0.5, rise: 2, fall: 2 }
                    - { id: nyc1, ipv4: 192.0.2.30, latitude: 40.71, longitude: -74.01 }
                  pools: [{ id: web, members: [par1, fra1, nyc1], min-ttl: 3, settle: 2 }]
                  names: [{ name: geo.example.test, type: A, pool: web, ttl: 30 }]
                """)
        defer { daemon.stop() }
        // The nodes' service: a nearcastd in the client namespace on 198.18.0.2, its management API
        // (par1's HTTP check) and its DNS over TCP and UDP (fra1's TCP and DNS checks).
        func startService() throws -> Daemon {
            try Daemon(
                [
                    "--zone", "example.test=\(TestSupport.fixtures.appendingPathComponent("example.test.zone").path)",
                    "--listen", "198.18.0.2:5353", "--api", "198.18.0.2:\(servicePort)",
                ], launcher: [try TestSupport.tool("ip"), "netns", "exec", Self.cli])
        }
        var service = try startService()
        defer { service.stop() }
        let ip = try TestSupport.tool("ip")
        #expect(
            try TestSupport.run(ip, ["-n", Self.cli, "addr", "add", "198.51.100.7/32", "dev", "\(Self.prefix)-c"])
                .status == 0)
        func answer() throws -> [Substring] {
            try Self.dig(["-b", "198.51.100.7", "geo.example.test", "A", "+short"]).split(separator: "\n")
        }
        /// The TTL of the answer, from dig's answer section.
        func ttl() throws -> Int? {
            let out = try Self.dig(["-b", "198.51.100.7", "geo.example.test", "A", "+noall", "+answer"])
            return out.split(separator: "\n").first.flatMap {
                Int($0.split(whereSeparator: { $0 == " " || $0 == "\t" })[1])
            }
        }
        #expect(try answer() == ["192.0.2.20"], "Paris: par1")
        #expect(try ttl() == 30, "a settled pool: the name's TTL")
        #expect(daemon.log.contains("health checks running"), "\(daemon.log)")

        let before = try Self.counters(t)
        service.stop()
        let stopped = Date()
        var moved: [Substring] = []
        try poll("par1's clients moved to another node", timeout: 5, interval: 0.1) {
            moved = try answer()
            return moved != ["192.0.2.20"]
        }
        let took = Date().timeIntervalSince(stopped)
        #expect(moved.count == 1, "another node: \(moved)")
        try daemon.waitUntilReady(timeout: 5) { daemon.log.contains("node=fra1") && daemon.log.contains("to=down") }
        #expect(took <= 1 * 2 + 1, "within interval x fall + 1 s (\(took) s)")
        #expect(daemon.log.contains("node health changed") && daemon.log.contains("node=par1"), "\(daemon.log)")
        #expect(try ttl() == 3, "par1 down: the pool's low TTL")
        try daemon.waitUntilReady(timeout: 5) { daemon.log.contains("pool TTL changed") }

        service = try startService()
        try poll("par1 back after rise successes", timeout: 6, interval: 0.1) { try answer() == ["192.0.2.20"] }
        #expect(try ttl() == 3, "just back: not yet settled")
        try poll("the TTL back once the pool has settled", timeout: 5, interval: 0.2) { try ttl() == 30 }

        // An operator drains par1 and undrains it, from the CLI in the server's namespace.
        func cli(_ args: [String]) throws -> TestSupport.Output {
            try TestSupport.run(
                ip,
                ["netns", "exec", Self.srv, try TestSupport.product("nearcast")] + args + [
                    "--api", "127.0.0.1:8053", "--token-file", tokens.path,
                ])
        }
        let drained = try cli(["node", "drain", "par1"])
        #expect(drained.status == 0 && drained.stdout.contains("drained"), "\(drained.stdout) \(drained.stderr)")
        #expect(try answer() != ["192.0.2.20"], "drained: Paris clients elsewhere at once")
        let listing = try cli(["nodes"])
        #expect(
            listing.stdout.contains("pool web") && listing.stdout.contains("unsettled, TTL at most 3 s"),
            "\(listing.stdout)")
        #expect(try cli(["node", "undrain", "par1"]).status == 0)
        #expect(try answer() == ["192.0.2.20"], "undrained: par1 again")
        // Every change was counted, and each made one map write (a node's entry; a pool's too when
        // its TTL cap moved), timed from its decision.
        let stats = try cli(["stats"])
        let health = try #require(
            stats.stdout.split(separator: "\n").first { $0.hasPrefix("health: ") }, "\(stats.stdout)")
        let numbers = health.split(whereSeparator: { !$0.isNumber }).compactMap { Int($0) }
        // par1: down, up, drain, undrain; fra1: down and up (through degraded when its two checks
        // fail a moment apart).
        #expect(numbers.count >= 3 && (6...8).contains(numbers[0]), "\(health)")
        #expect(numbers.count >= 3 && numbers[2] == numbers[0] + numbers[1], "one map write per change: \(health)")
        #expect(health.contains("decision to map write p50"), "\(health)")
        let after = try Self.counters(t)
        #expect(after["answered_geo", default: 0] > before["answered_geo", default: 0], "answered by XDP throughout")
        #expect(after["pass_miss", default: 0] == before["pass_miss", default: 0])
        #expect(after["pass_geo", default: 0] == before["pass_geo", default: 0], "no geo query left to the slow path")
    }

    /// Reloads under load (issues 6, 29): the zone file changes and `nearcast reload` (and SIGHUP)
    /// switch to it, each writing the record it changed into the live generation, and bursts of
    /// `nearcast record add` change the zone, while kxdpgun floods the changing name: every query
    /// is answered by XDP, none falls through as a miss while the table changes. Then, with dig
    /// asking through XDP while reloads go on, every answer is one of the values written, never a
    /// gap.
    @Test func reloadsAndChangesUnderLoadLeaveNoGap() throws {
        let t = try Topology()
        let dir = try TemporaryDirectory.url("nearcast-reload")
        let zone = dir.appendingPathComponent("example.test.zone")
        let fixture = try String(
            contentsOf: TestSupport.fixtures.appendingPathComponent("example.test.zone"), encoding: .utf8)
        @Sendable func writeZone(_ i: Int) throws {
            // Through a temporary file and a rename, as an operator's tools should write zones.
            let tmp = dir.appendingPathComponent("zone.tmp")
            try (fixture + "\nreload.example.test. 300 IN A 192.0.2.\(100 + i)\n").write(
                to: tmp, atomically: false, encoding: .utf8)
            _ = rename(tmp.path, zone.path)
        }
        try writeZone(0)
        let tokens = dir.appendingPathComponent("tokens")
        try "admin \(ManagementAPITests.readToken)\n".write(to: tokens, atomically: true, encoding: .utf8)
        // The file is rewritten by hand at its serial while API changes wait in its journal: no
        // write-back meanwhile (one would put the file past that serial, and the next hand-written
        // file would then be refused as older than the journal, rightly).
        let daemon = try Self.startDaemon(
            t, config: "zonefile-sync: 86400\n", zone: zone.path,
            extraArgs: ["--api", "127.0.0.1:8053", "--api-tokens", tokens.path])
        defer { daemon.stop() }
        let ip = try TestSupport.tool("ip")
        @Sendable func reload() throws -> TestSupport.Output {
            try TestSupport.run(
                ip,
                [
                    "netns", "exec", Self.srv, try TestSupport.product("nearcast"), "reload", "--api", "127.0.0.1:8053",
                    "--token-file", tokens.path,
                ])
        }
        #expect(try Self.dig(["reload.example.test", "A", "+short"]) == "192.0.2.100\n")

        // Under kxdpgun's load.
        var reloads = 0
        let load = try Self.underLoad(
            t, queries: "reload.example.test A\nwww.example.test A\n", seconds: 4, rate: 50_000
        ) {
            for i in 1...6 {
                try writeZone(i)
                let r = try reload()
                #expect(
                    r.status == 0 && r.stdout.contains("reloaded: 1 zone") && r.stdout.contains(" written")
                        && !r.stdout.contains(" 0 written"), "\(r.stdout) \(r.stderr)")
                // The file against the zone served (its API changes replayed from the journal):
                // one RRset, whose records alone are written into the live generation.
                #expect(r.stdout.contains("(1 RRset changed)"), "\(r.stdout)")
                reloads += 1
                // And a burst of record changes through the API, each a generation of its own.
                for k in 0..<3 {
                    let add = try TestSupport.run(
                        ip,
                        [
                            "netns", "exec", Self.srv, try TestSupport.product("nearcast"), "record", "add",
                            "example.test.", "burst\(i)-\(k)", "A",
                            "192.0.2.\(k + 1)", "--api", "127.0.0.1:8053", "--token-file", tokens.path,
                        ])
                    #expect(add.status == 0, "\(add.stderr)")
                    reloads += 1
                }
                try Self.counted(
                    t, since: try Self.counters(t), "answers after reload \(i)", ["answered"], atLeast: 2_000)
            }
        }
        let sent = load.sent
        let answered = load.delta("answered")
        #expect(sent > 50_000, "kxdpgun ran: \(load.output)")
        #expect(load.delta("pass_miss") == 0, "no query fell through a switch as a miss")
        #expect(
            Double(answered) >= Double(sent) * 0.99, "XDP answered \(answered) of \(sent) across \(reloads) switches")
        #expect(Double(load.replies) >= Double(sent) * 0.99, "\(load.output)")

        // dig through XDP while reloads go on: only values that were written, never nothing.
        let written = Mutex<Set<String>>(["192.0.2.106"])
        let reloading = Atomic<Bool>(true)
        let reloader = Thread {
            for i in 7...12 {
                try? writeZone(i)
                written.withLock { _ = $0.insert("192.0.2.\(100 + i)") }
                _ = try? reload()
            }
            reloading.store(false, ordering: .releasing)
        }
        reloader.start()
        var seen: [String] = []
        for _ in 0..<40 {
            let a = try Self.dig(["reload.example.test", "A", "+short"]).trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(written.withLock { $0.contains(a) }, "an answer that was never written: '\(a)'")
            seen.append(a)
        }
        // SIGHUP does the same, once the API's reloads are over (one of them would read the new
        // zone too). The answer changes at the switch, the log line comes after it: both waited for.
        try poll("the reloads through the API end", timeout: 60) { !reloading.load(ordering: .acquiring) }
        try writeZone(20)
        kill(daemon.pid, SIGHUP)
        try daemon.waitUntilReady(timeout: 10) {
            (try? Self.dig(["reload.example.test", "A", "+short"])) == "192.0.2.120\n"
                && daemon.log.contains("by=SIGHUP")
        }
        #expect(daemon.log.contains("reloaded") && daemon.log.contains("by=SIGHUP"), "\(daemon.log)")
        print("reloads under load: kxdpgun sent \(sent), XDP answered \(answered); dig saw \(Set(seen).sorted())")
    }

    /// Nodes and pools changed while serving (issue 6): the config's geo section alternates between
    /// two versions (par1 moves to a new address, nyc1 leaves, lon1 joins) and `nearcast reload`
    /// compiles and switches each in while kxdpgun floods the geo name. XDP answers every query
    /// (no miss, nothing passed as a geo name it could not answer); dig meanwhile only ever sees a
    /// whole version's answer; a node an operator drained stays drained across reloads; and the
    /// API lists the new nodes.
    @Test func nodesAndPoolsChangeWhileServingUnderLoad() throws {
        let t = try Topology()
        let dir = try TemporaryDirectory.url("nearcast-georeload")
        let tokens = dir.appendingPathComponent("tokens")
        try "admin \(ManagementAPITests.readToken)\n".write(to: tokens, atomically: true, encoding: .utf8)
        let database = Self.root.appendingPathComponent(".build/geo/test-city.mmdb").path
        @Sendable func config(_ version: Int) -> String {
            // Version 1: par1 at a new address, nyc1 out and lon1 in.
            let four = Fixtures.fourNodes(indent: 2)
            let nodes =
                version == 0
                ? four
                : four.replacingOccurrences(of: "ipv4: 192.0.2.20,", with: "ipv4: 192.0.2.21,")
                    .replacingOccurrences(
                        of:
                            #"- { id: nyc1, ipv4: 192.0.2.30, ipv6: "2001:db8::30", latitude: 40.71, longitude: -74.01, country: US, weight: 3 }"#,
                        with: "- { id: lon1, ipv4: 192.0.2.50, latitude: 51.51, longitude: -0.13 }"
                    )
                    .replacingOccurrences(
                        of: "members: [fra1, par1, nyc1, tyo1]", with: "members: [fra1, par1, lon1, tyo1]")
            return """
                api: { listen: "127.0.0.1:8053", tokens: \(tokens.path) }
                geo:
                  database: \(database)
                \(nodes)
                  names: [{ name: geo.example.test, type: A, pool: web }]
                """
        }
        var daemon = try Self.startDaemon(t, config: config(0))
        defer { daemon.stop() }
        let file = t.configFile
        let ip = try TestSupport.tool("ip")
        @Sendable func cli(_ args: [String]) throws -> TestSupport.Output {
            try TestSupport.run(
                ip,
                ["netns", "exec", Self.srv, try TestSupport.product("nearcast")] + args + [
                    "--api", "127.0.0.1:8053", "--token-file", tokens.path,
                ])
        }
        @Sendable func switchTo(_ version: Int) throws -> TestSupport.Output {
            // Through a temporary file and a rename, as an operator's tools should write configs.
            let tmp = file.appendingPathExtension("tmp")
            try config(version).write(to: tmp, atomically: false, encoding: .utf8)
            _ = rename(tmp.path, file.path)
            return try cli(["reload"])
        }
        for a in ["198.51.100.7", "198.18.1.9"] {
            #expect(
                try TestSupport.run(ip, ["-n", Self.cli, "addr", "add", "\(a)/32", "dev", "\(Self.prefix)-c"]).status
                    == 0)
        }
        func paris() throws -> String {
            try Self.dig(["-b", "198.51.100.7", "geo.example.test", "A", "+short"]).trimmingCharacters(
                in: .whitespacesAndNewlines)
        }
        #expect(try paris() == "192.0.2.20")
        // An operator drains Tokyo's node: Tokyo's clients go elsewhere, across every reload below.
        #expect(try cli(["node", "drain", "tyo1"]).status == 0)

        let load = try Self.underLoad(t, queries: "geo.example.test A\n", seconds: 4, rate: 50_000) {
            for i in 1...6 {
                let r = try switchTo(i % 2)
                #expect(r.status == 0 && r.stdout.contains("geo section changed"), "\(r.stdout) \(r.stderr)")
                try Self.counted(
                    t, since: try Self.counters(t), "answers after switch \(i)", ["answered_geo"], atLeast: 2_000)
            }
        }
        let sent = load.sent
        let answered = load.delta("answered_geo")
        #expect(sent > 50_000, "kxdpgun ran: \(load.output)")
        for reason in ["pass_miss", "pass_geo"] {
            #expect(load.delta(reason) == 0, "no query fell through a switch (\(reason))")
        }
        #expect(
            Double(answered) >= Double(sent) * 0.99,
            "XDP answered \(answered) of \(sent) geo queries across 6 geo switches")

        // The first version is live again; then the second: par1's new address, lon1 in and nyc1
        // out, tyo1 still drained.
        #expect(try paris() == "192.0.2.20")
        #expect(try switchTo(1).status == 0)
        #expect(try paris() == "192.0.2.21")
        let nodes = try cli(["nodes"])
        #expect(nodes.stdout.contains("lon1") && !nodes.stdout.contains("nyc1"), "\(nodes.stdout)")
        #expect(
            nodes.stdout.split(separator: "\n").contains { $0.contains("tyo1") && $0.contains("drain") },
            "\(nodes.stdout)")
        let tokyo = try Self.dig(["-b", "198.18.1.9", "geo.example.test", "A", "+short"])
        #expect(!tokyo.isEmpty && !tokyo.contains("192.0.2.40"), "tyo1 stays drained: \(tokyo)")

        // dig through XDP while the versions alternate: one version's answer or the other's.
        let finished = Mutex(false)
        let reloader = Thread {
            for i in 0..<6 { _ = try? switchTo(i % 2) }
            finished.withLock { $0 = true }
        }
        reloader.start()
        var seen: Set<String> = []
        for _ in 0..<30 {
            let a = try paris()
            #expect(a == "192.0.2.20" || a == "192.0.2.21", "an answer of neither version: '\(a)'")
            seen.insert(a)
        }
        try poll("the reloads finish", timeout: 60) { finished.withLock { $0 } }

        // The geo fast path outlives a killed daemon, and a new one takes it over: its own maps
        // go into the other generation, switched in with its names table.
        daemon.stop(signal: SIGKILL)
        #expect(try paris() == "192.0.2.21", "XDP answers the last version with no daemon")
        daemon = try Self.startDaemon(t, config: config(0))
        #expect(try paris() == "192.0.2.20")
        #expect(!daemon.log.contains("replaced-program=none"), "taken over, not attached anew")
        print("geo reloads under load: kxdpgun sent \(sent), XDP answered \(answered); dig saw \(seen.sorted())")
    }

    /// `nearcast stats` prints what the program counted, as bpftool reads it from the pinned map;
    /// with --watch, rates per second too.
    @Test func nearcastStatsPrintsTheXDPCounters() throws {
        let t = try Topology()
        let tokens = try TemporaryDirectory.file(
            "nearcast-e2e-tokens", holding: "read \(ManagementAPITests.readToken)\n")
        let daemon = try Self.startDaemon(t, extraArgs: ["--api", "127.0.0.1:8053", "--api-tokens", tokens.path])
        defer { daemon.stop() }
        for _ in 0..<3 { _ = try Self.dig(["www.example.test", "A"]) }
        _ = try Self.dig(["x.wild.example.test", "A"])

        // The API listens on 127.0.0.1 inside the server's namespace: so does the CLI.
        let stats = { (extra: [String]) throws -> TestSupport.Output in
            try TestSupport.run(
                try TestSupport.tool("ip"),
                [
                    "netns", "exec", Self.srv, try TestSupport.product("nearcast"), "stats", "--api", "127.0.0.1:8053",
                    "--token-file", tokens.path,
                ]
                    + extra)
        }
        let out = try stats([])
        let bpftool = try Self.counters(t)
        #expect(out.status == 0, "\(out.stderr)")
        func printed(_ reason: String) -> Int? {
            guard
                let line = out.stdout.split(separator: "\n").first(where: {
                    $0.split(separator: " ").first.map(String.init) == reason
                })
            else { return nil }
            return Int(line.split(separator: " ").last ?? "")
        }
        #expect(
            printed("answered") == bpftool["answered"] && bpftool["answered", default: 0] >= 3,
            "\(out.stdout) vs \(bpftool)")
        #expect(printed("pass_miss") == bpftool["pass_miss"] && bpftool["pass_miss", default: 0] >= 1, "\(out.stdout)")
        for reason in ABIHeader.verdictReasons {
            #expect(printed(reason) != nil, "\(reason) is listed: \(out.stdout)")
        }

        let status = try TestSupport.run(
            try TestSupport.tool("ip"),
            [
                "netns", "exec", Self.srv, try TestSupport.product("nearcast"), "status", "--api", "127.0.0.1:8053",
                "--token-file", tokens.path,
            ])
        #expect(
            status.stdout.contains("fast path: XDP on \(Self.serverIf):native,")
                && status.stdout.contains("zones:     example.test. (serial"), "\(status.stdout) \(status.stderr)")
        let watch = try stats(["--watch", "--interval", "0.3", "--count", "2"])
        #expect(watch.status == 0, "\(watch.stderr)")

        // The dashboard (issue 20) charts XDP's answers: two seconds of hot queries at 2,000 a
        // second, then the page, in the server's namespace, finds them in its history.
        let load = try Self.underLoad(t, queries: "www.example.test A", seconds: 2, rate: 2000)
        #expect(load.replies > 2000, "\(load.output)")
        let page = try TestSupport.run(
            try TestSupport.tool("ip"),
            [
                "netns", "exec", Self.srv, "/usr/bin/python3",
                Self.root.appendingPathComponent("Tests/Browser/xdp_charts.py").path,
                "--api", "http://127.0.0.1:8053", "--token", ManagementAPITests.readToken, "--screenshots",
                Self.root.appendingPathComponent(".build/screenshots/dashboard").path, "--answered-at-least", "1000",
            ], timeout: 60)
        #expect(page.status == 0 && page.stdout.contains("PASSED"), "\(page.stdout)\n\(page.stderr)")
        // Two refreshes, each with rates in both tables (XDP's verdicts, the slow path's replies).
        #expect(
            watch.stdout.components(separatedBy: "XDP fast path: verdicts").count - 1 == 2
                && watch.stdout.components(separatedBy: "slow path: replies by rcode").count - 1 == 2
                && watch.stdout.components(separatedBy: "per second").count - 1 == 4,
            "two refreshes with rates: \(watch.stdout)")
    }

    /// XDP answers only for the daemon's addresses: NSD serves the same zone (with another
    /// answer) on a second address of the same interface, and its queries reach it through the
    /// attached program untouched, counted as not ours, while the daemon's own are XDP's.
    @Test func anotherServerOnASecondAddressAnswersItsOwnQueries() throws {
        let t = try Topology()
        let second = "198.18.0.3"
        try Self.serverIP(["addr", "add", "\(second)/24", "dev", Self.serverIf])
        let dir = try TemporaryDirectory.url("nearcast-nsd")
        let zone = dir.appendingPathComponent("example.test.zone")
        try """
        $ORIGIN example.test.
        $TTL 300
        @ SOA ns1 hostmaster 1 3600 600 86400 60
        @ NS ns1
        ns1 A 198.18.0.3
        www A 192.0.2.222
        """.write(to: zone, atomically: true, encoding: .utf8)
        let conf = try ReferenceServerDifferentialTests.nsdConfig(
            dir: dir, address: second, port: 53, origin: "example.test.", file: zone)
        let nsd = try ServerProcess(
            try TestSupport.tool("ip"), ["netns", "exec", Self.srv, try TestSupport.tool("nsd"), "-d", "-c", conf.path])
        defer { nsd.stop() }
        let daemon = try Self.startDaemon(t)
        defer { daemon.stop() }
        #expect(daemon.log.contains("XDP answers queries to"), "\(daemon.log)")
        try nsd.waitUntilReady {
            (try? Self.dig(["www.example.test", "A", "+short"], at: second).contains("192.0.2.222")) == true
        }
        let before = try Self.counters(t)
        #expect(try Self.dig(["www.example.test", "A", "+short"], at: second).contains("192.0.2.222"), "NSD's")
        #expect(try Self.dig(["www.example.test", "A", "+short"]).contains("192.0.2.1"), "nearcast's")
        let after = try Self.counters(t)
        #expect(after["pass_not_ours", default: 0] - before["pass_not_ours", default: 0] == 1, "\(after)")
        #expect(after["answered", default: 0] - before["answered", default: 0] == 1, "\(after)")
    }

    /// On a wildcard listen XDP answers for every address of the host, followed as they come and go.
    @Test func aWildcardListenFollowsTheHostsAddresses() throws {
        let t = try Topology()
        let daemon = try Self.startDaemon(t, listen: "0.0.0.0:53")
        defer { daemon.stop() }
        let added = "198.18.0.4"
        func answeredByXDP(at address: String) throws -> Bool {
            let before = try Self.counters(t)["answered", default: 0]
            guard try Self.dig(["www.example.test", "A", "+short"], at: address).contains("192.0.2.1") else {
                return false
            }
            return try Self.counters(t)["answered", default: 0] - before == 1
        }
        #expect(try answeredByXDP(at: Self.server))
        try Self.serverIP(["addr", "add", "\(added)/24", "dev", Self.serverIf])
        try daemon.waitUntilReady(timeout: 10) { (try? answeredByXDP(at: added)) == true }
        #expect(daemon.log.contains("the host's addresses changed"), "\(daemon.log)")
        try Self.serverIP(["addr", "del", "\(added)/24", "dev", Self.serverIf])
        try daemon.waitUntilReady(timeout: 10) {
            daemon.log.split(separator: "\n").last { $0.contains("XDP answers queries to") }?.contains(added) == false
        }
        #expect(try answeredByXDP(at: Self.server))
    }

    /// DNS Cookies with real dig: its client cookie gets a server cookie from XDP, which dig finds
    /// good; sent back, it is echoed by XDP; a forged one draws BADCOOKIE from the slow path.
    @Test func digGetsServerCookiesFromXDP() throws {
        let t = try Topology()
        let daemon = try Self.startDaemon(t)
        defer { daemon.stop() }
        func cookie(_ out: String) -> String? {
            guard let line = out.split(separator: "\n").first(where: { $0.contains("; COOKIE: ") }) else { return nil }
            return line.split(separator: " ").dropFirst(2).first.map(String.init)
        }
        var before = try Self.counters(t)
        let first = try Self.dig(["+cookie", "www.example.test", "A"])
        let learned = try #require(cookie(first), "\(first)")
        #expect(first.contains("status: NOERROR") && first.contains("(good)") && learned.count == 48, "\(first)")
        let again = try Self.dig(["+cookie=\(learned)", "www.example.test", "A"])
        #expect(cookie(again) == learned && again.contains("(good)"), "echoed while fresh: \(again)")
        var after = try Self.counters(t)
        #expect(after["answered", default: 0] - before["answered", default: 0] == 2, "both answered by XDP")

        before = after
        let forged =
            String(learned.prefix(16)) + "01000000" + String(learned.dropFirst(24).prefix(8)) + "0000000000000000"
        let bad = try Self.dig(["+cookie=\(forged)", "+nobadcookie", "www.example.test", "A"])
        #expect(bad.contains("status: BADCOOKIE") && cookie(bad) != forged, "\(bad)")
        after = try Self.counters(t)
        #expect(after["pass_cookie", default: 0] - before["pass_cookie", default: 0] == 1)
    }

    @Test func xdpAnswersHotNamesTheSlowPathTheRestAndTheFastPathOutlivesTheDaemon() throws {
        let t = try Topology()
        var daemon = try Self.startDaemon(t)
        defer { daemon.stop(signal: SIGKILL) }

        // A hot name: XDP answers (dig sends a COOKIE, which both paths ignore).
        var before = try Self.counters(t)
        let hot = try Self.dig(["www.example.test", "A"])
        #expect(hot.contains("status: NOERROR") && hot.contains("192.0.2.1") && hot.contains("192.0.2.2"))
        var after = try Self.counters(t)
        #expect(after["answered", default: 0] - before["answered", default: 0] == 1, "answered by XDP")

        // A name that does not exist: XDP too.
        before = after
        #expect(try Self.dig(["nope.example.test", "A"]).contains("status: NXDOMAIN"))
        after = try Self.counters(t)
        #expect(after["answered_nxdomain", default: 0] - before["answered_nxdomain", default: 0] == 1)

        // A miss (a name a wildcard covers), and TCP: the slow path.
        before = after
        #expect(try Self.dig(["x.wild.example.test", "A"]).contains("192.0.2.100"))
        #expect(try Self.dig(["+tcp", "www.example.test", "AAAA", "+short"]).contains("2001:db8::1"))
        after = try Self.counters(t)
        #expect(after["pass_miss", default: 0] - before["pass_miss", default: 0] == 1)
        #expect(after["answered", default: 0] == before["answered", default: 0], "TCP is not XDP's")

        // kill -9: hot names (and names that do not exist) are still answered, by XDP alone.
        daemon.stop(signal: SIGKILL)
        before = try Self.counters(t)
        #expect(try Self.dig(["www.example.test", "A", "+short"]).contains("192.0.2.1"))
        #expect(try Self.dig(["nope.example.test", "A"]).contains("status: NXDOMAIN"), "NXDOMAIN from XDP too")
        #expect(
            !(try Self.dig(["x.wild.example.test", "A"]).contains("status:")), "no slow path while the daemon is down")
        after = try Self.counters(t)
        #expect(after["answered", default: 0] - before["answered", default: 0] == 1)

        // A new daemon takes over the pinned maps and replaces the program in one step.
        daemon = try Self.startDaemon(t)
        #expect(
            daemon.log.contains("replaced-program=") && !daemon.log.contains("replaced-program=none"), "\(daemon.log)")
        #expect(try Self.counters(t)["answered", default: 0] >= after["answered", default: 0], "counters carried over")
        #expect(try Self.dig(["www.example.test", "A", "+short"]).contains("192.0.2.2"))

        // SIGTERM: the daemon detaches its program and removes its pins.
        #expect(daemon.stop(signal: SIGTERM) == 0)
        let link = try TestSupport.run(try TestSupport.tool("ip"), ["-n", Self.srv, "link", "show", Self.serverIf])
            .stdout
        #expect(!link.contains("xdp"), "\(link)")
        #expect(!FileManager.default.fileExists(atPath: t.pinRoot + "/nc_names"))
    }

    /// A validating resolver in the client's namespace (Unbound, the zone's DS its only trust
    /// anchor) resolves through nearcastd with XDP on: signed answers, a wildcard's, a CNAME
    /// chain's, NXDOMAIN and NODATA come back secure (AD). XDP answers the DO=1 questions of
    /// names it holds with their signatures, and passes the rest to the slow path (`pass_dnssec`:
    /// the proofs); the one RRset whose signature was broken in the zone file is SERVFAIL.
    @Test func aValidatingResolverTrustsTheSignedZoneThroughXDP() throws {
        let t = try Topology()
        let signed = try SignedFixture.make(in: t.files.url.appendingPathComponent("signed"), nsec3: true)
        let text = try String(contentsOf: signed.zoneFile, encoding: .utf8)
        let zone = try t.files.write(
            try SignedZoneTests.breakingSignature(of: "mail.example.test.", "A", in: text), to: "signed.zone")
        let daemon = try Self.startDaemon(t, zone: zone)
        defer { daemon.stop(signal: SIGKILL) }
        let anchor = signed.ds.split(whereSeparator: { $0 == " " || $0 == "\t" }).joined(separator: " ")
        let config = try t.files.write(
            ValidatingResolver.config(
                listen: "127.0.0.1@53", directory: t.files.path, anchor: anchor, zone: "example.test",
                server: "\(Self.server)@53"), to: "unbound.conf")
        let unbound = try ServerProcess(
            try TestSupport.tool("ip"),
            ["netns", "exec", Self.cli, try TestSupport.tool("unbound"), "-d", "-c", config])
        defer { unbound.stop() }
        func resolve(_ name: String, _ type: String) throws -> String {
            try Self.dig(["+dnssec", name, type], at: "127.0.0.1")
        }
        try unbound.waitUntilReady { (try? resolve("example.test", "SOA").contains("status: NOERROR")) == true }

        let before = try Self.counters(t)
        for (name, type, expected) in [
            ("www.example.test", "A", "192.0.2.1"), ("x.wild.example.test", "A", "192.0.2.100"),
            ("q.cw.example.test", "AAAA", "2001:db8::1"), ("nope.example.test", "A", "status: NXDOMAIN"),
            ("www.example.test", "TXT", "ANSWER: 0"),
        ] {
            let out = try resolve(name, type)
            #expect(out.contains(" ad;") || out.contains(" ad "), "\(name) \(type) secure: \(out)")
            #expect(out.contains(expected), "\(name) \(type): \(out)")
        }
        let broken = try resolve("mail.example.test", "A")
        #expect(broken.contains("status: SERVFAIL"), "a broken signature: \(broken)")
        let after = try Self.counters(t)
        #expect(after["pass_dnssec", default: 0] - before["pass_dnssec", default: 0] >= 3, "\(after)")
        // www's A (and the apex's DNSKEY, as Unbound asks it) signed, from XDP.
        #expect(after["answered", default: 0] - before["answered", default: 0] >= 2, "\(after)")
        // Without DO the same zone is XDP's.
        #expect(try Self.dig(["www.example.test", "A", "+short"]).contains("192.0.2.1"))
        #expect(try Self.counters(t)["answered", default: 0] > after["answered", default: 0])
    }

    /// Signed geo answers through XDP (issue 34): nearcastd signs the zone with its key, and
    /// Unbound, validating with the key's DS and passing its clients' subnets on (subnetcache),
    /// resolves the geo name securely for clients in Paris, New York and Tokyo, each its nearest
    /// nodes, answered by XDP with their variant's signatures; NODATA at the geo name and
    /// NXDOMAIN beside it are secure too.
    @Test func aValidatingResolverTrustsSignedGeoAnswersThroughXDP() throws {
        let t = try Topology()
        let (state, anchors) = try DaemonSigningTests.keyed(in: t.files)
        let database = Self.root.appendingPathComponent(".build/geo/test-city.mmdb").path
        let tokens = try t.files.write("write \(ManagementAPITests.readToken)\n", to: "tokens")
        let daemon = try Self.startDaemon(
            t,
            config: """
                state-dir: \(state)
                api: { listen: "127.0.0.1:8053", tokens: \(tokens) }
                geo:
                  database: \(database)
                \(Fixtures.fourNodes(indent: 2))
                  names: [{ name: geo.example.test, type: A, pool: web, answers: 2, ttl: 20 }]
                """)
        defer { daemon.stop(signal: SIGKILL) }
        #expect(daemon.log.contains("geo answers signed"), "\(daemon.log)")
        // The anchor as Unbound's trust-anchor wants it: the DS record.
        let ds = try ValidatingResolver.anchor(fromDelvAnchors: anchors)
        let config = try t.files.write(
            ValidatingResolver.config(
                listen: "127.0.0.1@53", directory: t.files.path, anchor: ds, zone: "example.test",
                server: "\(Self.server)@53", clientSubnet: true), to: "unbound.conf")
        let unbound = try ServerProcess(
            try TestSupport.tool("ip"),
            ["netns", "exec", Self.cli, try TestSupport.tool("unbound"), "-d", "-c", config])
        defer { unbound.stop() }
        func resolve(_ args: [String]) throws -> String { try Self.dig(["+dnssec"] + args, at: "127.0.0.1") }
        try unbound.waitUntilReady { (try? resolve(["example.test", "SOA"]).contains(" ad")) == true }

        let before = try Self.counters(t)
        // (Unbound turns the RRset's order round: the nodes are compared as a set.)
        for (subnet, nearest) in [
            ("198.51.100.0/24", ["192.0.2.10", "192.0.2.20"]), ("203.0.113.0/24", ["192.0.2.20", "192.0.2.30"]),
            ("198.18.1.0/24", ["192.0.2.10", "192.0.2.40"]),
        ] {
            let out = try resolve(["+subnet=\(subnet)", "geo.example.test", "A"])
            #expect(out.contains(" ad;") || out.contains(" ad "), "\(subnet) secure: \(out)")
            let nodes = out.split(separator: "\n").filter { $0.hasPrefix("geo.example.test.") && $0.contains("\tA\t") }
                .compactMap { $0.split(separator: "\t").last.map(String.init) }
            #expect(Set(nodes) == Set(nearest), "\(subnet): \(out)")
        }
        for (name, type, expected) in [("geo.example.test", "MX", "ANSWER: 0"), ("geo2.example.test", "A", "NXDOMAIN")]
        {
            let out = try resolve([name, type])
            #expect((out.contains(" ad;") || out.contains(" ad ")) && out.contains(expected), "\(name) \(type): \(out)")
        }
        let after = try Self.counters(t)
        #expect(
            after["answered_geo", default: 0] - before["answered_geo", default: 0] >= 3, "signed, from XDP: \(after)")

        // Three nodes drained: every client gets tyo1 alone, a node set no compile gave. The slow
        // path signs it as it is asked; within seconds XDP holds it too, and Unbound trusts it.
        for node in ["fra1", "par1", "nyc1"] {
            let drained = try TestSupport.run(
                try TestSupport.tool("ip"),
                ["netns", "exec", Self.srv, try TestSupport.product("nearcast"), "node", "drain", node]
                    + ["--api", "127.0.0.1:8053", "--token-file", tokens])
            #expect(drained.status == 0, "\(drained.stdout)\(drained.stderr)")
        }
        try poll("XDP answers the new node set signed", timeout: 15, interval: 0.3) {
            let was = try Self.counters(t)["answered_geo", default: 0]
            let out = try Self.dig(["+dnssec", "+norec", "geo.example.test", "A"])
            let now = try Self.counters(t)["answered_geo", default: 0]
            return out.contains("RRSIG") && out.contains("192.0.2.40") && !out.contains("192.0.2.10") && now > was
        }
        let tokyo = try resolve(["+subnet=198.18.0.0/24", "geo.example.test", "A"])
        #expect((tokyo.contains(" ad;") || tokyo.contains(" ad ")) && tokyo.contains("192.0.2.40"), "\(tokyo)")
    }
}
