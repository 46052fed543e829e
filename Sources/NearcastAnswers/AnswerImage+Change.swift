import DNSWire
import NearcastZones

/// What a change of one zone does to the answer image: the names whose records it reaches, found
/// from the zone's indexes rather than a new image of the whole zone, and their records
/// (docs/ARCHITECTURE.md §15; written into the live generation by FastPath.apply).
extension AnswerImage {
    /// A change of one zone: the zone before and after it, and the names whose RRsets changed.
    public struct Change: Sendable {
        public var before: Zone
        public var after: Zone
        public var owners: Set<DNSName>

        public init(before: Zone, after: Zone, owners: Set<DNSName>) {
            self.before = before
            self.after = after
            self.owners = owners
        }

        /// `changes` (of zones among `zones`, the zones served after them) with `names` added:
        /// each to the change of the zone it lies in (the deepest of `zones`), or to a change of a
        /// zone that has none, before and after the same. For what a new geo compile changes
        /// (`GeoTable.namesChanged`): names in no zone are in no image.
        public static func adding(_ names: Set<DNSName>, to changes: [Change], zones: [Zone]) -> [Change] {
            guard !names.isEmpty else { return changes }
            var out = changes
            var at: [DNSName: Int] = [:]
            for (i, c) in changes.enumerated() { at[c.after.origin] = i }
            let authority = Authority(zones: zones)
            for name in names {
                guard let zone = authority.zone(for: name) else { continue }
                if let i = at[zone.origin] {
                    out[i].owners.insert(name)
                } else {
                    at[zone.origin] = out.count
                    out.append(Change(before: zone, after: zone, owners: [name]))
                }
            }
            return out
        }
    }

    /// The names of `after` whose records a change of the RRsets of `owners` (in `before`, now
    /// `after`) reaches: each owner and the names above it (whose existence, counts and wildcard
    /// children move), the anchors (the SOA's serial moves), and the names whose answers embed a
    /// reached name's data (CNAMEs to it, chains through them, MX, SRV and NS naming it: the
    /// zone's index, not a scan). Nil when the change reaches what only a whole image says: a
    /// delegation or DNAME made or gone (everything below it), or the SOA's own names changed.
    public static func reached(by change: Change) -> Set<DNSName>? {
        let (owners, before, after) = (change.owners, change.before, change.after)
        func soaNames(_ z: Zone) -> [DNSName] {
            guard case .soa(let soa) = z.soa.rdatas.first else { return [] }
            return [soa.mname, soa.rname]
        }
        guard soaNames(before) == soaNames(after) else { return nil }
        var out = Set(negativeAnchors(after).names)
        var queue: [DNSName] = []
        for o in owners {
            guard !before.redirects(o), !after.redirects(o) else { return nil }
            out.insert(o)
            queue.append(o)
            for a in o.ancestors(upTo: after.origin) { out.insert(a) }
        }
        while let x = queue.popLast() {
            for r in before.referrers(of: x) + after.referrers(of: x) where out.insert(r).inserted {
                // A CNAME's chain passes on to the names that name it.
                if before.rrset(r, .cname) != nil || after.rrset(r, .cname) != nil { queue.append(r) }
            }
        }
        return out
    }

    /// The records that `changes` reach in the image of `responder` (each change's `reached(by:)`,
    /// then its `records(of:in:)`), and the names among them that are names no more; nil when one
    /// reaches what only a whole image says.
    public static func records(reachedBy changes: [Change], responder: Responder, maxSections: Int) -> (
        names: [Name], removed: [[UInt8]]
    )? {
        var names: [Name] = []
        var removed: [[UInt8]] = []
        for change in changes {
            guard let reached = reached(by: change) else { return nil }
            let records = records(of: reached, in: change.after, responder: responder, maxSections: maxSections)
            names += records.names
            removed += records.removed
        }
        return (names, removed)
    }

    /// The records of `reached` (`reached(by:)`) in the image of `responder`'s zone
    /// `zone`, and the names among them that are names no more (lower-cased wire names).
    public static func records(
        of reached: Set<DNSName>, in zone: Zone, responder: Responder, maxSections: Int
    ) -> (names: [Name], removed: [[UInt8]]) {
        let c = ZoneContext(zone, responder: responder, maxSections: maxSections)
        let anchors = Set(c.anchors.names)
        var names: [Name] = []
        var removed: [[UInt8]] = []
        var tooBig = 0
        for name in reached.sorted(by: DNSName.wireOrder) {
            let exists =
                zone.exists(name) || anchors.contains(name.lowercased()) || responder.geo?.exists(name) == true
            guard exists, !c.nested || c.inZone(name) else {
                removed.append(name.lowercased().wire)
                continue
            }
            names.append(record(of: name, c, responder: responder, maxSections: maxSections, tooBig: &tooBig))
        }
        return (names, removed)
    }
}
