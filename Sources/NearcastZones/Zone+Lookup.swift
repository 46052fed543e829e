import DNSWire

/// The data part of an authoritative answer, before it is fitted into a message.
public struct ZoneAnswer: Hashable, Sendable {
    public var rcode: RCode = .noError
    public var authoritative = true
    public var answer: [ResourceRecord] = []
    public var authority: [ResourceRecord] = []
    public var additional: [ResourceRecord] = []
    /// True when `additional` holds glue a referral needs: if it does not fit, the reply is truncated
    /// (RFC 9471); other additional data is dropped silently.
    public var additionalIsRequiredGlue = false
    /// An Extended DNS Error (RFC 8914) for a reply with EDNS that says why it failed.
    public var extendedError: EDNSOption?
}

extension Zone {
    /// The longest CNAME chain followed inside one zone before giving up (loops end here too).
    public static let maxCNAMEChain = 16

    /// What one name resolves to inside this zone (one step of RFC 1034 §4.3.2).
    enum Step {
        case answer(RRSet, owner: DNSName)
        case cname(RRSet, owner: DNSName, target: DNSName)
        /// A DNAME above the name (RFC 6672 §3.2): `target` is the name with the DNAME's owner
        /// replaced by its target; nil when that name would be longer than 255 octets.
        case dname(RRSet, target: DNSName?)
        case referral(cut: DNSName)
        case noData
        case nxDomain
    }

    func step(_ name: DNSName, _ qtype: RRType) -> Step {
        // On the way down, the first delegation or DNAME met wins: a delegation (or one at the name
        // itself, except for DS, which the parent answers) is a referral, a DNAME above the name
        // redirects it. What lies below either is never reached: it is occluded.
        if !cuts.isEmpty || !dnames.isEmpty {
            for a in name.ancestors(upTo: origin).reversed() {
                if a != origin && cuts.contains(a) { return .referral(cut: a) }
                if dnames.contains(a), let set = tree[a]?[.dname] {
                    return .dname(set, target: substitute(name, a, set))
                }
            }
            if cuts.contains(name) && qtype != .ds { return .referral(cut: name) }
        }
        if let node = tree[name] {
            return node.sets.isEmpty ? .noData : match(node, qtype, owner: name)  // empty: a non-terminal
        }
        // Wildcard (RFC 4592): the source of synthesis is `*.` + the closest encloser.
        var ce = name.parent
        while tree[ce] == nil && ce != origin { ce = ce.parent }
        if let wild = ce.wildcardChild, let node = tree[wild], !node.sets.isEmpty {
            return match(node, qtype, owner: name)
        }
        return .nxDomain
    }

    /// Whether a name directly below `name` that the zone does not hold is answered with the
    /// zone's NXDOMAIN (the SOA alone, nothing else), read from `name`'s node where nothing lies
    /// below it; nil where something does, or `name` does not exist (then `lookup` says). What
    /// `step` finds for such a name: no node, `name` its closest encloser, no wildcard below it
    /// (nothing is); NXDOMAIN unless a delegation or DNAME at or above `name` redirects it first.
    /// One lookup where `lookup` makes three (the answer image asks it of every name).
    public func answersNXDOMAIN(below name: DNSName) -> Bool? {
        guard let node = tree[name], node.ownersBelow == 0 else { return nil }
        if !cuts.isEmpty || !dnames.isEmpty {
            for a in [name] + name.ancestors(upTo: origin) {
                if a != origin && cuts.contains(a) { return false }
                if dnames.contains(a) && tree[a]?[.dname] != nil { return false }
            }
        }
        return true
    }

    /// Whether `name` answers `qtype`, a type it has no records of, with the zone's NODATA (the SOA
    /// alone, nothing else), read from its node; nil where `lookup` must say (`name` does not
    /// exist, has records of `qtype` or a CNAME, or ANY is asked). What `step` finds for it: its
    /// node, and NODATA there unless a delegation at or above it (but for DS at the delegation
    /// itself) or a DNAME above it redirects it first.
    public func answersNODATA(_ name: DNSName, _ qtype: RRType) -> Bool? {
        guard qtype != .any, let node = tree[name], node[qtype] == nil, node[.cname] == nil else { return nil }
        if !cuts.isEmpty || !dnames.isEmpty {
            for a in name.ancestors(upTo: origin) {
                if a != origin && cuts.contains(a) { return false }
                if dnames.contains(a) && tree[a]?[.dname] != nil { return false }
            }
            if cuts.contains(name) && qtype != .ds { return false }
        }
        return true
    }

    /// The RRsets at `name` (nil when it does not exist), and whether each answers the question
    /// of its type about `name` as it is: what `step` finds when no delegation at or above `name`,
    /// nor a DNAME above it, answers it otherwise. One lookup where `types(at:)` and a `lookup`
    /// for each type make one each (the answer image asks this of every name).
    public func sets(at name: DNSName) -> (sets: [RRSet], asTheyAre: Bool)? {
        guard let node = tree[name] else { return nil }
        if !cuts.isEmpty || !dnames.isEmpty {
            if cuts.contains(name) && name != origin { return (node.sets, false) }
            for a in name.ancestors(upTo: origin) {
                if (a != origin && cuts.contains(a)) || dnames.contains(a) { return (node.sets, false) }
            }
        }
        return (node.sets, true)
    }

    private func match(_ sets: ZoneNode, _ qtype: RRType, owner: DNSName) -> Step {
        if let set = sets[qtype] { return .answer(set, owner: owner) }
        if qtype == .any {
            // RFC 8482: answer ANY with one RRset; the lowest type present is the deterministic choice.
            if let set = sets.sets.min(by: { $0.type < $1.type }) { return .answer(set, owner: owner) }
            return .noData
        }
        if let c = sets[.cname], case .cname(let target) = c.rdatas[0] {
            return .cname(c, owner: owner, target: target)
        }
        return .noData
    }

    /// Answers `qname`/`qtype` from this zone: positive answers with CNAME chasing inside the zone,
    /// referrals with glue, NODATA and NXDOMAIN with the SOA for negative caching.
    public func lookup(_ qname: DNSName, _ qtype: RRType) -> ZoneAnswer {
        var out = ZoneAnswer()
        var name = qname
        var seen: Set<DNSName> = []
        for _ in 0..<Zone.maxCNAMEChain {
            switch step(name, qtype) {
            case .answer(let set, let owner):
                out.answer += set.records(owner: owner)
                addAdditional(for: set, to: &out)
                return out
            case .cname(let set, let owner, let target):
                out.answer += set.records(owner: owner)
                seen.insert(name)
                guard target.isSubdomain(of: origin), !seen.contains(target) else { return out }
                name = target
            case .dname(let set, let target):
                // The DNAME, then the CNAME it stands for, with the DNAME's TTL (RFC 6672 §3.2);
                // then on as for a CNAME, unless CNAME was asked.
                // A chain that meets the same DNAME twice carries it once, as NSD sends it.
                for r in set.records() where !out.answer.contains(r) { out.answer.append(r) }
                guard let target else {
                    out.rcode = .yxDomain
                    out.extendedError = .extendedError(.other, text: "DNAME expansion became too large")  // as NSD says
                    return out
                }
                out.answer.append(ResourceRecord(name: name, type: .cname, ttl: set.ttl, rdata: .cname(target)))
                seen.insert(name)
                guard qtype != .cname, target.isSubdomain(of: origin), !seen.contains(target) else { return out }
                name = target
            case .referral(let cut):
                let ns = tree[cut]![.ns]!
                out.authority += ns.records()
                if out.answer.isEmpty { out.authoritative = false }
                for case .ns(let target) in ns.rdatas {
                    out.additional += glue(for: target)
                }
                out.additionalIsRequiredGlue = !out.additional.isEmpty
                return out
            case .noData:
                out.authority.append(negativeSOA)
                return out
            case .nxDomain:
                out.rcode = .nxDomain
                out.authority.append(negativeSOA)
                return out
            }
        }
        return out
    }

    /// `name` with its suffix `owner` replaced by the target of `owner`'s DNAME; nil when too long.
    /// The labels kept are lower-cased, so the reply does not depend on the letter case a client
    /// asked in (the reply cache and the fast path rely on that).
    func substitute(_ name: DNSName, _ owner: DNSName, _ dname: RRSet) -> DNSName? {
        guard case .unknown(let rdata) = dname.rdatas[0], let (target, _) = DNSName.uncompressed(rdata) else {
            return nil
        }
        let labels = name.lowercased().labels
        return try? DNSName(labels: Array(labels.prefix(labels.count - owner.labels.count)) + target.labels)
    }

    /// A/AAAA records for a target name held in this zone (glue or in-zone data).
    func glue(for target: DNSName) -> [ResourceRecord] {
        guard target.isSubdomain(of: origin), let sets = tree[target] else { return [] }
        return (sets[.a]?.records() ?? []) + (sets[.aaaa]?.records() ?? [])
    }

    /// Additional-section processing for NS, MX and SRV answers (RFC 1035 §3.3, RFC 2782).
    private func addAdditional(for set: RRSet, to out: inout ZoneAnswer) {
        guard set.type == .ns || set.type == .mx || set.type == .srv else { return }
        var done: Set<DNSName> = []
        for rd in set.rdatas {
            guard let t = rd.target, !done.contains(t) else { continue }
            done.insert(t)
            out.additional += glue(for: t)
        }
    }
}
