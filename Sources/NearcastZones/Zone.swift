import DNSWire
import NearcastBasics

/// The records of one owner and type, with one TTL (RFC 2181 §5).
public struct RRSet: Hashable, Sendable {
    public var name: DNSName
    public var type: RRType
    public var ttl: UInt32
    public var rdatas: [RData]

    /// The records, with `owner` as the owner name (the query name for wildcard synthesis).
    public func records(owner: DNSName? = nil, ttl override: UInt32? = nil) -> [ResourceRecord] {
        rdatas.map { ResourceRecord(name: owner ?? name, type: type, ttl: override ?? ttl, rdata: $0) }
    }
}

/// One authoritative zone, checked and indexed for lookup. Immutable once built.
public struct Zone: Sendable {
    public let origin: DNSName
    /// owner → type → RRset.
    package let nodes: [DNSName: [RRType: RRSet]]
    /// Every owner name and every ancestor of one, down to the apex: names that exist (RFC 4592 §2.2.2),
    /// including empty non-terminals.
    let existing: Set<DNSName>
    /// Delegation points: names below the apex that own NS records.
    let cuts: Set<DNSName>
    /// Names that own a DNAME (RFC 6672), the apex included: the names below them are redirected
    /// (a zone holds no data there).
    let dnames: Set<DNSName>
    public let soa: RRSet
    public let recordCount: Int

    /// The SOA record placed in negative answers: TTL = min(SOA TTL, SOA MINIMUM) (RFC 2308 §3).
    public let negativeSOA: ResourceRecord

    /// Builds a zone from parsed records and checks it: SOA and NS at the apex, no out-of-zone data,
    /// CNAME alone at its name, one DNAME at most at a name and nothing below it, one TTL per RRset, nothing but glue below a delegation, glue present
    /// for in-bailiwick name servers. Every problem is reported, each with its file and line.
    public static func build(origin: DNSName, records: [SourcedRecord], sourceName: String) throws(DiagnosticsError)
        -> Zone
    {
        var diags: [Diagnostic] = []
        var nodes: [DNSName: [RRType: RRSet]] = [:]
        var firstLine: [DNSName: [RRType: (String, Int)]] = [:]
        var count = 0
        for src in records {
            let rr = src.record
            func fail(_ m: String) { diags.append(Diagnostic(file: src.file, line: src.line, message: m)) }
            guard rr.name.isSubdomain(of: origin) else {
                fail("\(rr.name) is outside the zone \(origin)")
                continue
            }
            if var set = nodes[rr.name]?[rr.type] {
                if set.ttl != rr.ttl {
                    let (f, l) = firstLine[rr.name]![rr.type]!
                    fail(
                        "TTL \(rr.ttl) differs from TTL \(set.ttl) of the same RRset \(rr.name) \(rr.type) at \(f):\(l) (RFC 2181 §5.2)"
                    )
                    continue
                }
                if set.rdatas.contains(rr.rdata) { continue }  // duplicates are dropped (RFC 2181 §5)
                set.rdatas.append(rr.rdata)
                nodes[rr.name]![rr.type] = set
            } else {
                nodes[rr.name, default: [:]][rr.type] = RRSet(
                    name: rr.name, type: rr.type, ttl: rr.ttl, rdatas: [rr.rdata])
                firstLine[rr.name, default: [:]][rr.type] = (src.file, src.line)
            }
            count += 1
        }
        func at(_ name: DNSName, _ type: RRType) -> (String, Int) {
            firstLine[name]?[type] ?? (sourceName, 0)
        }
        func fail(_ name: DNSName, _ type: RRType, _ m: String) {
            let (f, l) = at(name, type)
            diags.append(Diagnostic(file: f, line: l, message: m))
        }

        // Apex.
        let apex = nodes[origin] ?? [:]
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
        for (name, sets) in nodes {
            if name != origin, sets[.soa] != nil {
                fail(name, .soa, "SOA record at \(name), which is not the zone apex \(origin)")
            }
            if let c = sets[.cname] {
                if c.rdatas.count > 1 {
                    fail(name, .cname, "\(name) has \(c.rdatas.count) CNAME records; at most one is allowed")
                }
                let others = sets.keys.filter { $0 != .cname }.sorted()
                if !others.isEmpty {
                    fail(
                        name, .cname,
                        "\(name) has a CNAME and other data (\(others.map(\.description).joined(separator: ", "))); a CNAME must be alone (RFC 1034 §3.6.2)"
                    )
                }
            }
        }

        let dnames = Set(nodes.compactMap { name, sets in sets[.dname] != nil ? name : nil })
        for (name, sets) in nodes {
            if let d = sets[.dname], d.rdatas.count > 1 {
                fail(
                    name, .dname, "\(name) has \(d.rdatas.count) DNAME records; at most one is allowed (RFC 6672 §2.4)")
            }
            // As NSD does: a name below a DNAME is redirected, so data there would never be served.
            if !dnames.isEmpty, let d = name.ancestors(upTo: origin).first(where: dnames.contains) {
                for t in sets.keys.sorted() {
                    fail(name, t, "\(name) \(t) is below the DNAME at \(d) and would never be served (RFC 6672 §2.3)")
                }
            }
        }

        // Delegations and what lies below them.
        let cuts = Set(nodes.compactMap { name, sets in name != origin && sets[.ns] != nil ? name : nil })
        func cut(above name: DNSName, includingSelf: Bool) -> DNSName? {
            if includingSelf && cuts.contains(name) { return name }
            for a in name.ancestors(upTo: origin) where a != origin && cuts.contains(a) { return a }
            return nil
        }
        for (name, sets) in nodes {
            if cuts.contains(name) {
                for t in sets.keys where t != .ns && t != .ds && t != .a && t != .aaaa {
                    fail(name, t, "\(name) \(t): only NS, DS and glue may be at the delegation point \(name)")
                }
            }
            if let c = cut(above: name, includingSelf: false) {
                for t in sets.keys where t != .a && t != .aaaa {
                    fail(
                        name, t,
                        "\(name) \(t) is below the delegation \(c) and would never be served; only glue (A/AAAA) may be there"
                    )
                }
            }
        }
        for c in cuts.sorted() {
            for case .ns(let target) in nodes[c]![.ns]!.rdatas
            where target.isSubdomain(of: c) || cut(above: target, includingSelf: true) != nil {
                let t = nodes[target]
                if t?[.a] == nil && t?[.aaaa] == nil {
                    fail(
                        c, .ns,
                        "delegation \(c) names server \(target) inside the delegated zone but has no glue (A or AAAA) for it"
                    )
                }
            }
        }
        if !diags.isEmpty || soa == nil {
            throw DiagnosticsError(diags.sorted { ($0.file, $0.line) < ($1.file, $1.line) })
        }

        var existing = Set<DNSName>()
        for name in nodes.keys {
            existing.insert(name)
            for a in name.ancestors(upTo: origin) { existing.insert(a) }
        }
        guard case .soa(let soaData) = soa!.rdatas[0] else { fatalError("SOA set holds non-SOA data") }
        let negative = ResourceRecord(
            name: origin, type: .soa, ttl: min(soa!.ttl, soaData.minimum), rdata: soa!.rdatas[0])
        return Zone(
            origin: origin, nodes: nodes, existing: existing, cuts: cuts, dnames: dnames, soa: soa!, recordCount: count,
            negativeSOA: negative)
    }

    /// Loads and checks a zone file.
    public static func load(path: String, origin: DNSName) throws(DiagnosticsError) -> Zone {
        let records = try ZoneFileParser.parse(path: path, origin: origin)
        return try build(origin: origin, records: records, sourceName: path)
    }

    /// The RRset at `name` of `type`, if any (exact match, no wildcard).
    public func rrset(_ name: DNSName, _ type: RRType) -> RRSet? { nodes[name]?[type] }

    /// All owner names, in canonical order.
    public var names: [DNSName] { nodes.keys.sorted() }

    /// Every name that exists in the zone: owners and their ancestors down to the apex (empty
    /// non-terminals included), whatever lies below a delegation or a DNAME too.
    public var existingNames: Set<DNSName> { existing }

    /// The types that have records at `name`.
    public func types(at name: DNSName) -> [RRType] { nodes[name].map { Array($0.keys) } ?? [] }
}
