import MaxMindDB
import Testing

@testable import NearcastGeo

/// The geo policy against rankings worked out by hand (distances and scores computed separately
/// from the formulas of ARCHITECTURE §5, to 0.1 km).
@Suite(.timeLimit(.minutes(1))) struct GeoPolicyTests {
    static let nodes = [
        GeoNode(id: "fra", latitude: 50.1109, longitude: 8.6821, country: "DE", region: "HE"),
        GeoNode(id: "par", latitude: 48.8566, longitude: 2.3522, country: "FR", region: "IDF"),
        GeoNode(id: "nyc", latitude: 40.7128, longitude: -74.006, country: "US", region: "NY"),
        GeoNode(id: "tyo", latitude: 35.6762, longitude: 139.6503, country: "JP", region: "13"),
        GeoNode(id: "syd", latitude: -33.8688, longitude: 151.2093, country: "AU", region: "NSW"),
    ]
    static let strasbourg = GeoLocation(
        latitude: 48.5734, longitude: 7.7521, country: "FR", continent: "EU", subdivision: "GES")
    static let losAngeles = GeoLocation(
        latitude: 34.0522, longitude: -118.2437, country: "US", continent: "NA", subdivision: "CA")
    static let saoPaulo = GeoLocation(
        latitude: -23.5505, longitude: -46.6333, country: "BR", continent: "SA", subdivision: "SP")
    static let tokyo = GeoLocation(
        latitude: 35.6762, longitude: 139.6503, country: "JP", continent: "AS", subdivision: "13")

    func policy(_ s: DistanceStrategy, _ change: (inout GeoPolicy) -> Void = { _ in }) -> GeoPolicy {
        var p = GeoPolicy()
        p.strategy = s
        change(&p)
        return p
    }

    func ids(_ p: GeoPolicy, _ loc: GeoLocation?, nodes: [GeoNode] = GeoPolicyTests.nodes) -> [String] {
        p.rank(nodes, for: loc).map(\.id)
    }

    @Test func haversineDistances() {
        func d(_ a: GeoLocation, _ n: String) -> Double {
            let node = Self.nodes.first { $0.id == n }!
            return GeoPolicy.distanceKm(a.latitude!, a.longitude!, node.latitude, node.longitude)
        }
        #expect(abs(d(Self.strasbourg, "fra") - 183.8) < 0.1)
        #expect(abs(d(Self.strasbourg, "par") - 397.3) < 0.1)
        #expect(abs(d(Self.losAngeles, "nyc") - 3935.7) < 0.1)
        #expect(abs(d(Self.saoPaulo, "tyo") - 18537.2) < 0.1)
        #expect(d(Self.tokyo, "tyo") < 0.001)
    }

    @Test func eachStrategyRanksByItsFormula() {
        #expect(ids(policy(.linear), Self.strasbourg) == ["fra", "par", "nyc", "tyo", "syd"])
        #expect(ids(policy(.linear), Self.losAngeles) == ["nyc", "tyo", "par", "fra", "syd"])
        #expect(ids(policy(.quadratic), Self.saoPaulo) == ["nyc", "par", "fra", "syd", "tyo"])
        #expect(ids(policy(.logarithmic), Self.tokyo) == ["tyo", "syd", "fra", "par", "nyc"])
        // Stepped: Strasbourg has fra and par both at 0.8 (<= 500 km); ties go to the nearer.
        #expect(ids(policy(.stepped), Self.strasbourg) == ["fra", "par", "nyc", "tyo", "syd"])
        // Los Angeles: nyc 0.4 (<= 5000 km), the rest 0.2, nearest first.
        #expect(ids(policy(.stepped), Self.losAngeles) == ["nyc", "tyo", "par", "fra", "syd"])

        let linear = policy(.linear).rank(Self.nodes, for: Self.strasbourg)
        #expect(abs(linear[0].score! - 0.99081) < 0.00001 && abs(linear[1].score! - 0.98013) < 0.00001)
        let quad = policy(.quadratic).rank(Self.nodes, for: Self.saoPaulo)
        #expect(abs(quad[0].score! - 0.37910) < 0.0001)
        let log = policy(.logarithmic).rank(Self.nodes, for: Self.strasbourg)
        #expect(abs(log[0].score! - 0.47862) < 0.0001)
        let tokyo = policy(.logarithmic).rank(Self.nodes, for: Self.tokyo)
        #expect(tokyo[0].score == 1, "d < 1 km counts as 1 km: ln 1 = 0")
    }

    @Test func byDefaultDistanceWinsOverCountry() {
        // The old system's trap: a same-country node 1,700 km away beat a foreign one 5 km away.
        let near = GeoNode(id: "kehl", latitude: 48.5765, longitude: 7.8156, country: "DE")
        let far = GeoNode(id: "far-fr", latitude: 38.7223, longitude: -9.1393, country: "FR")
        #expect(ids(policy(.linear), Self.strasbourg, nodes: [far, near]) == ["kehl", "far-fr"])
        #expect(ids(policy(.stepped), Self.strasbourg, nodes: [far, near]) == ["kehl", "far-fr"])
        // A bonus is a choice: 0.1 is worth 2,000 km under the linear strategy.
        #expect(
            ids(policy(.linear) { $0.sameCountryBonus = 0.1 }, Self.strasbourg, nodes: [far, near]) == [
                "far-fr", "kehl",
            ])
        // The region bonus needs the country too: GES is Strasbourg's region.
        let ges = GeoNode(id: "metz", latitude: 49.1193, longitude: 6.1757, country: "FR", region: "GES")
        let p = policy(.linear) { $0.sameRegionBonus = 0.01 }
        #expect(
            p.rank([ges], for: Self.strasbourg)[0].score! > policy(.linear).rank([ges], for: Self.strasbourg)[0].score!)
    }

    @Test func biasMovesTheBoundary() {
        // From Strasbourg, par is 397.3 km and fra 183.8: a bias of +50 brings par to 198.6, still
        // behind; +60 to 158.9, ahead. A negative bias pushes a node away: fra at -99 counts as
        // 365.8 km, still nearer than par's 397.3, but not than par at +20 (317.8).
        var nodes = Self.nodes
        nodes[1].bias = 50
        #expect(ids(policy(.linear), Self.strasbourg, nodes: nodes).prefix(2) == ["fra", "par"])
        nodes[1].bias = 60
        #expect(ids(policy(.linear), Self.strasbourg, nodes: nodes).prefix(2) == ["par", "fra"])
        nodes[1].bias = 0
        nodes[0].bias = -99
        #expect(ids(policy(.linear), Self.strasbourg, nodes: nodes).prefix(2) == ["fra", "par"])
        nodes[1].bias = 20
        #expect(ids(policy(.linear), Self.strasbourg, nodes: nodes).prefix(2) == ["par", "fra"])
    }

    @Test func maximumDistanceAndDepthCutTheList() {
        #expect(ids(policy(.linear) { $0.maxDistanceKm = 1000 }, Self.strasbourg) == ["fra", "par"])
        #expect(ids(policy(.linear) { $0.depth = 3 }, Self.losAngeles) == ["nyc", "tyo", "par"])
        // Nothing within reach: the fallback order (by weight, then id).
        var nodes = Self.nodes
        nodes[4].weight = 5
        nodes[2].weight = 2
        #expect(
            ids(policy(.linear) { $0.maxDistanceKm = 1000 }, Self.saoPaulo, nodes: nodes) == [
                "syd", "nyc", "fra", "par", "tyo",
            ])
    }

    @Test func unknownLocationsGetTheFallback() {
        var nodes = Self.nodes
        nodes[3].weight = 3
        let byWeight = ["tyo", "fra", "nyc", "par", "syd"]
        #expect(ids(policy(.linear), nil, nodes: nodes) == byWeight)
        #expect(
            ids(policy(.linear), GeoLocation(country: "FR", continent: "EU"), nodes: nodes) == byWeight,
            "a country without coordinates")
        let configured = policy(.linear).rank(nodes, for: nil, fallback: ["par", "nyc"])
        #expect(configured.map(\.id) == ["par", "nyc"] && configured.allSatisfy { $0.score == nil })
    }
}
