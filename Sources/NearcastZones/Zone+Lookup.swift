import CMemoryHints
import DNSWire
import HashTreeCollections

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

    /// What one name resolves to inside this zone (one step of RFC 1034 §4.3.2). `wildcard`: the
    /// wildcard that stands for the name, when one does (a signed answer proves why).
    enum Step {
        case answer(RRSet, owner: DNSName, wildcard: DNSName?)
        case cname(RRSet, owner: DNSName, target: DNSName, wildcard: DNSName?)
        /// A DNAME above the name (RFC 6672 §3.2): `target` is the name with the DNAME's owner
        /// replaced by its target; nil when that name would be longer than 255 octets.
        case dname(RRSet, target: DNSName?)
        case referral(cut: DNSName)
        case noData(wildcard: DNSName?)
        /// No such name: `encloser` is its closest encloser.
        case nxDomain(encloser: DNSName)
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
        // (A hashed owner name of NSEC3 is not a name of the zone's: RFC 5155 §7.2.8.)
        if let node = tree[name], !node.isHashedOwner {
            if node.sets.isEmpty { return .noData(wildcard: nil) }  // an empty non-terminal
            let step = match(node, qtype, owner: name, wildcard: nil)
            // NODATA at a wildcard's own name is proved as a wildcard's (RFC 5155 §7.2.5), as NSD does.
            if case .noData = step, name.isWildcard { return .noData(wildcard: name) }
            return step
        }
        // Wildcard (RFC 4592): the source of synthesis is `*.` + the closest encloser.
        var ce = name.parent
        while ce != origin, tree[ce] == nil || tree[ce]!.isHashedOwner { ce = ce.parent }
        if let wild = ce.wildcardChild, let node = tree[wild], !node.sets.isEmpty {
            return match(node, qtype, owner: name, wildcard: wild)
        }
        return .nxDomain(encloser: ce)
    }

    /// What the zone holds at a name that exists, and what that says of the questions about it
    /// and the names below it, read in one lookup (`node(at:)`): the answer image asks it of every
    /// name, where `types(at:)`, `answersNODATA` and `answersNXDOMAIN` made a lookup each.
    public struct NameNode: Sendable {
        /// The RRsets at the name (none at an empty non-terminal).
        public let sets: [RRSet]
        /// A delegation at an ancestor below the apex, or a DNAME at an ancestor, answers the
        /// name otherwise than from its node.
        let redirectedAbove: Bool
        /// The name is a delegation point (below the apex).
        let cut: Bool
        let ownersBelow: UInt32
        /// The name is a hashed owner name of NSEC3, which answers as a name that does not exist.
        let hashed: Bool

        /// The name is a delegation point below the apex.
        public var isDelegation: Bool { cut }
        /// A delegation or a DNAME above the name redirects it: its data (glue) is not the zone's.
        public var isRedirected: Bool { redirectedAbove }
        /// The name is a hashed owner name of NSEC3.
        public var isHashedOwner: Bool { hashed }

        /// Whether each RRset answers the question of its type about the name as it is (what
        /// `step` finds: nothing at or above the name answers it otherwise).
        public var asTheyAre: Bool { !redirectedAbove && !cut && !hashed }

        /// Whether `qtype`, a type the name has no records of, is answered with the zone's NODATA
        /// (the SOA alone, nothing else); nil where `lookup` must say (the name has records of
        /// `qtype` or a CNAME, or ANY is asked). What `step` finds: the node, and NODATA there
        /// unless a delegation at or above it (but for DS at the delegation itself) or a DNAME
        /// above it redirects it first.
        public func answersNODATA(_ qtype: RRType) -> Bool? {
            guard qtype != .any, !hashed, !sets.contains(where: { $0.type == qtype || $0.type == .cname }) else {
                return nil
            }
            return !redirectedAbove && !(cut && qtype != .ds)
        }

        /// Whether a name directly below this one that the zone does not hold is answered with
        /// the zone's NXDOMAIN (the SOA alone, nothing else); nil where something lies below it
        /// (then `lookup` says). What `step` finds for such a name: no node, this one its closest
        /// encloser, no wildcard below it (nothing is); NXDOMAIN unless a delegation or DNAME at
        /// or above this name redirects it first.
        public var answersNXDOMAINBelow: Bool? {
            guard ownersBelow == 0, !hashed else { return nil }
            return asTheyAre && !sets.contains { $0.type == .dname }
        }
    }

    /// What the zone holds at `name` and what it says (`NameNode`); nil when `name` does not exist.
    public func node(at name: DNSName) -> NameNode? {
        tree[name].map { nameNode(name, $0) }
    }

    /// The names that exist (as `existingNamesUnordered` has them, in the trie's order) from the
    /// `start`th to before the `end`th, each with what the zone holds there, read from the trie as
    /// it is walked: no lookup of each (the answer image reads every name so, its threads a part of
    /// the order each).
    ///
    /// Two walks ahead of the body's bring what it reads into the cache before it reads it (a
    /// name's objects lie anywhere in memory, and the first touch of each was the retain that
    /// copied it out, which waits for memory: a third of the image's time at 1M names): the far
    /// one each name's RRsets, the near one, whose RRsets are in the cache by then, the bytes of
    /// their owner names and their records. A prefetch never faults, so the near one reads the
    /// RRsets' references as raw words, without a retain that would wait for them.
    public func forEachName(from start: Int, to end: Int, _ body: (DNSName, NameNode) -> Void) {
        guard start < end else { return }
        var i = tree.index(tree.startIndex, offsetBy: start)
        var far = Ahead(tree, i, start, by: Self.prefetchDistance, end: end)
        var near = Ahead(tree, i, start, by: Self.prefetchDistance / 2, end: end)
        let (nameOffset, rdatasOffset) = (Self.nameOffset, Self.rdatasOffset)
        for _ in start..<end {
            // (Read in place, these copy nothing out of the trie: passed to a closure, the
            // RRsets were retained, and the far walk waited for them.)
            if far.offset < end {
                nc_prefetch(unsafeBitCast(tree[far.index].value.sets, to: UnsafeRawPointer.self))
                far.advance(tree)
            }
            if near.offset < end {
                tree[near.index].value.sets.withUnsafeBytes { sets in
                    for at in stride(from: 0, to: sets.count, by: MemoryLayout<RRSet>.stride) {
                        nc_prefetch(sets.load(fromByteOffset: at + nameOffset, as: UnsafeRawPointer.self))
                        nc_prefetch(sets.load(fromByteOffset: at + rdatasOffset, as: UnsafeRawPointer.self))
                    }
                }
                near.advance(tree)
            }
            let (name, node) = tree[i]
            body(name, nameNode(name, node))
            tree.formIndex(after: &i)
        }
    }

    /// How many names ahead of `forEachName`'s body its far walk reads (16: 8 and 32 did no better).
    static let prefetchDistance = 16
    private static let nameOffset = MemoryLayout<RRSet>.offset(of: \RRSet.name)!
    private static let rdatasOffset = MemoryLayout<RRSet>.offset(of: \RRSet.rdatas)!

    /// A walk of the trie some names ahead of another.
    private struct Ahead {
        var index: TreeDictionary<DNSName, ZoneNode>.Index
        var offset: Int

        init(
            _ tree: TreeDictionary<DNSName, ZoneNode>, _ from: TreeDictionary<DNSName, ZoneNode>.Index,
            _ offset: Int, by distance: Int, end: Int
        ) {
            (index, self.offset) = (from, offset)
            while self.offset < min(offset + distance, end) { advance(tree) }
        }

        mutating func advance(_ tree: TreeDictionary<DNSName, ZoneNode>) {
            tree.formIndex(after: &index)
            offset += 1
        }
    }

    /// The number of names that exist (owners and empty non-terminals).
    public var nameCount: Int { tree.count }

    private func nameNode(_ name: DNSName, _ node: ZoneNode) -> NameNode {
        var above = false
        if !cuts.isEmpty || !dnames.isEmpty {
            above = name.ancestors(upTo: origin).contains { ($0 != origin && cuts.contains($0)) || dnames.contains($0) }
        }
        return NameNode(
            sets: node.sets, redirectedAbove: above, cut: name != origin && cuts.contains(name),
            ownersBelow: node.ownersBelow, hashed: node.isHashedOwner)
    }

    /// `NameNode.answersNXDOMAINBelow` of `name`; nil where `name` does not exist either.
    public func answersNXDOMAIN(below name: DNSName) -> Bool? { node(at: name)?.answersNXDOMAINBelow }

    /// `NameNode.answersNODATA` of `name`; nil where `name` does not exist either.
    public func answersNODATA(_ name: DNSName, _ qtype: RRType) -> Bool? { node(at: name)?.answersNODATA(qtype) }

    private func match(_ sets: ZoneNode, _ qtype: RRType, owner: DNSName, wildcard: DNSName?) -> Step {
        if let set = sets[qtype] { return .answer(set, owner: owner, wildcard: wildcard) }
        if qtype == .any {
            // RFC 8482: answer ANY with one RRset; the lowest type present is the deterministic
            // choice, a signed zone's RRSIG, NSEC and NSEC3 last (they are about the others).
            let dnssec: Set<RRType> = [.rrsig, .nsec, .nsec3]
            func rank(_ s: RRSet) -> UInt32 { (dnssec.contains(s.type) ? 1 << 16 : 0) | UInt32(s.type.rawValue) }
            if let set = sets.sets.min(by: { rank($0) < rank($1) }) {
                return .answer(set, owner: owner, wildcard: wildcard)
            }
            return .noData(wildcard: wildcard)
        }
        // The DNSSEC types a CNAME's owner has beside it (RRSIG, NSEC: RFC 4035 §2.5, RFC 2181
        // §10.1.1) are asked of the name itself, as Knot answers them (docs/CONFORMANCE.md).
        if let c = sets[.cname], case .cname(let target) = c.rdatas[0], !RRSet.isSignedZoneMeta(qtype) {
            return .cname(c, owner: owner, target: target, wildcard: wildcard)
        }
        return .noData(wildcard: wildcard)
    }

    /// Answers `qname`/`qtype` from this zone: positive answers with CNAME chasing inside the zone,
    /// referrals with glue, NODATA and NXDOMAIN with the SOA for negative caching. `dnssec` (the
    /// query's DO bit): in a signed zone, with the signatures and the proofs of nonexistence
    /// (RFC 4035 §3.1) the zone holds.
    public func lookup(_ qname: DNSName, _ qtype: RRType, dnssec: Bool = false) -> ZoneAnswer {
        var out = ZoneAnswer()
        var proofs = dnssec ? Proofs(self) : nil
        var name = qname
        var seen: Set<DNSName> = []
        for _ in 0..<Zone.maxCNAMEChain {
            switch step(name, qtype) {
            case .answer(let set, let owner, let wildcard):
                out.answer += proofs?.signed(set, at: owner) ?? set.records(owner: owner)
                if let wildcard, wildcard != name {
                    out.authority += proofs?.wildcardAnswer(name, wildcard: wildcard) ?? []
                }
                addAdditional(for: set, to: &out)
                if let proofs { out.additional = proofs.signedAdditional(out.additional) }
                return out
            case .cname(let set, let owner, let target, let wildcard):
                out.answer += proofs?.signed(set, at: owner) ?? set.records(owner: owner)
                if let wildcard { out.authority += proofs?.wildcardAnswer(name, wildcard: wildcard) ?? [] }
                seen.insert(name)
                guard target.isSubdomain(of: origin), !seen.contains(target) else { return out }
                name = target
            case .dname(let set, let target):
                // The DNAME, then the CNAME it stands for, with the DNAME's TTL (RFC 6672 §3.2);
                // then on as for a CNAME, unless CNAME was asked.
                // A chain that meets the same DNAME twice carries it once, as NSD sends it.
                for r in proofs?.signed(set) ?? set.records() where !out.answer.contains(r) { out.answer.append(r) }
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
                out.authority += proofs?.referral(cut) ?? []
                if out.answer.isEmpty { out.authoritative = false }
                for case .ns(let target) in ns.rdatas {
                    out.additional += glue(for: target)
                }
                out.additionalIsRequiredGlue = !out.additional.isEmpty
                return out
            case .noData(let wildcard):
                out.authority += proofs?.negativeSOA ?? [negativeSOA]
                out.authority += proofs?.noData(name, qtype, wildcard: wildcard) ?? []
                return out
            case .nxDomain(let encloser):
                out.rcode = .nxDomain
                out.authority += proofs?.negativeSOA ?? [negativeSOA]
                out.authority += proofs?.nameError(name, encloser: encloser) ?? []
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
