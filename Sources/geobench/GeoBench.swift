import ArgumentParser
import DNSWire
import Foundation
import MaxMindDB
import NearcastAnswers
import NearcastBasics
import NearcastConfiguration
import NearcastDNSSEC
import NearcastDataPath
import NearcastGeo
import NearcastZones

/// `geobench`: the geo compile of a whole MaxMind City database (GeoLite2-City from
/// tools/fetch-geolite2.sh) for a fog network of 24 nodes in two pools: time, peak memory and the
/// compiler's figures; with `--maps`, the geo maps written into the kernel and their memory.
/// Run by `make bench-geo`.
@main
struct GeoBench: ParsableCommand {
    @Option(help: "The MaxMind City database.") var database = ".build/geo/GeoLite2-City.mmdb"

    /// 24 cities on every continent; pool "web" has them all (8 candidates kept), "api" every
    /// third (2 kept).
    static let cities: [(String, Double, Double, String)] = [
        ("fra", 50.11, 8.68, "DE"), ("ams", 52.37, 4.90, "NL"), ("lon", 51.51, -0.13, "GB"), ("par", 48.86, 2.35, "FR"),
        ("mad", 40.42, -3.70, "ES"), ("mil", 45.46, 9.19, "IT"), ("waw", 52.23, 21.01, "PL"),
        ("sto", 59.33, 18.07, "SE"),
        ("nyc", 40.71, -74.01, "US"), ("chi", 41.88, -87.63, "US"), ("dal", 32.78, -96.80, "US"),
        ("lax", 34.05, -118.24, "US"),
        ("sea", 47.61, -122.33, "US"), ("tor", 43.65, -79.38, "CA"), ("mex", 19.43, -99.13, "MX"),
        ("gru", -23.55, -46.63, "BR"),
        ("scl", -33.45, -70.67, "CL"), ("jnb", -26.20, 28.05, "ZA"), ("lag", 6.52, 3.38, "NG"),
        ("dxb", 25.20, 55.27, "AE"),
        ("bom", 19.08, 72.88, "IN"), ("sin", 1.35, 103.82, "SG"), ("tyo", 35.68, 139.65, "JP"),
        ("syd", -33.87, 151.21, "AU"),
    ]

    @Option(help: "nearcast's XDP object: also write the geo maps and report their kernel memory (root).")
    var maps: String?

    @Option(help: "Also sign the answers of this many geo names (half on each pool) in a signed zone.")
    var signedNames = 0

    func run() throws {
        // The config a user would write: the 24 nodes, pool "web" with all, pool "api" with every
        // third; a name on each ("api" keeps 2 candidates).
        var yaml = "listen: [\"127.0.0.1:53\"]\ngeo:\n  database: \(database)\n  nodes:\n"
        for (i, c) in Self.cities.enumerated() {
            yaml +=
                "    - { id: \(c.0), ipv4: 192.0.2.\(i + 1), latitude: \(c.1), longitude: \(c.2), country: \(c.3) }\n"
        }
        let api = Self.cities.enumerated().filter { $0.offset % 3 == 0 }.map(\.element.0)
        yaml += "  pools:\n    - { id: web, members: [\(Self.cities.map(\.0).joined(separator: ", "))] }\n"
        yaml += "    - { id: api, members: [\(api.joined(separator: ", "))] }\n"
        yaml += "  names:\n    - { name: www.bench.test, type: A, pool: web, answers: 2 }\n"
        yaml += "    - { name: api.bench.test, type: A, pool: api, depth: 2 }\n"
        let config = try NearcastConfig.parse(yaml: yaml, fileName: "geobench", baseDirectory: "")

        let start = ContinuousClock.now
        let db = try MaxMindDatabase(path: database)
        let table = try GeoTable.build(config.geo, database: db)
        let elapsed = ContinuousClock.now - start
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        let r = table.image.report
        print("database: \(db.databaseType), built \(db.buildEpoch), \(db.nodeCount) search-tree nodes")
        print("")
        print(
            "| compile time (s) | peak memory (MiB) | networks | locations | classes | IPv4 prefixes before / after merging | IPv6 prefixes before / after merging | uncovered blocks before / after merging (in the after counts) | IPv6 prefixes looked up as IPv4 |"
        )
        print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        print(
            String(
                format: "| %.1f | %d | %d | %d | %d | %d / %d | %d / %d | %d / %d | %d |", elapsed.seconds,
                usage.ru_maxrss / 1024, r.networks, r.locations, r.classes, r.ipv4Before, r.ipv4After, r.ipv6Before,
                r.ipv6After, r.uncovered, r.uncoveredAfter, r.aliases))

        print("")
        print(Self.ipv4Shape(table.image.ipv4))
        if signedNames > 0 { try signVariants(yaml: yaml, db: db) }

        guard let maps else { return }
        let fast = try FastPath(objectPath: maps, geoCapacity: .sized(for: table))
        let empty = AnswerImage.build(
            responder: Responder(authority: Authority(zones: [])), maxSections: FastPath.sectionsCapacity)
        let writeStart = ContinuousClock.now
        try fast.write(empty, geo: table)
        let writeTime = (ContinuousClock.now - writeStart).seconds
        print("")
        print("| geo map | entries | kernel memory (MiB, memlock) |")
        print("|---|---:|---:|")
        for (name, entries) in fast.geoMapSizes(table) {
            print(
                "| \(name) | \(entries) | " + String(format: "%.1f", Double(fast.memlock(of: name) ?? 0) / 1_048_576)
                    + " |")
        }
        print("")
        print(
            String(
                format: "maps written in %.1f s (the IPv6 trie entry by entry: no batch updates for tries)", writeTime))

        // A reload that moves one node (issue 6): a new compile, written as the other generation
        // beside the live maps and switched in; then a reload of the same compile (a record
        // change), which writes no geo map.
        let moved = yaml.replacingOccurrences(
            of: "latitude: \(Self.cities[0].1),", with: "latitude: \(Self.cities[0].1 + 2),")
        let changed = try NearcastConfig.parse(yaml: moved, fileName: "geobench", baseDirectory: "")
        let recompileStart = ContinuousClock.now
        let next = try GeoTable.build(changed.geo, database: db)
        let recompile = (ContinuousClock.now - recompileStart).seconds
        let switchStart = ContinuousClock.now
        try fast.write(empty, geo: next)
        let switchTime = (ContinuousClock.now - switchStart).seconds
        let sameStart = ContinuousClock.now
        try fast.write(empty, geo: next)
        let same = (ContinuousClock.now - sameStart).seconds
        print("")
        print(
            String(
                format:
                    "a node moved, reloaded: compiled in %.1f s, its geo maps written beside the live ones and switched in %.1f s; a reload of the same compile (a record change) %.0f ms",
                recompile, switchTime, same * 1000))
    }

    /// The variants of `signedNames` geo names' answers (half on each pool) signed ahead, as
    /// nearcastd signs them in a zone it signs (Sources/NearcastAnswers/README.md, "Geo names"): how many
    /// each pool's names answer, the time and memory to sign them all, and how many more one
    /// node down makes.
    func signVariants(yaml: String, db: MaxMindDatabase) throws {
        var text = yaml.components(separatedBy: "  names:\n")[0] + "  names:\n"
        for i in 0..<signedNames {
            text +=
                i % 2 == 0
                ? "    - { name: w\(i).bench.test, type: A, pool: web, answers: 2 }\n"
                : "    - { name: a\(i).bench.test, type: A, pool: api, depth: 2 }\n"
        }
        let config = try NearcastConfig.parse(yaml: text, fileName: "geobench", baseDirectory: "")
        let table = try GeoTable.build(config.geo, database: db)
        let origin = try DNSName("bench.test.")
        let key = DNSSECKey.generate(zone: origin)
        let online = OnlineSignatures()
        online.use([
            origin: OnlineSignatures.Signer(
                keyTags: [key.keyTag], renewBefore: 7 * 86400,
                sign: { set in
                    let t = UInt32(Date().timeIntervalSince1970)
                    return try ZoneSigner(keys: [key], inception: t - 3600, expiration: t + 14 * 86400)
                        .signatures(set, origin: origin)
                })
        ])
        func sets(_ health: GeoTable.Health? = nil) -> [RRSet] { table.answerVariants(health: health) }
        let before = Self.residentMiB()
        let start = ContinuousClock.now
        let all = sets()
        let (variants, signed) = online.sign(all, now: UInt32(Date().timeIntervalSince1970))
        let elapsed = (ContinuousClock.now - start).seconds
        let perName = Dictionary(grouping: all, by: \.name).mapValues(\.count)
        let web = perName.filter { $0.key.description.hasPrefix("w") }.values.max() ?? 0
        let api = perName.filter { $0.key.description.hasPrefix("a") }.values.max() ?? 0
        var down = table
        down.unhealthy = [Self.cities[0].0]
        let more = online.sign(sets(down.health), now: UInt32(Date().timeIntervalSince1970)).signed
        print("")
        print(
            "| signed geo names | variants a name (web, 2 answers / api, 1) | variants | signed in (s) | per second | resident memory (MiB, before / after) | more with \(Self.cities[0].0) down |"
        )
        print("|---:|---:|---:|---:|---:|---:|---:|")
        print(
            String(
                format: "| %d | %d / %d | %d | %.2f | %.0f | %d / %d | %d |", signedNames, web, api, variants, elapsed,
                Double(signed) / max(elapsed, 1e-9), before, Self.residentMiB(), more))
    }

    /// The process's resident memory now, MiB (/proc/self/statm).
    static func residentMiB() -> Int {
        let statm = (try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8)) ?? ""
        let pages = statm.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
        return pages * Int(sysconf(Int32(_SC_PAGESIZE))) / 1_048_576
    }

    /// The shape of the compiled IPv4 prefixes and what the XDP program's prefix array (a span per
    /// /16, a binary search in it: BENCHMARKS.md) makes of them: how many are of each length, the
    /// array's size, and how many prefixes the fullest /16 holds (its search's steps).
    static func ipv4Shape(_ prefixes: [ClassPrefix]) -> String {
        var lengths = [Int](repeating: 0, count: 33)
        var perSixteen: [UInt32: Int] = [:]
        for p in prefixes {
            let a = UInt32(truncatingIfNeeded: p.address >> 96)
            let length = max(0, min(32, p.length))  // IPv4: the top 32 bits, a length up to 32
            lengths[length] += 1
            if length > 16 { perSixteen[a >> 16, default: 0] += 1 }
        }
        let counts = lengths.enumerated().filter { $0.element > 0 }.map { "/\($0.offset): \($0.element)" }
        let fullest = perSixteen.values.max() ?? 1
        let steps = Int(log2(Double(fullest)).rounded(.up))
        let mib = Double(65536 * 8 + prefixes.count * 16) / 1_048_576  // spans and prefixes
        return "IPv4 prefixes by length: \(counts.joined(separator: ", ")); the prefix array: "
            + String(format: "%.1f MiB a generation", mib)
            + ", \(perSixteen.count) /16s hold longer prefixes, the fullest \(fullest) (\(steps) search steps)"
    }
}
