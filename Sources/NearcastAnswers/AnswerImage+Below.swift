import DNSWire

/// NXDOMAIN on the fast path (docs/ARCHITECTURE.md §2, "Negative answers"; `NC_QTYPE_BELOW` in
/// nearcast_abi.h).
///
/// Every name that exists gets an entry under `belowType`, saying what a query for a name directly
/// below it that does not exist is answered. After a miss, the fast path walks up the query's
/// labels and stops at the first name that has one: its closest encloser. So the set of names must
/// hold every name the slow path treats as existing, and may hold more: zone owners and empty
/// non-terminals, every apex, geo names and discovery targets and their ancestors, and the names of
/// each zone's SOA that lie below its apex. (The slow path compresses the SOA's names against the
/// query's labels: a query below one of those names ends its walk there, whose entry was taken
/// with the same compression.)
///
/// Each entry is the slow path's own answer to two probes below the name, of different lengths and
/// types: where both are the same NXDOMAIN (the zone's SOA alone, authoritative), once their
/// compression pointers are moved by the difference in length, it is that NXDOMAIN; anything else
/// (a wildcard's answer, a referral, a DNAME, REFUSED, a reply that does not move so) leaves what
/// lies below the name to the slow path (`.exists`).
extension AnswerImage {
    /// The type the walk's entries are kept under (NC_QTYPE_BELOW in nearcast_abi.h: 65535, which
    /// RFC 6895 reserves).
    public static let belowType: UInt16 = 0xFFFF

    /// Compression pointers an NXDOMAIN entry may hold (NC_NX_PTRS): the SOA's owner, MNAME, RNAME.
    public static let belowPointersMax = 4

    /// Bytes an NXDOMAIN entry's head takes before its sections (struct nc_nx_head).
    public static let belowHeadBytes = 24

    /// The labels the probes put below a name: no zone is expected to hold them, and a name that
    /// does gets `.exists`.
    static let probeLabels: [(label: String, type: RRType)] = [("nc--nx-probe", .a), ("nc--nx-probe-second", .aaaa)]

    /// The entries under `belowType` for every name that exists in `responder`'s zones.
    static func belowEntries(responder: Responder, maxSections: Int) -> [Entry] {
        let authority = responder.authority
        var names: Set<DNSName> = []
        for zone in authority.zones.values {
            names.formUnion(zone.existingNames)
            guard case .soa(let soa) = zone.soa.rdatas.first else { continue }
            for n in [soa.mname, soa.rname] where n.isSubdomain(of: zone.origin) {
                names.insert(n)
                names.formUnion(n.ancestors(upTo: zone.origin))
            }
        }
        if let geo = responder.geo {
            names.formUnion(geo.existingNames.filter { authority.zone(for: $0) != nil })
        }
        let lowered = Set(names.map { $0.lowercased() })
        return lowered.sorted().map {
            belowEntry($0, existing: lowered, responder: responder, maxSections: maxSections)
        }
    }

    /// The entry under `belowType` for `name` (lower-cased), one of the `existing` names.
    static func belowEntry(_ name: DNSName, existing: Set<DNSName>, responder: Responder, maxSections: Int) -> Entry {
        let exists = Entry(
            name: name.wire, qtype: belowType, flags: 0, ancount: 0, nscount: 0, arcount: 0, sections: [], checksum: 0,
            kind: .exists)
        var taken: [(entry: Entry, questionLength: Int, pointers: [Int])] = []
        for (label, type) in probeLabels {
            guard let probe = try? DNSName(labels: [Array(label.utf8)] + name.labels), !existing.contains(probe),
                let t = nxdomain(probe, type, responder: responder, maxSections: maxSections)
            else { return exists }
            taken.append(t)
        }
        // The second probe's reply must be the first's with every pointer moved by the difference.
        let (first, second) = (taken[0], taken[1])
        var moved = first.entry.sections
        let shift = second.questionLength - first.questionLength
        for at in first.pointers {
            let to = (Int(moved[at] & 0x3F) << 8 | Int(moved[at + 1])) + shift
            moved[at] = 0xC0 | UInt8(to >> 8)
            moved[at + 1] = UInt8(to & 0xFF)
        }
        guard first.pointers == second.pointers, moved == second.entry.sections,
            first.entry.flags == second.entry.flags, let zone = responder.authority.zone(for: name)
        else { return exists }
        var e = first.entry
        e.kind = .nxdomain(
            questionLength: first.questionLength, pointers: first.pointers, zone: zone.origin.lowercased().wire)
        return e
    }

    /// The slow path's reply to `probe`/`type` as an entry, its question's length and its pointers'
    /// offsets in the sections; nil unless it is an authoritative NXDOMAIN whose only record is
    /// the zone's SOA, whose pointers all point past the probe's first label, that fits an entry.
    static func nxdomain(_ probe: DNSName, _ type: RRType, responder: Responder, maxSections: Int)
        -> (entry: Entry, questionLength: Int, pointers: [Int])?
    {
        let query = try! DNSMessage(questions: [DNSQuestion(name: probe, type: type)]).serialize()
        guard let reply = responder.respond(to: query, transport: .tcp),
            let msg = try? DNSMessage(wire: reply),
            msg.rcode == .nxDomain, msg.header.aa, !msg.header.tc, msg.answers.isEmpty, msg.additional.isEmpty,
            msg.edns == nil, msg.authority.count == 1, msg.authority[0].type == .soa
        else { return nil }
        let start = 12 + probe.wire.count + 4
        let sections = Array(reply[start...])
        guard sections.count + belowHeadBytes <= maxSections, let pointers = soaPointers(sections),
            pointers.count <= belowPointersMax
        else { return nil }
        // Each points past the probe's first label: into the encloser's name, or the SOA itself.
        let pastLabel = 12 + 1 + Int(probe.wire[0])
        for at in pointers where (Int(sections[at] & 0x3F) << 8 | Int(sections[at + 1])) < pastLabel { return nil }
        func u16(_ at: Int) -> UInt16 { UInt16(reply[at]) << 8 | UInt16(reply[at + 1]) }
        let entry = Entry(
            name: probe.parent.lowercased().wire, qtype: belowType, flags: u16(2) & ~0x0100, ancount: 0,
            nscount: u16(8), arcount: 0, sections: sections, checksum: onesComplementSum(sections))
        return (entry, probe.wire.count, pointers)
    }

    /// The offsets of the compression pointers in `sections`, which hold one SOA record (owner,
    /// fixed fields, MNAME, RNAME, five numbers); nil when it is not that shape.
    static func soaPointers(_ sections: [UInt8]) -> [Int]? {
        var pointers: [Int] = []
        var i = 0
        func name() -> Bool {
            while i < sections.count {
                let b = sections[i]
                if b == 0 {
                    i += 1
                    return true
                }
                if b & 0xC0 == 0xC0 {
                    guard i + 1 < sections.count else { return false }
                    pointers.append(i)
                    i += 2
                    return true
                }
                guard b < 64 else { return false }
                i += Int(b) + 1
            }
            return false
        }
        guard name() else { return nil }
        i += 10  // type, class, TTL, RDLENGTH
        guard name(), name() else { return nil }
        i += 20
        return i == sections.count ? pointers : nil
    }
}
