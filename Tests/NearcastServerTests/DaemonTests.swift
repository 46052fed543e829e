import DNSWire
import Foundation
import NearcastConfiguration
import NearcastTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// End-to-end: the real nearcastd binary, queried by the real dig and kdig over UDP and TCP, IPv4 and IPv6.
@Suite(.timeLimit(.minutes(2))) struct DaemonTests {
    static var zone: String { TestSupport.fixtures.appendingPathComponent("example.test.zone").path }

    /// Starts nearcastd on 127.0.0.1 and ::1, on one port the kernel picks, and waits until it is ready.
    static func startDaemon(extraArgs: [String] = []) throws -> (Daemon, Int) {
        let args = [
            "--zone", "example.test=\(zone)", "--listen", "127.0.0.1:0", "--listen", "[::1]:0", "--threads", "2",
        ]
        let server = try Daemon(args + extraArgs)
        return (server, server.dnsPort)
    }

    @Test(arguments: ["dig", "kdig"], [("127.0.0.1", false), ("::1", false), ("127.0.0.1", true), ("::1", true)])
    func answersRealClients(client: String, via: (String, Bool)) throws {
        let (server, port) = try Self.startDaemon()
        defer { server.stop() }
        let (host, tcp) = via
        let out = try TestSupport.run(
            try TestSupport.tool(client),
            ["@\(host)", "-p", "\(port)", tcp ? "+tcp" : "+notcp", "www.example.test", "A", "+short"])
        #expect(out.status == 0, "\(out.stderr)")
        #expect(out.stdout.split(separator: "\n").sorted() == ["192.0.2.1", "192.0.2.2"], "\(out.stdout)")
    }

    /// Which server answered, as dig asks it (issue 30): NSID (RFC 5001) and CHAOS TXT at
    /// id.server (RFC 4892), both the host's name when no identity is configured.
    /// Without XDP nothing it does once started needs a capability (issue 30): every thread has
    /// dropped all it started with, and UDP and TCP are answered as before.
    @Test func onceStartedWithoutXDPItKeepsNoCapability() throws {
        let (server, port) = try Self.startDaemon()
        defer { server.stop() }
        let threads = server.permittedCapabilities
        #expect(threads.count > 4 && threads.values.allSatisfy { $0 == "0000000000000000" }, "\(threads)")
        #expect(server.log.contains("capabilities dropped") && server.log.contains("kept=none"), "\(server.log)")
        for tcp in ["+notcp", "+tcp"] {
            let out = try TestSupport.run(
                try TestSupport.tool("dig"), ["@127.0.0.1", "-p", "\(port)", tcp, "www.example.test", "A", "+short"])
            #expect(out.stdout.contains("192.0.2.1"), "\(tcp): \(out.stdout)")
        }
    }

    @Test(arguments: ["dig", "kdig"]) func realClientsLearnWhichServerAnswered(client: String) throws {
        let (server, port) = try Self.startDaemon()
        defer { server.stop() }
        let host = try #require(NearcastConfig.hostName)
        let tool = try TestSupport.tool(client)
        let nsid = try TestSupport.run(tool, ["@127.0.0.1", "-p", "\(port)", "+nsid", "www.example.test", "A"])
        #expect(nsid.stdout.contains("NSID") && nsid.stdout.contains(host), "\(nsid.stdout)")
        let chaos = try TestSupport.run(
            tool, ["@127.0.0.1", "-p", "\(port)", "-c", "CH", "-t", "TXT", "id.server", "+short"])
        #expect(chaos.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "\"\(host)\"", "\(chaos.stdout)")
    }

    /// Queries that arrive together are read and answered in batches: each gets its reply, sent to
    /// the address it came from, whatever the batch it fell in; a datagram longer than any query
    /// (5,000 bytes) gets none and holds up nothing.
    @Test(arguments: ["127.0.0.1", "::1"]) func aBurstFromSeveralClientsIsAnsweredEachToItsSender(host: String) throws {
        let (server, port) = try Self.startDaemon()
        defer { server.stop() }
        let names = ["www.example.test", "alias.example.test", "nope.example.test", "x.wild.example.test"]
        var queries = (0..<200).map { i in RawClient.query(names[i % names.count], .a, id: UInt16(1000 + i)) }
        var long = RawClient.query("www.example.test", .a, id: 0xBEEF)
        long += [UInt8](repeating: 0, count: 5000 - long.count)
        queries.insert(long, at: 101)
        let received = RawClient.burst(queries, clients: 4, host: host, port: port)
        for (k, replies) in received.enumerated() {
            let sent = stride(from: k, to: queries.count, by: 4).map { queries[$0] }.filter { $0.count < 5000 }
            let ids = Set(replies.map { UInt16($0[0]) << 8 | UInt16($0[1]) })
            #expect(ids == Set(sent.map { UInt16($0[0]) << 8 | UInt16($0[1]) }), "client \(k)")
            for reply in replies {
                let query = sent.first { $0[0] == reply[0] && $0[1] == reply[1] }
                #expect(query.map { RawClient.matches(reply, $0) } == true, "client \(k)")
            }
        }
    }

    @Test func digSeesFlagsNegativeAnswersAndTCPFallback() throws {
        let (server, port) = try Self.startDaemon()
        defer { server.stop() }
        let dig = try TestSupport.tool("dig")
        let pos = try TestSupport.run(dig, ["@127.0.0.1", "-p", "\(port)", "www.example.test", "AAAA", "+norec"])
        #expect(pos.stdout.contains("status: NOERROR"))
        #expect(pos.stdout.contains("flags: qr aa;"))
        #expect(pos.stdout.contains("2001:db8::1"))
        let nx = try TestSupport.run(dig, ["@127.0.0.1", "-p", "\(port)", "nope.example.test", "A"])
        #expect(nx.stdout.contains("status: NXDOMAIN"))
        #expect(nx.stdout.contains("example.test.\t\t60\tIN\tSOA"))
        // Six 100-byte TXT records do not fit 512 bytes: TC over UDP, then dig retries over TCP.
        let big = try TestSupport.run(dig, ["@127.0.0.1", "-p", "\(port)", "big.example.test", "TXT", "+noedns"])
        #expect(big.stdout.contains("Truncated, retrying in TCP mode"))
        #expect(big.stdout.contains("ANSWER: 6"))
        let refused = try TestSupport.run(dig, ["@::1", "-p", "\(port)", "www.example.org", "A"])
        #expect(refused.stdout.contains("status: REFUSED"))
        #expect(refused.stdout.contains("EDE: 20 (Not Authoritative)"))
    }

    @Test func kdigSubnetIsEchoedWithScopeZero() throws {
        let (server, port) = try Self.startDaemon()
        defer { server.stop() }
        let out = try TestSupport.run(
            try TestSupport.tool("kdig"),
            ["@127.0.0.1", "-p", "\(port)", "+subnet=198.51.100.0/24", "www.example.test", "A"])
        #expect(out.stdout.contains("CLIENT-SUBNET: 198.51.100.0/24/0"), "\(out.stdout)")
    }

    /// A client that signs its queries with a key the server does not have can tell (RFC 8945):
    /// dig sees NOTAUTH and a BADKEY TSIG, over UDP and TCP, and no answer.
    @Test func digSigningWithAnUnknownKeyGetsBadKey() throws {
        let (server, port) = try Self.startDaemon()
        defer { server.stop() }
        for tcp in [false, true] {
            let out = try TestSupport.run(
                try TestSupport.tool("dig"),
                [
                    "@127.0.0.1", "-p", "\(port)", "-y", "hmac-sha256:k:c2VjcmV0c2VjcmV0c2VjcmV0", "www.example.test",
                    "A",
                ]
                    + (tcp ? ["+tcp"] : []))
            #expect(
                out.stdout.contains("status: NOTAUTH") && out.stdout.contains("ANSWER: 0")
                    && out.stdout.contains("TSIG\thmac-sha256.") && out.stdout.contains("BADKEY"),
                "\(out.stdout) \(out.stderr)")
        }
    }

    @Test func tcpPipelinedQueriesAreAllAnsweredInOrder() throws {
        let (server, port) = try Self.startDaemon()
        defer { server.stop() }
        let fd = try #require(RawClient.tcpConnect(port: port))
        defer { close(fd) }
        var stream: [UInt8] = []
        let names = ["www.example.test.", "nope.example.test.", "alias.example.test.", "big.example.test."]
        for (i, n) in names.enumerated() {
            let q = RawClient.query(n, n.hasPrefix("big") ? .txt : .a, id: UInt16(100 + i))
            stream += [UInt8(q.count >> 8), UInt8(q.count & 0xFF)] + q
        }
        #expect(RawClient.tcpSend(fd, stream))
        for i in names.indices {
            let reply = try DNSMessage(wire: try #require(RawClient.tcpReadMessage(fd)))
            #expect(reply.header.id == UInt16(100 + i))
            #expect(!reply.header.tc)
        }
    }

    @Test func tcpIdleConnectionsAreClosed() throws {
        let dir = try TemporaryDirectory.url("nearcast-idle")
        let cfg = dir.appendingPathComponent("nearcast.yaml")
        try """
        listen: ["127.0.0.1:0"]
        tcp-idle-timeout: 1
        zones:
          - origin: example.test
            file: \(Self.zone)
        """.write(to: cfg, atomically: true, encoding: .utf8)
        let server = try Daemon(["--config", cfg.path, "--threads", "1"])
        defer { server.stop() }
        // Our own timeout is far beyond the server's second: on a loaded machine the close comes
        // late, and what is checked is that it comes, and not before the connection was idle.
        let fd = try #require(RawClient.tcpConnect(port: server.dnsPort, timeout: 15))
        defer { close(fd) }
        let start = Date()
        var b = [UInt8](repeating: 0, count: 1)
        let n = recv(fd, &b, 1, 0)  // blocks until the server closes (0) or our 15 s timeout (-1)
        #expect(n == 0, "the server closes an idle connection")
        #expect(Date().timeIntervalSince(start) > 0.8, "not before it was idle for tcp-idle-timeout")
    }

    @Test func wildcardIPv4AndIPv6OnOnePort() throws {
        let server = try Daemon([
            "--zone", "example.test=\(Self.zone)", "--listen", "0.0.0.0:0", "--listen", "[::]:0", "--threads", "1",
        ])
        defer { server.stop() }
        let port = server.dnsPort
        #expect(
            Daemon.ports(in: server.log)["dns"] == [port, port], "port 0 on both addresses is one port: \(server.log)")
        #expect(RawClient.udp(RawClient.query("www.example.test.", .a), port: port) != nil)
        #expect(RawClient.tcp(RawClient.query("www.example.test.", .a), host: "::1", port: port) != nil)
        #expect(server.log.contains("listening on a wildcard address"))
    }

    @Test func sigtermStopsGracefully() throws {
        let (server, _) = try Self.startDaemon()
        let status = server.stop(signal: SIGTERM)
        #expect(status == 0)
    }

    /// SIGTERM (or SIGINT) stops the daemon's parts in the reverse order of their start: the API
    /// first, the DNS listeners and their event loops last, and the process exits 0.
    @Test(arguments: [SIGTERM, SIGINT]) func aStopGoesInTheReverseOrderOfTheStart(signal: Int32) throws {
        let (server, _) = try Self.startDaemon(extraArgs: ["--api", "127.0.0.1:0"])
        let (status, log) = server.stopReadingLog(signal: signal)
        #expect(status == 0, "\(log)")
        let order = log.split(separator: "\n").compactMap { line -> String? in
            guard line.contains("] stopping"), let r = line.range(of: "service=") else { return nil }
            return String(line[r.upperBound...].prefix { $0 != "[" }).trimmingCharacters(in: .whitespaces)
        }
        #expect(
            order == [
                "management API", "secondary zones' refresh", "signature refresh", "NOTIFY to secondaries",
                "DNS cookie secrets",
                "health checks", "DNS listeners",
                "event loops",
            ], "\(log)")
    }

    /// A SIGTERM while the daemon is still starting (here loading a zone of 100,000 names) ends
    /// the start at its next step: what started is stopped, it never says ready, and it exits 0
    /// (the signal's default action used to kill it, status 143).
    @Test func aStopBeforeReadyEndsTheStartGracefully() throws {
        let dir = try TemporaryDirectory("nearcast-early-stop")
        let zone = try dir.write("$TTL 60\n@ SOA ns h 1 3600 600 86400 60\n@ NS ns\nns A 192.0.2.1\n", to: "scale.zone")
        let names = try TestSupport.run("/bin/sh", ["-c", "seq 0 99999 | sed 's/.*/n& A 192.0.2.1/' >> '\(zone)'"])
        #expect(names.status == 0, "\(names.stderr)")
        let server = try ServerProcess(
            try TestSupport.product("nearcastd"), ["--zone", "scale.test=\(zone)", "--listen", "127.0.0.1:0"])
        try server.waitUntilReady(timeout: 30) { server.log.contains("] starting") }
        let (status, log) = server.stopReadingLog(signal: SIGTERM, timeout: 60)
        #expect(status == 0, "\(log)")
        #expect(log.contains("asked to stop before it was ready"), "\(log)")
        #expect(!log.contains("nearcastd: ready"), "\(log)")
        withExtendedLifetime(dir) {}
    }

    @Test func aBadZoneIsNotLoadedAndNamesFileAndLine() throws {
        let dir = try TemporaryDirectory.url("nearcast-bad")
        let zone = dir.appendingPathComponent("bad.zone")
        try "$TTL 60\n@ SOA ns h 1 2 3 4 5\n@ NS ns\nns A 192.0.2.1\nwww A 300.1.1.1\n".write(
            to: zone, atomically: true, encoding: .utf8)
        let out = try TestSupport.run(
            try TestSupport.product("nearcastd"), ["--zone", "example.test=\(zone.path)", "--listen", "127.0.0.1:0"])
        #expect(out.status == 1)
        #expect(
            out.stderr.contains("\(zone.path):5: A record for www.example.test.: '300.1.1.1' is not an IPv4 address"),
            "\(out.stderr)")
    }
}

/// `nearcast check-config`: every error as file:line: message, exit status 1 when there is one.
@Suite(.timeLimit(.minutes(2))) struct CheckConfigTests {
    @Test func goodConfigIsOK() throws {
        let dir = try TemporaryDirectory.url("nearcast-cc")
        try FileManager.default.copyItem(
            at: TestSupport.fixtures.appendingPathComponent("example.test.zone"),
            to: dir.appendingPathComponent("z.zone"))
        try "listen: [\"127.0.0.1:53\"]\nzones:\n  - origin: example.test.\n    file: z.zone\n".write(
            to: dir.appendingPathComponent("c.yaml"), atomically: true, encoding: .utf8)
        let out = try TestSupport.run(
            try TestSupport.product("nearcast"), ["check-config", dir.appendingPathComponent("c.yaml").path])
        #expect(out.status == 0, "\(out.stderr)")
        #expect(out.stdout.contains("ok: 1 zone, 60 records, 1 listen address"), "\(out.stdout)")
    }

    /// What `make install` puts in /etc/nearcast is a working config, its commented-out geo
    /// section too once uncommented (with the test City database in place of GeoLite2).
    @Test func theInstalledSampleConfigIsValid() throws {
        let dist = XDPEndToEndTests.root.appendingPathComponent("dist")
        let cli = try TestSupport.product("nearcast")
        let plain = try TestSupport.run(cli, ["check-config", dist.appendingPathComponent("nearcast.yaml").path])
        #expect(plain.status == 0 && plain.stdout.contains("ok: 1 zone"), "\(plain.stdout) \(plain.stderr)")

        let dir = try TemporaryDirectory.url("nearcast-sample")
        try FileManager.default.createDirectory(
            at: dir.appendingPathComponent("zones"), withIntermediateDirectories: true)
        try FileManager.default.copyItem(
            at: dist.appendingPathComponent("zones/example.net.zone"),
            to: dir.appendingPathComponent("zones/example.net.zone"))
        try FileManager.default.copyItem(
            at: dist.appendingPathComponent("tokens"), to: dir.appendingPathComponent("tokens"))
        let database = XDPEndToEndTests.root.appendingPathComponent(".build/geo/test-city.mmdb").path
        var lines: [String] = []
        var inGeo = false
        for line in try String(contentsOf: dist.appendingPathComponent("nearcast.yaml"), encoding: .utf8).split(
            separator: "\n", omittingEmptySubsequences: false)
        {
            if line.hasPrefix("# geo:") { inGeo = true }
            lines.append(inGeo && line.hasPrefix("# ") ? String(line.dropFirst(2)) : String(line))
        }
        let geo = lines.joined(separator: "\n").replacingOccurrences(
            of: "/var/lib/GeoIP/GeoLite2-City.mmdb", with: database
        )
        .replacingOccurrences(of: "    - { name: www.example.net,", with: "    - { name: geo.example.net,")
        try geo.write(to: dir.appendingPathComponent("nearcast.yaml"), atomically: true, encoding: .utf8)
        let full = try TestSupport.run(cli, ["check-config", dir.appendingPathComponent("nearcast.yaml").path])
        #expect(full.status == 0, "\(full.stdout) \(full.stderr)")
    }

    @Test func theGeoSectionAndItsDatabaseAreChecked() throws {
        let dir = try TemporaryDirectory.url("nearcast-cc")
        try FileManager.default.copyItem(
            at: TestSupport.fixtures.appendingPathComponent("example.test.zone"),
            to: dir.appendingPathComponent("z.zone"))
        let database = XDPEndToEndTests.root.appendingPathComponent(".build/geo/test-city.mmdb").path
        let text = """
            listen: ["127.0.0.1:53"]
            zones: [{ origin: example.test., file: z.zone }]
            geo:
              database: \(database)
              nodes:
                - { id: fra1, ipv4: 192.0.2.10, latitude: 50.11, longitude: 8.68 }
                - { id: par1, ipv4: 192.0.2.20, latitude: 48.86, longitude: 2.35 }
              pools: [{ id: web, members: [fra1, par1] }]
              names: [{ name: geo.example.test, type: A, pool: web }]
            """
        let cfg = dir.appendingPathComponent("c.yaml")
        try text.write(to: cfg, atomically: true, encoding: .utf8)
        let cc = try TestSupport.product("nearcast")
        let ok = try TestSupport.run(cc, ["check-config", cfg.path])
        #expect(ok.status == 0, "\(ok.stderr)")
        #expect(
            ok.stdout.contains(
                "1 geo name over 2 nodes (nearcast-Test-City: 16 networks, 2 location classes, 243 prefixes, 233 of them for uncovered blocks, 4 IPv6 prefixes looked up as IPv4)"
            ),
            "\(ok.stdout)")
        try text.replacingOccurrences(of: database, with: "missing.mmdb").write(
            to: cfg, atomically: true, encoding: .utf8)
        let missing = try TestSupport.run(cc, ["check-config", cfg.path])
        #expect(missing.status == 1)
        #expect(
            missing.stderr.contains(
                "\(dir.path)/missing.mmdb: geo database: cannot open the file: No such file or directory"),
            "\(missing.stderr)")
    }

    @Test func everyErrorIsPrintedWithFileAndLine() throws {
        let dir = try TemporaryDirectory.url("nearcast-cc")
        try "$TTL 60\n@ SOA ns h 1 2 3 4 5\n@ NS ns\nns A 192.0.2.1\nwww CNAME ns\nwww TXT x\n".write(
            to: dir.appendingPathComponent("z.zone"), atomically: true, encoding: .utf8)
        let cfgText = """
            listen:
              - 127.0.0.1:53
              - 127.0.0.1
            zones:
              - origin: example.test.
                file: z.zone
              - origin: other.test.
                file: missing.zone
            colour: blue
            xdp:
              names-capacity: 8
              over-budget: bounce
            """
        let cfg = dir.appendingPathComponent("c.yaml")
        try cfgText.write(to: cfg, atomically: true, encoding: .utf8)
        let cc = try TestSupport.product("nearcast")
        let out = try TestSupport.run(cc, ["check-config", cfg.path])
        #expect(out.status == 1)
        #expect(out.stderr.contains("\(cfg.path):3: listen: '127.0.0.1' is not ADDR:PORT"), "\(out.stderr)")
        #expect(out.stderr.contains("\(cfg.path):9: unknown key 'colour'"), "\(out.stderr)")
        #expect(
            out.stderr.contains("\(cfg.path):11: xdp names-capacity must be a number of names (16 to 16000000)"),
            "\(out.stderr)")
        #expect(out.stderr.contains("\(cfg.path):12: xdp over-budget must be truncate or drop"), "\(out.stderr)")
        // Config errors come first; once the config is right, the zones' errors are all listed.
        try cfgText.replacingOccurrences(of: "  - 127.0.0.1\n", with: "").replacingOccurrences(
            of: "colour: blue", with: ""
        )
        .replacingOccurrences(of: "names-capacity: 8", with: "names-capacity: 64").replacingOccurrences(
            of: "bounce", with: "drop"
        )
        .write(to: cfg, atomically: true, encoding: .utf8)
        let zones = try TestSupport.run(cc, ["check-config", cfg.path])
        #expect(zones.status == 1)
        #expect(
            zones.stderr.contains("z.zone:5: www.example.test. has a CNAME and other data (TXT)"), "\(zones.stderr)")
        #expect(zones.stderr.contains("missing.zone: zone file does not exist"), "\(zones.stderr)")
        #expect(zones.stderr.contains("2 errors"))
    }
}
