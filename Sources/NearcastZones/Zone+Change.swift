import DNSWire
import HashTreeCollections
import NearcastBasics

/// One change of a zone: records removed and records added, as a dynamic update (RFC 2136) or an
/// IXFR difference (RFC 1995) carries them, with the SOA serial before and after. What the journal
/// keeps (ZoneJournal) and what a change through the API makes.
public struct ZoneChangeset: Equatable, Sendable {
    public var serialBefore: UInt32
    public var serialAfter: UInt32
    public var removed: [ResourceRecord]
    public var added: [ResourceRecord]

    public init(serialBefore: UInt32, serialAfter: UInt32, removed: [ResourceRecord], added: [ResourceRecord]) {
        self.serialBefore = serialBefore
        self.serialAfter = serialAfter
        self.removed = removed
        self.added = added
    }
}

extension Zone {
    /// The zone after `changes`, each the whole RRset of a name and type afterwards (nil or no
    /// records: none there any more), checked as `build` checks a whole zone but only where the
    /// changes reach (docs/ARCHITECTURE.md §15): the changed names, the delegations and DNAMEs
    /// above them, what the counts say lies below them, and the delegations that name them as
    /// servers. The result shares everything else with `self`; `self` is untouched. Problems are
    /// reported against `source` (no line: the change has none).
    public func changing(_ changes: [(name: DNSName, type: RRType, set: RRSet?)], source: String)
        throws(DiagnosticsError) -> Zone
    {
        var next = self
        var touched: [DNSName: Set<RRType>] = [:]
        var newCuts: [DNSName] = []
        for c in changes {
            guard c.name.isSubdomain(of: origin) else {
                throw DiagnosticsError([
                    Diagnostic(file: source, line: 0, message: "\(c.name) is outside the zone \(origin)")
                ])
            }
            var set = c.set
            if let s = set, s.rdatas.isEmpty { set = nil }
            let wasCut = next.cuts.contains(c.name)
            next.put(c.name, c.type, set)
            touched[c.name, default: []].insert(c.type)
            if !wasCut && next.cuts.contains(c.name) { newCuts.append(c.name) }
        }
        try next.check(touched: touched, newCuts: newCuts, source: source)
        return next
    }

    /// The zone with each of `sets` as its whole RRset of that name and type (nil or no records:
    /// none), checked as `changing` checks, and its SOA's serial `serial` (an SOA among `sets`
    /// gives the SOA's other fields; its own serial is not used): what a follower of a fleet's
    /// store applies, whose serial is derived, not stored (docs/ARCHITECTURE.md §13); an RRset
    /// given more than once is the last one given. With it,
    /// the changeset that makes it, as the zone's journal keeps it (RRsets that are the same
    /// octet for octet are not in it).
    public func replacing(_ sets: [(name: DNSName, type: RRType, set: RRSet?)], serial: UInt32, source: String)
        throws(DiagnosticsError) -> (zone: Zone, changeset: ZoneChangeset)
    {
        var changes: [(name: DNSName, type: RRType, set: RRSet?)] = []
        var removed: [ResourceRecord] = []
        var added: [ResourceRecord] = []
        func note(_ old: RRSet?, _ new: RRSet?) {
            removed += old?.records() ?? []
            added += new?.records() ?? []
        }
        var soaFields = soa
        // An RRset given more than once (changes of one key taken together) is its last.
        var last: [RRKey: Int] = [:]
        for (i, c) in sets.enumerated() { last[RRKey(name: c.name, type: c.type)] = i }
        for (i, c) in sets.enumerated() where last[RRKey(name: c.name, type: c.type)] == i {
            if c.type == .soa && c.name == origin {
                guard let given = c.set else {
                    throw DiagnosticsError([
                        Diagnostic(file: source, line: 0, message: "the zone would have no SOA record")
                    ])
                }
                soaFields = given
                continue
            }
            let new = c.set.flatMap { $0.rdatas.isEmpty ? nil : $0 }
            let old = rrset(c.name, c.type)
            if let old, let new, old.isIdentical(to: new) { continue }
            if old == nil && new == nil { continue }
            note(old, new)
            changes.append((c.name, c.type, new))
        }
        guard soaFields.rdatas.count == 1, case .soa(var fields) = soaFields.rdatas[0] else {
            throw DiagnosticsError([
                Diagnostic(file: source, line: 0, message: "the zone's SOA RRset must be one SOA record")
            ])
        }
        fields.serial = serial
        var newSOA = soaFields
        newSOA.rdatas = [.soa(fields)]
        if !newSOA.isIdentical(to: soa) {
            note(soa, newSOA)
            changes.append((origin, .soa, newSOA))
        }
        let next = try changing(changes, source: source)
        return (next, ZoneChangeset(serialBefore: self.serial, serialAfter: serial, removed: removed, added: added))
    }

    /// The zone after `changeset` (its records removed, then added, the SOA as it says), checked as
    /// `changing` checks. Removing a record that is not there, or adding one that is, is an error:
    /// the changeset was made for another state of the zone.
    public func applying(_ changeset: ZoneChangeset, source: String) throws(DiagnosticsError) -> Zone {
        func fail(_ m: String) -> DiagnosticsError { DiagnosticsError([Diagnostic(file: source, line: 0, message: m)]) }
        guard serial == changeset.serialBefore else {
            throw fail("the change is from serial \(changeset.serialBefore), the zone is at \(serial)")
        }
        var sets: [RRKey: RRSet?] = [:]
        func current(_ k: RRKey) -> RRSet? { sets[k] ?? rrset(k.name, k.type) }
        for r in changeset.removed {
            let k = RRKey(name: r.name, type: r.type)
            guard var s = current(k), let i = s.rdatas.firstIndex(of: r.rdata) else {
                throw fail("\(ZoneText.line(r)) is to be removed but is not in the zone")
            }
            s.rdatas.remove(at: i)
            sets[k] = .some(s.rdatas.isEmpty ? nil : s)
        }
        for r in changeset.added {
            let k = RRKey(name: r.name, type: r.type)
            var s = current(k) ?? RRSet(name: r.name, type: r.type, ttl: r.ttl, rdatas: [])
            guard !s.rdatas.contains(r.rdata) else { throw fail("\(ZoneText.line(r)) is to be added but is there") }
            s.ttl = r.ttl  // one TTL per RRset (RFC 2181 §5.2): the last added sets it
            s.rdatas.append(r.rdata)
            sets[k] = .some(s)
        }
        let next = try changing(sets.map { ($0.key.name, $0.key.type, $0.value) }, source: source)
        guard next.serial == changeset.serialAfter else {
            throw fail("the change should make serial \(changeset.serialAfter), it made \(next.serial)")
        }
        return next
    }

    /// A name and type, as a dictionary key.
    struct RRKey: Hashable {
        var name: DNSName
        var type: RRType
    }

    /// Sets the RRset of `name` and `type` (nil: removes it), keeping the counts of the names
    /// above, the empty non-terminals, and the indexes of delegations, DNAMEs and servers. No checks.
    mutating func put(_ name: DNSName, _ type: RRType, _ set: RRSet?) {
        var node = tree[name] ?? ZoneNode()
        let wasOwner = !node.sets.isEmpty
        let nonGlueBefore = node.nonGlue
        let old = node[type]
        if let old { recordCount -= old.rdatas.count }
        node.sets.removeAll { $0.type == type }
        if let set { node.sets.append(set) }
        if let set { recordCount += set.rdatas.count }
        let isOwner = !node.sets.isEmpty
        let nonGlueDelta = Int64(node.nonGlue) - Int64(nonGlueBefore)
        if isOwner || node.ownersBelow > 0 || name == origin { tree[name] = node } else { tree[name] = nil }

        // The names above: how many owners and RRsets that are not glue lie below each.
        let ownerDelta: Int64 = isOwner == wasOwner ? 0 : (isOwner ? 1 : -1)
        if ownerDelta != 0 || nonGlueDelta != 0 {
            var a = name
            while a.wire.count > origin.wire.count {
                a = a.parent
                var above = tree[a] ?? ZoneNode()
                above.ownersBelow = UInt32(Int64(above.ownersBelow) + ownerDelta)
                above.nonGlueBelow = UInt32(Int64(above.nonGlueBelow) + nonGlueDelta)
                if above.sets.isEmpty && above.ownersBelow == 0 && a != origin {
                    tree[a] = nil
                } else {
                    tree[a] = above
                }
            }
        }

        if Self.refers(type) {
            for rd in old?.rdatas ?? [] {
                guard let t = rd.target, t.isSubdomain(of: origin) else { continue }
                referrers[t]?.remove(name)
                if referrers[t]?.isEmpty == true { referrers[t] = nil }
            }
            for rd in set?.rdatas ?? [] {
                guard let t = rd.target, t.isSubdomain(of: origin) else { continue }
                referrers[t, default: []].insert(name)
            }
        }
        if type == .nsec || type == .nsec3, (old == nil) != (set == nil) {
            chains.note(name, type, present: set != nil)
        }
        switch type {
        case .soa where name == origin:
            if let set, !set.rdatas.isEmpty, case .soa = set.rdatas[0] {
                soa = set
                negativeSOA = Self.negative(set)
            }
        case .dname:
            if set == nil { dnames.remove(name) } else { dnames.insert(name) }
        case .ns where name != origin:
            for case .ns(let target) in old?.rdatas ?? [] {
                servers[target]?.removeAll { $0 == name }
                if servers[target]?.isEmpty == true { servers[target] = nil }
            }
            for case .ns(let target) in set?.rdatas ?? [] { servers[target, default: []].append(name) }
            if set == nil { cuts.remove(name) } else { cuts.insert(name) }
        default: break
        }
    }

    /// The checks of `build`, at the names and types `touched` changed, as the zone is now.
    func check(touched: [DNSName: Set<RRType>], newCuts: [DNSName], source: String) throws(DiagnosticsError) {
        var diags: [Diagnostic] = []
        func fail(_ m: String) { diags.append(Diagnostic(file: source, line: 0, message: m)) }
        func cut(above name: DNSName) -> DNSName? {
            if cuts.isEmpty { return nil }
            for a in name.ancestors(upTo: origin) where a != origin && cuts.contains(a) { return a }
            return nil
        }
        func needsGlue(_ target: DNSName, servedBy c: DNSName) -> Bool {
            target.isSubdomain(of: c) || cuts.contains(target) || cut(above: target) != nil
        }
        func hasAddress(_ name: DNSName) -> Bool { rrset(name, .a) != nil || rrset(name, .aaaa) != nil }
        func checkGlue(of c: DNSName) {
            for case .ns(let target) in rrset(c, .ns)?.rdatas ?? [] where needsGlue(target, servedBy: c) {
                if !hasAddress(target) {
                    fail(
                        "delegation \(c) names server \(target) inside the delegated zone but has no glue (A or AAAA) for it"
                    )
                }
            }
        }

        for (name, types) in touched.sorted(by: { $0.key < $1.key }) {
            let here = tree[name]
            let present = here?.sets.map(\.type).sorted() ?? []
            if name == origin {
                if let s = rrset(origin, .soa) {
                    if s.rdatas.count != 1 {
                        fail("zone \(origin) has \(s.rdatas.count) SOA records; it needs exactly one")
                    }
                } else {
                    fail("zone \(origin) has no SOA record at its apex")
                }
                if rrset(origin, .ns) == nil { fail("zone \(origin) has no NS records at its apex") }
            } else if rrset(name, .soa) != nil {
                fail("SOA record at \(name), which is not the zone apex \(origin)")
            }
            if let c = rrset(name, .cname) {
                if c.rdatas.count > 1 { fail("\(name) has \(c.rdatas.count) CNAME records; at most one is allowed") }
                let others = present.filter { $0 != .cname && !RRSet.isSignedZoneMeta($0) }
                if !others.isEmpty {
                    fail(
                        "\(name) has a CNAME and other data (\(others.map(\.description).joined(separator: ", "))); a CNAME must be alone (RFC 1034 §3.6.2)"
                    )
                }
            }
            if let d = rrset(name, .dname) {
                if d.rdatas.count > 1 {
                    fail("\(name) has \(d.rdatas.count) DNAME records; at most one is allowed (RFC 6672 §2.4)")
                }
                if let below = here?.ownersBelow, below > 0 {
                    fail(
                        "\(name) DNAME: \(below) name\(below == 1 ? "" : "s") below it would never be served (RFC 6672 §2.3)"
                    )
                }
            }
            if !present.isEmpty, !dnames.isEmpty, let d = name.ancestors(upTo: origin).first(where: dnames.contains) {
                fail("\(name) \(present[0]) is below the DNAME at \(d) and would never be served (RFC 6672 §2.3)")
            }
            if cuts.contains(name) {
                for t in present where t != .ns && t != .ds && !RRSet.isGlue(t) && !RRSet.isSignedZoneMeta(t) {
                    fail("\(name) \(t): only NS, DS, glue, NSEC and RRSIG may be at the delegation point \(name)")
                }
                if let n = here?.nonGlueBelow, n > 0 {
                    fail(
                        "\(name) NS: a delegation here would hide \(n) RRset\(n == 1 ? "" : "s") below it other than glue (only A/AAAA may be below a delegation)"
                    )
                }
                if types.contains(.ns) { checkGlue(of: name) }
            }
            if let c = cut(above: name) {
                for t in present where !RRSet.isGlue(t) {
                    fail(
                        "\(name) \(t) is below the delegation \(c) and would never be served; only glue (A/AAAA) may be there"
                    )
                }
            }
            // An address removed that a delegation needs as glue.
            if types.contains(.a) || types.contains(.aaaa), !hasAddress(name) {
                for c in servers[name] ?? [] where needsGlue(name, servedBy: c) {
                    fail("\(name) is a name server of the delegation \(c) inside it: its last glue address cannot go")
                }
            }
        }
        // A new delegation makes the servers other delegations name below it need glue.
        for c in newCuts where !servers.isEmpty {
            for (target, users) in servers where target.isSubdomain(of: c) && !hasAddress(target) {
                for u in users where u != c {
                    fail(
                        "delegation \(u) names server \(target) inside the delegated zone \(c) but has no glue (A or AAAA) for it"
                    )
                }
            }
        }
        if !diags.isEmpty { throw DiagnosticsError(diags) }
    }
}
