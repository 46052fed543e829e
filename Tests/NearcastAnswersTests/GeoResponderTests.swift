import DNSWire
import Foundation
import MaxMindDB
import NearcastBasics
import NearcastDNSSEC
import NearcastTestSupport
import NearcastTransfer
import Testing

@testable import NearcastAnswers
@testable import NearcastConfiguration
@testable import NearcastGeo
@testable import NearcastZones

/// Geo names through the slow path: who gets which node, the ECS scope, negative answers at a geo
/// name, the reply cache, the answer image, the all-down policies, and the checks against zones.
@Suite(.timeLimit(.minutes(1))) struct GeoResponderTests {
    static let zoneText = """
        $ORIGIN example.test.
        $TTL 300
        @     SOA ns1 hostmaster 1 3600 600 1209600 60
        @     NS  ns1
        ns1   A   192.0.2.53
        geo   TXT "a geo name may share its owner with other types"
        www   A   192.0.2.1
        """
    static let configText = """
        listen: ["127.0.0.1:53"]
        geo:
          database: DB
          nodes:
            - { id: fra1, ipv4: 192.0.2.10, ipv6: "2001:db8::10", latitude: 50.11, longitude: 8.68, country: DE }
            - { id: par1, ipv4: 192.0.2.20, ipv6: "2001:db8::20", latitude: 48.86, longitude: 2.35, country: FR }
            - { id: nyc1, ipv4: 192.0.2.30, ipv6: "2001:db8::30", latitude: 40.71, longitude: -74.01, country: US, weight: 3 }
          pools: [{ id: web, members: [fra1, par1, nyc1] }]
          names:
            - { name: geo.example.test, type: A, pool: web, answers: 2, ttl: 20 }
            - { name: geo.example.test, type: AAAA, pool: web, all-down: nodata }
        """
    static var databasePath: String { Repository.testCityDatabase }
    static let origin = try! DNSName("example.test.")
    static let zone = try! Zone.build(
        origin: origin, records: try! ZoneFileParser.parse(text: zoneText, fileName: "z.zone", origin: origin),
        sourceName: "z.zone")
    static let config = try! NearcastConfig.parse(
        yaml: configText.replacingOccurrences(of: "DB", with: databasePath), fileName: "c.yaml", baseDirectory: "")
    static let table = try! GeoTable.build(config.geo, database: try! MaxMindDatabase(path: databasePath))

    func responder(unhealthy: Set<String> = []) -> Responder {
        var t = Self.table
        t.unhealthy = unhealthy
        return Responder(authority: Authority(zones: [Self.zone]), geo: t)
    }

    /// The geo name's question (or `name`'s) asked of `r` from `client`, with a client subnet
    /// option when `ecs` (as text: "198.51.100.0/24") is given.
    func ask(
        _ r: Responder, _ type: RRType = .a, ecs: String? = nil, client: [UInt8] = [127, 0, 0, 1],
        name: String = "geo.example.test."
    )
        -> DNSMessage
    {
        var edns: EDNS?
        if let ecs {
            let parts = ecs.split(separator: "/")
            let v6 = parts[0].contains(":")
            var a = [UInt8](repeating: 0, count: v6 ? 16 : 4)
            _ = a.withUnsafeMutableBytes { inet_pton(v6 ? AF_INET6 : AF_INET, String(parts[0]), $0.baseAddress) }
            let source = UInt8(parts[1])!
            edns = EDNS(options: [
                ClientSubnet(
                    family: v6 ? 2 : 1, sourcePrefixLength: source, scopePrefixLength: 0,
                    address: Array(a.prefix((Int(source) + 7) / 8))
                ).option
            ])
        }
        return try! r.ask(name, type, edns: edns, client: client)
    }

    /// IPv6 addresses the database aliases to its IPv4 space are located as the IPv4 address inside
    /// them is (198.51.100.0/24, Paris), by ECS and by the packet's source; the scope is the alias's
    /// bits plus the IPv4 prefix's, so it stays inside the alias.
    @Test func aliasedIPv6ClientsAreLocatedByTheirIPv4Part() {
        let r = responder()
        let paris = ["192.0.2.20", "192.0.2.10"]
        for (ecs, scopeBits) in [
            ("2002:c633:6400::/40", 40), ("2002:c633:6407::/48", 40), ("::ffff:198.51.100.0/120", 120),
            ("2001:0:c633:6400::/56", 56), ("::198.51.100.7/128", 120),
        ] {
            let m = ask(r, ecs: ecs)
            #expect(addresses(m) == paris && scope(m) == UInt8(scopeBits), "\(ecs): \(addresses(m)) /\(scope(m) ?? 0)")
        }
        for source in ["2002:c633:6407::1", "::ffff:198.51.100.7", "2001:0:c633:6407::9"] {
            var a = [UInt8](repeating: 0, count: 16)
            _ = a.withUnsafeMutableBytes { inet_pton(AF_INET6, source, $0.baseAddress) }
            #expect(addresses(ask(r, client: a)) == paris, "\(source)")
        }
        // Past the alias's IPv4 bits, a shorter source prefix is a zero IPv4 part: uncovered.
        #expect(addresses(ask(r, ecs: "2002::/16")) == ["192.0.2.30", "192.0.2.10"])
    }

    func addresses(_ m: DNSMessage) -> [String] {
        m.answers.map { rr -> String in
            switch rr.rdata {
            case .a(let a): return a.description
            case .aaaa(let a): return a.description
            default: return "\(rr.rdata)"
            }
        }
    }

    func scope(_ m: DNSMessage) -> UInt8? {
        m.edns?.clientSubnetOption.flatMap { o in o.data.count >= 4 ? o.data[3] : nil }
    }

    @Test func clientsGetTheirNearestNodesWithTheMergedPrefixAsScope() {
        let r = responder()
        let paris = ask(r, ecs: "198.51.100.0/24")
        #expect(paris.header.aa && paris.rcode == .noError)
        #expect(addresses(paris) == ["192.0.2.20", "192.0.2.10"] && paris.answers.allSatisfy { $0.ttl == 20 })
        #expect(scope(paris) == 24)
        // New York and Los Angeles share a class (nyc, par, fra): their /25s merge, scope 24.
        let ny = ask(r, ecs: "203.0.113.0/25")
        #expect(addresses(ny) == ["192.0.2.30", "192.0.2.20"] && scope(ny) == 24)
        // Not in the database: the fallback order (nyc weighs 3); the scope is the uncovered block
        // that holds it (the database has nothing in 0.0.0.0/1), and a gap next to a network is
        // answered with the gap alone.
        let unknown = ask(r, ecs: "8.8.8.0/24")
        #expect(addresses(unknown) == ["192.0.2.30", "192.0.2.10"] && scope(unknown) == 1)
        #expect(scope(ask(r, ecs: "192.0.3.0/24")) == 24 && scope(ask(r, ecs: "198.51.101.0/24")) == 24)
        // Without ECS, the query's source; with a source prefix of 0, too, and scope 0.
        #expect(addresses(ask(r, client: [192, 0, 2, 200])) == ["192.0.2.10", "192.0.2.20"], "Berlin")
        let zero = ask(r, ecs: "0.0.0.0/0", client: [198, 51, 100, 9])
        #expect(addresses(zero) == ["192.0.2.20", "192.0.2.10"] && scope(zero) == 0)
        // AAAA from an IPv6 subnet: one answer.
        let tokyo = ask(r, .aaaa, ecs: "2001:db8:4::/48")
        #expect(addresses(tokyo) == ["2001:db8::10"] && scope(tokyo) == 48)
    }

    @Test func otherTypesAtAGeoNameAreTheZonesAndNeverNXDOMAIN() {
        let r = responder()
        let txt = ask(r, .txt)
        #expect(txt.rcode == .noError && txt.answers.count == 1, "the zone's TXT")
        let mx = ask(r, .mx)
        #expect(mx.rcode == .noError && mx.answers.isEmpty && mx.authority.first?.type == .soa, "NODATA")
        let any = ask(r, .any)
        #expect(any.answers.first?.type == .a, "ANY: one RRset (RFC 8482), the geo A")
        #expect(ask(r, name: "nothere.example.test.").rcode == .nxDomain)
    }

    @Test func theAllDownPolicyDecidesWhenEveryCandidateIsDown() {
        let r = responder(unhealthy: ["fra1", "par1", "nyc1"])
        #expect(
            addresses(ask(r, ecs: "198.51.100.0/24")) == ["192.0.2.20", "192.0.2.10"], "fail-open: the top ones anyway")
        let v6 = ask(r, .aaaa, ecs: "2001:db8:4::/48")
        #expect(v6.rcode == .noError && v6.answers.isEmpty && v6.authority.first?.type == .soa, "nodata")
        // One down: one of the next healthy candidates takes its place (spill-over, below), then the
        // rest in rank order.
        #expect(addresses(ask(responder(unhealthy: ["par1"]), ecs: "198.51.100.0/24")) == ["192.0.2.10", "192.0.2.30"])
    }

    /// Answers follow the health board a table is built with: a node the board does not hold (not
    /// yet followed by a monitor) is in its configured cold start, and once the board holds it,
    /// its word goes, in every compile built with that board.
    @Test func answersFollowTheBoardAndTheColdStartForNodesItDoesNotHold() throws {
        let cold = Self.configText.replacingOccurrences(of: "country: FR }", with: "country: FR, initial: down }")
        let config = try NearcastConfig.parse(
            yaml: cold.replacingOccurrences(of: "DB", with: Self.databasePath), fileName: "c.yaml", baseDirectory: "")
        let board = HealthBoard()
        let tables = try (0..<2).map { _ in
            try GeoTable.build(config.geo, database: MaxMindDatabase(path: Self.databasePath), board: board)
        }
        let r = tables.map { Responder(authority: Authority(zones: [Self.zone]), geo: $0) }
        let paris = "198.51.100.0/24"  // par1, fra1, nyc1 in rank order
        #expect(addresses(ask(r[0], ecs: paris)) == ["192.0.2.10", "192.0.2.30"], "par1 starts down")
        board.set("par1", .up)
        #expect(r.allSatisfy { addresses(ask($0, ecs: paris)) == ["192.0.2.20", "192.0.2.10"] }, "both compiles")
        board.set("fra1", .drained)
        #expect(addresses(ask(r[1], ecs: paris)) == ["192.0.2.20", "192.0.2.30"])
    }

    @Test func aDownNodesClientsSpreadOverTheNextCandidatesByWeight() {
        let weights: [String: UInt32] = ["b": 100, "c": 300, "d": 100, "e": 1000]
        func order(_ down: Set<String>, _ seed: UInt32) -> [String] {
            GeoTable.spillOrder(
                ["a", "b", "c", "d", "e"], isUp: { !down.contains($0) }, weight: { weights[$0]! }, seed: seed)
        }
        #expect(order([], 7) == ["a", "b", "c", "d", "e"], "the top one up: rank order")
        #expect(order(["c"], 7) == ["a", "b", "d", "e"])
        // a down: b, c and d (the next three) take its clients 1:3:1 by weight; e, beyond, none.
        var firsts: [String: Int] = [:]
        for seed in 0..<5000 { firsts[order(["a"], UInt32(seed) &* 2_654_435_761)[0], default: 0] += 1 }
        #expect(firsts["e"] == nil)
        #expect(
            abs(Double(firsts["c"]!) / 5000 - 0.6) < 0.05 && abs(Double(firsts["b"]!) / 5000 - 0.2) < 0.05, "\(firsts)")
        // The rest follow in rank order; the same seed always gives the same answer.
        let o = order(["a"], 12345)
        #expect(Set(o) == ["b", "c", "d", "e"] && o == order(["a"], 12345))
        #expect(Array(o.dropFirst()) == ["b", "c", "d", "e"].filter { $0 != o[0] })
        #expect(order(["a", "b", "c", "d", "e"], 1).isEmpty)
    }

    @Test func geoAnswersAreNeverCachedNorImaged() {
        let r = responder()
        var cache = ReplyCache()
        let q = try! DNSMessage(questions: [DNSQuestion(name: try! DNSName("geo.example.test."), type: .a)]).serialize()
        let berlin = try! DNSMessage(
            wire: cache.reply(to: q, transport: .udp, responder: r, client: [192, 0, 2, 200])!)
        let newYork = try! DNSMessage(
            wire: cache.reply(to: q, transport: .udp, responder: r, client: [203, 0, 113, 5])!)
        #expect(addresses(berlin) != addresses(newYork))
        #expect(cache.count == 0)
        let image = AnswerImage.build(responder: r, maxSections: 1024)
        let geo = try! DNSName("geo.example.test.").wire
        let record = image.names.first { $0.name == geo }
        #expect(record?.answers.map(\.qtype) == [RRType.txt.rawValue], "the static TXT stays")
        #expect(record?.geoTypes.isEmpty == false, "the fast path adds the geo answers")
    }

    @Test func geoNamesAreCheckedAgainstTheZones() throws {
        var geo = Self.config.geo
        geo.names[0].name = try DNSName("www.example.test.")
        geo.names[1].name = try DNSName("geo.elsewhere.test.")
        do {
            try geo.check(against: [Self.zone])
            Issue.record("conflicts must be refused")
        } catch {
            let d = error.diagnostics.map(\.description)
            #expect(
                d.contains {
                    $0.hasSuffix(
                        "geo name www.example.test. A: zone example.test. has A records there too: keep one or the other"
                    )
                }, "\(d)")
            #expect(
                d.contains { $0.hasSuffix("geo name geo.elsewhere.test. AAAA: not inside any zone served here") },
                "\(d)")
        }
    }

    /// A zone transfer carries each geo name's answer for a client that cannot be located (the
    /// same as a client the database does not know gets), beside the zone's own records at it.
    @Test func aTransferCarriesTheGeoNamesAnswerForNoClientInParticular() throws {
        var r = responder()
        r.transfers = ZoneTransfers(rules: [Self.origin: [TransferRule(prefix: AddressPrefix("127.0.0.1"), key: nil)]])
        let query = try DNSMessage(questions: [DNSQuestion(name: Self.origin, type: .axfr)]).serialize()
        guard case .messages(var messages) = try #require(r.transfer(query, client: [127, 0, 0, 1])) else {
            Issue.record("the transfer was refused")
            return
        }
        var records: [ResourceRecord] = []
        while let m = messages.next() { records += try DNSMessage(wire: m).answers }
        let geo = try DNSName("geo.example.test.")
        for type in [RRType.a, .aaaa] {
            let unlocated = ask(r, type, client: [0, 0, 0, 0]).answers
            #expect(!unlocated.isEmpty)
            #expect(records.filter { $0.name == geo && $0.type == type } == unlocated, "\(type)")
        }
        #expect(records.contains { $0.name == geo && $0.type == .txt })
    }

    /// In a zone signed here, a geo answer asked with DO carries the signature of its node set,
    /// made once per distinct set (a variant) and kept: the variants are signed ahead from the
    /// compile, two clients with the same nodes in another order get the same signature, a set
    /// that health makes is signed when first asked for, and other keys sign anew.
    @Test func aGeoAnswerInASignedZoneCarriesItsVariantsSignature() throws {
        let now = UInt32(Date().timeIntervalSince1970)
        let key = DNSSECKey.generate(zone: Self.origin)
        let signer = ZoneSigner(
            keys: [key], inception: now - 3600, expiration: now + 86400, online: Self.table.onlineTypes)
        let signed = try signer.signWhole(Self.zone)
        let online = OnlineSignatures()
        func use(_ s: ZoneSigner) {
            online.use([
                Self.origin: OnlineSignatures.Signer(
                    keyTags: s.keys.map(\.keyTag), renewBefore: 3600,
                    sign: { try s.signatures($0, origin: Self.origin) })
            ])
        }
        use(signer)
        let variants = Self.table.answerVariants()
        let ahead = online.sign(variants, now: now)
        #expect(ahead.variants >= 4 && ahead.signed == ahead.variants && online.count == ahead.variants, "\(ahead)")
        #expect(online.sign(variants, now: now).signed == 0, "kept")

        func responder(unhealthy: Set<String> = []) -> Responder {
            var t = Self.table
            t.unhealthy = unhealthy
            var r = Responder(authority: Authority(zones: [signed]), geo: t)
            r.onlineSignatures = online
            return r
        }
        func askDO(_ r: Responder, client: [UInt8]) -> DNSMessage {
            try! r.ask("geo.example.test.", .a, edns: EDNS(dnssecOK: true), client: client)
        }
        func signature(_ m: DNSMessage) -> RData? { m.answers.first { $0.type == .rrsig }?.rdata }
        let r = responder()
        func addresses(_ m: DNSMessage) -> [String] { self.addresses(m).filter { $0.hasPrefix("192.") } }
        let paris = askDO(r, client: [198, 51, 100, 9])
        #expect(addresses(paris) == ["192.0.2.20", "192.0.2.10"])
        let sig = try #require(signature(paris).flatMap(Signature.init))
        #expect(sig.typeCovered == .a && sig.originalTTL == 20 && sig.keyTag == key.keyTag)
        #expect(paris.answers.last?.type == .rrsig && paris.answers.allSatisfy { $0.ttl == 20 })
        // Berlin: the same nodes, the other way round; the same signature.
        let berlin = askDO(r, client: [192, 0, 2, 200])
        #expect(addresses(berlin) == ["192.0.2.10", "192.0.2.20"] && signature(berlin) == signature(paris))
        #expect(online.count == ahead.variants, "nothing signed on the way")
        // Without DO, no signature.
        #expect(ask(r, client: [198, 51, 100, 9]).answers.allSatisfy { $0.type == .a })
        // par1 and nyc1 down: Paris gets a set the compile's health did not give, signed as asked.
        let down = askDO(responder(unhealthy: ["par1", "nyc1"]), client: [198, 51, 100, 9])
        #expect(addresses(down) == ["192.0.2.10"] && signature(down) != nil)
        #expect(online.count == ahead.variants + 1)
        // Every node down, and the AAAA name's policy NODATA: the proof is the name's NSEC
        // without AAAA (the chain lists it, as the name answers it while a node is up), signed
        // as the answers are, after the SOA and its signature.
        let allDown = try responder(unhealthy: ["fra1", "par1", "nyc1"]).ask(
            "geo.example.test.", .aaaa, edns: EDNS(dnssecOK: true), client: [198, 51, 100, 9])
        #expect(allDown.rcode == .noError && allDown.answers.isEmpty)
        #expect(allDown.authority.map(\.type) == [.soa, .rrsig, .nsec, .rrsig], "\(allDown.authority)")
        let nsec = try #require(allDown.authority.first { $0.type == .nsec })
        let staticNSEC = try #require(signed.rrset(try DNSName("geo.example.test."), .nsec))
        guard case .unknown(let made) = nsec.rdata, case .unknown(let kept)? = staticNSEC.rdatas.first else {
            Issue.record("NSEC rdata")
            return
        }
        let (_, used) = try #require(DNSName.uncompressed(kept))
        #expect(Array(made[..<used]) == Array(kept[..<used]), "the same next name")
        #expect(
            made[used...] != kept[used...]
                && NSECBitmap.removing(.aaaa, from: Array(kept[used...])) == Array(made[used...]))
        let nsecSig = try #require(allDown.authority.last.flatMap { Signature($0.rdata) })
        #expect(nsecSig.typeCovered == .nsec && nsecSig.keyTag == key.keyTag)
        // Without DO, the SOA alone, as before.
        let plain = try responder(unhealthy: ["fra1", "par1", "nyc1"]).ask(
            "geo.example.test.", .aaaa, client: [198, 51, 100, 9])
        #expect(plain.authority.map(\.type) == [.soa])
        // Other keys: signed anew by them.
        let other = DNSSECKey.generate(zone: Self.origin)
        use(ZoneSigner(keys: [other], inception: now - 3600, expiration: now + 86400))
        #expect(signature(askDO(r, client: [198, 51, 100, 9])).flatMap(Signature.init)?.keyTag == other.keyTag)
    }
}
