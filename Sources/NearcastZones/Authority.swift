import DNSWire

/// The set of zones nearcast is authoritative for, and the zone that answers a name.
public struct Authority: Sendable {
    public let zones: [DNSName: Zone]
    /// Zones configured here that cannot be answered now: secondary zones not yet transferred,
    /// or expired. A name in one (and in no zone served below it) is answered SERVFAIL.
    public let unavailable: Set<DNSName>
    private let maxOriginLabels: Int

    public init(zones: [Zone], unavailable: Set<DNSName> = []) {
        var byOrigin: [DNSName: Zone] = [:]
        for z in zones { byOrigin[z.origin] = z }
        self.zones = byOrigin
        self.unavailable = unavailable
        self.maxOriginLabels = zones.map(\.origin.labelCount).max() ?? 0
    }

    /// The zone that cannot be answered now (`unavailable`) and holds `qname`, when it lies below
    /// `served` (the zone served that holds it, if any).
    public func unavailableZone(for qname: DNSName, below served: Zone?) -> DNSName? {
        guard !unavailable.isEmpty else { return nil }
        var n = qname
        while true {
            if let served, n == served.origin { return nil }
            if unavailable.contains(n) { return n }
            if n.isRoot { return nil }
            n = n.parent
        }
    }

    /// The zone whose origin is the closest enclosing name of `qname`, if we serve one.
    public func zone(for qname: DNSName) -> Zone? {
        var n = qname
        var labels = n.labelCount
        while labels > maxOriginLabels {
            n = n.parent
            labels -= 1
        }
        while true {
            if let z = zones[n] { return z }
            if n.isRoot { return nil }
            n = n.parent
        }
    }
}
