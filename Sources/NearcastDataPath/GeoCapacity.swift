import NearcastGeo

/// How many entries every inner map of nc_geo4 (IPv4 prefixes) and of nc_cands (candidate lists)
/// has (ARCHITECTURE §5): one size for all of a map-in-map's inner ARRAYs, fixed when the outer map
/// is made, so that the verifier inlines their lookups. A compile that needs more than the maps
/// were made with cannot be written; nearcastd sizes them from the geo data it starts with, with
/// room to grow, and a new start sizes them anew.
public struct GeoCapacity: Sendable, Equatable, CustomStringConvertible {
    public var ipv4Prefixes: Int
    public var candidateLists: Int

    public init(ipv4Prefixes: Int, candidateLists: Int) {
        self.ipv4Prefixes = ipv4Prefixes
        self.candidateLists = candidateLists
    }

    /// What a start without geo names makes: room for a small database (1 MiB and 144 KiB).
    public static let minimum = GeoCapacity(ipv4Prefixes: 1 << 16, candidateLists: 1 << 12)

    /// Exactly what `geo` puts in the maps.
    public static func needed(by geo: GeoTable) -> GeoCapacity {
        GeoCapacity(
            ipv4Prefixes: geo.image.ipv4.count, candidateLists: geo.image.classes.count * geo.rankings.count)
    }

    /// The size to make the maps for `geo`: what it needs and a quarter more (a database's next
    /// release, a few more pools), in whole steps of the minimum's, never below the minimum.
    public static func sized(for geo: GeoTable?) -> GeoCapacity {
        guard let geo else { return .minimum }
        let need = needed(by: geo)
        func room(_ n: Int, _ step: Int) -> Int { max(step, (n + n / 4 + step - 1) / step * step) }
        return GeoCapacity(
            ipv4Prefixes: room(need.ipv4Prefixes, minimum.ipv4Prefixes),
            candidateLists: room(need.candidateLists, minimum.candidateLists))
    }

    /// Whether maps of this size take everything `other` needs.
    public func holds(_ other: GeoCapacity) -> Bool {
        other.ipv4Prefixes <= ipv4Prefixes && other.candidateLists <= candidateLists
    }

    public var description: String { "\(ipv4Prefixes) IPv4 prefixes and \(candidateLists) candidate lists" }
}
