import DNSWire

extension Zone {
    /// The RRsets in which `self` differs from `old`, a zone of the same origin, each as `changing`
    /// takes a change: the whole RRset of a name and type in `self` (nil: `old` has one, `self` has
    /// none). An RRset differs when any octet the slow path sends of it would: its records, their
    /// order, its TTL, the letter case of its names. What a reload changes (docs/ARCHITECTURE.md
    /// §15): each name of one zone looked up in the other, O(n) with no copy of either, so that
    /// serving the changes costs what they change.
    public func differences(from old: Zone) -> [(name: DNSName, type: RRType, set: RRSet?)] {
        var out: [(name: DNSName, type: RRType, set: RRSet?)] = []
        var kept = 0  // names of `old` found in `self`
        for (name, node) in tree {
            guard let was = old.tree[name]?.sets else {
                for set in node.sets { out.append((name, set.type, set)) }
                continue
            }
            kept += 1
            for set in node.sets where !was.contains(where: { $0.isIdentical(to: set) }) {
                out.append((name, set.type, set))
            }
            for set in was where node[set.type] == nil { out.append((name, set.type, nil)) }
        }
        // Names gone: only when some of `old`'s were not found (a second pass over a large zone).
        if kept < old.tree.count {
            for (name, node) in old.tree where tree[name] == nil {
                for set in node.sets { out.append((name, set.type, nil)) }
            }
        }
        return out
    }
}

extension RRSet {
    /// Whether `other` is this RRset in every octet sent: `==` compares names ignoring their
    /// letter case (RFC 4343), which a reply echoes as the zone has it.
    func isIdentical(to other: RRSet) -> Bool {
        guard self == other, name.wire == other.name.wire else { return false }
        return zip(rdatas, other.rdatas).allSatisfy { a, b in
            switch (a, b) {
            case (.soa(let x), .soa(let y)): x.mname.wire == y.mname.wire && x.rname.wire == y.rname.wire
            default: a.target?.wire == b.target?.wire
            }
        }
    }
}
