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
}

extension Zone {
    /// The longest CNAME chain followed inside one zone before giving up (loops end here too).
    public static let maxCNAMEChain = 16

    /// What one name resolves to inside this zone (one step of RFC 1034 §4.3.2).
    enum Step {
        case answer(RRSet, owner: DNSName)
        case cname(RRSet, owner: DNSName, target: DNSName)
        case referral(cut: DNSName)
        case noData
        case nxDomain
    }

    func step(_ name: DNSName, _ qtype: RRType) -> Step {
        // A delegation on the way down (or at the name itself, except for DS, which the parent answers).
        if !cuts.isEmpty {
            for a in name.ancestors(upTo: origin).reversed() where a != origin && cuts.contains(a) {
                return .referral(cut: a)
            }
            if cuts.contains(name) && qtype != .ds { return .referral(cut: name) }
        }
        if let sets = nodes[name] { return match(sets, qtype, owner: name) }
        if existing.contains(name) { return .noData }  // empty non-terminal
        // Wildcard (RFC 4592): the source of synthesis is `*.` + the closest encloser.
        var ce = name.parent
        while !existing.contains(ce) && ce != origin { ce = ce.parent }
        if let wild = ce.wildcardChild, let sets = nodes[wild] { return match(sets, qtype, owner: name) }
        return .nxDomain
    }

    private func match(_ sets: [RRType: RRSet], _ qtype: RRType, owner: DNSName) -> Step {
        if let set = sets[qtype] { return .answer(set, owner: owner) }
        if qtype == .any {
            // RFC 8482: answer ANY with one RRset; the lowest type present is the deterministic choice.
            if let t = sets.keys.min() { return .answer(sets[t]!, owner: owner) }
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
            case .referral(let cut):
                let ns = nodes[cut]![.ns]!
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

    /// A/AAAA records for a target name held in this zone (glue or in-zone data).
    func glue(for target: DNSName) -> [ResourceRecord] {
        guard target.isSubdomain(of: origin), let sets = nodes[target] else { return [] }
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
