import DNSWire
import Foundation
import NearcastTestSupport
import Synchronization
import Testing

/// Several nearcastd following one store in a real etcd (issue 18): a change put into the store is
/// served by every server, an invalid state is refused while the last good one goes on being
/// served, and a server keeps answering, and starts again, while etcd is gone.
@Suite(.timeLimit(.minutes(3))) struct FleetTests {
    static func addresses(_ name: String, port: Int) -> [String] {
        guard let reply = RawClient.udp(RawClient.query(name, .a), port: port, timeout: 0.5),
            let m = try? DNSMessage(wire: reply)
        else { return [] }
        return m.answers.compactMap { if case .a(let a) = $0.rdata { a.description } else { nil } }
    }

    /// A fleet for a test: one etcd, a directory, a write token, and servers that follow the store
    /// with their own listen address, API and state directory.
    final class Fleet: Sendable {
        let etcd: EtcdServer
        let dir: URL
        let cli: String
        let writer = "0123456789abcdef0123456789abcdef"
        /// edge7's agent token: it may register, report for and deregister edge7 only.
        let edgeAgent = "7777777777777777edge7edge7edge77"
        /// edge9's agent token, scoped: pool web and addresses in 192.0.2.64/28 only.
        let scopedAgent = "9999999999999999edge9edge9edge99"
        /// The config's store section.
        var store: String { "store:\n  etcd: { endpoints: [\"\(etcd.endpoint)\"] }\n" }

        init() throws {
            etcd = try EtcdServer()
            dir = try TemporaryDirectory.url("nearcast-fleet")
            cli = try TestSupport.product("nearcast")
            try "write \(writer)\nagent:edge7 \(edgeAgent)\nagent:edge9 pools=web nets=192.0.2.64/28 \(scopedAgent)\n"
                .write(
                    to: dir.appendingPathComponent("tokens"), atomically: true, encoding: .utf8)
        }

        /// Stops etcd and removes the directory (the servers are the test's to stop).
        func finish() {
            etcd.stop()
        }

        /// A config of the test zone and the four test nodes, with these geo names.
        static func fourNodes(names: [String]) -> String {
            """
            zones:
              - { origin: example.test., file: \(TestSupport.fixtures.appendingPathComponent("example.test.zone").path) }
            geo:
              database: \(Repository.testCityDatabase)
            \(Fixtures.fourNodes(indent: 2))
              names:
            \(names.map { "    - " + $0 }.joined(separator: "\n"))
            """
        }

        /// Imports `config` (YAML without the store section, which is added) into the store.
        func seed(_ config: String) throws {
            let seed = dir.appendingPathComponent("seed.yaml")
            try (config + "\n" + store).write(to: seed, atomically: true, encoding: .utf8)
            let imported = try TestSupport.run(cli, ["store", "import", seed.path])
            #expect(imported.status == 0, "\(imported.stderr)")
        }

        /// Server `i`, following the store; `extra`: more of its config (top-level YAML);
        /// `storeExtra`: more of its store section (lines indented by two).
        func startServer(_ i: Int, extra: String = "", storeExtra: String = "") throws -> Daemon {
            try Daemon(["--config", try serverConfig(i, extra: extra, storeExtra: storeExtra)])
        }

        /// Server `i`'s config file (as `startServer` writes it).
        func serverConfig(_ i: Int, extra: String = "", storeExtra: String = "") throws -> String {
            let config = dir.appendingPathComponent("server\(i).yaml")
            try """
            listen: ["127.0.0.1:0"]
            state-dir: \(dir.path)/state\(i)
            api: { listen: "127.0.0.1:0", tokens: tokens }
            \(store)  server: s\(i)
            \(storeExtra)
            \(extra)
            """.write(to: config, atomically: true, encoding: .utf8)
            return config.path
        }

        /// Imports the test zone alone.
        func seedTestZone() throws {
            let zone = TestSupport.fixtures.appendingPathComponent("example.test.zone").path
            try seed("zones:\n  - { origin: example.test., file: \(zone) }")
        }

        /// The `zones:` line of `server`'s status (each zone's serial and checksum): servers that
        /// serve the same show the same.
        func zonesLine(_ server: Daemon) -> String? {
            (try? api(["status"], via: server))?.stdout.split(separator: "\n").first { $0.hasPrefix("zones:") }
                .map(String.init)
        }

        /// `nearcast ARGS` against `server`'s API with the write token (or `token`).
        func api(_ args: [String], via server: Daemon, token: String? = nil) throws -> TestSupport.Output {
            var env = ProcessInfo.processInfo.environment
            env["NEARCAST_TOKEN"] = token ?? writer
            return try TestSupport.run(cli, args + ["--api", server.api], environment: env)
        }
    }

    @Test func serversFollowTheStoreAndOutliveIt() async throws {
        try await TestSupport.blocking { try Self.serversFollowTheStoreAndOutliveItBody() }
    }

    static func serversFollowTheStoreAndOutliveItBody() throws {
        let fleet = try Fleet()
        defer { fleet.finish() }
        let (etcd, writer) = (fleet.etcd, fleet.writer)
        let fixture = try String(
            contentsOf: TestSupport.fixtures.appendingPathComponent("example.test.zone"), encoding: .utf8)
        let zone = fleet.dir.appendingPathComponent("example.test.zone")
        try fixture.write(to: zone, atomically: true, encoding: .utf8)
        let seed = "zones:\n  - { origin: example.test., file: \(zone.path) }"
        try fleet.seed(seed)
        var servers = [try fleet.startServer(0), try fleet.startServer(1)]
        defer { for s in servers { s.stop() } }
        for s in servers {
            #expect(Self.addresses("www.example.test.", port: s.dnsPort).sorted() == ["192.0.2.1", "192.0.2.2"])
        }

        // A change put into the store reaches every server.
        try (fixture + "fleet A 192.0.2.77\n").write(to: zone, atomically: true, encoding: .utf8)
        let changedAt = Date()
        try fleet.seed(seed)
        for s in servers {
            try s.waitUntilReady(timeout: 10) {
                Self.addresses("fleet.example.test.", port: s.dnsPort) == ["192.0.2.77"]
            }
        }
        let took = Date().timeIntervalSince(changedAt)
        #expect(took < 5, "the change was served everywhere \(took) s after the import began")

        // Record changes through either server's API at once, each to a name of its own: each is
        // one transaction on the RRset it writes (store layout 2), so none conflicts with another
        // and none is refused. Every change is served by both servers, as a change: no server
        // reads the store whole again for one.
        let reloadsBefore = servers.map { $0.log.components(separatedBy: "by=store@").count }
        let running = servers
        let results = try [0, 1].map { i in
            (0..<4).map { k in (i, k) }
        }.flatMap { $0 }.concurrentMap { (i: Int, k: Int) -> (String, TestSupport.Output) in
            let name = "api\(i)-\(k)"
            return (
                name,
                try fleet.api(
                    ["record", "add", "example.test.", name, "A", "192.0.2.\(100 + 10 * i + k)"], via: running[i])
            )
        }
        let acknowledged = results.filter { $0.1.status == 0 }.map(\.0)
        #expect(acknowledged.count == 8, "\(results.map { "\($0.0): \($0.1.stdout)\($0.1.stderr)" })")
        for s in servers {
            for name in acknowledged {
                try s.waitUntilReady(timeout: 5) { !Self.addresses("\(name).example.test.", port: s.dnsPort).isEmpty }
            }
        }
        #expect(servers.map { $0.log.components(separatedBy: "by=store@").count } == reloadsBefore)
        #expect(servers.allSatisfy { $0.log.contains("zone changed from the store") })
        // A reload (SIGHUP) reads the store's snapshot: the changes are in it (its zone's journal).
        kill(servers[1].pid, SIGHUP)
        try servers[1].waitUntilReady(timeout: 10) { servers[1].log.contains("by=SIGHUP") }
        for name in acknowledged {
            #expect(!Self.addresses("\(name).example.test.", port: servers[1].dnsPort).isEmpty, "\(name)")
        }
        // Both servers serve the same zone: the same serial and checksum in their status.
        try servers[0].waitUntilReady(timeout: 10) { fleet.zonesLine(servers[0]) == fleet.zonesLine(servers[1]) }
        let line = try #require(fleet.zonesLine(servers[0]))
        #expect(line.contains("example.test. (serial ") && line.contains(", checksum "), "\(line)")
        let audit = try TestSupport.run(
            try TestSupport.tool("etcdctl"), ["--endpoints", etcd.endpoint, "get", "--prefix", "/nearcast/audit/"],
            environment: ["ETCDCTL_API": "3"])
        #expect(audit.stdout.components(separatedBy: "\"server\":").count - 1 == acknowledged.count, "\(audit.stdout)")

        // An invalid state in the store is refused; the last good one goes on being served.
        let bad = try TestSupport.run(
            try TestSupport.tool("etcdctl"),
            [
                "--endpoints", etcd.endpoint, "put", "/nearcast/zones/example.test./rr/fleet.example.test. A",
                "this is not a zone file",
            ],
            environment: ["ETCDCTL_API": "3"])
        #expect(bad.status == 0, "\(bad.stderr)")
        for s in servers {
            try s.waitUntilReady(timeout: 10) { s.log.contains("the store's state is not valid") }
            #expect(Self.addresses("fleet.example.test.", port: s.dnsPort) == ["192.0.2.77"])
        }

        let followed = try fleet.api(["status"], via: servers[1])
        #expect(
            followed.stdout.contains("store:     etcd \(etcd.endpoint) /nearcast/, revision "), "\(followed.stdout)")
        #expect(!followed.stdout.contains("DEGRADED"))

        // etcd gone: every server goes on answering, says it is degraded (status, /metrics, log),
        // refuses writes (503); one that restarts serves its last good snapshot.
        etcd.pause()
        for s in servers { #expect(Self.addresses("fleet.example.test.", port: s.dnsPort) == ["192.0.2.77"]) }
        try servers[1].waitUntilReady(timeout: 10) {
            (try? fleet.api(["status"], via: servers[1]))?.stdout.contains("DEGRADED") == true
        }
        let metrics = try TestSupport.run(
            try TestSupport.tool("curl"),
            ["-s", "-H", "Authorization: Bearer \(writer)", "http://\(servers[1].api)/metrics"])
        #expect(metrics.stdout.contains("nearcast_store_degraded 1"), "\(metrics.stdout.prefix(500))")
        #expect(servers[1].log.contains("store out of reach: serving what was last read"))
        let status = servers[0].stop()
        #expect(status == 0, "a server stops cleanly while etcd is gone")
        servers[0] = try fleet.startServer(0)
        #expect(Self.addresses("fleet.example.test.", port: servers[0].dnsPort) == ["192.0.2.77"])
        for name in acknowledged {
            #expect(!Self.addresses("\(name).example.test.", port: servers[0].dnsPort).isEmpty, "\(name) kept")
        }
        #expect(servers[0].log.contains("store out of reach: serving the snapshot kept at its revision"))
        let refused = try fleet.api(["record", "add", "example.test.", "outage", "A", "192.0.2.99"], via: servers[1])
        #expect(refused.status != 0 && refused.stderr.contains("503"), "\(refused.stderr)")

        // etcd back: a change made as soon as it is (an import that also mends the invalid zone),
        // while the servers are still waiting to try again, reaches every server, the restarted
        // one too; none stays degraded.
        try etcd.start()
        try (fixture + "fleet A 192.0.2.77\nback A 192.0.2.98\n").write(to: zone, atomically: true, encoding: .utf8)
        try fleet.seed(seed)
        for s in servers {
            try s.waitUntilReady(timeout: 20) {
                Self.addresses("back.example.test.", port: s.dnsPort) == ["192.0.2.98"]
            }
            try s.waitUntilReady(timeout: 15) {
                (try? fleet.api(["status"], via: s))?.stdout.contains("DEGRADED") == false
            }
        }
        #expect(
            Self.addresses("outage.example.test.", port: servers[0].dnsPort).isEmpty, "the refused write was not made")
    }
}

extension FleetTests {
    /// A drain made through one server's API is the fleet's: every server, and a server started
    /// after it, takes the node out; an undrain through another server brings it back everywhere.
    @Test func drainsAreFleetWide() async throws {
        try await TestSupport.blocking { try Self.drainsAreFleetWideBody() }
    }

    static func drainsAreFleetWideBody() throws {
        let fleet = try Fleet()
        defer { fleet.finish() }
        try fleet.seed(Fleet.fourNodes(names: ["{ name: geo.example.test, type: A, pool: web, answers: 2, ttl: 20 }"]))
        let etcd = fleet.etcd
        func fra1(_ server: Daemon) -> String {
            ((try? fleet.api(["nodes"], via: server))?.stdout ?? "").split(separator: "\n").first {
                $0.hasPrefix("fra1 ")
            }
            .map(String.init) ?? ""
        }
        let a = try fleet.startServer(0)
        defer { a.stop() }
        let b = try fleet.startServer(1)
        defer { b.stop() }
        let drained = try fleet.api(["node", "drain", "fra1", "--for", "10m"], via: a)
        #expect(drained.status == 0, "\(drained.stderr)")
        try b.waitUntilReady(timeout: 10) { fra1(b).contains("drained") }
        let late = try fleet.startServer(2)
        defer { late.stop() }
        try late.waitUntilReady(timeout: 10) { fra1(late).contains("drained") }

        #expect(try fleet.api(["node", "undrain", "fra1"], via: b).status == 0)
        for s in [a, late] { try s.waitUntilReady(timeout: 10) { !fra1(s).isEmpty && !fra1(s).contains("drained") } }
        let audit = try TestSupport.run(
            try TestSupport.tool("etcdctl"), ["--endpoints", etcd.endpoint, "get", "--prefix", "/nearcast/audit/"],
            environment: ["ETCDCTL_API": "3"])
        #expect(audit.stdout.contains("\"action\":\"drain\"") && audit.stdout.contains("\"action\":\"undrain\""))
        // Every server shows the fleet's changes, each with the server that took it: the late
        // one, too, which took neither.
        let listed = try fleet.api(["audit", "--last", "10"], via: late)
        #expect(listed.status == 0, "\(listed.stderr)")
        let lines = listed.stdout.split(separator: "\n")
        #expect(lines.contains { $0.contains(" on s0  drain fra1") }, "\(listed.stdout)")
        #expect(lines.contains { $0.contains(" on s1  undrain fra1") }, "\(listed.stdout)")
    }
}

extension FleetTests {
    /// A node registers itself through one server (with its own agent token) and every server
    /// answers with it and checks it; it leaves through another server and is gone everywhere.
    /// What a registration may not do is refused, with why.
    @Test func aNodeRegistersIsAnsweredEverywhereAndLeaves() async throws {
        try await TestSupport.blocking { try Self.aNodeRegistersIsAnsweredEverywhereAndLeavesBody() }
    }

    static func aNodeRegistersIsAnsweredEverywhereAndLeavesBody() throws {
        let fleet = try Fleet()
        defer { fleet.finish() }
        try fleet.seed(
            Fleet.fourNodes(names: [
                "{ name: geo.example.test, type: A, pool: web, answers: 8, ttl: 20 }",
                "{ name: _join._udp.example.test, type: SRV, pool: web, answers: 8, port: 7946, targets: nodes.example.test }",
            ]))
        let a = try fleet.startServer(0)
        defer { a.stop() }
        let b = try fleet.startServer(1)
        defer { b.stop() }
        let register = [
            "node", "register", "edge7", "--ipv4", "192.0.2.70", "--latitude", "50.0", "--longitude", "8.0",
            "--country", "DE", "--pool", "web", "--check", "{type: tcp, host: 127.0.0.1, port: 9, interval: 60}",
        ]
        let registered = try fleet.api(register, via: a, token: fleet.edgeAgent)
        #expect(registered.status == 0 && registered.stdout.hasPrefix("edge7 "), "\(registered.stderr)")
        for s in [a, b] {
            try s.waitUntilReady(timeout: 10) {
                Set(Self.addresses("geo.example.test.", port: s.dnsPort)).contains("192.0.2.70")
            }
            let nodes = try fleet.api(["nodes"], via: s).stdout
            #expect(nodes.split(separator: "\n").contains { $0.hasPrefix("edge7 ") }, "\(nodes)")
            // Found through the discovery name, at its target.
            let srv = try DNSMessage(
                wire: try #require(RawClient.udp(RawClient.query("_join._udp.example.test.", .srv), port: s.dnsPort)))
            let targets = srv.answers.compactMap { rr -> String? in
                if case .srv(_, _, let port, let target) = rr.rdata { "\(target):\(port)" } else { nil }
            }
            #expect(targets.contains("edge7.nodes.example.test.:7946"), "\(srv.answers)")
            #expect(Self.addresses("edge7.nodes.example.test.", port: s.dnsPort) == ["192.0.2.70"])
            // A node's registration reads the nodes, not the zones, which stay as served.
            #expect(s.log.contains("zones not read: the same files, unchanged"), "\(s.log.suffix(3000))")
        }

        // Refused, with why: another node's id with edge7's agent token; a pool the geo section
        // lacks; a declared node's id.
        let other = try fleet.api(
            [
                "node", "register", "edge8", "--ipv4", "192.0.2.80", "--latitude", "1", "--longitude", "1", "--pool",
                "web",
            ],
            via: a, token: fleet.edgeAgent)
        #expect(other.status != 0 && other.stderr.contains("403"), "\(other.stderr)")
        let badPool = try fleet.api(
            [
                "node", "register", "edge8", "--ipv4", "192.0.2.80", "--latitude", "1", "--longitude", "1", "--pool",
                "img",
            ],
            via: a)
        #expect(badPool.stderr.contains("400") && badPool.stderr.contains("pool img is not in"), "\(badPool.stderr)")
        let declared = try fleet.api(
            [
                "node", "register", "fra1", "--ipv4", "192.0.2.80", "--latitude", "1", "--longitude", "1", "--pool",
                "web",
            ],
            via: b)
        #expect(declared.stderr.contains("node fra1 is declared in the fleet's geo section"), "\(declared.stderr)")
        // A scoped agent token: an address outside its networks, a pool outside its pools.
        let outside = try fleet.api(
            [
                "node", "register", "edge9", "--ipv4", "198.51.100.9", "--latitude", "1", "--longitude", "1", "--pool",
                "web",
            ],
            via: a, token: fleet.scopedAgent)
        #expect(
            outside.status != 0 && outside.stderr.contains("403")
                && outside.stderr.contains("may register addresses in 192.0.2.64/28 only, not 198.51.100.9"),
            "\(outside.stderr)")
        let otherPool = try fleet.api(
            [
                "node", "register", "edge9", "--ipv4", "192.0.2.72", "--latitude", "1", "--longitude", "1", "--pool",
                "img",
            ],
            via: a, token: fleet.scopedAgent)
        #expect(
            otherPool.stderr.contains("403") && otherPool.stderr.contains("in pools web only, not img"),
            "\(otherPool.stderr)")

        let left = try fleet.api(["node", "deregister", "edge7"], via: b, token: fleet.edgeAgent)
        #expect(left.status == 0, "\(left.stderr)")
        for s in [a, b] {
            try s.waitUntilReady(timeout: 10) {
                let answer = Self.addresses("geo.example.test.", port: s.dnsPort)
                return !answer.isEmpty && !answer.contains("192.0.2.70")
            }
        }
        let audit = try TestSupport.run(
            try TestSupport.tool("etcdctl"),
            ["--endpoints", fleet.etcd.endpoint, "get", "--prefix", "/nearcast/audit/"],
            environment: ["ETCDCTL_API": "3"])
        #expect(audit.stdout.contains("\"action\":\"register\"") && audit.stdout.contains("\"action\":\"deregister\""))
    }
}

extension FleetTests {
    /// The API's tokens are the fleet's: imported from the seeding config's tokens file (kept in
    /// the store by their SHA-256 only), taken by a server that has no tokens file of its own, and
    /// withdrawn everywhere by the next import without them.
    @Test func apiTokensAreTheFleets() async throws {
        try await TestSupport.blocking { try Self.apiTokensAreTheFleetsBody() }
    }

    static func apiTokensAreTheFleetsBody() throws {
        let fleet = try Fleet()
        defer { fleet.finish() }
        let operatorToken = "f1ee7f1ee7f1ee7f1ee7f1ee7f1ee7aa"
        let tokens = fleet.dir.appendingPathComponent("fleet-tokens")
        try "write \(operatorToken)\n".write(to: tokens, atomically: true, encoding: .utf8)
        let zone =
            "zones:\n  - { origin: example.test., file: \(TestSupport.fixtures.appendingPathComponent("example.test.zone").path) }"
        try fleet.seed(zone + "\napi: { tokens: \(tokens.path) }")
        let stored = try TestSupport.run(
            try TestSupport.tool("etcdctl"),
            ["--endpoints", fleet.etcd.endpoint, "get", "--prefix", "/nearcast/tokens/"],
            environment: ["ETCDCTL_API": "3"])
        #expect(stored.stdout.contains(APITokensDigest.sha256(operatorToken)) && !stored.stdout.contains(operatorToken))

        // A server without a tokens file of its own.
        let config = fleet.dir.appendingPathComponent("bare.yaml")
        try """
        listen: ["127.0.0.1:0"]
        state-dir: \(fleet.dir.path)/bare
        api: { listen: "127.0.0.1:0" }
        \(fleet.store)  server: bare
        """.write(to: config, atomically: true, encoding: .utf8)
        let bare = try Daemon(["--config", config.path])
        defer { bare.stop() }
        let added = try fleet.api(
            ["record", "add", "example.test.", "tok", "A", "192.0.2.61"], via: bare, token: operatorToken)
        #expect(added.status == 0, "\(added.stderr)")
        #expect(try fleet.api(["status"], via: bare, token: fleet.writer).stderr.contains("401"), "not the fleet's")

        try "# none\n".write(to: tokens, atomically: true, encoding: .utf8)
        try fleet.seed(zone + "\napi: { tokens: \(tokens.path) }")
        try bare.waitUntilReady(timeout: 10) {
            (try? fleet.api(["status"], via: bare, token: operatorToken))?.stderr.contains("401") == true
        }
    }
}

extension FleetTests {
    /// Eight writers at once, each adding names of its own through two servers in turn, while a
    /// third server is killed (SIGKILL) and started again: no write is refused (each writes its
    /// own RRset), every server, the restarted one too, serves every acknowledged write, and the
    /// three end serving the same zone (serial and checksum in their status).
    @Test func writersOnTheirOwnNamesWhileAServerIsKilledAndRestarted() async throws {
        try await TestSupport.blocking { try Self.writersOnTheirOwnNamesWhileAServerIsKilledAndRestartedBody() }
    }

    static func writersOnTheirOwnNamesWhileAServerIsKilledAndRestartedBody() throws {
        let fleet = try Fleet()
        defer { fleet.finish() }
        try fleet.seedTestZone()
        let live = [try fleet.startServer(0), try fleet.startServer(1)]
        defer { for s in live { s.stop() } }
        let victim = try fleet.startServer(2)
        let writers = 8
        let done = Mutex<[(name: String, output: TestSupport.Output)]>([])
        let enough = Atomic<Bool>(false)
        // Each writer adds names until told it is enough: before the kill, while the server is
        // down, while it starts again, and after.
        let writing = BackgroundWork {
            try (0..<writers).map { $0 }.concurrentMap { w in
                var k = 0
                while !enough.load(ordering: .relaxed) && k < 200 {
                    let name = "w\(w)-\(k)"
                    let out = try fleet.api(
                        ["record", "add", "example.test.", name, "A", "192.0.2.\(k % 250 + 1)"], via: live[(w + k) % 2])
                    done.withLock { $0.append((name, out)) }
                    k += 1
                }
            }
        }
        let count = { done.withLock { $0.count } }
        try live[0].waitUntilReady(timeout: 30) { count() >= writers }
        _ = victim.stop(signal: SIGKILL)
        let restarted = try fleet.startServer(2)
        defer { restarted.stop() }
        let atRestart = count()
        try live[0].waitUntilReady(timeout: 30) { count() >= atRestart + writers }
        enough.store(true, ordering: .relaxed)
        _ = try writing.wait(timeout: 240)

        let results = done.withLock { $0 }
        let refused = results.filter { $0.output.status != 0 }
        #expect(refused.isEmpty, "\(refused.map { "\($0.name): \($0.output.stderr)" })")
        let servers = live + [restarted]
        for s in servers {
            for r in results where r.output.status == 0 {
                try s.waitUntilReady(timeout: 10) {
                    !Self.addresses("\(r.name).example.test.", port: s.dnsPort).isEmpty
                }
            }
        }
        try live[0].waitUntilReady(timeout: 10) { Set(servers.map(fleet.zonesLine)).count == 1 }
        #expect(
            fleet.zonesLine(restarted)?.contains(", checksum ") == true, "\(fleet.zonesLine(restarted) ?? "no status")")
    }
}

extension FleetTests {
    /// Eight writers set one RRset at once through three servers, each for the version they read
    /// (If-Match): in each round exactly one wins and the others are refused (412), and every
    /// server then serves the winner's record.
    @Test func writersOnOneRRsetOneWinsEachRound() async throws {
        try await TestSupport.blocking { try Self.writersOnOneRRsetOneWinsEachRoundBody() }
    }

    static func writersOnOneRRsetOneWinsEachRoundBody() throws {
        let fleet = try Fleet()
        defer { fleet.finish() }
        try fleet.seedTestZone()
        let servers = [try fleet.startServer(0), try fleet.startServer(1), try fleet.startServer(2)]
        defer { for s in servers { s.stop() } }
        for round in 0..<4 {
            let listed = try fleet.api(
                ["records", "example.test.", "--name", "contested", "--type", "A"], via: servers[0])
            let version = try #require(
                listed.stdout.split(separator: "\n").first.flatMap {
                    $0.hasPrefix("; version ") ? $0.dropFirst(10) : nil
                },
                "\(listed.stdout)\(listed.stderr)")
            let outputs = try (0..<8).map { $0 }.concurrentMap { w in
                try fleet.api(
                    [
                        "record", "set", "example.test.", "contested", "A", "192.0.2.\(100 + 10 * round + w)",
                        "--if-match", String(version),
                    ],
                    via: servers[w % servers.count])
            }
            let winners = outputs.indices.filter { outputs[$0].status == 0 }
            #expect(winners.count == 1, "round \(round): \(outputs.map { $0.stdout + $0.stderr })")
            let losers = outputs.filter { $0.status != 0 }
            #expect(losers.allSatisfy { $0.stderr.contains("412") }, "\(losers.map(\.stderr))")
            guard let w = winners.first else { continue }
            for s in servers {
                try s.waitUntilReady(timeout: 10) {
                    Self.addresses("contested.example.test.", port: s.dnsPort) == ["192.0.2.\(100 + 10 * round + w)"]
                }
            }
        }
    }
}

extension FleetTests {
    /// etcd stopped while writers add names through three servers, started again, a change
    /// written straight into it and its history compacted before the servers are back: each
    /// server, its watch's revision gone, reads the store whole again, and all three end at the
    /// same revision serving the same zone (serial and checksum), with every acknowledged write
    /// and the change made while they were away. A write refused for a conflict is never served.
    @Test func etcdStoppedCompactedAndRestartedDuringWrites() async throws {
        try await TestSupport.blocking { try Self.etcdStoppedCompactedAndRestartedDuringWritesBody() }
    }

    static func etcdStoppedCompactedAndRestartedDuringWritesBody() throws {
        let fleet = try Fleet()
        defer { fleet.finish() }
        try fleet.seedTestZone()
        let servers = [try fleet.startServer(0), try fleet.startServer(1), try fleet.startServer(2)]
        defer { for s in servers { s.stop() } }
        let etcdctl = try TestSupport.tool("etcdctl")
        func ctl(_ args: [String]) throws -> TestSupport.Output {
            try TestSupport.run(
                etcdctl, ["--endpoints", fleet.etcd.endpoint] + args, environment: ["ETCDCTL_API": "3"])
        }
        let writers = 4
        let done = Mutex<[(name: String, output: TestSupport.Output)]>([])
        let enough = Atomic<Bool>(false)
        let writing = BackgroundWork {
            try (0..<writers).map { $0 }.concurrentMap { w in
                var k = 0
                while !enough.load(ordering: .relaxed) && k < 300 {
                    let name = "e\(w)-\(k)"
                    let out = try fleet.api(
                        ["record", "add", "example.test.", name, "A", "192.0.2.\(k % 250 + 1)"],
                        via: servers[(w + k) % servers.count])
                    done.withLock { $0.append((name, out)) }
                    k += 1
                    if out.status != 0 { Thread.sleep(forTimeInterval: 0.05) }  // etcd away: not a busy loop
                }
            }
        }
        let count = { done.withLock { $0.count } }
        try servers[0].waitUntilReady(timeout: 30) { count() >= 2 * writers }
        fleet.etcd.pause()
        for s in servers {
            try s.waitUntilReady(timeout: 15) { s.log.contains("store out of reach: serving what was last read") }
        }
        // The servers held still (SIGSTOP) while etcd starts, a change is written and the history
        // compacted: none can be back before the compaction, each must find its revision gone.
        for s in servers { kill(s.pid, SIGSTOP) }
        try fleet.etcd.start()
        // Two changes, then the history up to the second compacted: the first is gone from it.
        for name in ["direct", "direct2"] {
            let rrset = "\(name).example.test. 300 IN A 192.0.2.250\n"
            #expect(try ctl(["put", "/nearcast/zones/example.test./rr/\(name).example.test. A", rrset]).status == 0)
        }
        let head = try ctl(["endpoint", "status", "--write-out", "json"]).stdout
        let revision = try #require(
            head.split(separator: "\"revision\":").last.flatMap { Int($0.prefix { $0.isNumber }) }, "\(head)")
        #expect(try ctl(["compact", "\(revision)"]).status == 0)
        for s in servers { kill(s.pid, SIGCONT) }
        let atRestart = count()
        try servers[0].waitUntilReady(timeout: 60) { count() >= atRestart + 2 * writers }
        enough.store(true, ordering: .relaxed)
        _ = try writing.wait(timeout: 240)

        let results = done.withLock { $0 }
        let acknowledged = results.filter { $0.output.status == 0 }.map(\.name)
        let conflicts = results.filter { $0.output.stderr.contains("409") }.map(\.name)
        #expect(conflicts.isEmpty, "each writer writes its own names: \(conflicts)")
        #expect(acknowledged.count >= 4 * writers, "\(results.count) writes, \(acknowledged.count) acknowledged")
        for s in servers {
            for name in acknowledged + ["direct", "direct2"] {
                try s.waitUntilReady(timeout: 20) { !Self.addresses("\(name).example.test.", port: s.dnsPort).isEmpty }
            }
        }
        try servers[0].waitUntilReady(timeout: 10) { Set(servers.map(fleet.zonesLine)).count == 1 }
        #expect(servers.allSatisfy { $0.log.contains("store history compacted: reading it whole") })
        for s in servers {
            let status = try fleet.api(["status"], via: s).stdout
            #expect(!status.contains("DEGRADED"), "\(status)")
        }
    }
}

/// A token's SHA-256 in hex, as the store keeps it (computed here with sha256sum, not the code under test).
enum APITokensDigest {
    static func sha256(_ token: String) -> String {
        let out = try? TestSupport.run("/bin/sh", ["-c", "printf %s '\(token)' | sha256sum"])
        return String((out?.stdout ?? "").prefix(64))
    }
}

extension Array {
    /// `transform` of every element, each on a thread of its own, all at once (for concurrent CLI
    /// calls; DispatchQueue.concurrentPerform would run as many at once as there are cores).
    func concurrentMap<T: Sendable>(_ transform: @Sendable @escaping (Element) throws -> T) throws -> [T]
    where Element: Sendable {
        let results = Mutex<[Int: Result<T, any Error>]>([:])
        let group = DispatchGroup()
        for (i, item) in enumerated() {
            group.enter()
            Thread.detachNewThread {
                let r = Result { try transform(item) }
                results.withLock { $0[i] = r }
                group.leave()
            }
        }
        guard group.wait(timeout: .now() + 300) == .success else {
            throw TestFailure("concurrent calls did not end within 300 s")
        }
        let all = results.withLock { $0 }
        return try (0..<count).map { try all[$0]!.get() }
    }
}
