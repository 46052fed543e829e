import DNSWire
import Foundation
import NearcastTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A fleet of three servers in network namespaces (issue 18), judging a node from many vantage
/// points and sharing changes: three nearcastd, each in a network
/// namespace of its own (tools/fleet-netns.sh), the first with XDP, all following one etcd on the
/// host. A node's check is a TCP connect to 127.0.0.1, which is each namespace's own loopback, so
/// the test decides what each server sees by where it runs the check's target.
@Suite(.serialized, .timeLimit(.minutes(4))) struct FleetHealthTests {
    static let prefix = "ncf\(getpid() % 10000)"
    static let count = 3

    /// The namespaces, etcd on every host address, and the servers' files.
    final class Topology {
        let etcd: EtcdServer
        let dir: URL
        let pins: TemporaryBPFFS
        let writer = "0123456789abcdef0123456789abcdef"
        let checkPort: Int
        var servers: [Daemon?] = Array(repeating: nil, count: FleetHealthTests.count)
        var targets: [ServerProcess?] = Array(repeating: nil, count: FleetHealthTests.count)

        init() throws {
            let up = try TestSupport.run(
                Repository.root.appendingPathComponent("tools/fleet-netns.sh").path,
                [
                    "up", FleetHealthTests.prefix, "\(FleetHealthTests.count)",
                    Repository.root.appendingPathComponent(".build/bpf/xdp_pass.bpf.o").path,
                ])
            guard up.status == 0 else { throw TestFailure("fleet-netns.sh up: \(up.stderr)") }
            etcd = try EtcdServer(everyAddress: true)
            pins = try TemporaryBPFFS()
            checkPort = try TestSupport.unusedPort()
            dir = try TemporaryDirectory.url("nearcast-fleetns")
            try "write \(writer)\n".write(to: dir.appendingPathComponent("tokens"), atomically: true, encoding: .utf8)
        }

        deinit {
            for t in targets { t?.stop() }
            for s in servers { s?.stop() }
            etcd.stop()
            _ = try? TestSupport.run(
                Repository.root.appendingPathComponent("tools/fleet-netns.sh").path,
                ["down", FleetHealthTests.prefix, "\(FleetHealthTests.count)"])
        }

        func namespace(_ i: Int) -> String { "\(FleetHealthTests.prefix)-\(i)" }
        func address(_ i: Int) -> String { "198.19.\(i).2" }
        func store(_ i: Int) -> String { "store:\n  etcd: { endpoints: [\"http://198.19.\(i).1:\(etcd.port)\"] }\n" }

        /// Imports `config` (without its store section) into the store, from the host.
        func seed(_ config: String) throws {
            let seed = dir.appendingPathComponent("seed.yaml")
            try (config + "\nstore:\n  etcd: { endpoints: [\"\(etcd.endpoint)\"] }\n").write(
                to: seed, atomically: true, encoding: .utf8)
            let imported = try TestSupport.run(try TestSupport.product("nearcast"), ["store", "import", seed.path])
            guard imported.status == 0 else { throw TestFailure("store import: \(imported.stderr)") }
        }

        /// Server `i` (named s`i`) in its namespace, with XDP on its interface when `xdp`.
        func start(_ i: Int, xdp: Bool) throws {
            let config = dir.appendingPathComponent("server\(i).yaml")
            try """
            listen: ["\(address(i)):0"]
            state-dir: \(dir.path)/state\(i)
            api: { listen: "\(address(i)):0", tokens: tokens }
            \(store(i))  server: s\(i)
            """.write(to: config, atomically: true, encoding: .utf8)
            var args = ["--config", config.path, "--threads", "1"]
            if xdp {
                args += [
                    "--xdp", "\(FleetHealthTests.prefix)-n\(i):native", "--pin-root", pins.path + "/s\(i)",
                    "--bpf-object", Repository.root.appendingPathComponent(".build/bpf/nearcast.bpf.o").path,
                ]
            }
            servers[i] = try Daemon(args, launcher: [try TestSupport.tool("ip"), "netns", "exec", namespace(i)])
        }

        /// The check's target (a TCP listener on 127.0.0.1) in server `i`'s namespace: there, the
        /// node passes its check.
        func startTarget(_ i: Int) throws {
            let script = """
                import socket, sys
                s = socket.socket()
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                s.bind(("127.0.0.1", \(checkPort)))
                s.listen(64)
                print("listening", flush=True)
                while True:
                    c, _ = s.accept()
                    c.close()
                """
            let p = try ServerProcess(
                try TestSupport.tool("ip"),
                ["netns", "exec", namespace(i), try TestSupport.tool("python3"), "-c", script])
            try p.waitUntilReady(timeout: 10) { p.log.contains("listening") }
            targets[i] = p
        }

        func stopTarget(_ i: Int) {
            targets[i]?.stop()
            targets[i] = nil
        }

        /// `nearcast ARGS` against server `i`'s API, from the host.
        func api(_ i: Int, _ args: [String]) throws -> TestSupport.Output {
            try TestSupport.run(
                try TestSupport.product("nearcast"),
                args + ["--api", "\(address(i)):\(servers[i]?.apiPort ?? 0)"], environment: ["NEARCAST_TOKEN": writer])
        }

        /// Server `i`'s line for `node` in `nearcast nodes`.
        func nodeLine(_ i: Int, _ node: String) -> String {
            ((try? api(i, ["nodes"]))?.stdout ?? "").split(separator: "\n").first { $0.hasPrefix(node + " ") }
                .map(String.init) ?? ""
        }

        /// Each observer's view of `node` as server `i` shows it ("s0 up, s1 down"), this
        /// server's first.
        func seen(_ i: Int, _ node: String) -> String {
            let line = nodeLine(i, node)
            guard let r = line.range(of: "  seen: ") else { return "" }
            return line[r.upperBound...].components(separatedBy: "  ")[0]
        }

        /// The addresses server `i` answers for `name` A, asked from the host.
        func answer(_ i: Int, _ name: String) -> Set<String> {
            guard let port = servers[i]?.dnsPort,
                let reply = RawClient.udp(RawClient.query(name, .a), host: address(i), port: port, timeout: 0.5),
                let m = try? DNSMessage(wire: reply)
            else { return [] }
            return Set(m.answers.compactMap { if case .a(let a) = $0.rdata { a.description } else { nil } })
        }

        /// Waits until every server answers `name` with exactly `addresses`.
        func waitEveryServerAnswers(_ name: String, _ addresses: Set<String>, timeout: Double = 20) throws {
            for i in 0..<FleetHealthTests.count {
                try servers[i]!.waitUntilReady(timeout: timeout) { answer(i, name) == addresses }
            }
        }
    }

    static let geo = """
        zones:
          - { origin: example.test., file: \(TestSupport.fixtures.appendingPathComponent("example.test.zone").path) }
        geo:
          database: \(Repository.testCityDatabase)
          nodes:
            - { id: n1, ipv4: 192.0.2.11, latitude: 50.1, longitude: 8.7,
                checks: [{ type: tcp, host: 127.0.0.1, port: PORT, interval: 0.2, timeout: 0.2, rise: 1, fall: 2 }] }
            - { id: n2, ipv4: 192.0.2.12, latitude: 48.9, longitude: 2.4 }
          pools: [{ id: web, members: [n1, n2] }]
          names:
            - { name: geo.example.test, type: A, pool: web, answers: 2, ttl: 20 }
        """

    @Test func aNodeIsJudgedByEveryServersView() async throws {
        try await TestSupport.blocking { try Self.aNodeIsJudgedByEveryServersViewBody() }
    }

    static func aNodeIsJudgedByEveryServersViewBody() throws {
        let t = try Topology()
        try t.seed(Self.geo.replacingOccurrences(of: "PORT", with: "\(t.checkPort)"))
        // The node passes its check from s1 and s2 only.
        try t.startTarget(1)
        try t.startTarget(2)
        try t.start(0, xdp: true)
        try t.start(1, xdp: false)
        try t.start(2, xdp: false)
        let both: Set = ["192.0.2.11", "192.0.2.12"]

        // Failing as seen from s0 alone: up everywhere, s0's clients included, and every
        // server shows each observer's view.
        for i in 0..<Self.count {
            try t.servers[i]!.waitUntilReady(timeout: 20) {
                Set(t.seen(i, "n1").components(separatedBy: ", ")) == ["s0 down", "s1 up", "s2 up"]
            }
            #expect(t.nodeLine(i, "n1").hasPrefix("n1            up"), "\(t.nodeLine(i, "n1"))")
        }
        #expect(t.seen(0, "n1") == "s0 down, s1 up, s2 up", "this server's view first")
        #expect(t.seen(1, "n1") == "s1 up, s0 down, s2 up")
        // The dashboard of s0 (issue 20) shows the fleet's verdict and each observer's view, and a
        // change s1 takes in its last changes.
        let page = try TestSupport.run(
            "/usr/bin/python3",
            [
                Repository.path("Tests/Browser/fleet_views.py"), "--api",
                "http://\(t.address(0)):\(t.servers[0]!.apiPort!)",
                "--token", t.writer, "--screenshots", Repository.path(".build/screenshots/dashboard"), "--node", "n1",
                "--state", "up", "--seen", "s0 down, s1 up, s2 up",
                "--change-via", "http://\(t.address(1)):\(t.servers[1]!.apiPort!)", "--change-server", "s1",
            ], timeout: 60)
        #expect(page.status == 0 && page.stdout.contains("PASSED"), "\(page.stdout)\n\(page.stderr)")
        try t.waitEveryServerAnswers("geo.example.test.", both)

        // Failing as seen from all: down everywhere.
        t.stopTarget(1)
        t.stopTarget(2)
        try t.waitEveryServerAnswers("geo.example.test.", ["192.0.2.12"])
        for i in 0..<Self.count { #expect(t.nodeLine(i, "n1").hasPrefix("n1            down")) }

        // Passing from two of three again: back everywhere.
        try t.startTarget(0)
        try t.startTarget(2)
        try t.waitEveryServerAnswers("geo.example.test.", both)

        // s0's answers came from its XDP program: the fast path follows the fleet's verdict too.
        let stats = try t.api(0, ["stats"])
        let answered = stats.stdout.split(separator: "\n").first { $0.split(separator: " ").first == "answered_geo" }
            .flatMap { Int($0.split(separator: " ").last ?? "") }
        #expect((answered ?? 0) > 0, "\(stats.stdout)")

        // A record added through s0 is answered by s1 and s2; a drain through s1 moves every
        // server's clients, s0's XDP answers included.
        let added = try t.api(0, ["record", "add", "example.test.", "fleet", "A", "192.0.2.77"])
        #expect(added.status == 0, "\(added.stderr)")
        try t.waitEveryServerAnswers("fleet.example.test.", ["192.0.2.77"])
        #expect(try t.api(1, ["node", "drain", "n2", "--for", "10m"]).status == 0)
        try t.waitEveryServerAnswers("geo.example.test.", ["192.0.2.11"])
        #expect(try t.api(2, ["node", "undrain", "n2"]).status == 0)
        try t.waitEveryServerAnswers("geo.example.test.", both)

        // A server that stops takes its views with it: the others judge without it.
        t.servers[2]?.stop()
        t.servers[2] = nil
        try t.servers[0]!.waitUntilReady(timeout: 20) { t.seen(0, "n1") == "s0 up, s1 down" }
        #expect(t.answer(0, "geo.example.test.") == both, "one of two down is not a majority")
    }
}
