import DNSWire
import Foundation
import NearcastTestSupport
import Testing

/// docs/CONFORMANCE.md as a test: for each place where the RFCs allow more than one answer, what
/// nearcast, NSD and Knot answer, asked the same bytes. A change of ours, or of a Debian update of
/// theirs, shows here and is written down there.
@Suite(.timeLimit(.minutes(2))) struct ConformanceTests {
    /// What a reply says, in brief: rcode, AA, answer count, CD, and whether our OPT echoes an
    /// unknown EDNS flag; "no reply" when none came.
    static func brief(_ reply: [UInt8]?) -> String {
        guard let reply else { return "no reply" }
        guard let m = try? DNSMessage(wire: reply) else { return "unparsable" }
        var s = "\(m.rcode)\(m.header.aa ? " aa" : "") an=\(m.answers.count)"
        if m.header.cd { s += " cd" }
        if let e = m.edns, e.otherFlags != 0 { s += " flags=\(e.otherFlags)" }  // an unknown flag echoed
        return s
    }

    static func message(
        _ name: String = "www.example.test.", _ type: RRType = .a, qclass: RRClass = .in, edns: EDNS? = nil,
        tweak: (inout DNSMessage) -> Void = { _ in }
    ) -> [UInt8] {
        var h = DNSHeader()
        h.id = 0x4242
        h.rd = true
        var m = DNSMessage(
            header: h, questions: [DNSQuestion(name: try! DNSName(name), type: type, qclass: qclass)], edns: edns)
        tweak(&m)
        return try! m.serialize()
    }

    /// Each case: its name in docs/CONFORMANCE.md, the query, and what nearcast, NSD and Knot answer.
    static let cases: [(String, [UInt8], nearcast: String, nsd: String, knot: String)] = [
        ("QCLASS ANY", message(qclass: .any), "NOERROR an=2", "NOERROR an=2", "NOERROR aa an=2"),
        ("AXFR over UDP", message("example.test.", .axfr), "NOTIMP an=0", "NOTIMP an=0", "NOTIMP an=0"),
        ("IXFR over UDP", message("example.test.", .ixfr), "REFUSED an=0", "REFUSED an=0", "NOTAUTH an=0"),
        ("MAILA", message("www.example.test.", .maila), "NOERROR aa an=0", "NOERROR aa an=0", "NOERROR aa an=0"),
        ("MAILB", message("www.example.test.", .mailb), "NOERROR aa an=0", "NOERROR aa an=0", "NOERROR aa an=0"),
        ("QTYPE OPT", message("www.example.test.", .opt), "NOERROR aa an=0", "NOERROR aa an=0", "NOERROR aa an=0"),
        ("QTYPE TSIG", message("www.example.test.", .tsig), "NOERROR aa an=0", "NOERROR aa an=0", "NOERROR aa an=0"),
        (
            "ECS with a nonzero scope",
            message(edns: EDNS(options: [EDNSOption(code: 8, data: [0, 1, 24, 24, 198, 51, 100])])),
            "FORMERR an=0", "NOERROR aa an=2", "NOERROR aa an=2"
        ),
        ("QDCOUNT 0", message { $0.questions = [] }, "FORMERR an=0", "FORMERR an=0", "FORMERR an=0"),
        (
            "QDCOUNT 0 with EDNS", message(edns: EDNS()) { $0.questions = [] }, "FORMERR an=0", "NOERROR an=0",
            "FORMERR an=0"
        ),
        (
            "QDCOUNT 2",
            message { $0.questions.append(DNSQuestion(name: try! DNSName("mail.example.test."), type: .a)) },
            "FORMERR an=0", "FORMERR an=0", "no reply"
        ),
        ("trailing bytes", message() + [0, 0, 0, 0], "FORMERR an=0", "NOERROR aa an=2", "FORMERR an=0"),
        ("CD bit", message { $0.header.cd = true }, "NOERROR aa an=2", "NOERROR aa an=2", "NOERROR aa an=2"),
        (
            "unknown EDNS option", message(edns: EDNS(options: [EDNSOption(code: 65001, data: [1, 2])])),
            "NOERROR aa an=2", "NOERROR aa an=2", "NOERROR aa an=2"
        ),
        (
            "unknown EDNS flag", message(edns: EDNS(otherFlags: 0x4000)),
            "NOERROR aa an=2", "NOERROR aa an=2", "NOERROR aa an=2"
        ),
        ("EDNS version 1", message(edns: EDNS(version: 1)), "BADVERS an=0", "BADVERS an=0", "BADVERS an=0"),
        (
            "NOTIFY", message("example.test.", .soa) { $0.header.opcode = .notify }, "NOTAUTH an=0", "REFUSED an=0",
            "NOTAUTH an=0"
        ),
        (
            "UPDATE", message("example.test.", .soa) { $0.header.opcode = .update },
            "NOTIMP an=0", "NOTIMP an=0", "NOTAUTH an=0"
        ),
    ]

    @Test func eachDecisionIsAsDocumentedBesideNSDAndKnot() throws {
        let dir = try TemporaryDirectory.url("nearcast-conf")
        var ports: [String: Int] = [:]
        var servers: [ServerProcess] = []
        defer { for s in servers { s.stop() } }
        for r in ReferenceServerDifferentialTests.Reference.allCases {
            let port = try TestSupport.unusedPort()
            let sub = dir.appendingPathComponent(r.rawValue)
            try FileManager.default.createDirectory(at: sub, withIntermediateDirectories: true)
            let s = try r.start(dir: sub, port: port)
            servers.append(s)
            try s.waitUntilReady {
                RawClient.udp(RawClient.query("example.test.", .soa), port: port, timeout: 0.2).map {
                    (try? DNSMessage(wire: $0))?.rcode == .noError
                } == true
            }
            ports[r.rawValue] = port
        }
        let (nearcast, port) = try DaemonTests.startDaemon()
        defer { nearcast.stop() }
        ports["nearcast"] = port
        for (name, query, ours, nsd, knot) in Self.cases {
            var seen: [String: String] = [:]
            for (server, p) in ports { seen[server] = Self.brief(RawClient.udp(query, port: p, timeout: 1)) }
            #expect(seen["nearcast"] == ours, "\(name): nearcast")
            #expect(seen["nsd"] == nsd, "\(name): NSD")
            #expect(seen["knot"] == knot, "\(name): Knot")
        }
    }
}
