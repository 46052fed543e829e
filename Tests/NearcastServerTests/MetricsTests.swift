import DNSWire
import Foundation
import NearcastAPIModel
import NearcastTestSupport
import NearcastTransfer
import Testing

@testable import NearcastServer

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Prometheus metrics: the exposition from a snapshot, and `GET /metrics` of a running daemon.
@Suite(.timeLimit(.minutes(2))) struct MetricsTests {
    /// The value of the series `name{labels}` in an exposition, if present.
    static func value(_ text: String, _ series: String) -> Double? {
        text.split(separator: "\n").first { $0.hasPrefix(series + " ") }.flatMap {
            Double($0.split(separator: " ").last ?? "")
        }
    }

    /// Zone transfers out by their type and how they ended.
    @Test func transfersOutAreCountedByTypeAndEnd() throws {
        let m = NearcastMetrics()
        m.countTransferOut(.axfr, done: true)
        m.countTransferOut(.axfr, done: true)
        m.countTransferOut(.ixfr, done: false)
        m.countTransferOut(.upToDate, done: true)
        let text = String(decoding: m.render(MetricsSnapshot(uptime: 1)), as: UTF8.self)
        #expect(Self.value(text, #"nearcast_transfers_out_total{type="AXFR",result="done"}"#) == 2, "\(text)")
        #expect(Self.value(text, #"nearcast_transfers_out_total{type="IXFR",result="failed"}"#) == 1)
        #expect(Self.value(text, #"nearcast_transfers_out_total{type="SOA",result="done"}"#) == 1)
    }

    /// The slow path's replies by their question's type, the types not named as "other".
    @Test func repliesAreCountedByTheirQuestionsType() throws {
        let m = NearcastMetrics()
        func reply(_ name: String, _ type: RRType) throws -> [UInt8] {
            var h = DNSHeader()
            h.qr = true
            return try DNSMessage(header: h, questions: [DNSQuestion(name: try DNSName(name), type: type)]).serialize()
        }
        for (name, type) in [("a.example.", RRType.aaaa), ("b.example.", .aaaa), ("example.", .a), ("x.", RRType(35))] {
            m.countReply(try reply(name, type), transport: .udp)
        }
        m.countReply([0, 1, 0x81, 0x01, 0, 0, 0, 0, 0, 0, 0, 0], transport: .udp)  // FORMERR, no question
        let text = String(decoding: m.render(MetricsSnapshot(uptime: 1)), as: UTF8.self)
        #expect(Self.value(text, #"nearcast_slowpath_queries_total{qtype="AAAA"}"#) == 2, "\(text)")
        #expect(Self.value(text, #"nearcast_slowpath_queries_total{qtype="A"}"#) == 1)
        #expect(Self.value(text, #"nearcast_slowpath_queries_total{qtype="other"}"#) == 2)
        #expect(Self.value(text, #"nearcast_slowpath_queries_total{qtype="MX"}"#) == 0)
    }

    /// Answers by zone: the closest enclosing zone served (a child zone apart from its parent), in
    /// any letter case, NOERROR and NXDOMAIN only (REFUSED and SERVFAIL are no zone's data); XDP's
    /// beside the slow path's; a zone no longer served loses its series.
    @Test func answersAreCountedByTheirZoneOnBothPaths() throws {
        let m = NearcastMetrics()
        let view = m.answers.view(zones: [try DNSName("example."), try DNSName("Sub.Example.")], nodes: ["fra1"])
        func reply(_ name: String, rcode: RCode = .noError) throws -> [UInt8] {
            var h = DNSHeader()
            h.qr = true
            var msg = DNSMessage(header: h, questions: [DNSQuestion(name: try DNSName(name), type: .a)])
            msg.rcode = rcode
            return try msg.serialize()
        }
        for (name, rcode) in [
            ("www.example.", RCode.noError), ("EXAMPLE.", .noError), ("nope.example.", .nxDomain),
            ("a.b.sub.example.", .noError), ("sub.EXAMPLE.", .noError), ("www.example.", .servFail),
            ("other.", .refused), ("example.", .refused),
        ] {
            m.countReply(try reply(name, rcode: rcode), transport: .udp, counts: view)
        }
        var snap = MetricsSnapshot(
            uptime: 1, nodes: [NodeStatus(id: "fra1", state: "up", changes: 0)], zones: ["example.", "sub.example."],
            xdpAnswers: .init(byType: [1: 7, 28: 2, 99: 1, 259: 3], byZone: ["example.": 12], byNode: ["fra1": 4]))
        var text = String(decoding: m.render(snap), as: UTF8.self)
        #expect(Self.value(text, #"nearcast_zone_answers_total{zone="example.",path="slowpath"}"#) == 3, "\(text)")
        #expect(Self.value(text, #"nearcast_zone_answers_total{zone="sub.example.",path="slowpath"}"#) == 2)
        #expect(Self.value(text, #"nearcast_zone_answers_total{zone="example.",path="xdp"}"#) == 12)
        #expect(Self.value(text, #"nearcast_zone_answers_total{zone="sub.example.",path="xdp"}"#) == 0)
        #expect(Self.value(text, #"nearcast_node_answers_total{node="fra1",path="xdp"}"#) == 4)
        #expect(Self.value(text, #"nearcast_node_answers_total{node="fra1",path="slowpath"}"#) == 0)
        #expect(Self.value(text, #"nearcast_xdp_answers_total{qtype="A"}"#) == 7)
        #expect(Self.value(text, #"nearcast_xdp_answers_total{qtype="AAAA"}"#) == 2)
        #expect(Self.value(text, #"nearcast_xdp_answers_total{qtype="other"}"#) == 4)
        snap.zones = ["example."]
        text = String(decoding: m.render(snap), as: UTF8.self)
        #expect(!text.contains(#"zone="sub.example.""#), "\(text)")
    }

    @Test func snapshotsBecomeSeriesAndTotalsOnlyGrow() {
        let m = NearcastMetrics()
        m.countReply([0, 1, 0x84, 0x03], transport: .udp)
        m.countReply([0, 1, 0x84, 0x00], transport: .tcp)
        m.countReload(seconds: 0.25)
        var snap = MetricsSnapshot(
            uptime: 12, geoCompileSeconds: 3.5,
            xdp: [.init(name: "answered", value: 40), .init(name: "pass_miss", value: 2)],
            nodes: [NodeStatus(id: "fra1", state: "drained", changes: 3)],
            pools: [PoolStatus(id: "web", members: ["fra1"], settled: false, ttlCap: 5)],
            health: HealthWrites(
                nodeChanges: 3, poolChanges: 1, mapWrites: 4, p50Micros: 2, p99Micros: 9, maxMicros: 20, samples: 3),
            maps: [("nc_names", 17, 4096)])
        var text = String(decoding: m.render(snap), as: UTF8.self)
        #expect(Self.value(text, #"nearcast_slowpath_replies_total{transport="udp",rcode="NXDOMAIN"}"#) == 1, "\(text)")
        #expect(Self.value(text, #"nearcast_slowpath_replies_total{transport="tcp",rcode="NOERROR"}"#) == 1)
        #expect(Self.value(text, #"nearcast_xdp_packets_total{reason="answered"}"#) == 40)
        #expect(Self.value(text, #"nearcast_node_state{node="fra1",state="drained"}"#) == 1)
        #expect(Self.value(text, #"nearcast_node_state{node="fra1",state="up"}"#) == 0)
        #expect(Self.value(text, #"nearcast_pool_ttl_cap_seconds{pool="web"}"#) == 5)
        #expect(Self.value(text, #"nearcast_health_write_seconds{quantile="0.99"}"#) == 9e-6)
        #expect(Self.value(text, #"nearcast_map_bytes{map="nc_names"}"#) == 4096)
        #expect(Self.value(text, #"nearcast_reloads_total{result="done"}"#) == 1)
        #expect(text.contains("# TYPE nearcast_xdp_packets_total counter"))
        // The next scrape brings the counters to the new totals.
        snap.xdp = [.init(name: "answered", value: 55), .init(name: "pass_miss", value: 2)]
        text = String(decoding: m.render(snap), as: UTF8.self)
        #expect(Self.value(text, #"nearcast_xdp_packets_total{reason="answered"}"#) == 55)
        #expect(Self.value(text, #"nearcast_xdp_packets_total{reason="pass_miss"}"#) == 2)
    }

    /// A reload that removes a node, a pool or a map takes their series away, rather than leaving
    /// a ghost at its last value; a node added again starts its series anew.
    @Test func seriesOfWhatAReloadRemovedAreDropped() {
        let m = NearcastMetrics()
        var snap = MetricsSnapshot(
            uptime: 1, geoCompileSeconds: 1, xdp: nil,
            nodes: [
                NodeStatus(id: "fra1", state: "up", changes: 2), NodeStatus(id: "par1", state: "down", changes: 5),
            ],
            pools: [
                PoolStatus(id: "web", members: ["fra1", "par1"], settled: true, ttlCap: nil),
                PoolStatus(id: "old", members: ["par1"], settled: false, ttlCap: 5),
            ],
            health: nil, maps: [("nc_names", 17, 4096), ("nc_geo4", 9, 8192)])
        var text = String(decoding: m.render(snap), as: UTF8.self)
        #expect(Self.value(text, #"nearcast_node_state{node="par1",state="down"}"#) == 1, "\(text)")
        #expect(Self.value(text, #"nearcast_node_changes_total{node="par1"}"#) == 5)
        snap.nodes = [NodeStatus(id: "fra1", state: "up", changes: 2)]
        snap.pools = [PoolStatus(id: "web", members: ["fra1"], settled: true, ttlCap: nil)]
        snap.maps = [("nc_names", 17, 4096)]
        text = String(decoding: m.render(snap), as: UTF8.self)
        #expect(
            !text.contains(#"node="par1""#) && !text.contains(#"pool="old""#) && !text.contains(#"map="nc_geo4""#),
            "\(text)")
        #expect(Self.value(text, #"nearcast_node_state{node="fra1",state="up"}"#) == 1)
        #expect(Self.value(text, #"nearcast_pool_settled{pool="web"}"#) == 1)
        #expect(Self.value(text, #"nearcast_map_entries{map="nc_names"}"#) == 17)
        // par1 back, by a later reload: its own count from its new start.
        snap.nodes.append(NodeStatus(id: "par1", state: "up", changes: 1))
        text = String(decoding: m.render(snap), as: UTF8.self)
        #expect(Self.value(text, #"nearcast_node_state{node="par1",state="up"}"#) == 1)
        #expect(Self.value(text, #"nearcast_node_state{node="par1",state="down"}"#) == 0)
        #expect(Self.value(text, #"nearcast_node_changes_total{node="par1"}"#) == 1)
    }

    @Test func theDaemonServesMetricsToReadTokensOnly() async throws {
        let tokens = try TemporaryDirectory.file(
            "nearcast-metrics-tokens", holding: "read \(ManagementAPITests.readToken)\n")
        let (server, port, dir) = try GeoDaemonTests.start(extraArgs: [
            "--api", "127.0.0.1:0", "--api-tokens", tokens.path,
        ])
        defer {
            server.stop()
            try? FileManager.default.removeItem(at: dir)
        }
        let api = try #require(server.apiPort)
        for name in ["geo.example.test", "nope.example.test"] {
            _ = try TestSupport.run(try TestSupport.tool("dig"), ["@127.0.0.1", "-p", "\(port)", name, "A", "+short"])
        }
        let (refused, _, _) = try await ManagementAPITests.get(api, "/metrics")
        #expect(refused == 401)
        let (status, headers, body) = try await ManagementAPITests.get(
            api, "/metrics", token: ManagementAPITests.readToken)
        let text = String(decoding: body, as: UTF8.self)
        #expect(status == 200 && headers["content-type"]?.hasPrefix("text/plain; version=0.0.4") == true)
        #expect(
            (Self.value(text, #"nearcast_slowpath_replies_total{transport="udp",rcode="NOERROR"}"#) ?? 0) >= 1,
            "\(text)")
        #expect((Self.value(text, #"nearcast_slowpath_replies_total{transport="udp",rcode="NXDOMAIN"}"#) ?? 0) >= 1)
        #expect(Self.value(text, #"nearcast_node_state{node="par1",state="up"}"#) == 1)
        #expect(Self.value(text, #"nearcast_pool_settled{pool="web"}"#) == 1)
        #expect(Self.value(text, "nearcast_geo_compile_seconds") != nil)
        // The geo answer counted by the node it put first, and both answers by their zone.
        let nodes = ["fra1", "par1", "nyc1"].compactMap {
            Self.value(text, #"nearcast_node_answers_total{node="\#($0)",path="slowpath"}"#)
        }
        #expect(nodes.count == 3 && nodes.reduce(0, +) == 1, "\(text)")
        #expect(Self.value(text, #"nearcast_zone_answers_total{zone="example.test.",path="slowpath"}"#) == 2)
    }
}
