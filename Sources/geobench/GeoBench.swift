import ArgumentParser
import Foundation
import MaxMindDB
import NearcastCore

/// `geobench`: the geo compile of a whole MaxMind City database (GeoLite2-City from
/// tools/fetch-geolite2.sh) for a fog network of 24 nodes in two pools: time, peak memory and the
/// compiler's figures. Run by `make bench-geo`.
@main
struct GeoBench: ParsableCommand {
    @Option(help: "The MaxMind City database.") var database = ".build/geo/GeoLite2-City.mmdb"

    /// 24 cities on every continent; pool "web" has them all (8 candidates kept), "api" every
    /// third (2 kept).
    static let cities: [(String, Double, Double, String)] = [
        ("fra", 50.11, 8.68, "DE"), ("ams", 52.37, 4.90, "NL"), ("lon", 51.51, -0.13, "GB"), ("par", 48.86, 2.35, "FR"),
        ("mad", 40.42, -3.70, "ES"), ("mil", 45.46, 9.19, "IT"), ("waw", 52.23, 21.01, "PL"), ("sto", 59.33, 18.07, "SE"),
        ("nyc", 40.71, -74.01, "US"), ("chi", 41.88, -87.63, "US"), ("dal", 32.78, -96.80, "US"), ("lax", 34.05, -118.24, "US"),
        ("sea", 47.61, -122.33, "US"), ("tor", 43.65, -79.38, "CA"), ("mex", 19.43, -99.13, "MX"), ("gru", -23.55, -46.63, "BR"),
        ("scl", -33.45, -70.67, "CL"), ("jnb", -26.20, 28.05, "ZA"), ("lag", 6.52, 3.38, "NG"), ("dxb", 25.20, 55.27, "AE"),
        ("bom", 19.08, 72.88, "IN"), ("sin", 1.35, 103.82, "SG"), ("tyo", 35.68, 139.65, "JP"), ("syd", -33.87, 151.21, "AU"),
    ]

    func run() throws {
        let nodes = Self.cities.map { GeoNode(id: $0.0, latitude: $0.1, longitude: $0.2, country: $0.3) }
        var api = GeoPolicy()
        api.depth = 2
        let pools = [
            GeoPool(id: "web", nodes: nodes),
            GeoPool(id: "api", nodes: nodes.enumerated().filter { $0.offset % 3 == 0 }.map(\.element), policy: api),
        ]
        let start = ContinuousClock.now
        let db = try MaxMindDatabase(path: database)
        let image = try GeoCompiler.compile(database: db, pools: pools)
        let elapsed = ContinuousClock.now - start
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        let r = image.report
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        print("database: \(db.databaseType), built \(db.buildEpoch), \(db.nodeCount) search-tree nodes")
        print("| compile time (s) | peak memory (MiB) | networks | locations | classes | IPv4 prefixes before / after merging | IPv6 prefixes before / after merging |")
        print("|---:|---:|---:|---:|---:|---:|---:|")
        print(String(format: "| %.1f | %d | %d | %d | %d | %d / %d | %d / %d |", seconds, usage.ru_maxrss / 1024, r.networks, r.locations, r.classes, r.ipv4Before, r.ipv4After, r.ipv6Before, r.ipv6After))
    }
}
