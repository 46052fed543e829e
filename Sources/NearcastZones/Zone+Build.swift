import DNSWire
import Foundation
import HashTreeCollections
import NearcastBasics

extension Zone {
    /// Builds a zone from parsed records and checks it: SOA and NS at the apex, no out-of-zone
    /// data, CNAME alone at its name, one DNAME at most at a name and nothing below it, one TTL per
    /// RRset, nothing but glue below a delegation, glue present for in-bailiwick name servers.
    /// Every problem is reported, each with its file and line.
    ///
    /// A large zone's names are taken into the trie on every core (`Gathered`), each thread the
    /// names of its own buckets at the trie's root, and the tries joined at their roots.
    public static func build(origin: DNSName, records: [SourcedRecord], sourceName: String) throws(DiagnosticsError)
        -> Zone
    {
        try build(origin: origin, parts: [records], sourceName: sourceName)
    }

    /// `build` of records read in parts (`ZoneFileParser.parseInParts`), as of the parts joined.
    public static func build(origin: DNSName, parts records: [[SourcedRecord]], sourceName: String)
        throws(DiagnosticsError) -> Zone
    {
        let records = RecordParts(records)
        // Not for small zones: the other threads' memory comes from malloc arenas of their own,
        // which keep some of what a reload frees. At 100k names (145k records), built and read on
        // two threads, RSS after a reload and 12,000 changes was about 1 MiB more (+5-6 % of after
        // load, against +3-5 %) for a start 60 ms faster (0.09 s against 0.15).
        let parts = records.count < 100_000 ? 1 : min(8, ProcessInfo.processInfo.activeProcessorCount)
        return try build(origin: origin, records: records, sourceName: sourceName, parts: parts)
    }

    /// `build`, with the names gathered in `parts` shares, each on a thread.
    static func build(origin: DNSName, records: [SourcedRecord], sourceName: String, parts: Int)
        throws(DiagnosticsError) -> Zone
    {
        try build(origin: origin, records: RecordParts([records]), sourceName: sourceName, parts: parts)
    }

    /// `build(origin:parts:sourceName:)`, with the names gathered in `shares` shares.
    static func build(origin: DNSName, parts records: [[SourcedRecord]], sourceName: String, shares: Int)
        throws(DiagnosticsError) -> Zone
    {
        try build(origin: origin, records: RecordParts(records), sourceName: sourceName, parts: shares)
    }

    private static func build(origin: DNSName, records: RecordParts, sourceName: String, parts: Int)
        throws(DiagnosticsError) -> Zone
    {
        let runs = RecordRuns(records, shares: parts)
        let shares = ParallelWork.map(Array(0..<parts), parts: parts, smallest: 1) { share in
            Gathered(records, runs: runs, origin: origin, share: share.first!)
        }
        var gathered = shares[0]
        for other in shares.dropFirst() { gathered.join(other) }
        let nodes = gathered.finish(origin: origin)
        let (cnames, dnames, cuts) = (gathered.cnames, gathered.dnames, gathered.cuts)

        // Where each RRset's first record is, for messages only: found when the first one is written.
        var firsts: [RRKey: Int]?
        func firstRecord(_ name: DNSName, _ type: RRType) -> SourcedRecord {
            if firsts == nil {
                var index: [RRKey: Int] = [:]
                for i in (0..<records.count).reversed() {
                    index[RRKey(name: records[i].record.name, type: records[i].record.type)] = i
                }
                firsts = index
            }
            return records[firsts![RRKey(name: name, type: type)] ?? 0]
        }
        var diags = gathered.outside.map { i in
            let src = records[i]
            return Diagnostic(
                file: src.file, line: src.line, message: "\(src.record.name) is outside the zone \(origin)")
        }
        for (i, ttl) in gathered.ttlsDiffering {
            let (src, rr) = (records[i], records[i].record)
            let first = firstRecord(rr.name, rr.type)
            diags.append(
                Diagnostic(
                    file: src.file, line: src.line,
                    message:
                        "TTL \(rr.ttl) differs from TTL \(ttl) of the same RRset \(rr.name) \(rr.type) at \(first.file):\(first.line) (RFC 2181 §5.2)"
                ))
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
        for name in gathered.soaOwners where name != origin {
            fail(name, .soa, "SOA record at \(name), which is not the zone apex \(origin)")
        }
        for name in cnames {
            let sets = nodes[name]!
            let c = sets[.cname]!
            if c.rdatas.count > 1 {
                fail(name, .cname, "\(name) has \(c.rdatas.count) CNAME records; at most one is allowed")
            }
            let others = sets.types.filter { $0 != .cname && !RRSet.isSignedZoneMeta($0) }.sorted()
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
            for t in nodes[name]!.types where t != .ns && t != .ds && !RRSet.isGlue(t) && !RRSet.isSignedZoneMeta(t) {
                fail(name, t, "\(name) \(t): only NS, DS, glue, NSEC and RRSIG may be at the delegation point \(name)")
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

        var zone = Zone(
            origin: origin, tree: nodes, cuts: TreeSet(cuts),
            dnames: TreeSet(dnames), servers: servers, soa: soa!, recordCount: gathered.count,
            negativeSOA: Self.negative(soa!))

        zone.referrers = gathered.referred
        if !gathered.nsecOwners.isEmpty || !gathered.nsec3Owners.isEmpty {
            zone.chains = DenialChains(nsecOwners: gathered.nsecOwners, nsec3Owners: gathered.nsec3Owners)
        }
        return zone
    }
}

/// What one pass over a zone's records gathers about the names of one share of it: their RRsets,
/// in a trie of their own, and what the checks and the indexes need. A share is the names whose
/// hash falls in some of the trie's 32 buckets at its root, so the shares' tries join by their
/// roots alone (`TreeDictionary.merge` takes a bucket only one side has as it is).
private struct Gathered: Sendable {
    var nodes: TreeDictionary<DNSName, ZoneNode> = [:]
    var count = 0
    // The owners the checks look at, noted as records come: a zone of millions of names is checked
    // without a walk over them all unless it has delegations or DNAMEs.
    var soaOwners: Set<DNSName> = []
    var cnames: Set<DNSName> = []
    var dnames: Set<DNSName> = []
    var cuts: Set<DNSName> = []
    /// The zone's names that CNAME, MX, SRV and NS records name → the owners of those records
    /// (`Zone.referrers`, made on each share's thread).
    var referred: TreeDictionary<DNSName, TreeSet<DNSName>> = [:]
    /// Records outside the zone, and records whose TTL differs from their RRset's (with that TTL),
    /// by index.
    var outside: [Int] = []
    var ttlsDiffering: [(Int, UInt32)] = []
    /// The owners of NSEC and NSEC3 RRsets (`Zone.chains`).
    var nsecOwners: [DNSName] = []
    var nsec3Owners: [DNSName] = []
    /// What the apex has below it, and what the names between the apex and a deeper owner have
    /// (counted when the shares are joined: such a name may be in another share).
    var apexCounts = ZoneNode()
    var aboveCounts: [(DNSName, owners: UInt32, nonGlue: UInt32)] = []

    /// Gathers the names of share `share` of `parts` from `records`. An owner's records come
    /// together in a zone file, so each run of them is one insertion into the trie (a run that a
    /// part's end cuts in two is two: the second finds the name there).
    init(_ records: RecordParts, runs: RecordRuns, origin: DNSName, share: Int) {
        var nodes: TreeDictionary<DNSName, ZoneNode> = [:]
        defer { self.nodes = nodes }
        for (p, (part, base)) in zip(records.parts, records.starts).enumerated() {
            gather(part, runs[p, share], base: base, origin: origin, into: &nodes)
        }
    }

    /// Gathers the names of `runs` of `records`, the part of the zone's records that begins at
    /// index `base`.
    private mutating func gather(
        _ records: [SourcedRecord], _ runs: [UInt64], base: Int, origin: DNSName,
        into nodes: inout TreeDictionary<DNSName, ZoneNode>
    ) {
        for run in runs {
            let (start, end) = RecordRuns.bounds(run)
            let name = records[start].record.name
            guard name.isSubdomain(of: origin) else {
                outside += (base + start)..<(base + end)
                continue
            }
            let (newOwner, nonGlue) = add(
                records, start..<end, base: base, origin: origin, to: &nodes[name, default: ZoneNode()])
            guard name.wire.count > origin.wire.count, newOwner || nonGlue > 0 else { continue }
            let owners: UInt32 = newOwner ? 1 : 0
            apexCounts.countBelow(owners: owners, nonGlue: nonGlue)
            var a = name.parent
            while a.wire.count > origin.wire.count {
                // Names listed in order share their parents: one entry for a run of them.
                if let last = aboveCounts.last, last.0 == a {
                    aboveCounts[aboveCounts.count - 1] = (a, last.owners + owners, last.nonGlue + nonGlue)
                } else {
                    aboveCounts.append((a, owners, nonGlue))
                }
                a = a.parent
            }
        }
    }

    /// Adds the records of `run`, all owned by the name of `node`; returns whether the name became
    /// an owner, and how many RRsets other than glue it gained.
    private mutating func add(
        _ records: [SourcedRecord], _ run: Range<Int>, base: Int, origin: DNSName, to node: inout ZoneNode
    ) -> (newOwner: Bool, nonGlue: UInt32) {
        let wasOwner = !node.sets.isEmpty
        var nonGlue: UInt32 = 0
        for i in run {
            let rr = records[i].record
            if Zone.refers(rr.type), let t = rr.rdata.target, t.isSubdomain(of: origin) {
                referred[t, default: []].insert(rr.name)
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
                if node.sets.count > sets && rr.type == .nsec { nsecOwners.append(rr.name) }
                if node.sets.count > sets && rr.type == .nsec3 { nsec3Owners.append(rr.name) }
                if node.sets.count > sets && !RRSet.isGlue(rr.type) { nonGlue += 1 }
            case .duplicate: continue  // duplicates are dropped (RFC 2181 §5)
            case .ttlDiffers(let ttl): ttlsDiffering.append((base + i, ttl))
            }
        }
        return (!wasOwner && !node.sets.isEmpty, nonGlue)
    }

    /// Takes in what another share gathered (its names are not in this one).
    mutating func join(_ other: Gathered) {
        nodes.merge(other.nodes) { mine, _ in mine }
        count += other.count
        soaOwners.formUnion(other.soaOwners)
        cnames.formUnion(other.cnames)
        dnames.formUnion(other.dnames)
        cuts.formUnion(other.cuts)
        referred.merge(other.referred) { $0.union($1) }
        outside += other.outside
        ttlsDiffering += other.ttlsDiffering
        nsecOwners += other.nsecOwners
        nsec3Owners += other.nsec3Owners
        apexCounts.countBelow(other.apexCounts)
        aboveCounts += other.aboveCounts
    }

    /// The names, with what lies below each counted and the empty non-terminals made.
    mutating func finish(origin: DNSName) -> TreeDictionary<DNSName, ZoneNode> {
        for (name, owners, nonGlue) in aboveCounts {
            nodes[name, default: ZoneNode()].countBelow(owners: owners, nonGlue: nonGlue)
        }
        nodes[origin, default: ZoneNode()].countBelow(apexCounts)
        aboveCounts = []
        return nodes
    }
}

/// A zone file's records as read in parts (`ZoneFileParser.parseInParts`), in the file's order,
/// indexed as one list (for messages, which name a record by its index).
struct RecordParts: Sendable {
    /// The parts that hold records, and the index of each one's first record.
    let parts: [[SourcedRecord]]
    let starts: [Int]
    let count: Int

    init(_ parts: [[SourcedRecord]]) {
        self.parts = parts.filter { !$0.isEmpty }
        starts = Array(self.parts.reduce(into: [0]) { $0.append($0.last! + $1.count) }.dropLast())
        count = parts.reduce(0) { $0 + $1.count }
    }

    subscript(i: Int) -> SourcedRecord {
        let part = starts.lastIndex { $0 <= i }!
        return parts[part][i - starts[part]]
    }
}

/// Each part's runs of one owner's records, by the share of the trie's root they go to: found
/// once, a thread for each part, so that each share's thread reads its own records and no other
/// (each read all of them, and hashed every owner, to find its own: at 10M names a pass over
/// gigabytes).
struct RecordRuns: Sendable {
    /// [part][share]: the runs, each its first record's index in the part and its end.
    private let runs: [[[UInt64]]]

    init(_ records: RecordParts, shares: Int) {
        runs = ParallelWork.map(Array(records.parts.indices), parts: records.parts.count, smallest: 1) { indices in
            indices.map { p in
                let part = records.parts[p]
                var byShare = Array(repeating: [UInt64](), count: shares)
                var start = 0
                while start < part.count {
                    let name = part[start].record.name
                    var end = start + 1
                    while end < part.count && part[end].record.name == name { end += 1 }
                    // The bucket at the trie's root is the low 5 bits of the hash it uses (hashValue).
                    let share = shares == 1 ? 0 : Int(UInt(bitPattern: name.hashValue) & 31) % shares
                    byShare[share].append(UInt64(start) << 32 | UInt64(end))
                    start = end
                }
                return byShare
            }
        }.flatMap { $0 }
    }

    subscript(part: Int, share: Int) -> [UInt64] { runs[part][share] }

    static func bounds(_ run: UInt64) -> (Int, Int) { (Int(run >> 32), Int(run & 0xFFFF_FFFF)) }
}
