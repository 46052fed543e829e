import DNSWire
import MaxMindDB

/// Why a client gets the answer it gets for a geo name (`nearcast explain`, `GET /v1/explain`):
/// the location found, the class and its prefix, the ranked candidates with their scores and
/// health, and the answer.
public struct GeoExplanation: Codable, Equatable, Sendable {
    public struct Location: Codable, Equatable, Sendable {
        /// The database network the address is in, nil when it has no record.
        public var network: String?
        public var latitude: Double?
        public var longitude: Double?
        public var country: String?
        public var continent: String?
        public var subdivision: String?
    }

    public struct Candidate: Codable, Equatable, Sendable {
        public var node: String
        /// nil when ranked by the fallback order (unknown location).
        public var score: Double?
        public var distanceKm: Double?
        public var healthy: Bool
        public var address: String?
    }

    public var name: String
    public var type: String
    /// The address the answer was chosen for (the ECS address, else the client's).
    public var lookupAddress: String
    public var location: Location
    public var locationClass: Int
    /// The prefix of the class the address matched (the ECS scope), nil when none did.
    public var classPrefix: String?
    public var candidates: [Candidate]
    /// "answered", "nodata" or "servfail".
    public var outcome: String
    public var answer: [String]
    public var ttl: UInt32
    /// The scope an ECS echo carries: the class prefix's length, else the source prefix's; nil
    /// without ECS.
    public var ecsScope: Int?
}

/// Why an explanation cannot be given.
public struct GeoExplainError: Error, CustomStringConvertible, Sendable {
    public var description: String
    /// There are no geo names to explain (the API's 404), rather than a bad question (400).
    public var notConfigured = false

    public init(description: String, notConfigured: Bool = false) {
        self.description = description
        self.notConfigured = notConfigured
    }
}

extension GeoTable {
    /// Explains the answer of geo name `name` `type` to `client`, or to `ecs` (ADDRESS/PREFIX) when
    /// given, as the responder would choose it; `database` gives the location details.
    public func explain(name: String, type: String, client: String, ecs: String?, database: MaxMindDatabase) throws
        -> GeoExplanation
    {
        guard let qname = try? DNSName(name.hasSuffix(".") ? name : name + ".") else {
            throw GeoExplainError(description: "'\(name)' is not a domain name")
        }
        let t: RRType = type.uppercased() == "AAAA" ? .aaaa : .a
        guard type.uppercased() == "A" || type.uppercased() == "AAAA" else {
            throw GeoExplainError(description: "geo names are A or AAAA, not '\(type)'")
        }
        guard let geoName = self.name(qname, t) else {
            throw GeoExplainError(description: "\(qname) \(t) is not a geo name")
        }
        var text = client
        var source: Int?
        if let ecs {
            let parts = ecs.split(separator: "/")
            guard parts.count == 2, let bits = Int(parts[1]) else {
                throw GeoExplainError(description: "--ecs '\(ecs)' is not ADDRESS/PREFIX")
            }
            source = bits
            if bits > 0 { text = String(parts[0]) }
        }
        guard let address = GeoConfig.address(text, v6: text.contains(":")) else {
            throw GeoExplainError(description: "'\(text)' is not an IP address")
        }
        let found = try database.lookup(text)
        let health = self.health
        let answer = self.answer(geoName, client: address, health: health)
        let ranking = rankings[geoName.ranking]
        let scored = Dictionary(
            ranking.policy.rank(
                ranking.nodes, for: found?.location.hasCoordinates == true ? found?.location : nil,
                fallback: ranking.fallback
            )
            .map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
        let v4 = t == .a
        let candidates = answer.candidates.map { id in
            GeoExplanation.Candidate(
                node: id, score: scored[id]?.score, distanceKm: scored[id]?.distanceKm,
                healthy: health.isServing(id),
                address: (v4 ? nodes[id]?.ipv4 : nodes[id]?.ipv6).map { Self.text($0) })
        }
        let prefix = answer.prefixLength.map { len -> String in
            IPNetwork(address: address, prefixLength: len).masked.description
        }
        let loc = found?.location
        return GeoExplanation(
            name: qname.description, type: t.description, lookupAddress: text,
            location: .init(
                network: found?.network.description, latitude: loc?.latitude, longitude: loc?.longitude,
                country: loc?.country,
                continent: loc?.continent, subdivision: loc?.subdivision),
            locationClass: answer.locationClass, classPrefix: prefix, candidates: candidates,
            outcome: "\(answer.outcome)", answer: answer.addresses.map { Self.text($0) }, ttl: answer.ttl,
            ecsScope: source.map { $0 == 0 ? 0 : answer.prefixLength ?? $0 })
    }

    static func text(_ a: [UInt8]) -> String {
        a.count == 4 ? a.map(String.init).joined(separator: ".") : IPv6Address(bytes: a).map(\.description) ?? "?"
    }
}

extension GeoTable {
    /// Where each node is, for a map: its id, place, addresses as text, and the pools it is in.
    public var nodePlaces:
        [(
            id: String, latitude: Double, longitude: Double, country: String?, ipv4: String?, ipv6: String?,
            pools: [String]
        )]
    {
        allNodes.map { n in
            (
                n.id, n.latitude, n.longitude, n.country, n.ipv4.map(Self.text),
                n.ipv6.map(Self.text), pools.filter { $0.members.contains(n.id) }.map(\.id)
            )
        }
    }
}

extension IPNetwork {
    /// The network with the host bits cleared.
    var masked: IPNetwork {
        var a = address
        for i in 0..<a.count {
            let keep = Swift.max(0, Swift.min(8, prefixLength - i * 8))
            a[i] &= keep == 8 ? 0xFF : ~(0xFF >> UInt8(keep))
        }
        return IPNetwork(address: a, prefixLength: prefixLength)
    }
}
