import DNSWire
import Testing

@testable import NearcastConfiguration

/// A node's `checks:`: what good ones give (defaults included), and every mistake with its line.
@Suite(.timeLimit(.minutes(1))) struct NodeCheckConfigTests {
    static func config(
        _ checks: String, node: String = "{ id: fra1, ipv4: 192.0.2.10, latitude: 50.11, longitude: 8.68"
    ) -> String {
        """
        listen: ["127.0.0.1:53"]
        geo:
          nodes:
            - \(node), checks: \(checks) }
          pools: [{ id: web, members: [fra1] }]
        """
    }

    @Test func everyKindOfCheckIsRead() throws {
        let text = Self.config(
            """
            [
                    { type: tcp, port: 443 },
                    { type: http, host: 198.51.100.1, port: 80, path: healthz, status: 200-204, body: ok, interval: 2, timeout: 1, rise: 3, fall: 4 },
                    { type: dns, port: 53, name: example.net, qtype: soa, rcode: NXDOMAIN },
                    { type: report, stale-after: 20, fall: 2 },
                    { type: https, port: 443, server-name: fra1.example.net, ca: /etc/hostname },
                    { type: https, port: 8443, verify: false } ]
            """)
        let checks = try NearcastConfig.parse(yaml: text, fileName: "c.yaml", baseDirectory: "").geo.nodes[0].checks
        #expect(checks.map(\.kind) == [.tcp, .http, .dns, .report, .https, .https])
        #expect(checks[4].verify && checks[4].serverName == "fra1.example.net" && checks[4].caFile == "/etc/hostname")
        #expect(!checks[5].verify && checks[5].serverName == nil && checks[5].caFile == nil)
        #expect(
            checks[0].host == "192.0.2.10" && checks[0].port == 443 && checks[0].interval == 5 && checks[0].rise == 2
                && checks[0].fall == 3)
        #expect(
            checks[1].host == "198.51.100.1" && checks[1].path == "/healthz" && checks[1].status == 200...204
                && checks[1].body == "ok")
        #expect(checks[1].interval == 2 && checks[1].timeout == 1 && checks[1].rise == 3 && checks[1].fall == 4)
        #expect(
            checks[2].dnsName == (try DNSName("example.net.")) && checks[2].dnsType == .soa
                && checks[2].rcode == .nxDomain)
        #expect(checks[3].staleAfter == 20 && checks[3].rise == 1 && checks[3].fall == 2 && checks[3].label == "report")
    }

    @Test func everyMistakeIsReportedWithItsLine() {
        let text = """
            listen: ["127.0.0.1:53"]
            geo:
              nodes:
                - id: fra1
                  ipv4: 192.0.2.10
                  latitude: 50.11
                  longitude: 8.68
                  checks:
                    - { type: ping, port: 1 }
                    - { type: tcp, port: 70000 }
                    - { type: http, port: 80, status: 700, timeout: 9, interval: 3 }
                    - { type: dns, port: 53 }
                    - { type: report, port: 8080 }
                    - { type: tcp, port: 22, stale-after: 5 }
                    - { type: report, stale-after: 0 }
                    - { type: report }
                    - { type: report }
                    - { type: http, port: 80, verify: false }
                    - { type: https, port: 443, ca: no/such/ca.pem, server-name: "bad name!" }
                    - { type: https, port: 443, verify: false, server-name: fra1.example.net }
                - { id: v6, ipv6: "2001:db8::1", latitude: 1, longitude: 1, checks: [{ type: tcp, port: 22 }] }
              pools: [{ id: web, members: [fra1, v6] }]
            """
        do {
            _ = try NearcastConfig.parse(yaml: text, fileName: "c.yaml", baseDirectory: "/etc/nearcast")
            Issue.record("bad checks must be refused")
        } catch {
            let d = Set(error.diagnostics.map(\.description))
            #expect(d.contains("c.yaml:9: node fra1 check: type must be one of tcp, http, https, dns, report"), "\(d)")
            #expect(d.contains("c.yaml:10: node fra1 check: port must be a number from 1 to 65535"), "\(d)")
            #expect(d.contains("c.yaml:11: node fra1 check: timeout (9.0 s) cannot exceed interval (3.0 s)"), "\(d)")
            #expect(d.contains("c.yaml:11: node fra1 check: status must be a code or a range such as 200-299"), "\(d)")
            #expect(d.contains("c.yaml:12: node fra1 check: a dns check needs name (a domain name to ask)"), "\(d)")
            #expect(
                d.contains(
                    "c.yaml:13: node fra1 check: a report check has no port (the node's agent posts to POST /v1/nodes/ID/report)"
                ), "\(d)")
            #expect(d.contains("c.yaml:14: node fra1 check: stale-after goes with type report"), "\(d)")
            #expect(d.contains("c.yaml:15: node fra1 check: stale-after must be a number from 0.1 to 86400.0"), "\(d)")
            #expect(d.contains("c.yaml:17: node fra1: one report check per node (its agent's reports)"), "\(d)")
            #expect(d.contains("c.yaml:18: node fra1 check: verify goes with type https"), "\(d)")
            #expect(
                d.contains(
                    "c.yaml:19: node fra1 check: ca file /etc/nearcast/no/such/ca.pem does not exist or cannot be read"),
                "\(d)")
            #expect(
                d.contains(
                    "c.yaml:19: node fra1 check: server-name must be a host name (the name the certificate holds)"),
                "\(d)")
            #expect(
                d.contains(
                    "c.yaml:20: node fra1 check: verify: false checks no certificate, so ca and server-name would do nothing"
                ), "\(d)")
            #expect(d.contains("c.yaml:21: node v6 check: give host (the node has no IPv4 address to check)"), "\(d)")
        }
    }
}
