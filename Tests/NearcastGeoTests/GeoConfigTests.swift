import DNSWire
import Testing

@testable import NearcastConfiguration
@testable import NearcastGeo

/// The `geo:` section: what a good one gives, and every mistake reported with its line.
@Suite(.timeLimit(.minutes(1))) struct GeoConfigTests {
    static let good = """
        listen: ["127.0.0.1:53"]
        state-dir: state
        geo:
          database: GeoLite2-City.mmdb
          nodes:
            - { id: fra1, ipv4: 192.0.2.10, ipv6: "2001:db8::10", latitude: 50.11, longitude: 8.68, country: DE, region: HE, weight: 2 }
            - { id: par1, ipv4: 192.0.2.20, latitude: 48.86, longitude: 2.35, country: FR, bias: -20 }
            - id: nyc1
              ipv4: 192.0.2.30
              ipv6: "2001:db8::30"
              latitude: 40.71
              longitude: -74.01
          pools:
            - { id: web, members: [fra1, par1, nyc1] }
            - { id: v6, members: [fra1, nyc1], min-ttl: 2, max-ttl: 120, settle: 10 }
          names:
            - { name: www.example.net, type: A, pool: web, answers: 2, ttl: 20, strategy: stepped, fallback: [par1] }
            - { name: www.example.net., type: AAAA, pool: v6, all-down: servfail, max-distance: 3000, same-country-bonus: 0.05 }
        """

    @Test func theObserversShareIsRead() throws {
        let c = try NearcastConfig.parse(
            yaml: Self.good
                + "\n  observers: { down-when: 60% }\nstore:\n  etcd: { endpoints: [\"http://127.0.0.1:2379\"] }\n  server: ns-1.a\n",
            fileName: "c.yaml", baseDirectory: "")
        #expect(c.geo.observers.downWhen == 0.6 && c.store.serverName == "ns-1.a")
        #expect(
            try NearcastConfig.parse(yaml: Self.good, fileName: "c.yaml", baseDirectory: "").geo.observers.downWhen
                == nil)
    }

    @Test func aGoodGeoSectionIsRead() throws {
        let cfg = try NearcastConfig.parse(yaml: Self.good, fileName: "c.yaml", baseDirectory: "/etc/nearcast")
        let geo = cfg.geo
        #expect(geo.databasePath == "/etc/nearcast/GeoLite2-City.mmdb")
        #expect(cfg.stateDirectory == "/etc/nearcast/state", "relative to the config file, as other paths")
        #expect(geo.nodes.map(\.id) == ["fra1", "par1", "nyc1"])
        #expect(geo.nodes[0].ipv4 == [192, 0, 2, 10] && geo.nodes[0].ipv6?.first == 0x20 && geo.nodes[0].weight == 2)
        #expect(
            geo.nodes[0].geoNode
                == GeoNode(id: "fra1", latitude: 50.11, longitude: 8.68, country: "DE", region: "HE", weight: 2))
        #expect(geo.nodes[1].bias == -20 && geo.nodes[2].country == nil)
        #expect(geo.pools.map(\.members) == [["fra1", "par1", "nyc1"], ["fra1", "nyc1"]])
        // TTL follows health: 5 s while unsettled, the names' own when settled, unless configured.
        #expect(geo.pools[0].minTTL == 5 && geo.pools[0].maxTTL == nil && geo.pools[0].settle == 30)
        #expect(geo.pools[0].ttlCap(settled: false) == 5 && geo.pools[0].ttlCap(settled: true) == .max)
        #expect(geo.pools[1].minTTL == 2 && geo.pools[1].maxTTL == 120 && geo.pools[1].settle == 10)
        let a = geo.names[0]
        let aaaa = geo.names[1]
        #expect(a.name == (try DNSName("www.example.net.")) && a.type == .a && a.answers == 2 && a.ttl == 20)
        #expect(a.policy.strategy == .stepped && a.fallback == ["par1"] && a.allDown == .failOpen)
        #expect(aaaa.type == .aaaa && aaaa.answers == 1 && aaaa.ttl == 30 && aaaa.allDown == .servfail)
        #expect(
            aaaa.policy.maxDistanceKm == 3000 && aaaa.policy.sameCountryBonus == 0.05 && aaaa.policy.strategy == .linear
        )
    }

    /// What a reload compares: the same section written elsewhere in the file is equivalent; a
    /// change of checks or of pools' TTL settings alone needs no compile; a node's place, weight
    /// or address does.
    @Test func aReloadTellsACompileFromAChangeOfChecks() throws {
        func geo(_ yaml: String) throws -> GeoConfig {
            try NearcastConfig.parse(yaml: yaml, fileName: "c.yaml", baseDirectory: "/etc").geo
        }
        let base = try geo(Self.good)
        let moved = try geo("# a comment moves every line\n" + Self.good)
        #expect(base.isEquivalent(to: moved) && base.compilesLike(moved))
        let checked = try geo(
            Self.good.replacingOccurrences(of: "bias: -20 }", with: "bias: -20, checks: [{ type: tcp, port: 443 }] }"))
        #expect(!base.isEquivalent(to: checked) && base.compilesLike(checked), "checks alone: the same compile")
        let ttls = try geo(
            Self.good.replacingOccurrences(
                of: "min-ttl: 2, max-ttl: 120, settle: 10", with: "min-ttl: 3, max-ttl: 60, settle: 5"))
        #expect(!base.isEquivalent(to: ttls) && base.compilesLike(ttls), "pools' TTL settings alone: the same compile")
        for change in [
            ("latitude: 48.86", "latitude: 48.9"), ("weight: 2 }", "weight: 3 }"),
            ("ipv4: 192.0.2.20", "ipv4: 192.0.2.21"),
            ("members: [fra1, par1, nyc1] }", "members: [fra1, par1] }"), ("answers: 2", "answers: 3"),
        ] {
            let other = try geo(Self.good.replacingOccurrences(of: change.0, with: change.1))
            #expect(!base.compilesLike(other), "\(change.1) needs a compile")
        }
    }

    @Test func everyMistakeIsReportedWithItsLine() {
        let bad = """
            listen: ["127.0.0.1:53"]
            geo:
              nodes:
                - { id: fra1, ipv4: 192.0.2.300, latitude: 50.11, longitude: 8.68 }
                - { id: par1, ipv4: 192.0.2.20, latitude: 98, longitude: 2.35, country: fr }
                - { id: nyc1, latitude: 40.71, longitude: -74.01, colour: blue }
                - { id: tyo1, ipv6: "2001:db8::40", latitude: 35.68, longitude: 139.65, bias: 120 }
              pools:
                - { id: web, members: [] }
                - { id: api, members: [fra1], min-ttl: 60, max-ttl: 10, settle: -1 }
                - { id: img, members: [fra1], min-ttl: 1.5 }
              names:
                - { name: www.example.net, type: MX, pool: web }
                - { name: api.example.net, type: A, pool: web, answers: 9, strategy: nearest }
              colour: blue
              observers: { down-when: 150% }
            store:
              etcd: { endpoints: ["http://127.0.0.1:2379"] }
              server: "a/b"
            """
        do {
            _ = try NearcastConfig.parse(yaml: bad, fileName: "c.yaml", baseDirectory: "")
            Issue.record("a bad geo section must be refused")
        } catch {
            let d = Set(error.diagnostics.map(\.description))
            #expect(d.contains("c.yaml:4: node fra1: ipv4 '192.0.2.300' is not an IPv4 address"), "\(d)")
            #expect(d.contains("c.yaml:5: node par1: latitude must be a number from -90.0 to 90.0"), "\(d)")
            #expect(
                d.contains("c.yaml:5: node par1: country must be an ISO 3166-1 code of two capital letters (e.g. DE)"),
                "\(d)")
            #expect(d.contains { $0.hasPrefix("c.yaml:6: unknown key 'colour' in geo nodes") }, "\(d)")
            #expect(d.contains("c.yaml:6: node nyc1 needs an ipv4 or ipv6 address (what the geo names answer)"), "\(d)")
            #expect(d.contains("c.yaml:7: node tyo1: bias must be a whole number from -99 to 99"), "\(d)")
            #expect(d.contains("c.yaml:9: pool web needs members: a list of node ids"), "\(d)")
            #expect(d.contains("c.yaml:10: pool api: max-ttl (10) is below min-ttl (60)"), "\(d)")
            #expect(d.contains("c.yaml:10: pool api: settle must be a number from 0.0 to 86400.0"), "\(d)")
            #expect(
                d.contains("c.yaml:11: pool img: min-ttl must be a whole number of seconds from 0 to 86400"), "\(d)")
            #expect(
                d.contains("c.yaml:13: geo name www.example.net.: type must be A, AAAA or SRV (a discovery name)"),
                "\(d)")
            #expect(
                d.contains("c.yaml:14: geo name api.example.net.: answers must be a number of addresses from 1 to 8"),
                "\(d)")
            #expect(
                d.contains {
                    $0.hasPrefix("c.yaml:14: geo name api.example.net.: strategy must be one of linear, quadratic")
                }, "\(d)")
            #expect(d.contains { $0.hasPrefix("c.yaml:15: unknown geo key 'colour'") }, "\(d)")
            #expect(
                d.contains("c.yaml:16: geo observers down-when must be a share like 60% (more than 0%, at most 100%)"),
                "\(d)")
            #expect(d.contains { $0.hasPrefix("c.yaml:19: store server must be this server's name") }, "\(d)")
        }
    }

    @Test func crossReferencesAreChecked() {
        let text = """
            listen: ["127.0.0.1:53"]
            geo:
              nodes:
                - { id: fra1, ipv4: 192.0.2.10, latitude: 50.11, longitude: 8.68 }
                - { id: fra1, ipv4: 192.0.2.11, latitude: 50.11, longitude: 8.68 }
                - { id: par1, ipv6: "2001:db8::20", latitude: 48.86, longitude: 2.35 }
              pools:
                - { id: web, members: [fra1, par1, ghost] }
              names:
                - { name: www.example.net, type: A, pool: web, fallback: [nyc1] }
                - { name: www.example.net, type: A, pool: web }
                - { name: api.example.net, type: A, pool: nowhere }
            """
        do {
            _ = try NearcastConfig.parse(yaml: text, fileName: "c.yaml", baseDirectory: "")
            Issue.record("dangling references must be refused")
        } catch {
            let d = Set(error.diagnostics.map(\.description))
            #expect(d.contains("c.yaml:5: node fra1 is defined twice (first at c.yaml:4)"), "\(d)")
            #expect(d.contains("c.yaml:8: pool web: no node has the id 'ghost'"), "\(d)")
            #expect(
                d.contains("c.yaml:10: geo name www.example.net. A: node par1 of pool web has no ipv4 address"), "\(d)")
            #expect(
                d.contains("c.yaml:10: geo name www.example.net. A: fallback node 'nyc1' is not a member of pool web"),
                "\(d)")
            #expect(d.contains("c.yaml:11: geo name www.example.net. A is defined twice (first at c.yaml:10)"), "\(d)")
            #expect(d.contains("c.yaml:12: geo name api.example.net. A: no pool has the id 'nowhere'"), "\(d)")
            #expect(
                d.contains("c.yaml: geo names need a database: geo: database: PATH (a MaxMind City database)"), "\(d)")
        }
    }
}
