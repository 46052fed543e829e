import Foundation
import MaxMindDB

/// A node of the fog network as the geo policy sees it (ARCHITECTURE §1): where the operator says it is,
/// its capacity and its bias. Health is not part of ranking: it is applied at answer time.
public struct GeoNode: Hashable, Sendable {
    public var id: String
    public var latitude: Double
    public var longitude: Double
    /// ISO 3166-1 alpha-2.
    public var country: String?
    /// ISO 3166-2 subdivision code without the country (as MaxMind's `subdivisions.0.iso_code`).
    public var region: String?
    /// Capacity: the share of a failed neighbour's clients it takes, and the fallback order.
    public var weight: Double
    /// -99...99: a positive bias draws clients from farther away (distances to it count as
    /// (1 - bias/100) of their length), a negative one sends them elsewhere sooner.
    public var bias: Int

    public init(
        id: String, latitude: Double, longitude: Double, country: String? = nil, region: String? = nil,
        weight: Double = 1, bias: Int = 0
    ) {
        self.id = id
        self.latitude = latitude
        self.longitude = longitude
        self.country = country
        self.region = region
        self.weight = weight
        self.bias = bias
    }
}

/// How distance turns into the main term of a node's score (ARCHITECTURE §5); d in km.
public enum DistanceStrategy: String, CaseIterable, Sendable {
    /// 1 - d/20000
    case linear
    /// (1 - d/20000)²: the far side of the world counts for even less.
    case quadratic
    /// 1 - ln(d)/10, d >= 1 km: fine differences nearby count most.
    case logarithmic
    /// 1.0 up to 100 km, 0.8 to 500, 0.6 to 2000, 0.4 to 5000, else 0.2.
    case stepped

    public func term(_ km: Double) -> Double {
        switch self {
        case .linear: return 1 - km / 20000
        case .quadratic: return (1 - km / 20000) * (1 - km / 20000)
        case .logarithmic: return 1 - log(max(km, 1)) / 10
        case .stepped: return km <= 100 ? 1 : km <= 500 ? 0.8 : km <= 2000 ? 0.6 : km <= 5000 ? 0.4 : 0.2
        }
    }
}

/// How a pool ranks its nodes for a client location (ARCHITECTURE §5). The defaults are distance only:
/// the bonuses are there to be turned on, and small values keep distance in charge (with the
/// linear strategy a bonus of 0.01 is worth 200 km).
public struct GeoPolicy: Hashable, Sendable {
    public var strategy: DistanceStrategy = .linear
    /// Added to the score of a node in the client's country.
    public var sameCountryBonus: Double = 0
    /// Added to the score of a node in the client's country and first subdivision.
    public var sameRegionBonus: Double = 0
    /// Nodes farther than this (after bias) are not candidates; nil: no limit.
    public var maxDistanceKm: Double?
    /// Candidates kept per location (D): enough to skip unhealthy ones at answer time.
    public var depth: Int = 8

    public init() {}

    /// One ranked node.
    public struct Candidate: Hashable, Sendable {
        public var id: String
        /// nil when the node was placed by the fallback order (unknown location).
        public var score: Double?
        public var distanceKm: Double?
    }

    /// Great-circle distance (haversine, R = 6371 km).
    public static func distanceKm(_ lat1: Double, _ lon1: Double, _ lat2: Double, _ lon2: Double) -> Double {
        let r = 6371.0
        let p1 = lat1 * .pi / 180
        let p2 = lat2 * .pi / 180
        let dp = (lat2 - lat1) * .pi / 180
        let dl = (lon2 - lon1) * .pi / 180
        let h = sin(dp / 2) * sin(dp / 2) + cos(p1) * cos(p2) * sin(dl / 2) * sin(dl / 2)
        return 2 * r * asin(min(1, sqrt(h)))
    }

    /// The score of `node` for a client at `location`, or nil when it is beyond the maximum distance.
    public func score(_ node: GeoNode, for location: GeoLocation, latitude: Double, longitude: Double) -> (
        score: Double, km: Double
    )? {
        let km = Self.distanceKm(latitude, longitude, node.latitude, node.longitude)
        let biased = km * (1 - Double(max(-99, min(99, node.bias))) / 100)
        if let limit = maxDistanceKm, biased > limit { return nil }
        var s = strategy.term(biased)
        if let c = node.country, c == location.country {
            s += sameCountryBonus
            if let r = node.region, r == location.subdivision { s += sameRegionBonus }
        }
        return (s, km)
    }

    /// The candidate list for a client at `location` (nil: not in the database): the nodes by
    /// score, ties by distance, then weight, then id; cut to `depth`. An unknown location, or one
    /// with no node within the maximum distance, gets `fallback` (default: by weight, then id).
    public func rank(_ nodes: [GeoNode], for location: GeoLocation?, fallback: [String]? = nil) -> [Candidate] {
        if let loc = location, let lat = loc.latitude, let lon = loc.longitude {
            let scored = nodes.compactMap { n in
                score(n, for: loc, latitude: lat, longitude: lon).map { (n, $0.score, $0.km) }
            }
            if !scored.isEmpty {
                return scored.sorted { a, b in
                    if a.1 != b.1 { return a.1 > b.1 }
                    if a.2 != b.2 { return a.2 < b.2 }
                    if a.0.weight != b.0.weight { return a.0.weight > b.0.weight }
                    return a.0.id < b.0.id
                }.prefix(depth).map { Candidate(id: $0.0.id, score: $0.1, distanceKm: $0.2) }
            }
        }
        return Self.fallbackOrder(nodes, fallback).prefix(depth).map {
            Candidate(id: $0.id, score: nil, distanceKm: nil)
        }
    }

    /// The configured fallback order, else the nodes by weight (then id).
    static func fallbackOrder(_ nodes: [GeoNode], _ fallback: [String]?) -> [GeoNode] {
        if let f = fallback { return f.compactMap { id in nodes.first { $0.id == id } } }
        return nodes.sorted { $0.weight != $1.weight ? $0.weight > $1.weight : $0.id < $1.id }
    }
}
