import DNSWire
import Foundation
import NearcastTestSupport
import Testing

/// Response rate limiting on the slow path (issue 19), against nearcastd: a burst from one prefix
/// gets its second's worth of answers, then every second reply slipped as TC=1 and the rest
/// dropped; TCP is never limited; the metrics count both kinds; a bad rrl section is refused with
/// its line.
@Suite(.timeLimit(.minutes(2))) struct RateLimitTests {
    @Test func aBurstFromOnePrefixIsLimitedAndSlipsAndTCPIsNot() throws {
        let dir = try TemporaryDirectory.url("nearcast-rrl")
        let token = "0123456789abcdef0123456789abcdef"
        try "read \(token)\n".write(to: dir.appendingPathComponent("tokens"), atomically: true, encoding: .utf8)
        let config = dir.appendingPathComponent("nearcast.yaml")
        try """
        listen: ["127.0.0.1:0"]
        zones: [{ origin: example.test., file: \(TestSupport.fixtures.appendingPathComponent("example.test.zone").path) }]
        api: { listen: "127.0.0.1:0", tokens: tokens }
        rrl: { responses-per-second: 5, slip: 2, window: 5 }
        """.write(to: config, atomically: true, encoding: .utf8)
        let checked = try TestSupport.run(try TestSupport.product("nearcast"), ["check-config", config.path])
        #expect(
            checked.stdout.contains("rrl: 5 responses/s per /24 and /56, slip 2"), "\(checked.stdout)")
        let server = try Daemon(["--config", config.path, "--threads", "1"])
        defer { server.stop() }

        let queries = (0..<40).map { RawClient.query("www.example.test.", .a, id: UInt16($0)) }
        let replies = RawClient.burst(queries, port: server.dnsPort).compactMap { try? DNSMessage(wire: $0) }
        let full = replies.filter { !$0.header.tc && !$0.answers.isEmpty }
        let truncated = replies.filter { $0.header.tc && $0.answers.isEmpty && !$0.header.aa }
        // 5 a second: a burst of 40 within well under a second gets 5 (6 if it straddles a refill).
        #expect((5...6).contains(full.count), "answered \(full.count)")
        #expect(abs(truncated.count - (40 - full.count) / 2) <= 1, "slipped \(truncated.count) of \(40 - full.count)")
        #expect(full.count + truncated.count < 40, "the rest dropped")

        let tcp = try #require(RawClient.tcp(RawClient.query("www.example.test.", .a), port: server.dnsPort))
        #expect(try !DNSMessage(wire: tcp).answers.isEmpty, "TCP is never limited")

        let metrics = try TestSupport.run(
            try TestSupport.tool("curl"),
            ["-s", "-H", "Authorization: Bearer \(token)", "http://\(server.api)/metrics"])
        #expect(
            metrics.stdout.contains("nearcast_rrl_responses_total{verdict=\"slipped\"} \(truncated.count)"),
            "\(metrics.stdout.prefix(300))")
        #expect(
            metrics.stdout.contains(
                "nearcast_rrl_responses_total{verdict=\"dropped\"} \(40 - full.count - truncated.count)"))
    }

    @Test func aBadRRLSectionIsRefusedWithItsLine() throws {
        let dir = try TemporaryDirectory.url("nearcast-rrl")
        let config = dir.appendingPathComponent("nearcast.yaml")
        try """
        listen: ["127.0.0.1:0"]
        rrl:
          responses-per-second: -1
          slip: 2
          exempt: [192.0.2.0/33]
          colour: blue
        """.write(to: config, atomically: true, encoding: .utf8)
        let out = try TestSupport.run(try TestSupport.product("nearcast"), ["check-config", config.path])
        #expect(out.status != 0)
        #expect(
            out.stderr.contains(
                "nearcast.yaml:3: rrl responses-per-second must be a number of responses from 0 to 1000000"),
            "\(out.stderr)")
        #expect(out.stderr.contains("nearcast.yaml:5: rrl exempt '192.0.2.0/33' is not a prefix"), "\(out.stderr)")
        #expect(out.stderr.contains("nearcast.yaml:6: unknown rrl key 'colour'"), "\(out.stderr)")
    }
}
