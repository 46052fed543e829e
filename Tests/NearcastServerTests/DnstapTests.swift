import Foundation
import NearcastBasics
import NearcastConfiguration
import NearcastTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The query log (issue 30): the slow path's queries and replies in dnstap, as Knot and BIND write
/// it, read back by BIND's own `dnstap-read`.
@Suite(.timeLimit(.minutes(2))) struct DnstapTests {
    static var zone: String { TestSupport.fixtures.appendingPathComponent("example.test.zone").path }

    /// nearcastd with `dnstap` (a YAML flow mapping) in its config, identity ns-test.
    static func daemon(dnstap: String, in dir: TemporaryDirectory) throws -> Daemon {
        let config = try dir.write(
            """
            listen: ["127.0.0.1:0"]
            zones: [{ origin: example.test., file: \(zone) }]
            identity: ns-test
            dnstap: \(dnstap)

            """, to: "nearcast.yaml")
        return try Daemon(["--config", config, "--threads", "2"])
    }

    /// A query over UDP for a name that exists and one over TCP for a name that does not.
    static func ask(_ server: Daemon) throws {
        for args in [["+notcp", "www.example.test", "A"], ["+tcp", "nope.example.test", "AAAA"]] {
            let out = try server.dig(["+short"] + args)
            #expect(out.status == 0, "\(out.stderr)")
        }
    }

    /// `dnstap-read`'s one line per message of `file`, and its YAML.
    static func read(_ file: String) throws -> (lines: [String], yaml: String) {
        let reader = try TestSupport.tool("dnstap-read")
        let short = try TestSupport.run(reader, [file])
        #expect(short.status == 0, "\(short.stderr)")
        let yaml = try TestSupport.run(reader, ["-y", file])
        return (short.stdout.split(separator: "\n").map(String.init), yaml.stdout)
    }

    /// The four messages of `ask`, in its order: each query as it came and its reply as it left.
    static func expectTheExchanges(_ lines: [String], port: Int) {
        let shapes = lines.map { line in
            // "26-Nov-2026 09:49:41.893 AQ 127.0.0.1:52444 -> 127.0.0.1:40015 UDP 57b www.example.test/IN/A"
            let w = line.split(separator: " ")
            return w.count == 9
                ? [w[2], w[5].hasSuffix(":\(port)") ? "server" : w[5], w[6], w[8]].joined(separator: " ") : line
        }
        #expect(
            shapes == [
                "AQ server UDP www.example.test/IN/A", "AR server UDP www.example.test/IN/A",
                "AQ server TCP nope.example.test/IN/AAAA", "AR server TCP nope.example.test/IN/AAAA",
            ], "\(lines)")
    }

    @Test func theSlowPathsQueriesAndRepliesAreReadByDnstapRead() throws {
        let dir = try TemporaryDirectory("nearcast-dnstap")
        let server = try Self.daemon(dnstap: "{ file: queries.fstrm }", in: dir)
        try Self.ask(server)
        // The log is complete once the daemon has stopped: fstrm's thread writes it out then.
        #expect(server.stop() == 0)
        let (lines, yaml) = try Self.read(dir.file("queries.fstrm"))
        Self.expectTheExchanges(lines, port: server.dnsPort)
        #expect(yaml.contains("identity: ns-test"), "the config's identity, as NSID says it")
        #expect(yaml.contains("version: nearcast "))
        #expect(yaml.contains("type: AUTH_RESPONSE") && yaml.contains("status: NXDOMAIN"), "the reply's own bytes")
    }

    /// A collector on a Unix socket, as operators run one (fstrm_capture, from Debian's fstrm-bin).
    @Test func aCollectorOnAUnixSocketGetsThemToo() throws {
        let dir = try TemporaryDirectory("nearcast-dnstap")
        let capture = try ServerProcess(
            try TestSupport.tool("fstrm_capture"),
            ["-t", "protobuf:dnstap.Dnstap", "-u", dir.file("dnstap.sock"), "-w", dir.file("captured.fstrm")])
        defer { capture.stop() }
        try capture.waitUntilReady { FileManager.default.fileExists(atPath: dir.file("dnstap.sock")) }
        let server = try Self.daemon(dnstap: "{ socket: dnstap.sock }", in: dir)
        // fstrm's thread connects before it writes what is queued: nothing is lost meanwhile.
        try Self.ask(server)
        #expect(server.stop() == 0)
        #expect(capture.stop(signal: SIGINT) == 0)
        let (lines, _) = try Self.read(dir.file("captured.fstrm"))
        Self.expectTheExchanges(lines, port: server.dnsPort)
    }

    @Test func aLogThatCannotBeWrittenStopsTheStartAndSaysWhy() throws {
        let dir = try TemporaryDirectory("nearcast-dnstap")
        let config = try dir.write(
            """
            listen: ["127.0.0.1:0"]
            zones: [{ origin: example.test., file: \(Self.zone) }]
            dnstap: { file: no/such/dir/queries.fstrm }

            """, to: "nearcast.yaml")
        let out = try TestSupport.run(try TestSupport.product("nearcastd"), ["--config", config])
        #expect(out.status == 1)
        #expect(out.stderr.contains("cannot open \(dir.file("no/such/dir/queries.fstrm"))"), "\(out.stderr)")
    }

    static func parse(_ dnstap: String) -> Result<NearcastConfig, DiagnosticsError> {
        Result { () throws(DiagnosticsError) -> NearcastConfig in
            try NearcastConfig.parse(
                yaml: "listen: [\"127.0.0.1:53\"]\ndnstap: \(dnstap)\n", fileName: "c.yaml", baseDirectory: "/etc/nc")
        }
    }

    @Test func theSectionNamesOneDestinationAndWhatIsLogged() throws {
        #expect(try Self.parse("{ file: q.fstrm }").get().dnstap.destination == .file("/etc/nc/q.fstrm"))
        let c = try Self.parse("{ socket: /run/nc.sock, responses: false }").get().dnstap
        #expect(c.destination == .socket("/run/nc.sock") && c.queries && !c.responses)
        #expect(
            try Self.parse("{ file: q }").get().dnstap != NearcastConfig().dnstap, "a change is seen (restart-only)")
        for (bad, says) in [
            ("{ file: a, socket: b }", "not both"), ("{ queries: true }", "needs a socket or a file"),
            ("{ file: a, queries: false, responses: false }", "logs nothing"),
            ("{ file: a, sample: 2 }", "unknown dnstap key"),
            ("{ file: a, queries: maybe }", "true or false"),
        ] {
            guard case .failure(let e) = Self.parse(bad) else {
                Issue.record("accepted \(bad)")
                continue
            }
            #expect(e.diagnostics.allSatisfy { $0.line == 2 } && e.description.contains(says), "\(bad): \(e)")
        }
    }
}
