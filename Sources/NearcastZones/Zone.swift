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
        rdatas.map { ResourceRecord(name: owner ?? name, type: type, ttl: override ?? ttl(of: $0), rdata: $0) }
    }

    /// The TTL of the record of `rdata` in this RRset: the RRset's, but for an RRSIG, whose
    /// RRset at a name holds the signatures of every type there, each with the TTL of the RRset
    /// it covers (RFC 4034 §3), which its Original TTL field states.
    public func ttl(of rdata: RData) -> UInt32 {
        guard type == .rrsig, let original = Signature(rdata)?.originalTTL else { return ttl }
        return original
    }

    /// Types that may lie below a delegation (glue) and that a delegation itself may have beside NS and DS.
    static func isGlue(_ type: RRType) -> Bool { type == .a || type == .aaaa }

    /// Types a signed zone has at every name it signs, a CNAME's owner and a delegation point
    /// included (RFC 4035 §2.3, §2.4, §2.5): they are not data a CNAME or a delegation excludes.
    static func isSignedZoneMeta(_ type: RRType) -> Bool { type == .rrsig || type == .nsec }
}

/// What a zone holds at one name that exists: its RRsets (none at an empty non-terminal), and
/// counts of what lies below it, which a change's checks read instead of walking the subtree.
struct ZoneNode: Equatable, Sendable {
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
        // (The RRSIGs at a name have the TTLs of the RRsets they cover: `RRSet.ttl(of:)`.)
        if sets[i].ttl != rr.ttl && rr.type != .rrsig { return .ttlDiffers(ttl: sets[i].ttl) }
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
        var chains = DenialChains()

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
            (c.referrers, c.fromSeveralFiles, c.chains) = (referrers, fromSeveralFiles, chains)
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

    /// Whether `other` is this zone as it is, unchanged: a copy that neither has changed since
    /// (they share their parts). O(1); a zone read again with the same records is not.
    public func isUnchanged(from other: Zone) -> Bool { parts === other.parts }

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
    /// The owners of the zone's NSEC and NSEC3 records in their chains' orders.
    var chains: DenialChains {
        _read { yield parts.chains }
        _modify {
            unique()
            yield &parts.chains
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
        let parts = try ZoneFileParser.parseInParts(path: path, origin: origin)
        var zone = try build(origin: origin, parts: parts, sourceName: path)
        zone.fromSeveralFiles = parts.contains { $0.contains { $0.file != path } }
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

    /// Every RRset, in no order, one at a time: a zone transfer walks millions of them without an
    /// array of them.
    public var rrsets: RRSets { RRSets(tree: tree) }

    /// The RRsets of a zone as a sequence (`rrsets`); it holds the zone's data as it was.
    public struct RRSets: Sequence, Sendable {
        let tree: TreeDictionary<DNSName, ZoneNode>

        public func makeIterator() -> Iterator { Iterator(nodes: tree.makeIterator()) }

        public struct Iterator: IteratorProtocol, Sendable {
            var nodes: TreeDictionary<DNSName, ZoneNode>.Iterator
            var pending: ArraySlice<RRSet> = []

            public mutating func next() -> RRSet? {
                while pending.isEmpty {
                    guard let (_, node) = nodes.next() else { return nil }
                    pending = node.sets[...]
                }
                return pending.popFirst()
            }
        }
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
