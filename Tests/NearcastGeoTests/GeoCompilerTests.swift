import Foundation
import MaxMindDB
import NearcastTestSupport
import Testing

@testable import NearcastGeo

/// The geo compiler on the test City database (tools/geo/test-city.json, written by MaxMind's
/// writer; `make test` builds it).
@Suite(.timeLimit(.minutes(1))) struct GeoCompilerTests {
    static let database = try! MaxMindDatabase(path: Repository.testCityDatabase)
    static let fra = GeoNode(id: "fra", latitude: 50.1109, longitude: 8.6821, country: "DE", region: "HE", weight: 2)
    static let par = GeoNode(id: "par", latitude: 48.8566, longitude: 2.3522, country: "FR", region: "IDF")
    static let nyc = GeoNode(id: "nyc", latitude: 40.7128, longitude: -74.006, country: "US", region: "NY")
    static let tyo = GeoNode(id: "tyo", latitude: 35.6762, longitude: 139.6503, country: "JP", region: "13")

    static func depth(_ d: Int) -> GeoPolicy {
        var p = GeoPolicy()
        p.depth = d
        return p
    }

    /// "web": fra and par, both kept; "api": nyc and tyo, the nearest only.
    static let pools = [
        GeoPool(id: "web", nodes: [fra, par]),
        GeoPool(id: "api", nodes: [nyc, tyo], policy: depth(1)),
    ]

    func bytes(_ text: String) -> [UInt8] {
        let v6 = text.contains(":")
        var b = [UInt8](repeating: 0, count: v6 ? 16 : 4)
        _ = b.withUnsafeMutableBytes { inet_pton(v6 ? AF_INET6 : AF_INET, text, $0.baseAddress) }
        return b
    }

    /// The candidate lists and the merged prefix (its scope) for a client address.
    func answer(_ image: GeoImage, _ address: String) -> (lists: [[String]], prefix: String?) {
        let (c, p) = image.lookup(bytes(address))
        let text = p.map { p -> String in
            let v4 = !address.contains(":")
            let shifted = p.address >> (v4 ? 96 : 0)
            let raw = (0..<(v4 ? 4 : 16)).reversed().map { UInt8(truncatingIfNeeded: shifted >> (8 * UInt128($0))) }
            return IPNetwork(address: raw, prefixLength: p.length).description
        }
        return (image.classes[c], text)
    }

    @Test func clientsGetTheirPoolsNearestNodesAndTheMergedPrefixAsScope() throws {
        let image = try GeoCompiler.compile(database: Self.database, pools: Self.pools)
        #expect(image.pools == ["web", "api"])
        // Frankfurt (/25 + /26) and Berlin (/26) are all nearest to fra, then par; nyc for api:
        // one class, so 192.0.2.0/24 whole.
        #expect(answer(image, "192.0.2.10") == ([["fra", "par"], ["nyc"]], "192.0.2.0/24"))
        #expect(answer(image, "192.0.2.200") == ([["fra", "par"], ["nyc"]], "192.0.2.0/24"))
        // Paris: par first. New York and Los Angeles: par is nearer than fra from both, nyc.
        #expect(answer(image, "198.51.100.1") == ([["par", "fra"], ["nyc"]], "198.51.100.0/24"))
        #expect(answer(image, "203.0.113.1") == ([["par", "fra"], ["nyc"]], "203.0.113.0/24"))
        // 198.18.0.0/24 Strasbourg (fra, nyc) and 198.18.1.0/24 Tokyo (fra, tyo) differ in api:
        // two classes, not merged.
        #expect(answer(image, "198.18.0.1") == ([["fra", "par"], ["nyc"]], "198.18.0.0/24"))
        #expect(answer(image, "198.18.1.1") == ([["fra", "par"], ["tyo"]], "198.18.1.0/24"))
        // São Paulo: par is nearer (9,402 km against 9,829), nyc for api.
        #expect(answer(image, "198.18.2.1") == ([["par", "fra"], ["nyc"]], "198.18.2.0/24"))
        // No coordinates: the unknown class, by weight (fra weighs 2) and, for api, then by id.
        #expect(answer(image, "198.18.4.1") == ([["fra", "par"], ["nyc"]], "198.18.4.0/24"))
        #expect(image.lookup(bytes("198.18.4.1")).locationClass == 0)
        // Not in the database at all: class 0, and the uncovered block that holds it as the prefix.
        #expect(answer(image, "8.8.8.8") == ([["fra", "par"], ["nyc"]], "0.0.0.0/1"))
        #expect(
            answer(image, "192.0.3.1") == ([["fra", "par"], ["nyc"]], "192.0.3.0/24"), "the gap beside 192.0.2.0/24")
        // IPv6 on its own table.
        #expect(answer(image, "2001:db8:4::1") == ([["fra", "par"], ["tyo"]], "2001:db8:4::/48"))
        // Paris (2001:db8:2::/48) and New York (2001:db8:3::/48) share a class: one /47.
        #expect(answer(image, "2001:db8:2::1") == ([["par", "fra"], ["nyc"]], "2001:db8:2::/47"))
        #expect(answer(image, "2001:db8:3::1") == ([["par", "fra"], ["nyc"]], "2001:db8:2::/47"))
    }

    /// Every network and every uncovered block of the test database, at its first and last
    /// address, and each IPv4 one also through every alias of the IPv4 space: the class is the one
    /// of what a lookup of that address in the database gives, and the prefix answered as the ECS
    /// scope covers no network of another answer, and for an uncovered address no network at all.
    @Test func everyAddressIsLocatedAsTheDatabaseLocatesItWithinItsScope() throws {
        let image = try GeoCompiler.compile(database: Self.database, pools: Self.pools)
        var located: [(IPNetwork, GeoLocation)] = []
        var uncovered: [IPNetwork] = []
        var aliases: [IPNetwork] = []
        try Self.database.walk { entry in
            switch entry {
            case .located(let n, let l): located.append((n, l))
            case .uncovered(let n): uncovered.append(n)
            case .ipv4Alias(let n): aliases.append(n)
            }
        }
        #expect(aliases.map(\.description).sorted() == ["2001::/32", "2002::/16", "::/96", "::ffff:0:0/96"])
        func lists(_ l: GeoLocation?) -> [[String]] {
            Self.pools.map { GeoCompiler.rank($0, l?.hasCoordinates == true ? l : nil) }
        }
        func block(_ a: UInt128, _ len: Int) -> ClassPrefix { ClassPrefix(address: a, length: len, locationClass: 0) }
        func overlap(_ a: ClassPrefix, _ b: ClassPrefix) -> Bool {
            GeoCompiler.contains(block(a.address, min(a.length, b.length)), b.address)
        }
        // First and last address of each block, then the IPv4 ones inside each alias.
        var addresses: [[UInt8]] = []
        for n in located.map(\.0) + uncovered {
            let first = GeoCompiler.leftAligned(n.address)
            let last = first | (n.prefixLength == 0 ? ~UInt128(0) : ~(~UInt128(0) << (128 - n.prefixLength)))
            for a in [first, last] {
                let bytes = (0..<16).map { UInt8(truncatingIfNeeded: a >> (120 - 8 * UInt128($0))) }
                addresses.append(Array(bytes.prefix(n.isIPv4 ? 4 : 16)))
            }
        }
        for alias in aliases {
            for v4 in addresses where v4.count == 4 {
                var a = alias.address
                a.replaceSubrange((alias.prefixLength / 8)..<(alias.prefixLength / 8 + 4), with: v4)
                addresses.append(a)
                if alias.prefixLength < 96 {
                    a.replaceSubrange(
                        (alias.prefixLength / 8 + 4)..<16, with: repeatElement(0xFF, count: 12 - alias.prefixLength / 8)
                    )
                    addresses.append(a)
                }
            }
        }
        #expect(addresses.count > 1000)
        for a in addresses {
            var text = [CChar](repeating: 0, count: 64)
            _ = a.withUnsafeBytes { inet_ntop(a.count == 4 ? AF_INET : AF_INET6, $0.baseAddress, &text, 64) }
            let address = String(cString: text)
            let truth = try Self.database.lookup(address)?.location
            let m = image.match(a)
            #expect(image.classes[m.locationClass] == lists(truth), "\(address)")
            let length = try #require(m.length, "\(address): every address of the database's tree has a prefix")
            // The scope in the table the address was looked up in: an aliased one in the IPv4 space.
            var key = a
            var scope = length
            if a.count == 16,
                let alias = aliases.first(where: {
                    GeoCompiler.contains(
                        block(GeoCompiler.leftAligned($0.address), $0.prefixLength), GeoCompiler.leftAligned(a))
                })
            {
                key = Array(a[(alias.prefixLength / 8)..<(alias.prefixLength / 8 + 4)])
                scope = length - alias.prefixLength
                #expect(scope >= 0, "\(address): the scope stays inside the alias")
            }
            let b = block(GeoCompiler.leftAligned(key), scope)
            for (n, l) in located where n.isIPv4 == (key.count == 4) {
                let np = block(GeoCompiler.leftAligned(n.address), n.prefixLength)
                guard overlap(b, np) else { continue }
                #expect(truth != nil, "\(address) is uncovered, its scope /\(length) reaches \(n)")
                #expect(lists(l) == lists(truth), "\(address): its scope /\(length) reaches \(n), answered otherwise")
            }
        }
    }

    @Test func theReportCountsWhatWentInAndCameOut() throws {
        let image = try GeoCompiler.compile(database: Self.database, pools: Self.pools)
        let r = image.report
        #expect(r.networks == 16 && r.ipv4Before == 11 && r.ipv6Before == 5)
        #expect(r.locations == 11, "nine cities and two records without coordinates")
        #expect(r.classes == image.classes.count)
        // 192.0.2.0/25+/26+/26 -> one /24; 203.0.113.0/25+/25 -> one /24 (par, nyc for both);
        // 2001:db8:2::/48 + 2001:db8:3::/48 -> one /47. The rest of the tries: uncovered blocks.
        #expect(r.ipv4After + r.ipv6After - r.uncoveredAfter == (11 - 3) + 4)
        #expect(r.uncovered > 0 && r.uncoveredAfter <= r.uncovered)
        #expect(r.aliases == 4, "::/96, ::ffff:0:0/96, 2001::/32 and 2002::/16, as MaxMind's writer aliases them")
    }

    @Test func mergingMakesTheFewestPrefixesThatCoverExactlyEachRun() {
        func p(_ a: UInt128, _ len: Int, _ c: Int) -> ClassPrefix {
            ClassPrefix(address: a << 96, length: len, locationClass: c)
        }
        // 10.0.0.0/25, 10.0.0.128/26, 10.0.0.192/26 (one class) -> 10.0.0.0/24; then 10.0.1.0/24
        // of another class stays; 10.0.2.0/24 and 10.0.3.0/24 of the first class -> 10.0.2.0/23.
        let ten: UInt128 = 0x0A00_0000
        let merged = GeoCompiler.merge([
            p(ten, 25, 1), p(ten | 0x80, 26, 1), p(ten | 0xC0, 26, 1), p(ten | 0x100, 24, 2), p(ten | 0x200, 24, 1),
            p(ten | 0x300, 24, 1),
        ])
        #expect(merged == [p(ten, 24, 1), p(ten | 0x100, 24, 2), p(ten | 0x200, 23, 1)])
        // Neighbours that are not halves of one parent stay apart: 10.0.1.0/24 and 10.0.2.0/24.
        #expect(GeoCompiler.merge([p(ten | 0x100, 24, 1), p(ten | 0x200, 24, 1)]).count == 2)
    }
}
