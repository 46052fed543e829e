import DNSWire
import Foundation
import NearcastAPIModel
import NearcastTestSupport
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The management API of the real nearcastd, and `nearcast stats` against it (the XDP counters
/// themselves are checked end to end in XDPEndToEndTests).
@Suite(.timeLimit(.minutes(2))) struct ManagementAPITests {
    static let readToken = "0123456789abcdef0123456789abcdef"

    /// A daemon with the API on a free port and a tokens file with one read token.
    static func start() throws -> (daemon: Daemon, api: Int, tokens: URL) {
        let tokens = try TemporaryDirectory.file("nearcast-tokens", holding: "# test\nread \(readToken)\n")
        let (daemon, _) = try DaemonTests.startDaemon(extraArgs: ["--api", "127.0.0.1:0", "--api-tokens", tokens.path])
        return (daemon, try #require(daemon.apiPort), tokens)
    }

    /// The slow path's replies by rcode in `/v1/stats` and `nearcast stats`: two NOERROR and one
    /// NXDOMAIN answered are counted as such.
    @Test func statsCountTheSlowPathsRepliesByRcode() async throws {
        let (daemon, api, tokens) = try Self.start()
        defer {
            daemon.stop()
            try? FileManager.default.removeItem(at: tokens)
        }
        for (name, type) in [("www.example.test.", RRType.a), ("www.example.test.", .aaaa), ("nope.example.test.", .a)]
        {
            #expect(RawClient.udp(RawClient.query(name, type), port: daemon.dnsPort) != nil, "\(name) \(type)")
        }
        let (_, _, json) = try await Self.get(api, "/v1/stats", token: Self.readToken)
        let report = try JSONDecoder().decode(StatsReport.self, from: json)
        let slow = Dictionary((report.slowPath ?? []).map { ($0.name, $0.value) }, uniquingKeysWith: { a, _ in a })
        #expect(slow["NOERROR"] == 2 && slow["NXDOMAIN"] == 1 && slow["rrl_dropped"] == 0, "\(slow)")
        let cli = try TestSupport.product("nearcast")
        let out = try TestSupport.run(cli, ["stats", "--api", "127.0.0.1:\(api)", "--token-file", tokens.path])
        #expect(out.stdout.contains("slow path: replies by rcode"), "\(out.stdout)")
        #expect(
            out.stdout.split(separator: "\n").contains { $0.hasPrefix("  NXDOMAIN") && $0.hasSuffix(" 1") },
            "\(out.stdout)")
    }

    /// The tokens file is read again with every reload (issue 30): a token removed from it stops
    /// working after SIGHUP, one added starts; a file with an error refuses the reload and the
    /// tokens stay as they were.
    @Test func aReloadReadsTheTokensFileAgain() async throws {
        let (daemon, api, tokens) = try Self.start()
        defer {
            daemon.stop()
            try? FileManager.default.removeItem(at: tokens)
        }
        let added = String(repeating: "5", count: 32)
        #expect(try await Self.get(api, "/v1/stats", token: Self.readToken).0 == 200)
        #expect(try await Self.get(api, "/v1/stats", token: added).0 == 401)
        func reloaded(_ count: Int) -> Bool {
            daemon.log.components(separatedBy: "API tokens read again").count - 1 >= count
        }
        // The read token revoked, another added.
        try "read \(added)\n".write(to: tokens, atomically: true, encoding: .utf8)
        kill(daemon.pid, SIGHUP)
        try daemon.waitUntilReady { reloaded(1) }
        #expect(try await Self.get(api, "/v1/stats", token: Self.readToken).0 == 401, "revoked")
        #expect(try await Self.get(api, "/v1/stats", token: added).0 == 200, "added")
        // A broken file: the reload is refused, and the tokens are those of the last good one.
        try "read \(added)\nsuperuser short\n".write(to: tokens, atomically: true, encoding: .utf8)
        kill(daemon.pid, SIGHUP)
        try daemon.waitUntilReady { daemon.log.contains("reload refused") }
        #expect(daemon.log.contains(tokens.path + ":2"), "the file and line: \(daemon.log)")
        #expect(!reloaded(2))
        #expect(try await Self.get(api, "/v1/stats", token: added).0 == 200)
    }

    static func get(_ port: Int, _ path: String, token: String? = nil) async throws -> (Int, [String: String], Data) {
        var r = URLRequest(url: URL(string: "http://127.0.0.1:\(port)\(path)")!)
        if let token { r.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        let (data, response) = try await URLSession.shared.data(for: r)
        let http = response as! HTTPURLResponse
        var headers: [String: String] = [:]
        for (k, v) in http.allHeaderFields { headers[String(describing: k).lowercased()] = String(describing: v) }
        return (http.statusCode, headers, data)
    }

    @Test func livenessNeedsNoTokenEverythingElseDoes() async throws {
        let (daemon, api, tokens) = try Self.start()
        defer {
            daemon.stop()
            try? FileManager.default.removeItem(at: tokens)
        }
        let (live, _, body) = try await Self.get(api, "/healthz")
        #expect(live == 200 && String(decoding: body, as: UTF8.self) == "ok\n")

        let (none, headers, noneBody) = try await Self.get(api, "/v1/stats")
        #expect(none == 401)
        #expect(headers["www-authenticate"] == "Bearer realm=\"nearcast\"")
        #expect(String(decoding: noneBody, as: UTF8.self).contains("a bearer token is needed"))
        let (wrong, _, wrongBody) = try await Self.get(api, "/v1/stats", token: String(Self.readToken.reversed()))
        #expect(wrong == 401 && String(decoding: wrongBody, as: UTF8.self).contains("the bearer token is not valid"))
        #expect(daemon.log.contains("refused a request without a valid token"))

        let (ok, okHeaders, json) = try await Self.get(api, "/v1/stats", token: Self.readToken)
        #expect(ok == 200 && okHeaders["content-type"] == "application/json")
        let report = try JSONDecoder().decode(StatsReport.self, from: json)
        #expect(report.xdp == nil, "no fast path without --xdp")
        #expect(report.uptime > 0)
        let (missing, _, _) = try await Self.get(api, "/v1/nothing-here", token: Self.readToken)
        #expect(missing == 404)
    }

    @Test func theCLIPrintsStatsAndTheAPIsRefusals() throws {
        let (daemon, api, tokens) = try Self.start()
        defer {
            daemon.stop()
            try? FileManager.default.removeItem(at: tokens)
        }
        let cli = try TestSupport.product("nearcast")
        let ok = try TestSupport.run(cli, ["stats", "--api", "127.0.0.1:\(api)", "--token-file", tokens.path])
        #expect(ok.status == 0, "\(ok.stderr)")
        #expect(ok.stdout.contains("XDP fast path: off"), "\(ok.stdout)")

        let empty = try TemporaryDirectory.file("nearcast-notokens", holding: "# nobody\n")
        let noToken = try TestSupport.run(cli, ["stats", "--api", "127.0.0.1:\(api)", "--token-file", empty.path])
        #expect(
            noToken.status == 1 && noToken.stderr.contains("has no token of role read or above"), "\(noToken.stderr)")

        var env = ProcessInfo.processInfo.environment
        env["NEARCAST_TOKEN"] = String(repeating: "x", count: 32)
        let refused = try TestSupport.run(cli, ["stats", "--api", "127.0.0.1:\(api)"], environment: env)
        #expect(refused.status == 1)
        #expect(
            refused.stderr.contains("the management API answered 401: the bearer token is not valid"),
            "\(refused.stderr)")

        let down = try TestSupport.run(
            cli, ["stats", "--api", "127.0.0.1:\(try TestSupport.unusedPort())", "--token-file", tokens.path])
        #expect(down.status == 1 && down.stderr.contains("cannot reach the management API"), "\(down.stderr)")
    }

    @Test func aBadTokensFileStopsTheDaemonAtStart() throws {
        let tokens = try TemporaryDirectory.file("nearcast-badtokens", holding: "reader \(Self.readToken)\n")
        let out = try TestSupport.run(
            try TestSupport.product("nearcastd"),
            [
                "--zone", "example.test=\(DaemonTests.zone)", "--listen", "127.0.0.1:0", "--api", "127.0.0.1:0",
                "--api-tokens", tokens.path,
            ])
        #expect(out.status == 1)
        #expect(
            out.stderr.contains(
                "\(tokens.path):1: unknown role 'reader' (known: read, write, admin, agent, agent:NODE)"),
            "\(out.stderr)")
    }
}

/// The management API over TLS (`api: tls:`): HTTPS with the configured certificate, nothing in
/// the clear; the CLI checks the certificate against the system's CAs, or those of `--ca-file`.
@Suite(.timeLimit(.minutes(2))) struct ManagementAPITLSTests {
    @Test func theAPIServesHTTPSWithItsCertificate() throws {
        let dir = try TemporaryDirectory.url("nearcast-apitls")
        let (cert, key) = try TestSupport.selfSignedCertificate(commonName: "localhost", subjectAltName: "IP:127.0.0.1")
        defer { try? FileManager.default.removeItem(atPath: (cert as NSString).deletingLastPathComponent) }
        try "read \(ManagementAPITests.readToken)\n".write(
            to: dir.appendingPathComponent("tokens"), atomically: true, encoding: .utf8)
        try """
        listen: ["127.0.0.1:0"]
        zones: [{ origin: example.test., file: \(DaemonTests.zone) }]
        api: { listen: "127.0.0.1:0", tokens: tokens, tls: { certificate: \(cert), key: \(key) } }
        """.write(to: dir.appendingPathComponent("c.yaml"), atomically: true, encoding: .utf8)
        let server = try Daemon(["--config", dir.appendingPathComponent("c.yaml").path])
        defer { server.stop() }
        #expect(server.log.contains("tls=true"))
        let api = try #require(server.apiPort)
        let curl = try TestSupport.tool("curl")
        let ok = try TestSupport.run(
            curl,
            [
                "-s", "--cacert", cert, "-H", "Authorization: Bearer \(ManagementAPITests.readToken)",
                "https://127.0.0.1:\(api)/v1/stats",
            ])
        #expect(ok.status == 0 && ok.stdout.contains("\"uptime\""), "\(ok.stdout) \(ok.stderr)")
        let clear = try TestSupport.run(
            curl, ["-s", "-o", "/dev/null", "-w", "%{http_code}", "http://127.0.0.1:\(api)/healthz"])
        #expect(clear.stdout == "000", "nothing in the clear: \(clear.stdout)")
        let untrusted = try TestSupport.run(
            try TestSupport.product("nearcast"),
            ["stats", "--api", "https://127.0.0.1:\(api)", "--token-file", dir.appendingPathComponent("tokens").path])
        #expect(untrusted.status == 1 && untrusted.stderr.contains("is not trusted"), "\(untrusted.stderr)")
        // Its CA given (a private CA's: here the certificate signs itself), the CLI trusts it.
        let trusted = try TestSupport.run(
            try TestSupport.product("nearcast"),
            [
                "stats", "--api", "https://127.0.0.1:\(api)", "--ca-file", cert, "--token-file",
                dir.appendingPathComponent("tokens").path,
            ])
        #expect(
            trusted.status == 0 && trusted.stdout.contains("slow path: replies"), "\(trusted.stdout)\(trusted.stderr)")

        // A missing key is a config error with its line.
        try FileManager.default.removeItem(atPath: key)
        let check = try TestSupport.run(
            try TestSupport.product("nearcast"), ["check-config", dir.appendingPathComponent("c.yaml").path])
        #expect(
            check.status == 1 && check.stderr.contains("c.yaml:3: api tls key \(key) does not exist or cannot be read"),
            "\(check.stderr)")
    }
}
