import DNSWire
import HashTreeCollections
import NearcastBasics

extension Zone {
    /// The RRsets in which `self` differs from `old`, a zone of the same origin, each as `changing`
    /// takes a change: the whole RRset of a name and type in `self` (nil: `old` has one, `self` has
    /// none). An RRset differs when any octet the slow path sends of it would: its records, their
    /// order, its TTL, the letter case of its names. What a reload changes (docs/ARCHITECTURE.md
    /// §15): each name of one zone looked up in the other, O(n) with no copy of either, so that
    /// serving the changes costs what they change.
    /// `parts`: threads the names of `self` are looked up on (ParallelWork, each a range of the
    /// trie's order); the result is the same whatever their number.
    public func differences(from old: Zone, parts: Int = 1) -> [(name: DNSName, type: RRType, set: RRSet?)] {
        typealias Found = (changes: [(name: DNSName, type: RRType, set: RRSet?)], kept: Int)
        let count = tree.count
        let cuts = ParallelWork.map(Array(0..<max(1, parts)), parts: parts, smallest: 1) { slice -> [Found] in
            slice.map { part -> Found in
                let start = tree.index(tree.startIndex, offsetBy: count * part / max(1, parts))
                let end = tree.index(tree.startIndex, offsetBy: count * (part + 1) / max(1, parts))
                return changes(from: old, in: start..<end)
            }
        }.flatMap { $0 }
        var out = cuts.flatMap(\.changes)
        // Names gone: only when some of `old`'s were not found (a second pass over a large zone).
        if cuts.reduce(0, { $0 + $1.kept }) < old.tree.count {
            for (name, node) in old.tree where tree[name] == nil {
                for set in node.sets { out.append((name, set.type, nil)) }
            }
        }
        return out
    }

    /// The differences of the names of `self` in `range` (of the trie's order) from `old`, and how
    /// many of them `old` has.
    private func changes(from old: Zone, in range: Range<TreeDictionary<DNSName, ZoneNode>.Index>) -> (
        changes: [(name: DNSName, type: RRType, set: RRSet?)], kept: Int
    ) {
        var out: [(name: DNSName, type: RRType, set: RRSet?)] = []
        var kept = 0  // names of `old` found in `self`
        for (name, node) in tree[range] {
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
        return (out, kept)
    }
}

extension RRSet {
    /// Whether `other` is this RRset in every octet sent: `==` compares names ignoring their
    /// letter case (RFC 4343), which a reply echoes as the zone has it.
    public func isIdentical(to other: RRSet) -> Bool {
        guard self == other, name.wire == other.name.wire else { return false }
        return zip(rdatas, other.rdatas).allSatisfy { a, b in
            switch (a, b) {
            case (.soa(let x), .soa(let y)): x.mname.wire == y.mname.wire && x.rname.wire == y.rname.wire
            default: a.target?.wire == b.target?.wire
            }
        }
    }
}
