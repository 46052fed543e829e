import DNSWire

/// The set of zones nearcast is authoritative for, and the zone that answers a name.
public struct Authority: Sendable {
    public let zones: [DNSName: Zone]
    private let maxOriginLabels: Int

    public init(zones: [Zone]) {
        var byOrigin: [DNSName: Zone] = [:]
        for z in zones { byOrigin[z.origin] = z }
        self.zones = byOrigin
        self.maxOriginLabels = zones.map(\.origin.labelCount).max() ?? 0
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
