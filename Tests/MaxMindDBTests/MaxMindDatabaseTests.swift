import Foundation
import NearcastTestSupport
import Testing

@testable import MaxMindDB

/// The reader on the test City database that MaxMind's own writer makes from
/// tools/geo/test-city.json (`make test` builds it: tools/make-test-mmdb.pl).
@Suite(.timeLimit(.minutes(1))) struct MaxMindDatabaseTests {
    static let root = Repository.root
    static var databasePath: String { Repository.testCityDatabase }

    /// The fixture as the tests expect to read it back: network text -> location.
    static let fixture: [(network: String, location: GeoLocation)] = {
        let data = try! Data(contentsOf: root.appendingPathComponent("tools/geo/test-city.json"))
        let json = try! JSONSerialization.jsonObject(with: data) as! [String: Any]
        let cities = json["cities"] as! [String: [String: Any]]
        return (json["networks"] as! [[String: Any]]).map { n in
            if let city = n["city"] as? String, let c = cities[city] {
                return (
                    n["network"] as! String,
                    GeoLocation(
                        latitude: c["latitude"] as? Double, longitude: c["longitude"] as? Double,
                        country: c["country"] as? String,
                        continent: c["continent"] as? String, subdivision: c["subdivision"] as? String)
                )
            }
            return (
                n["network"] as! String,
                GeoLocation(country: n["country"] as? String, continent: n["continent"] as? String)
            )
        }
    }()

    @Test func theMetadataIsRead() throws {
        let db = try MaxMindDatabase(path: Self.databasePath)
        #expect(db.databaseType == "nearcast-Test-City")
        #expect(db.ipVersion == 6)
        #expect(db.nodeCount > 0 && db.buildEpoch > 0)
    }

    @Test func lookupsGiveTheLocationAndTheNetwork() throws {
        let db = try MaxMindDatabase(path: Self.databasePath)
        let berlin = try #require(try db.lookup("192.0.2.200"))
        #expect(berlin.network.description == "192.0.2.192/26")
        #expect(
            berlin.location
                == GeoLocation(latitude: 52.52, longitude: 13.405, country: "DE", continent: "EU", subdivision: "BE"))
        let tokyo = try #require(try db.lookup("2001:db8:4::53"))
        #expect(tokyo.network.description == "2001:db8:4::/48")
        #expect(tokyo.location.country == "JP" && tokyo.location.subdivision == "13")
        // A record with a country and no coordinates: an unknown place for the policy.
        let countryOnly = try #require(try db.lookup("198.18.4.9"))
        #expect(!countryOnly.location.hasCoordinates && countryOnly.location.country == "FR")
        // IPv4-mapped IPv6 finds the IPv4 record (MaxMind's alias of the IPv4 space).
        #expect(try db.lookup("::ffff:198.51.100.7")?.location.country == "FR")
        #expect(try db.lookup("8.8.8.8") == nil, "no record: nil")
        #expect(throws: MaxMindError.self) { try db.lookup("not an address") }
    }

    /// The whole walk: networks, uncovered blocks and aliases cover each space exactly once, in
    /// address order; the aliases are MaxMind's four; every uncovered block's addresses are not
    /// found by a lookup.
    @Test func theWalkCoversTheAddressSpaceOnce() throws {
        let db = try MaxMindDatabase(path: Self.databasePath)
        var entries: [MaxMindDatabase.TreeEntry] = []
        try db.walk { entries.append($0) }
        func network(_ e: MaxMindDatabase.TreeEntry) -> IPNetwork {
            switch e {
            case .located(let n, _), .uncovered(let n), .ipv4Alias(let n): n
            }
        }
        func start(_ n: IPNetwork) -> UInt128 {
            n.address.reduce(UInt128(0)) { $0 << 8 | UInt128($1) } << (128 - 8 * n.address.count)
        }
        for v4 in [true, false] {
            // IPv6: the IPv4 space stands under ::/96, reported as an alias; the other aliases are
            // prefixes of the IPv6 space like any block.
            let blocks = entries.map(network).filter { $0.isIPv4 == v4 }
            let bits = v4 ? 32 : 128
            var next: UInt128 = 0
            var covered: UInt128 = 0
            for n in blocks.sorted(by: { start($0) < start($1) }) {
                #expect(start(n) >= next, "\(n) overlaps the block before it")
                let size = UInt128(1) << (bits - n.prefixLength)
                next = start(n) &+ (v4 ? size << 96 : size)
                covered = covered &+ size
            }
            // 2^32 addresses; 2^128 wraps to 0 (and the blocks are disjoint, so it is no accident).
            #expect(blocks.count > 10)
            #expect(covered == (v4 ? UInt128(1) << 32 : 0), "the \(v4 ? "IPv4" : "IPv6") space is covered once")
        }
        let aliases = entries.compactMap { if case .ipv4Alias(let n) = $0 { n.description } else { nil } }
        #expect(aliases.sorted() == ["2001::/32", "2002::/16", "::/96", "::ffff:0:0/96"])
        for case .uncovered(let n) in entries where n.isIPv4 {
            #expect(try db.lookup(n.address.map(String.init).joined(separator: ".")) == nil, "\(n)")
        }
    }

    @Test func theWalkGivesEveryNetworkOnceInAddressOrder() throws {
        let db = try MaxMindDatabase(path: Self.databasePath)
        var seen: [(IPNetwork, GeoLocation)] = []
        try db.networks { seen.append(($0, $1)) }
        // Address order: IPv4 first (it sits under ::/96), then by address bytes.
        let expected = Self.fixture.sorted { a, b in
            let x = Self.bytes(a.network)
            let y = Self.bytes(b.network)
            return x.count != y.count ? x.count < y.count : x.lexicographicallyPrecedes(y)
        }
        #expect(
            seen.map(\.0.description) == expected.map { Self.canonical($0.network) }, "\(seen.map(\.0.description))")
        for ((network, location), expected) in zip(seen, expected) {
            #expect(location == expected.location, "\(network)")
        }
        #expect(
            seen.filter { $0.0.isIPv4 }.count == 11,
            "IPv4 networks come as IPv4, once (no ::ffff:0:0/96 or 2002::/16 alias)")
    }

    @Test func ipv6NetworksAreWrittenAsRFC5952Says() {
        func net(_ groups: [UInt16], _ len: Int) -> String {
            IPNetwork(address: groups.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }, prefixLength: len).description
        }
        #expect(net([0x2001, 0xdb8, 4, 0, 0, 0, 0, 0], 48) == "2001:db8:4::/48")
        #expect(net([0, 0, 0, 0, 0, 0, 0, 0], 0) == "::/0")
        #expect(net([0x2001, 0xdb8, 0, 1, 0, 0, 0, 1], 128) == "2001:db8:0:1::1/128", "the longer run of zeros")
        #expect(net([0x2001, 0, 0, 1, 0, 0, 1, 1], 64) == "2001::1:0:0:1:1/64", "the first of two equal runs")
        #expect(net([0x2001, 0xdb8, 1, 2, 3, 4, 0, 5], 64) == "2001:db8:1:2:3:4:0:5/64", "a single zero group stays")
    }

    @Test func aMissingOrBadFileIsNamed() throws {
        do {
            _ = try MaxMindDatabase(path: "/nonexistent/city.mmdb")
            Issue.record("a missing file must fail")
        } catch {
            #expect(error.description.hasPrefix("/nonexistent/city.mmdb: cannot open the file"))
        }
        let junk = try TemporaryDirectory.url("nearcast-junk").appendingPathComponent("junk.mmdb")
        try Data(repeating: 7, count: 4096).write(to: junk)
        #expect(throws: MaxMindError.self) { try MaxMindDatabase(path: junk.path) }
    }

    /// The address bytes of a network's text.
    static func bytes(_ text: String) -> [UInt8] {
        let address = String(text.split(separator: "/")[0])
        let v6 = address.contains(":")
        var bytes = [UInt8](repeating: 0, count: v6 ? 16 : 4)
        _ = bytes.withUnsafeMutableBytes { inet_pton(v6 ? AF_INET6 : AF_INET, address, $0.baseAddress) }
        return bytes
    }

    /// The fixture's network text as IPNetwork describes it (IPv6 groups written out).
    static func canonical(_ text: String) -> String {
        IPNetwork(address: bytes(text), prefixLength: Int(text.split(separator: "/")[1])!).description
    }
}
