import DNSWire

/// What a new compile changes of the answers a names table holds (docs/ARCHITECTURE.md §15): the
/// names whose records differ, so that a node that registers rewrites its target's record and
/// no other, rather than the image of every zone.
extension GeoTable {
    /// The names whose answers (apart from the per-client geo answers the geo maps give) may
    /// differ between `old` and `new`: names that exist in one and not the other (owners, targets
    /// and their ancestors), geo names whose ranking, pool or config changed (every one of them
    /// when the number of rankings did: each record holds it), and discovery targets whose node
    /// or addresses changed. nil stands for no geo names.
    public static func namesChanged(from old: GeoTable?, to new: GeoTable?) -> Set<DNSName> {
        let before = old?.existingNames ?? []
        let after = new?.existingNames ?? []
        guard let old, let new else { return before.union(after) }
        var out = before.symmetricDifference(after)
        if old.rankings.count != new.rankings.count {
            out.formUnion(old.owners)
            out.formUnion(new.owners)
        } else {
            for (key, n) in new.names {
                guard let was = old.names[key], was.ranking == n.ranking, was.pool == n.pool, was.config == n.config
                else {
                    out.insert(key.name)
                    continue
                }
            }
            for key in old.names.keys where new.names[key] == nil { out.insert(key.name) }
        }
        for (name, t) in new.targets {
            guard let was = old.targets[name], was.ttl == t.ttl, let a = old.nodes[was.node], let b = new.nodes[t.node],
                a.ipv4 == b.ipv4, a.ipv6 == b.ipv6
            else {
                out.insert(name)
                continue
            }
        }
        for name in old.targets.keys where new.targets[name] == nil { out.insert(name) }
        return out
    }
}
