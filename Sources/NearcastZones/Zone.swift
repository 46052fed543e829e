import DNSWire
import HashTreeCollections
import NearcastBasics

/// The records of one owner and type, with one TTL (RFC 2181 §5).
public struct RRSet: Hashable, Sendable {
    public var name: DNSName
    public var type: RRType
    public var ttl: UInt32
    public var rdatas: [RData]

    public init(name: DNSName, type: RRType, ttl: UInt32, rdatas: [RData]) {
        self.name = name
        self.type = type
        self.ttl = ttl
        self.rdatas = rdatas
    }

    /// The records, with `owner` as the owner name (the query name for wildcard synthesis).
    public func records(owner: DNSName? = nil, ttl override: UInt32? = nil) -> [ResourceRecord] {
        rdatas.map { ResourceRecord(name: owner ?? name, type: type, ttl: override ?? ttl, rdata: $0) }
    }

    /// Types that may lie below a delegation (glue) and that a delegation itself may have beside NS and DS.
    static func isGlue(_ type: RRType) -> Bool { type == .a || type == .aaaa }
}

/// What a zone holds at one name that exists: its RRsets (none at an empty non-terminal), and
/// counts of what lies below it, which a change's checks read instead of walking the subtree.
struct ZoneNode: Sendable {
    /// The RRsets, in no order (a name has few; an array takes less memory than a dictionary).
    var sets: [RRSet] = []
    /// Owner names strictly below this one: an empty non-terminal exists while it is above 0.
    var ownersBelow: UInt32 = 0
    /// RRsets strictly below this name other than glue (A, AAAA): a delegation may be made here
    /// only while it is 0.
    var nonGlueBelow: UInt32 = 0

    subscript(type: RRType) -> RRSet? {
        for s in sets where s.type == type { return s }
        return nil
    }

    /// The types that have records here.
    var types: [RRType] { sets.map(\.type) }

    /// RRsets here that are not glue.
    var nonGlue: UInt32 { UInt32(sets.count { !RRSet.isGlue($0.type) }) }

    /// What `add` did with a record.
    enum Added {
        case added
        case duplicate
        /// The RRset has another TTL, `ttl`.
        case ttlDiffers(ttl: UInt32)
    }

    /// Adds `rr` to its RRset, while a zone is read.
    mutating func add(_ rr: ResourceRecord) -> Added {
        guard let i = sets.firstIndex(where: { $0.type == rr.type }) else {
            sets.append(RRSet(name: rr.name, type: rr.type, ttl: rr.ttl, rdatas: [rr.rdata]))
            return .added
        }
        if sets[i].ttl != rr.ttl { return .ttlDiffers(ttl: sets[i].ttl) }
        if sets[i].rdatas.contains(rr.rdata) { return .duplicate }
        sets[i].rdatas.append(rr.rdata)
        return .added
    }

    /// Counts what `other` counts below it as below this name too.
    mutating func countBelow(_ other: ZoneNode) {
        ownersBelow += other.ownersBelow
        nonGlueBelow += other.nonGlueBelow
    }

    /// Counts `owners` more owner names below this one, and `nonGlue` more RRsets that are not glue.
    mutating func countBelow(owners: UInt32, nonGlue: UInt32) {
        ownersBelow += owners
        nonGlueBelow += nonGlue
    }
}

/// One authoritative zone, checked and indexed for lookup.
///
/// Persistent (docs/ARCHITECTURE.md §15): its names live in a hash trie (`TreeDictionary`), so a
/// changed zone (`Zone+Change.swift`) is a new value that shares every part the change did not
/// touch with the one before, and costs O(log n) per changed name rather than a copy of the zone.
/// Lookups are by exact name and by walks up a name's ancestors (closest encloser, wildcards,
/// delegations), so no order is kept; canonical order is made when a zone is written out.
public struct Zone: Sendable {
    public let origin: DNSName
    /// What the zone holds, shared by its copies until one of them is changed: a zone is copied
    /// on every query's way (`Authority.zone(for:)`), and one reference is retained where the
    /// ten below would be.
    private var parts: Parts

    /// The zone's indexes and records (below), in one reference.
    private final class Parts: @unchecked Sendable {  // never changed while shared: `unique()`
        var tree: TreeDictionary<DNSName, ZoneNode>
        var cuts: TreeSet<DNSName>
        var dnames: TreeSet<DNSName>
        var servers: TreeDictionary<DNSName, [DNSName]>
        var referrers: TreeDictionary<DNSName, TreeSet<DNSName>> = [:]
        var soa: RRSet
        var recordCount: Int
        var negativeSOA: ResourceRecord
        var fromSeveralFiles = false

        init(
            tree: TreeDictionary<DNSName, ZoneNode>, cuts: TreeSet<DNSName>, dnames: TreeSet<DNSName>,
            servers: TreeDictionary<DNSName, [DNSName]>, soa: RRSet, recordCount: Int, negativeSOA: ResourceRecord
        ) {
            (self.tree, self.cuts, self.dnames, self.servers) = (tree, cuts, dnames, servers)
            (self.soa, self.recordCount, self.negativeSOA) = (soa, recordCount, negativeSOA)
        }

        func copy() -> Parts {
            let c = Parts(
                tree: tree, cuts: cuts, dnames: dnames, servers: servers, soa: soa, recordCount: recordCount,
                negativeSOA: negativeSOA)
            (c.referrers, c.fromSeveralFiles) = (referrers, fromSeveralFiles)
            return c
        }
    }

    init(
        origin: DNSName, tree: TreeDictionary<DNSName, ZoneNode>, cuts: TreeSet<DNSName>, dnames: TreeSet<DNSName>,
        servers: TreeDictionary<DNSName, [DNSName]>, soa: RRSet, recordCount: Int, negativeSOA: ResourceRecord
    ) {
        self.origin = origin
        parts = Parts(
            tree: tree, cuts: cuts, dnames: dnames, servers: servers, soa: soa, recordCount: recordCount,
            negativeSOA: negativeSOA)
    }

    /// Makes `parts` this zone's own before a change.
    private mutating func unique() {
        if !isKnownUniquelyReferenced(&parts) { parts = parts.copy() }
    }

    /// Every name that exists (RFC 4592 §2.2.2): owners, and the empty non-terminals above them
    /// down to the apex, whatever lies below a delegation or a DNAME too.
    var tree: TreeDictionary<DNSName, ZoneNode> {
        _read { yield parts.tree }
        _modify {
            unique()
            yield &parts.tree
        }
    }
    /// Delegation points: names below the apex that own NS records.
    var cuts: TreeSet<DNSName> {
        _read { yield parts.cuts }
        _modify {
            unique()
            yield &parts.cuts
        }
    }
    /// Names that own a DNAME (RFC 6672), the apex included: the names below them are redirected
    /// (a zone holds no data there).
    var dnames: TreeSet<DNSName> {
        _read { yield parts.dnames }
        _modify {
            unique()
            yield &parts.dnames
        }
    }
    /// The name servers delegations name → the delegations naming them: which names must keep
    /// glue (an index, so removing an address never scans the delegations).
    var servers: TreeDictionary<DNSName, [DNSName]> {
        _read { yield parts.servers }
        _modify {
            unique()
            yield &parts.servers
        }
    }
    /// The names of the zone that CNAME, MX, SRV or NS records name → the owners of those records:
    /// whose answers embed a name's data (a CNAME's chain, the additional addresses of MX, SRV
    /// and NS), so what a change reaches is found without a scan.
    var referrers: TreeDictionary<DNSName, TreeSet<DNSName>> {
        _read { yield parts.referrers }
        _modify {
            unique()
            yield &parts.referrers
        }
    }
    public internal(set) var soa: RRSet {
        get { parts.soa }
        set {
            unique()
            parts.soa = newValue
        }
    }
    public internal(set) var recordCount: Int {
        get { parts.recordCount }
        set {
            unique()
            parts.recordCount = newValue
        }
    }
    /// The SOA record placed in negative answers: TTL = min(SOA TTL, SOA MINIMUM) (RFC 2308 §3).
    public internal(set) var negativeSOA: ResourceRecord {
        get { parts.negativeSOA }
        set {
            unique()
            parts.negativeSOA = newValue
        }
    }
    /// Whether the zone was read from more than one file ($INCLUDE): a change cannot be written
    /// back to one file then.
    public internal(set) var fromSeveralFiles: Bool {
        get { parts.fromSeveralFiles }
        set {
            unique()
            parts.fromSeveralFiles = newValue
        }
    }

    /// Builds a zone from parsed records and checks it: SOA and NS at the apex, no out-of-zone data,
    /// CNAME alone at its name, one DNAME at most at a name and nothing below it, one TTL per RRset, nothing but glue below a delegation, glue present
    /// for in-bailiwick name servers. Every problem is reported, each with its file and line.
    public static func build(origin: DNSName, records: [SourcedRecord], sourceName: String) throws(DiagnosticsError)
        -> Zone
    {
        var diags: [Diagnostic] = []
        // Each name's RRsets, taken straight into the trie: an owner's records come together in a
        // zone file, so each run of them is one insertion, and what lies below each name is
        // counted as names and RRsets appear (a zone of millions of names is mostly this loop).
        var nodes: TreeDictionary<DNSName, ZoneNode> = [:]
        var count = 0
        // The owners the checks below look at, noted as records come: a zone of millions of names
        // is checked without a walk over them all unless it has delegations or DNAMEs.
        var soaOwners: Set<DNSName> = []
        var referred: [DNSName: [DNSName]] = [:]
        var cnames: Set<DNSName> = []
        var dnames: Set<DNSName> = []
        var cuts: Set<DNSName> = []
        // Where each RRset's first record is, for messages only: found when the first one is written.
        var firsts: [RRKey: Int]?
        func firstRecord(_ name: DNSName, _ type: RRType) -> SourcedRecord {
            if firsts == nil {
                var index: [RRKey: Int] = [:]
                for (i, src) in records.enumerated().reversed() {
                    index[RRKey(name: src.record.name, type: src.record.type)] = i
                }
                firsts = index
            }
            return records[firsts![RRKey(name: name, type: type)] ?? 0]
        }
        /// Adds the records of `run`, all owned by the name of `node`; returns whether the name
        /// became an owner, and how many RRsets other than glue it gained.
        func add(_ run: Range<Int>, to node: inout ZoneNode) -> (newOwner: Bool, nonGlue: UInt32) {
            let wasOwner = !node.sets.isEmpty
            var nonGlue: UInt32 = 0
            for src in records[run] {
                let rr = src.record
                if Self.refers(rr.type), let t = rr.rdata.target, t.isSubdomain(of: origin) {
                    referred[t, default: []].append(rr.name)
                }
                switch rr.type {
                case .soa: soaOwners.insert(rr.name)
                case .cname: cnames.insert(rr.name)
                case .dname: dnames.insert(rr.name)
                case .ns where rr.name != origin: cuts.insert(rr.name)
                default: break
                }
                let sets = node.sets.count
                switch node.add(rr) {
                case .added:
                    count += 1
                    if node.sets.count > sets && !RRSet.isGlue(rr.type) { nonGlue += 1 }
                case .duplicate: continue  // duplicates are dropped (RFC 2181 §5)
                case .ttlDiffers(let ttl):
                    let first = firstRecord(rr.name, rr.type)
                    diags.append(
                        Diagnostic(
                            file: src.file, line: src.line,
                            message:
                                "TTL \(rr.ttl) differs from TTL \(ttl) of the same RRset \(rr.name) \(rr.type) at \(first.file):\(first.line) (RFC 2181 §5.2)"
                        ))
                }
            }
            return (!wasOwner && !node.sets.isEmpty, nonGlue)
        }
        // Most names of a large zone sit right below the apex: counted for it at the end, and
        // only the deeper ones walk up their ancestors (making the empty non-terminals).
        var apexCounts = ZoneNode()
        var start = 0
        while start < records.count {
            let name = records[start].record.name
            var end = start + 1
            while end < records.count && records[end].record.name == name { end += 1 }
            defer { start = end }
            guard name.isSubdomain(of: origin) else {
                for src in records[start..<end] {
                    diags.append(
                        Diagnostic(file: src.file, line: src.line, message: "\(name) is outside the zone \(origin)"))
                }
                continue
            }
            let (newOwner, nonGlue) = add(start..<end, to: &nodes[name, default: ZoneNode()])
            guard name.wire.count > origin.wire.count, newOwner || nonGlue > 0 else { continue }
            let owners: UInt32 = newOwner ? 1 : 0
            apexCounts.countBelow(owners: owners, nonGlue: nonGlue)
            var a = name.parent
            while a.wire.count > origin.wire.count {
                nodes[a, default: ZoneNode()].countBelow(owners: owners, nonGlue: nonGlue)
                a = a.parent
            }
        }
        func at(_ name: DNSName, _ type: RRType) -> (String, Int) {
            guard nodes[name]?[type] != nil else { return (sourceName, 0) }
            let r = firstRecord(name, type)
            return (r.file, r.line)
        }
        func fail(_ name: DNSName, _ type: RRType, _ m: String) {
            let (f, l) = at(name, type)
            diags.append(Diagnostic(file: f, line: l, message: m))
        }

        // Apex.
        let apex = nodes[origin] ?? ZoneNode()
        var soa: RRSet?
        if let s = apex[.soa] {
            if s.rdatas.count != 1 {
                fail(origin, .soa, "zone \(origin) has \(s.rdatas.count) SOA records; it needs exactly one")
            }
            soa = s
        } else {
            diags.append(Diagnostic(file: sourceName, line: 0, message: "zone \(origin) has no SOA record at its apex"))
        }
        if apex[.ns] == nil {
            diags.append(Diagnostic(file: sourceName, line: 0, message: "zone \(origin) has no NS records at its apex"))
        }
        for name in soaOwners where name != origin {
            fail(name, .soa, "SOA record at \(name), which is not the zone apex \(origin)")
        }
        for name in cnames {
            let sets = nodes[name]!
            let c = sets[.cname]!
            if c.rdatas.count > 1 {
                fail(name, .cname, "\(name) has \(c.rdatas.count) CNAME records; at most one is allowed")
            }
            let others = sets.types.filter { $0 != .cname }.sorted()
            if !others.isEmpty {
                fail(
                    name, .cname,
                    "\(name) has a CNAME and other data (\(others.map(\.description).joined(separator: ", "))); a CNAME must be alone (RFC 1034 §3.6.2)"
                )
            }
        }
        for name in dnames {
            if let d = nodes[name]![.dname], d.rdatas.count > 1 {
                fail(
                    name, .dname, "\(name) has \(d.rdatas.count) DNAME records; at most one is allowed (RFC 6672 §2.4)")
            }
        }
        for name in cuts {
            for t in nodes[name]!.types where t != .ns && t != .ds && !RRSet.isGlue(t) {
                fail(name, t, "\(name) \(t): only NS, DS and glue may be at the delegation point \(name)")
            }
        }

        // Delegations and DNAMEs hide what lies below them: one walk over the names, only then.
        func cut(above name: DNSName, includingSelf: Bool) -> DNSName? {
            if cuts.isEmpty { return nil }
            if includingSelf && cuts.contains(name) { return name }
            var a = name
            while a.wire.count > origin.wire.count {
                a = a.parent
                if a != origin && cuts.contains(a) { return a }
            }
            return nil
        }
        if !dnames.isEmpty || !cuts.isEmpty {
            for (name, sets) in nodes {
                // As NSD does: a name below a DNAME is redirected, so data there would never be served.
                if !dnames.isEmpty, let d = name.ancestors(upTo: origin).first(where: dnames.contains) {
                    for t in sets.types.sorted() {
                        fail(
                            name, t, "\(name) \(t) is below the DNAME at \(d) and would never be served (RFC 6672 §2.3)"
                        )
                    }
                }
                if let c = cut(above: name, includingSelf: false) {
                    for t in sets.types where !RRSet.isGlue(t) {
                        fail(
                            name, t,
                            "\(name) \(t) is below the delegation \(c) and would never be served; only glue (A/AAAA) may be there"
                        )
                    }
                }
            }
        }
        var servers: TreeDictionary<DNSName, [DNSName]> = [:]
        for c in cuts.sorted() {
            for case .ns(let target) in nodes[c]![.ns]!.rdatas {
                servers[target, default: []].append(c)
                if target.isSubdomain(of: c) || cut(above: target, includingSelf: true) != nil {
                    let t = nodes[target]
                    if t?[.a] == nil && t?[.aaaa] == nil {
                        fail(
                            c, .ns,
                            "delegation \(c) names server \(target) inside the delegated zone but has no glue (A or AAAA) for it"
                        )
                    }
                }
            }
        }
        if !diags.isEmpty || soa == nil {
            throw DiagnosticsError(diags.sorted { ($0.file, $0.line) < ($1.file, $1.line) })
        }

        nodes[origin, default: ZoneNode()].countBelow(apexCounts)
        var zone = Zone(
            origin: origin, tree: nodes, cuts: TreeSet(cuts),
            dnames: TreeSet(dnames), servers: servers, soa: soa!, recordCount: count, negativeSOA: Self.negative(soa!))
        zone.referrers = TreeDictionary(uniqueKeysWithValues: referred.map { ($0.key, TreeSet($0.value)) })
        return zone
    }

    /// Whether records of `type` name another whose data their answers embed (`referrers`).
    static func refers(_ type: RRType) -> Bool { type == .cname || type == .mx || type == .srv || type == .ns }

    /// The owners of the CNAME, MX, SRV and NS records that name `name` (in no order).
    public func referrers(of name: DNSName) -> [DNSName] { referrers[name].map(Array.init) ?? [] }

    /// Whether `name` is a delegation point or owns a DNAME: what lies below it is answered
    /// otherwise than its own data.
    public func redirects(_ name: DNSName) -> Bool { cuts.contains(name) || dnames.contains(name) }

    /// The SOA record of negative answers for the SOA RRset `soa`.
    static func negative(_ soa: RRSet) -> ResourceRecord {
        guard case .soa(let data) = soa.rdatas[0] else { fatalError("SOA set holds non-SOA data") }
        return ResourceRecord(name: soa.name, type: .soa, ttl: min(soa.ttl, data.minimum), rdata: soa.rdatas[0])
    }

    /// Loads and checks a zone file.
    public static func load(path: String, origin: DNSName) throws(DiagnosticsError) -> Zone {
        let records = try ZoneFileParser.parse(path: path, origin: origin)
        var zone = try build(origin: origin, records: records, sourceName: path)
        zone.fromSeveralFiles = records.contains { $0.file != path }
        return zone
    }

    /// The RRset at `name` of `type`, if any (exact match, no wildcard).
    public func rrset(_ name: DNSName, _ type: RRType) -> RRSet? { tree[name]?[type] }

    /// All owner names, in canonical order.
    public var names: [DNSName] { tree.compactMap { $0.value.sets.isEmpty ? nil : $0.key }.sorted() }

    /// Owner names, in no order.
    public var owners: some Sequence<DNSName> { tree.lazy.filter { !$0.value.sets.isEmpty }.map(\.key) }

    /// Every name that exists in the zone: owners and their ancestors down to the apex (empty
    /// non-terminals included), whatever lies below a delegation or a DNAME too.
    public var existingNames: Set<DNSName> { Set(tree.keys) }

    /// The same names in no order, without a set made of them (a zone's every name).
    public var existingNamesUnordered: [DNSName] { Array(tree.keys) }

    /// Whether `name` exists in the zone (an owner or an empty non-terminal).
    public func exists(_ name: DNSName) -> Bool { tree[name] != nil }

    /// The types that have records at `name`.
    public func types(at name: DNSName) -> [RRType] { tree[name]?.sets.map(\.type) ?? [] }

    /// Every type some name of the zone has.
    public var typesPresent: Set<RRType> {
        var out: Set<RRType> = []
        for (_, node) in tree { for s in node.sets { out.insert(s.type) } }
        return out
    }

    /// Every record, in no order.
    public var records: [ResourceRecord] {
        var out: [ResourceRecord] = []
        out.reserveCapacity(recordCount)
        for (_, node) in tree { for s in node.sets { out += s.records() } }
        return out
    }

    /// The SOA serial.
    public var serial: UInt32 {
        guard case .soa(let s) = soa.rdatas[0] else { return 0 }
        return s.serial
    }
}
