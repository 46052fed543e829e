import DNSWire
import Foundation
import MaxMindDB
import NearcastBasics
import NearcastTestSupport
import Testing

@testable import NearcastAnswers
@testable import NearcastConfiguration
@testable import NearcastGeo
@testable import NearcastZones

/// How a joining node finds its entry points (issue 18): a discovery name (type SRV) answers the
/// asking client's nearest healthy nodes, nearest first, each at its target name, whose A and
/// AAAA are the node's addresses, given along as additional data and answered by themselves.
@Suite(.timeLimit(.minutes(1))) struct DiscoveryTests {
    static let configText = """
        listen: ["127.0.0.1:53"]
        geo:
          database: \(Repository.testCityDatabase)
          nodes:
            - { id: fra1, ipv4: 192.0.2.10, ipv6: "2001:db8::10", latitude: 50.11, longitude: 8.68, country: DE }
            - { id: par1, ipv4: 192.0.2.20, latitude: 48.86, longitude: 2.35, country: FR }
            - { id: nyc1, ipv4: 192.0.2.30, ipv6: "2001:db8::30", latitude: 40.71, longitude: -74.01, country: US }
          pools: [{ id: web, members: [fra1, par1, nyc1] }]
          names:
            - { name: _join._udp.example.test, type: SRV, pool: web, answers: 2, ttl: 30, port: 7946, targets: nodes.example.test }
            - { name: _join._udp.example.test, type: A, pool: web, answers: 2, ttl: 30 }
        """
    static let origin = try! DNSName("example.test.")
    static let zone = try! Zone.build(
        origin: origin,
        records: try! ZoneFileParser.parse(text: GeoResponderTests.zoneText, fileName: "z.zone", origin: origin),
        sourceName: "z.zone")
    static let config = try! NearcastConfig.parse(yaml: configText, fileName: "c.yaml", baseDirectory: "")

    static func text(_ r: RData) -> String {
        switch r {
        case .a(let a): a.description
        case .aaaa(let a): a.description
        default: "\(r)"
        }
    }

    func responder(unhealthy: Set<String> = []) throws -> Responder {
        var t = try GeoTable.build(Self.config.geo, database: try MaxMindDatabase(path: Repository.testCityDatabase))
        t.unhealthy = unhealthy
        return Responder(authority: Authority(zones: [Self.zone]), geo: t)
    }

    /// The client the questions come from: in Paris, by the test City database.
    static let paris: [UInt8] = [198, 51, 100, 7]

    @Test func theDiscoveryNameAnswersTheNearestHealthyNodesAtTheirTargets() throws {
        let paris = try responder().ask("_join._udp.example.test.", .srv, client: Self.paris)
        #expect(paris.header.aa && paris.rcode == .noError)
        #expect(
            paris.answers.map(\.rdata) == [
                .srv(priority: 0, weight: 0, port: 7946, target: try DNSName("par1.nodes.example.test.")),
                .srv(priority: 1, weight: 0, port: 7946, target: try DNSName("fra1.nodes.example.test.")),
            ] && paris.answers.allSatisfy { $0.ttl == 30 }, "\(paris.answers)")
        #expect(
            paris.additional.map { "\($0.name) \($0.type) \(Self.text($0.rdata))" } == [
                "par1.nodes.example.test. A 192.0.2.20", "fra1.nodes.example.test. A 192.0.2.10",
                "fra1.nodes.example.test. AAAA 2001:db8::10",
            ], "\(paris.additional)")
        // A node that is down is not offered; its target still answers (it is the node's name).
        let without = try responder(unhealthy: ["par1"]).ask("_join._udp.example.test.", .srv, client: Self.paris)
        #expect(
            without.answers.compactMap { if case .srv(_, _, _, let t) = $0.rdata { t.description } else { nil } }
                == ["fra1.nodes.example.test.", "nyc1.nodes.example.test."])
        #expect(
            try responder().ask("_join._udp.example.test.", .a, client: Self.paris).answers.count == 2,
            "A there: a geo name too")
    }

    @Test func targetsAnswerTheirNodesAddressesForEveryClient() throws {
        let r = try responder()
        let a = try r.ask("NYC1.nodes.example.test.", .a, client: Self.paris)
        #expect(a.header.aa && a.answers.map { Self.text($0.rdata) } == ["192.0.2.30"] && a.answers[0].ttl == 30)
        #expect(
            try r.ask("nyc1.nodes.example.test.", .aaaa, client: Self.paris).answers.map { Self.text($0.rdata) } == [
                "2001:db8::30"
            ])
        let nodata = try r.ask("par1.nodes.example.test.", .aaaa, client: Self.paris)
        #expect(nodata.rcode == .noError && nodata.answers.isEmpty && nodata.authority.first?.type == .soa)
        #expect(
            try r.ask("tyo1.nodes.example.test.", .a, client: Self.paris).rcode == .nxDomain, "not a node of the pool")
        // The targets' parent and the discovery name's exist (empty non-terminals): NODATA, not an
        // NXDOMAIN that would deny every name below them (RFC 8020).
        for name in ["nodes.example.test.", "_udp.example.test."] {
            let ent = try r.ask(name, .a, client: Self.paris)
            #expect(ent.rcode == .noError && ent.answers.isEmpty && ent.authority.first?.type == .soa, "\(name)")
        }
        // The same bytes for every client: in the fast path's image, unlike geo names.
        let image = AnswerImage.build(responder: r, maxSections: 4096)
        func key(_ name: String, _ type: RRType) throws -> String { "\(try DNSName(name).wire) \(type.rawValue)" }
        let keys = Set(image.names.flatMap { n in n.answers.map { "\(n.name) \($0.qtype)" } })
        #expect(
            try keys.contains(key("fra1.nodes.example.test.", .a))
                && keys.contains(key("fra1.nodes.example.test.", .aaaa)))
        #expect(
            try !keys.contains(key("_join._udp.example.test.", .srv))
                && !keys.contains(key("_join._udp.example.test.", .a)))
    }

    @Test func aDiscoveryNameIsCheckedWithItsLine() {
        func problems(_ name: String, zone: String = GeoResponderTests.zoneText) -> Set<String> {
            let text = Self.configText.replacingOccurrences(
                of:
                    "    - { name: _join._udp.example.test, type: SRV, pool: web, answers: 2, ttl: 30, port: 7946, targets: nodes.example.test }",
                with: "    " + name)
            do {
                let c = try NearcastConfig.parse(yaml: text, fileName: "c.yaml", baseDirectory: "")
                let z = try Zone.build(
                    origin: Self.origin,
                    records: try ZoneFileParser.parse(text: zone, fileName: "z.zone", origin: Self.origin),
                    sourceName: "z.zone")
                try c.geo.check(against: [z])
                return []
            } catch let e as DiagnosticsError { return Set(e.diagnostics.map(\.description)) } catch {
                return ["\(error)"]
            }
        }
        #expect(
            problems("- { name: _join._udp.example.test, type: SRV, pool: web, targets: nodes.example.test }").contains
            {
                $0.hasPrefix("c.yaml:10: geo name _join._udp.example.test. SRV: port must be")
            })
        #expect(
            problems("- { name: _join._udp.example.test, type: SRV, pool: web, port: 1 }").contains {
                $0.hasPrefix("c.yaml:10: geo name _join._udp.example.test. SRV: targets must be")
            })
        #expect(
            problems("- { name: www2.example.test, type: A, pool: web, port: 1 }").contains(
                "c.yaml:10: geo name www2.example.test. A: port goes with type SRV (a discovery name)"))
        #expect(
            problems(
                "- { name: _join._udp.example.test, type: SRV, pool: web, port: 1, targets: nodes.example.test }",
                zone: GeoResponderTests.zoneText + "\nfra1.nodes A 192.0.2.99\n"
            ).contains(
                "c.yaml:10: geo name _join._udp.example.test. SRV: target fra1.nodes.example.test. has records in zone example.test.: the target names are the nodes' own"
            ))
        #expect(
            problems("- { name: _join._udp.example.test, type: SRV, pool: web, port: 1, targets: nodes.example.org }")
                .contains(
                    "c.yaml:10: geo name _join._udp.example.test. SRV: targets nodes.example.org. is not inside any zone served here"
                ))
    }
}
