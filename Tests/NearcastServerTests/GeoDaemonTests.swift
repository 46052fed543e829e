import Foundation
import NearcastTestSupport
import Synchronization
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Geo names end to end: the real nearcastd with the test City database, asked by the real dig and
/// kdig with Client Subnet options (`+subnet`), as resolvers ask on behalf of their clients.
@Suite(.timeLimit(.minutes(2))) struct GeoDaemonTests {
    /// `par1Checks`: par1's checks, as YAML (none by default).
    /// `extraZones`: more zones' mappings, each after a comma.
    static func start(extraArgs: [String] = [], par1Checks: String = "[]", extraZones: String = "") throws -> (
        Daemon, Int, URL
    ) {
        let dir = try TemporaryDirectory.url("nearcast-geo")
        try FileManager.default.copyItem(
            at: TestSupport.fixtures.appendingPathComponent("example.test.zone"),
            to: dir.appendingPathComponent("z.zone"))
        let database = Repository.testCityDatabase
        try """
        listen: ["127.0.0.1:0", "[::1]:0"]
        zones: [{ origin: example.test., file: z.zone }\(extraZones)]
        geo:
          database: \(database)
          nodes:
            - { id: fra1, ipv4: 192.0.2.10, ipv6: "2001:db8::10", latitude: 50.11, longitude: 8.68, country: DE }
            - { id: par1, ipv4: 192.0.2.20, ipv6: "2001:db8::20", latitude: 48.86, longitude: 2.35, country: FR, checks: \(par1Checks) }
            - { id: nyc1, ipv4: 192.0.2.30, ipv6: "2001:db8::30", latitude: 40.71, longitude: -74.01, country: US, weight: 3 }
          pools: [{ id: web, members: [fra1, par1, nyc1] }]
          names:
            - { name: geo.example.test, type: A, pool: web, answers: 2, ttl: 20 }
            - { name: geo.example.test, type: AAAA, pool: web }
        """.write(to: dir.appendingPathComponent("c.yaml"), atomically: true, encoding: .utf8)
        let server = try Daemon(["--config", dir.appendingPathComponent("c.yaml").path] + extraArgs)
        #expect(server.log.contains("geo compiled"))
        return (server, server.dnsPort, dir)
    }

    @Test func resolversGetTheNearestNodesForTheirClientsSubnet() throws {
        let (server, port, _) = try Self.start()
        defer { server.stop() }
        func ask(_ args: [String]) throws -> String { try server.dig(["geo.example.test"] + args).stdout }
        // Paris, Berlin, New York, by ECS: the order and the scope (the merged prefix).
        let paris = try ask(["A", "+subnet=198.51.100.0/24"])
        #expect(paris.contains("CLIENT-SUBNET: 198.51.100.0/24/24"), "\(paris)")
        #expect(
            try ask(["A", "+subnet=198.51.100.0/24", "+short"]).split(separator: "\n") == ["192.0.2.20", "192.0.2.10"])
        #expect(
            try ask(["A", "+subnet=192.0.2.192/26", "+short"]).split(separator: "\n") == ["192.0.2.10", "192.0.2.20"])
        #expect(
            try ask(["A", "+subnet=203.0.113.128/25", "+short"]).split(separator: "\n") == ["192.0.2.30", "192.0.2.20"])
        // Over TCP as over UDP.
        #expect(
            try ask(["A", "+tcp", "+subnet=198.51.100.0/24", "+short"]).split(separator: "\n") == [
                "192.0.2.20", "192.0.2.10",
            ])
        // No ECS: dig's own address, 127.0.0.1, is in no network: the fallback order (nyc weighs 3).
        #expect(try ask(["A", "+short"]).split(separator: "\n") == ["192.0.2.30", "192.0.2.10"])
        // kdig, IPv6 subnet and transport.
        let kdig = try TestSupport.run(
            try TestSupport.tool("kdig"),
            ["@::1", "-p", "\(port)", "+subnet=2001:db8:4::/48", "geo.example.test", "AAAA"]
        ).stdout
        #expect(kdig.contains("CLIENT-SUBNET: 2001:db8:4::/48/48") && kdig.contains("2001:db8::10"), "\(kdig)")
        // The name exists: another type there is NODATA.
        #expect(try ask(["MX"]).contains("status: NOERROR"))
    }

    /// `nearcast explain` gives the answer dig gets, and says why.
    @Test func explainTellsWhyAndAgreesWithDig() throws {
        let tokens = try TemporaryDirectory.file(
            "nearcast-geo-tokens", holding: "read \(ManagementAPITests.readToken)\n")
        let (server, port, _) = try Self.start(extraArgs: ["--api", "127.0.0.1:0", "--api-tokens", tokens.path])
        let api = try #require(server.apiPort)
        defer { server.stop() }
        let cli = try TestSupport.product("nearcast")
        func explain(_ args: [String]) throws -> TestSupport.Output {
            try TestSupport.run(cli, ["explain", "--api", "127.0.0.1:\(api)", "--token-file", tokens.path] + args)
        }
        let out = try explain(["geo.example.test", "A", "--client", "10.1.1.1", "--ecs", "198.51.100.0/24"])
        #expect(out.status == 0, "\(out.stderr)")
        #expect(
            out.stdout.contains("location:  FR, IDF, EU at 48.8566, 2.3522 (database network 198.51.100.0/24)"),
            "\(out.stdout)")
        #expect(out.stdout.contains("prefix 198.51.100.0/24"), "\(out.stdout)")
        #expect(out.stdout.contains("1. par1 192.0.2.20  score 1.0000, 0 km  up"), "\(out.stdout)")
        #expect(out.stdout.contains("2. fra1 192.0.2.10  score 0.9761, 478 km  up"), "\(out.stdout)")
        #expect(
            out.stdout.contains("answer:    192.0.2.20 192.0.2.10  (TTL 20)") && out.stdout.contains("ECS scope: 24"),
            "\(out.stdout)")
        let dig = try TestSupport.run(
            try TestSupport.tool("dig"),
            ["@127.0.0.1", "-p", "\(port)", "geo.example.test", "A", "+subnet=198.51.100.0/24", "+short"])
        #expect(dig.stdout.split(separator: "\n") == ["192.0.2.20", "192.0.2.10"], "the same answer")

        let unknown = try explain(["geo.example.test", "A", "--client", "127.0.0.1"])
        #expect(
            unknown.stdout.contains("location:  unknown") && unknown.stdout.contains("class:     0 (unknown location"),
            "\(unknown.stdout)")
        let notGeo = try explain(["www.example.test", "A", "--client", "127.0.0.1"])
        #expect(
            notGeo.status == 1
                && notGeo.stderr.contains("the management API answered 400: www.example.test. A is not a geo name"),
            "\(notGeo.stderr)")
    }

    /// An operator drains a node from the CLI: a read token may not (403), a write token may; the
    /// node's clients go elsewhere until it is undrained or its drain runs out.
    @Test func drainAndUndrainFromTheCLI() throws {
        let dir = try TemporaryDirectory.url("nearcast-drain")
        let readOnly = dir.appendingPathComponent("read")
        let writer = dir.appendingPathComponent("write")
        try "read \(ManagementAPITests.readToken)\n".write(to: readOnly, atomically: true, encoding: .utf8)
        try "write fedcba9876543210fedcba9876543210\n".write(to: writer, atomically: true, encoding: .utf8)
        let all = dir.appendingPathComponent("all")
        try ("read \(ManagementAPITests.readToken)\nwrite fedcba9876543210fedcba9876543210\n").write(
            to: all, atomically: true, encoding: .utf8)
        let (server, port, _) = try Self.start(extraArgs: ["--api", "127.0.0.1:0", "--api-tokens", all.path])
        let api = try #require(server.apiPort)
        defer { server.stop() }
        let cli = try TestSupport.product("nearcast")
        func run(_ args: [String], tokens: URL) throws -> TestSupport.Output {
            try TestSupport.run(cli, args + ["--api", "127.0.0.1:\(api)", "--token-file", tokens.path])
        }
        func paris() throws -> [Substring] {
            try TestSupport.run(
                try TestSupport.tool("dig"),
                ["@127.0.0.1", "-p", "\(port)", "geo.example.test", "A", "+subnet=198.51.100.0/24", "+short"]
            )
            .stdout.split(separator: "\n")
        }
        let nodes = try run(["nodes"], tokens: readOnly)
        let lines = nodes.stdout.split(separator: "\n")
        #expect(
            nodes.status == 0 && lines.count == 4 && lines[0].hasPrefix("fra1") && nodes.stdout.contains("par1"),
            "\(nodes.stdout) \(nodes.stderr)")
        #expect(
            lines.last?.hasPrefix("pool ") == true && lines.last?.contains("settled") == true,
            "the pools' TTL state: \(nodes.stdout)")
        #expect(try paris().first == "192.0.2.20")

        let refused = try run(["node", "drain", "par1"], tokens: readOnly)
        #expect(refused.status == 1, "\(refused.stdout)")
        #expect(refused.stderr.contains("has no token of role write"), "\(refused.stderr)")
        // The read token against the write route itself: 403, and the API says why.
        var env = ProcessInfo.processInfo.environment
        env["NEARCAST_TOKEN"] = ManagementAPITests.readToken
        let forbidden = try TestSupport.run(
            cli, ["node", "drain", "par1", "--api", "127.0.0.1:\(api)"], environment: env)
        #expect(
            forbidden.stderr.contains("answered 403: this needs a token of role write or above; this one is read"),
            "\(forbidden.stderr)")

        let drained = try run(["node", "drain", "par1"], tokens: writer)
        #expect(drained.status == 0 && drained.stdout.contains("drained"), "\(drained.stdout) \(drained.stderr)")
        #expect(try paris().first == "192.0.2.10", "Paris without par1")
        #expect(try run(["node", "undrain", "par1"], tokens: writer).stdout.contains("up"))
        #expect(try paris().first == "192.0.2.20")

        // A drain for a while ends by itself.
        #expect(try run(["node", "drain", "par1", "--for", "1s"], tokens: writer).stdout.contains("drained"))
        #expect(try paris().first == "192.0.2.10")
        try poll("the drain runs out and par1 answers Paris again", timeout: 10) { try paris().first == "192.0.2.20" }
        #expect(
            try run(["node", "drain", "ghost"], tokens: writer).stderr.contains(
                "answered 404: no node has the id 'ghost'"))

        // Every node out: the pool's names answer by their all-down policy (fail-open), and the
        // log says so once, and again when a node is back.
        for n in ["fra1", "par1", "nyc1"] { #expect(try run(["node", "drain", n], tokens: writer).status == 0) }
        #expect(try paris().first == "192.0.2.20", "fail-open: the top candidates anyway")
        try server.waitUntilReady(timeout: 5) {
            server.log.contains("every node of the pool is down") && server.log.contains("pool=web")
        }
        #expect(try run(["node", "undrain", "fra1"], tokens: writer).status == 0)
        try server.waitUntilReady(timeout: 5) { server.log.contains("pool has a node up again") }
        // Counted without a fast path too: changes happen, no map is written.
        let stats = try run(["stats"], tokens: readOnly).stdout
        #expect(
            stats.contains(" pool TTL change") && stats.contains(", 0 map writes")
                && !stats.contains(" 0 pool TTL change"), "\(stats)")
        #expect(try paris().first == "192.0.2.10")
    }

    /// Nodes and pools change by editing the config and reloading (issue 6), without XDP: the new
    /// geo section is compiled and served whole, nodes that stay keep their overrides (kept on
    /// disk too, those of removed nodes dropped), explain follows; a geo section with an error is
    /// refused and nothing changes; every geo name removed and then back is served as such.
    @Test func geoSectionChangesAreReloadedWholeOrRefused() throws {
        let state = try TemporaryDirectory.url("nearcast-georeload")
        let tokens = state.appendingPathComponent("tokens")
        try "admin \(ManagementAPITests.readToken)\n".write(to: tokens, atomically: true, encoding: .utf8)
        let (server, port, dir) = try Self.start(extraArgs: [
            "--api", "127.0.0.1:0", "--api-tokens", tokens.path, "--state-dir", state.path,
        ])
        let api = try #require(server.apiPort)
        defer { server.stop() }
        let configFile = dir.appendingPathComponent("c.yaml")
        let original = try String(contentsOf: configFile, encoding: .utf8)
        @Sendable func cli(_ args: [String]) throws -> TestSupport.Output {
            try TestSupport.run(
                try TestSupport.product("nearcast"), args + ["--api", "127.0.0.1:\(api)", "--token-file", tokens.path])
        }
        func paris() throws -> [Substring] {
            try TestSupport.run(
                try TestSupport.tool("dig"),
                ["@127.0.0.1", "-p", "\(port)", "geo.example.test", "A", "+subnet=198.51.100.0/24", "+short"]
            )
            .stdout.split(separator: "\n")
        }
        #expect(try paris() == ["192.0.2.20", "192.0.2.10"])
        // Two drains at once: both are kept (neither change is made from what the other replaced).
        let drained = Mutex<[Int32]>([])
        DispatchQueue.concurrentPerform(iterations: 2) { i in
            let status = (try? cli(["node", "drain", ["par1", "nyc1"][i]]).status) ?? -1
            drained.withLock { $0.append(status) }
        }
        #expect(drained.withLock { $0 } == [0, 0])
        let both = try String(contentsOf: state.appendingPathComponent("overrides.json"), encoding: .utf8)
        #expect(both.contains("par1") && both.contains("nyc1"), "\(both)")

        // par1 moves, nyc1 leaves, lon1 joins.
        let changed = original.replacingOccurrences(of: "ipv4: 192.0.2.20,", with: "ipv4: 192.0.2.21,")
            .replacingOccurrences(
                of:
                    "- { id: nyc1, ipv4: 192.0.2.30, ipv6: \"2001:db8::30\", latitude: 40.71, longitude: -74.01, country: US, weight: 3 }",
                with:
                    "- { id: lon1, ipv4: 192.0.2.50, ipv6: \"2001:db8::50\", latitude: 51.51, longitude: -0.13, country: GB }"
            )
            .replacingOccurrences(of: "members: [fra1, par1, nyc1]", with: "members: [fra1, par1, lon1]")
        #expect(changed.contains("lon1") && changed.contains("192.0.2.21"))
        try changed.write(to: configFile, atomically: true, encoding: .utf8)
        let ok = try cli(["reload"])
        #expect(
            ok.status == 0 && ok.stdout.contains("geo section changed and switched in"), "\(ok.stdout) \(ok.stderr)")
        #expect(
            Set(try paris()) == ["192.0.2.10", "192.0.2.50"],
            "par1 is still drained: Frankfurt and London, spilled over by weight")
        let nodes = try cli(["nodes"]).stdout
        #expect(nodes.contains("lon1") && !nodes.contains("nyc1"), "\(nodes)")
        #expect(nodes.split(separator: "\n").contains { $0.hasPrefix("par1") && $0.contains("drain") }, "\(nodes)")
        let kept = try String(contentsOf: state.appendingPathComponent("overrides.json"), encoding: .utf8)
        #expect(kept.contains("par1") && !kept.contains("nyc1"), "only overrides of nodes that exist are kept: \(kept)")
        let explain = try cli(["explain", "geo.example.test", "A", "--client", "198.51.100.7"]).stdout
        let answer = try paris().joined(separator: " ")
        #expect(
            explain.contains("lon1 192.0.2.50") && explain.contains("answer:    \(answer)  "),
            "as dig got it (\(answer)): \(explain)")
        #expect(try cli(["node", "undrain", "par1"]).status == 0)
        #expect(try paris().first == "192.0.2.21", "par1 back, at its new address")

        // A pool naming a node that does not exist: 400 with the file and line, nothing changed.
        try changed.replacingOccurrences(of: "members: [fra1, par1, lon1]", with: "members: [fra1, par1, ghost]")
            .write(to: configFile, atomically: true, encoding: .utf8)
        let bad = try cli(["reload"])
        #expect(
            bad.status == 1 && bad.stderr.contains("answered 400") && bad.stderr.contains("c.yaml:")
                && bad.stderr.contains("ghost"), "\(bad.stderr)")
        #expect(try paris().first == "192.0.2.21")
        // Only a node's checks change: no compile, the monitor runs the new check (fra1's target is
        // a closed port, so it goes down).
        let compiles = server.log.components(separatedBy: "geo compiled").count
        let closed = try RefusingPort()
        defer { withExtendedLifetime(closed) {} }
        let closedPort = closed.port
        let checked = changed.replacingOccurrences(
            of: "longitude: 8.68, country: DE }",
            with:
                "longitude: 8.68, country: DE, checks: [{ type: tcp, host: 127.0.0.1, port: \(closedPort), interval: 0.2, timeout: 0.2, fall: 1 }] }"
        )
        #expect(checked != changed)
        try checked.write(to: configFile, atomically: true, encoding: .utf8)
        let checksOnly = try cli(["reload"])
        #expect(
            checksOnly.status == 0 && !checksOnly.stdout.contains("geo section changed"),
            "\(checksOnly.stdout) \(checksOnly.stderr)")
        try server.waitUntilReady(timeout: 10) {
            (try? cli(["nodes"]).stdout.split(separator: "\n").contains { $0.hasPrefix("fra1") && $0.contains("down") })
                == true
        }
        #expect(
            server.log.components(separatedBy: "geo compiled").count == compiles, "no compile for a change of checks")
        #expect(try paris() == ["192.0.2.21", "192.0.2.50"])
        try changed.write(to: configFile, atomically: true, encoding: .utf8)
        #expect(try cli(["reload"]).status == 0)
        // Only a pool's TTL settings change: no compile either; the monitor writes the new cap (the
        // pool is unsettled: fra1 changed state a moment ago, so its names answer with min-ttl).
        func ttls() throws -> [Substring] {
            try TestSupport.run(
                try TestSupport.tool("dig"),
                [
                    "@127.0.0.1", "-p", "\(port)", "geo.example.test", "A", "+subnet=198.51.100.0/24", "+noall",
                    "+answer",
                ]
            )
            .stdout.split(separator: "\n").map { $0.split(whereSeparator: \.isWhitespace)[1] }
        }
        #expect(try ttls() == ["5", "5"], "unsettled: the default min-ttl")
        try changed.replacingOccurrences(
            of: "members: [fra1, par1, lon1] }", with: "members: [fra1, par1, lon1], min-ttl: 7 }"
        )
        .write(to: configFile, atomically: true, encoding: .utf8)
        let ttlOnly = try cli(["reload"])
        #expect(
            ttlOnly.status == 0 && !ttlOnly.stdout.contains("geo section changed"),
            "\(ttlOnly.stdout) \(ttlOnly.stderr)")
        #expect(try ttls() == ["7", "7"], "the new min-ttl, without a compile")
        #expect(
            server.log.components(separatedBy: "geo compiled").count == compiles,
            "no compile for a change of TTL settings")
        try changed.write(to: configFile, atomically: true, encoding: .utf8)
        #expect(try cli(["reload"]).status == 0)
        // Each reload is audited, and `nearcast audit` lists the last ones, oldest first, from this
        // server's own log (no server named: it is in no fleet).
        let audit = try cli(["audit", "--last", "2"])
        let entries = audit.stdout.split(separator: "\n")
        #expect(
            audit.status == 0 && entries.count == 2
                && entries.allSatisfy { $0.contains("  reload ") && $0.hasSuffix(": done") && !$0.contains(" on ") },
            "\(audit.stdout) \(audit.stderr)")
        #expect(try cli(["audit", "--last", "0"]).stderr.contains("--last must be from 1 to 1000"))

        // No geo names left: served as plain zones (nothing at the geo name), no nodes, explain 404;
        // then the geo names back, the nodes checked again.
        try changed.replacingOccurrences(of: "- { name: geo.example.test, type: AAAA, pool: web }", with: "")
            .replacingOccurrences(
                of: "- { name: geo.example.test, type: A, pool: web, answers: 2, ttl: 20 }", with: "[]"
            )
            .write(to: configFile, atomically: true, encoding: .utf8)
        let none = try cli(["reload"])
        #expect(none.status == 0 && none.stdout.contains("geo section changed"), "\(none.stdout) \(none.stderr)")
        let nx = try TestSupport.run(
            try TestSupport.tool("dig"), ["@127.0.0.1", "-p", "\(port)", "geo.example.test", "A"]
        ).stdout
        #expect(nx.contains("status: NXDOMAIN"), "\(nx)")
        #expect(try cli(["nodes"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty)
        let noExplain = try cli(["explain", "geo.example.test", "A", "--client", "198.51.100.7"])
        #expect(
            noExplain.status == 1 && noExplain.stderr.contains("answered 404: no geo names are configured"),
            "\(noExplain.stderr)")
        try changed.write(to: configFile, atomically: true, encoding: .utf8)
        #expect(try cli(["reload"]).status == 0)
        #expect(
            try paris() == ["192.0.2.21", "192.0.2.50"],
            "the geo section back: par1, then London (nearer than Frankfurt)")
        #expect(try cli(["nodes"]).stdout.contains("lon1"))
        // Every reload audited, refused ones too: "before" is what was served (not the file as
        // edited since), so the accepted one changes the digest and the refused ones do not.
        let reloads = try String(contentsOf: state.appendingPathComponent("audit.log"), encoding: .utf8).split(
            separator: "\n"
        )
        .map { try JSONDecoder().decode(DurableChangeTests.AuditLine.self, from: Data($0.utf8)) }.filter {
            $0.action == "reload"
        }
        #expect(
            reloads.map(\.outcome) == ["done", "refused", "done", "done", "done", "done", "done", "done"], "\(reloads)")
        #expect(reloads.count == 8 && reloads[0].before != reloads[0].after, "\(reloads)")
        #expect(
            reloads.count == 8 && reloads[1].before == reloads[0].after && reloads[1].after == reloads[0].after,
            "\(reloads)")
        #expect(
            reloads.count == 8 && reloads[2].before == reloads[0].after && reloads[7].after == reloads[0].after,
            "\(reloads)")
        #expect(
            reloads.count == 8 && reloads[4].before != reloads[4].after,
            "a change of TTL settings is a change: \(reloads)")
    }

    /// Passive health: par1's agent posts reports (with `nearcast report` and its agent token);
    /// a failing report or silence longer than stale-after takes it out, a heartbeat brings it
    /// back. Other tokens and nodes get 403, 404 and 409, and a bad body a 400 naming the field.
    @Test func nodeAgentsReportHealthAndSilenceTakesANodeOut() async throws {
        let dir = try TemporaryDirectory.url("nearcast-report")
        let par1Agent = "a1a1a1a1b2b2b2b2c3c3c3c3d4d4d4d4"
        let fra1Agent = "f1f1f1f1e2e2e2e2d3d3d3d3c4c4c4c4"
        let writeToken = "fedcba9876543210fedcba9876543210"
        let all = dir.appendingPathComponent("tokens")
        try
            "read \(ManagementAPITests.readToken)\nagent:par1 \(par1Agent)\nagent:fra1 \(fra1Agent)\nwrite \(writeToken)\n"
            .write(to: all, atomically: true, encoding: .utf8)
        let agentFile = dir.appendingPathComponent("agent")
        try "agent:par1 \(par1Agent)\n".write(to: agentFile, atomically: true, encoding: .utf8)
        let (server, port, _) = try Self.start(
            extraArgs: ["--api", "127.0.0.1:0", "--api-tokens", all.path],
            par1Checks: "[{ type: report, stale-after: 1.5 }]")
        let api = try #require(server.apiPort)
        defer { server.stop() }
        let cli = try TestSupport.product("nearcast")
        func report(_ args: [String]) throws -> TestSupport.Output {
            try TestSupport.run(cli, ["report"] + args + ["--api", "127.0.0.1:\(api)", "--token-file", agentFile.path])
        }
        func paris() throws -> Substring? {
            try TestSupport.run(
                try TestSupport.tool("dig"),
                ["@127.0.0.1", "-p", "\(port)", "geo.example.test", "A", "+subnet=198.51.100.0/24", "+short"]
            )
            .stdout.split(separator: "\n").first
        }
        func post(_ node: String, _ body: String, token: String) async throws -> (Int, String) {
            var r = URLRequest(url: URL(string: "http://127.0.0.1:\(api)/v1/nodes/\(node)/report")!)
            r.httpMethod = "POST"
            r.httpBody = Data(body.utf8)
            r.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
            let (data, response) = try await URLSession.shared.data(for: r)
            return ((response as! HTTPURLResponse).statusCode, String(decoding: data, as: UTF8.self))
        }
        #expect(try paris() == "192.0.2.20", "cold start: up")
        let failing = try report(["par1", "--failing", "--detail", "disk full"])
        #expect(failing.status == 0 && failing.stdout.contains("down"), "\(failing.stdout) \(failing.stderr)")
        #expect(try paris() == "192.0.2.10", "a failing report takes par1 out")
        try server.waitUntilReady(timeout: 5) { server.log.contains("reported failing (disk full)") }
        #expect(try report(["par1"]).stdout.contains("up"))
        #expect(try paris() == "192.0.2.20", "a heartbeat brings it back")

        let (readOnly, readBody) = try await post("par1", "", token: ManagementAPITests.readToken)
        #expect(readOnly == 403 && readBody.contains("agent:par1"), "\(readBody)")
        #expect(try await post("par1", "{}", token: fra1Agent).0 == 403, "another node's agent")
        let (notExpected, body409) = try await post("fra1", "", token: fra1Agent)
        #expect(notExpected == 409 && body409.contains("node fra1 has no report check"), "\(body409)")
        #expect(try await post("ghost", "", token: writeToken).0 == 404)
        let (bad, badBody) = try await post("par1", "{\"ok\": \"yes\"}", token: par1Agent)
        #expect(bad == 400 && badBody.contains("field ok"), "\(badBody)")
        // The last report; then silence: stale 1.5 s after it, and the log says why.
        let quiet = Date()
        #expect(try await post("par1", "{\"ok\": true}", token: writeToken).0 == 200, "a write token may report too")
        try await eventually("a silent par1 is taken out", timeout: 10, interval: 0.1) { try paris() == "192.0.2.10" }
        #expect(Date().timeIntervalSince(quiet) >= 1.45, "not before stale-after")
        try server.waitUntilReady(timeout: 5) { server.log.contains("no report for 1.5 s") }
    }
}
