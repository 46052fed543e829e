import DNSWire
import NearcastBasics
import NearcastZones

/// The answers the fast path may send, computed by the slow path itself: one record per name.
///
/// For every name of every zone, the responder is asked the plain question (lower-case name, no
/// EDNS, over TCP so nothing is cut) of each type the name has. Positive authoritative replies
/// become the name's answers: the reply's flags and counts and its sections after the question,
/// whose names that equal the question point at it. The fast path keeps the query's own header and
/// question and appends these bytes, so both paths send the same reply by construction.
///
/// Negative answers are not stored per question. Each zone's apex holds the zone's negative
/// answer (`Negative`, AnswerImage+Negative.swift: the slow path's NXDOMAIN, its SOA moved with the
/// query's length; a few names near the SOA's own names hold their own), and each name says where
/// that answer stands for the slow path's: `nodata`,
/// for every type the name has no answer of; `nxdomain`, for a name directly below it that does
/// not exist. So a zone's NODATA and NXDOMAIN cost one answer, whatever its size.
/// Referrals, wildcards and geo discovery (SRV) names are always left to the slow path.
public struct AnswerImage: Sendable {
    /// One answer of a name: the reply to the question of its type.
    public struct Answer: Hashable, Sendable {
        public var qtype: UInt16
        /// The reply's flags word with RD clear (the fast path copies it from the query).
        public var flags: UInt16
        public var ancount: UInt16
        public var nscount: UInt16
        /// Additional records, not counting OPT (the fast path appends its own).
        public var arcount: UInt16
        public var sections: [UInt8]
        /// One's-complement sum of `sections` (folded, not inverted), as if at an even offset.
        public var checksum: UInt16
    }

    /// A name's record: its answers, and what its other types and the names below it are answered.
    public struct Name: Hashable, Sendable {
        /// Lower-cased uncompressed wire name.
        public var name: [UInt8]
        public var answers: [Answer] = []
        /// Every type the name has no answer of is the zone's NODATA; those the fast path adds
        /// (`geoTypes`) count as answered.
        public var nodata = false
        /// A name directly below it that does not exist is the zone's NXDOMAIN.
        public var nxdomain = false
        /// The wire length of the name (the end of this one) whose record holds its negative
        /// answer: its zone's apex, or another anchor (AnswerImage+Negative.swift); 0 when neither
        /// flag is set.
        public var apexLength = 0
        /// At an anchor (a zone's apex, say): the negative answer of the names it is closest to.
        public var negative: Negative?
        /// Types whose answers depend on the client (geo names): the fast path adds them.
        public var geoTypes: [UInt16] = []
        /// The name's zone is signed: a query with the DO bit is answered with `signedAnswers`,
        /// or is the slow path's, which adds the signatures and proofs (docs/ARCHITECTURE.md §18).
        public var signed = false
        /// In a signed zone, the answers to the questions of `answers` asked with the DO bit:
        /// each RRset with its signatures (the reply's OPT left out, as in every answer).
        public var signedAnswers: [Answer] = []

        public init(name: [UInt8]) { self.name = name }
    }

    public var names: [Name]
    /// Answers left out because their sections exceed the fast path's capacity.
    public var tooBig: Int

    /// RRSIG, NSEC and NSEC3, which only a resolver's debugging asks.
    static let dnssecTypes: Set<UInt16> = [RRType.rrsig.rawValue, RRType.nsec.rawValue, RRType.nsec3.rawValue]

    /// The types asked of a CNAME's owner beside those its chain ends at (its answer is the chain,
    /// one for each type asked): those clients ask of nearly every name.
    public static let askedOfEveryName: [RRType] = [.a, .aaaa, .https]

    /// Builds the image of every zone `responder` serves; answers hold at most `maxSections` bytes.
    /// `parts`: threads the names' records are made on (ParallelWork, at the caller's priority);
    /// the image is the same whatever their number.
    public static func build(responder: Responder, maxSections: Int, parts: Int = 1) -> AnswerImage {
        var names: [Name] = []
        var tooBig = 0
        for walk in walks(responder: responder, maxSections: maxSections) {
            let total = walk.total
            guard total > 0 else { continue }
            // Each thread puts its names' records in place in the image's array: gathered from
            // arrays of their own, the million records' copies (a retain and a release of each of
            // their arrays) took 0.3 s at 1M names, on one thread.
            let shares = walk.shares(parts)
            let records = [Name](unsafeUninitializedCapacity: total) { buffer, initialized in
                let out = ParallelWork.Disjoint(buffer.baseAddress!)
                let counts = ParallelWork.map(Array(0..<shares), parts: shares, smallest: 1) { mine in
                    var tooBig = 0
                    walk.make(share: mine.first!, of: shares, responder: responder, tooBig: &tooBig) { i, name in
                        (out.base + i).initialize(to: name)
                    }
                    return tooBig
                }
                tooBig += counts.reduce(0, +)
                initialized = total
            }
            if names.isEmpty { names = records } else { names += records }
        }
        return AnswerImage(names: names, tooBig: tooBig)
    }

    /// The image's zones in its order (by origin), each with what its names' records need.
    static func walks(responder: Responder, maxSections: Int) -> [Walk] {
        responder.authority.zones.values.sorted(by: { $0.origin < $1.origin }).map {
            Walk($0, responder: responder, maxSections: maxSections)
        }
    }

    /// A zone's names as the image makes them: those of its trie, walked, and those asked by name.
    struct Walk: Sendable {
        let zone: Zone
        let context: ZoneContext
        let maxSections: Int
        /// The zone's own names read from its trie as it is walked, each thread a part of the
        /// trie's order (`Zone.forEachName`): no list of them made on one thread, and no lookup
        /// of each (sorted, each name's lookup missed the cache all the way down: a third of
        /// the image at 1M names; walked, a quarter). The others asked by name (`named`): those
        /// beside, or every name where another zone lies below this one (then a name may be
        /// that zone's, and is left to it).
        let walked: Int
        let named: [DNSName]
        var total: Int { walked + named.count }

        init(_ zone: Zone, responder: Responder, maxSections: Int) {
            let c = ZoneContext(zone, responder: responder, maxSections: maxSections)
            // The anchors and geo names the zone does not hold (a set of those alone: one of
            // every name would cost a tenth of the build at 1M names).
            var beside = Set(c.anchors.names.filter { !zone.exists($0) })
            if let geo = responder.geo {
                beside.formUnion(geo.existingNames.filter { !zone.exists($0) && c.inZone($0) })
            }
            self.zone = zone
            context = c
            self.maxSections = maxSections
            walked = c.nested ? 0 : zone.nameCount
            named = c.nested ? (zone.existingNamesUnordered + beside).filter(c.inZone) : Array(beside)
        }

        /// The shares its names are made in on `parts` threads, a thread each. (Four a thread
        /// made the image of 1M names 0.13 s faster, but each thread's allocations take a malloc
        /// arena of its own, which keeps what is freed there: 120 MiB more resident after the
        /// start; four taken in turn by two threads gained nothing.)
        func shares(_ parts: Int) -> Int { max(1, min(parts, total / 1024)) }

        /// Makes the names of share `k` of `shares`, in order, each handed to `body` with its
        /// index among the zone's names.
        func make(
            share k: Int, of shares: Int, responder: Responder, tooBig: inout Int, _ body: (Int, Name) -> Void
        ) {
            var i = walked * k / shares
            zone.forEachName(from: i, to: walked * (k + 1) / shares) { name, node in
                body(
                    i,
                    record(of: name, node, context, responder: responder, maxSections: maxSections, tooBig: &tooBig))
                i += 1
            }
            for j in (named.count * k / shares)..<(named.count * (k + 1) / shares) {
                body(
                    walked + j,
                    record(
                        of: named[j], zone.node(at: named[j]), context, responder: responder,
                        maxSections: maxSections, tooBig: &tooBig))
            }
        }
    }

    /// What the records of a zone's names need beside the zone: its anchors and their negative
    /// answers, and the names whose types the slow path answers otherwise.
    struct ZoneContext: Sendable {
        let zone: Zone
        let anchors: (names: [DNSName], closest: @Sendable (DNSName) -> DNSName)
        var negatives: [DNSName: Negative] = [:]
        /// Owners of discovery (SRV) names: that type is the slow path's, so no NODATA.
        let slowOwners: Set<DNSName>
        /// Whether another zone served lies below this one (then a name may be that zone's).
        let nested: Bool
        let inZone: @Sendable (DNSName) -> Bool
        /// The zone the responder answers every name of this one from (the zone it serves at
        /// this origin), when no other lies below it: asked directly (`Responder.plainReply`).
        let servedFrom: Zone?
        /// Whether the zone is signed (`Name.signed`).
        let signed: Bool

        init(_ zone: Zone, responder: Responder, maxSections: Int) {
            self.zone = zone
            signed = zone.isSigned
            anchors = negativeAnchors(zone)
            for a in anchors.names {
                negatives[a] = negative(at: a, zone: zone, responder: responder, maxSections: maxSections)
            }
            slowOwners = Set(
                (responder.geo?.allNames ?? []).filter { $0.config.type != .a && $0.config.type != .aaaa }.map(
                    \.config.name))
            nested = responder.authority.zones.values.contains {
                $0.origin != zone.origin && $0.origin.isSubdomain(of: zone.origin)
            }
            let (authority, origin) = (responder.authority, zone.origin)
            inZone = { authority.zone(for: $0)?.origin == origin }
            servedFrom = nested ? nil : authority.zones[origin]
        }
    }

    /// The record of `name`, a name of `c`'s zone: its answers, as the slow path answers them,
    /// and its flags. Answers that do not fit `maxSections` are counted in `tooBig`.
    static func record(
        of name: DNSName, _ c: ZoneContext, responder: Responder, maxSections: Int, tooBig: inout Int
    ) -> Name {
        record(
            of: name, c.zone.node(at: name), c, responder: responder, maxSections: maxSections, tooBig: &tooBig)
    }

    /// `record(of:)`, with what the zone holds at `name` read already (`Zone.node(at:)`).
    static func record(
        of name: DNSName, _ node: Zone.NameNode?, _ c: ZoneContext, responder: Responder, maxSections: Int,
        tooBig: inout Int
    ) -> Name {
        let zone = c.zone
        let geo = responder.geo
        let lowercased = name.lowercased()
        // (`lowercased` copies the name's bytes even where they are lower case already: the
        // write reads every record's name in the image's order, and copies made here lie in that
        // order in memory. Sharing the zone's own made the write of 1M names 0.2 s slower.)
        var n = Name(name: lowercased.wire)
        n.signed = c.signed
        let sets = node?.sets ?? []
        let geoTypes = geo.map { g in [RRType.a, .aaaa].filter { g.name(name, $0) != nil } } ?? []
        if !geoTypes.isEmpty { n.geoTypes = geoTypes.map(\.rawValue) }
        // A discovery target answers A and AAAA whatever the zone has; a CNAME's owner every
        // type with its chain: those asked of every name, and those its chain ends at.
        let target = geo?.target(name) != nil
        let cname = sets.contains { $0.type == .cname }
        var complete = !cname && !name.isWildcard && (c.slowOwners.isEmpty || !c.slowOwners.contains(name))
        // The RRsets the responder answers with as they are, which are written here without it.
        let asTheyAre = !target && c.servedFrom != nil && node?.asTheyAre == true
        /// The answer to `type`, from `set` as it is where it may be.
        func ask(_ type: RRType, _ set: RRSet?) -> Answer?? {
            let written = set.flatMap { set in
                geo?.name(name, type) == nil ? plainAnswer(set, owner: lowercased, maxSections: maxSections) : nil
            }
            return written
                ?? answer(
                    name: lowercased, type: type, responder: responder, from: c.servedFrom, maxSections: maxSections)
        }
        if name.isWildcard {
            // Synthesized from: the slow path's.
        } else if target || cname {
            for type in target ? [.a, .aaaa] : cnameTypes(name, zone) where !geoTypes.contains(type) {
                switch ask(type, nil) {
                case .some(.some(let a)): n.answers.append(a)
                case .some(.none):
                    tooBig += 1
                    complete = false
                case .none: break
                }
            }
        } else {
            // Each type the name has (its sets, without an array of their types made: the image
            // makes a million records).
            for set in sets where !set.type.isMetaType && !geoTypes.contains(set.type) {
                switch ask(set.type, asTheyAre ? set : nil) {
                case .some(.some(let a)): n.answers.append(a)
                case .some(.none):
                    tooBig += 1
                    complete = false
                case .none: complete = false
                }
            }
        }
        let anchor = c.anchors.closest(name)
        // Whether the anchor has a negative answer, without a copy of it (its arrays, retained
        // and released by both threads for every name, were one of the image's costs).
        if c.negatives.index(forKey: anchor) != nil {
            n.nodata = complete && answersOtherTypesNegatively(name, node, zone: zone, responder: responder)
            n.nxdomain = !name.isWildcard && answersBelowNegatively(name, node, c, responder: responder)
            if n.nodata || n.nxdomain { n.apexLength = anchor.wire.count }
            if n.name == anchor.wire { n.negative = c.negatives[anchor] }
        }
        if c.signed {
            let soa = n.nodata ? c.negatives[anchor]?.signed : nil
            n.signedAnswers = signedAnswers(
                of: n, name: lowercased, asTheyAre ? node : nil, soa, c, responder: responder, maxSections: maxSections)
        }
        return n
    }

    /// The signed answers of `n` (`Name.signedAnswers`), `name` lower-cased: the answer to each
    /// of its questions asked with the DO bit, then its part of the signed NODATA (type 0,
    /// `signedDenial`) where `soa` (its anchor's) is the rest, then those of the DNSSEC types,
    /// which only a resolver's debugging asks: a record that cannot hold them all leaves the last
    /// out. `node`: what the zone holds at the name, where its RRsets answer as they are (each is
    /// then written with its signatures, `plainSignedAnswer`, rather than asked).
    static func signedAnswers(
        of n: Name, name: DNSName, _ node: Zone.NameNode?, _ soa: SignedSOA?, _ c: ZoneContext,
        responder: Responder, maxSections: Int
    ) -> [Answer] {
        let signatures = node?.sets.first { $0.type == .rrsig }
        func signed(_ answers: [Answer]) -> [Answer] {
            answers.compactMap { a in
                let type = RRType(a.qtype)
                if let node, type != .rrsig, c.servedFrom != nil, let set = node.sets.first(where: { $0.type == type }),
                    let written = plainSignedAnswer(set, signatures: signatures, owner: name, maxSections: maxSections)
                {
                    return written
                }
                return answer(
                    name: name, type: type, responder: responder, from: c.servedFrom, maxSections: maxSections,
                    dnssec: true) ?? nil
            }
        }
        let denial = soa.flatMap {
            nsecDenial(node, signatures: signatures, name: name, $0, c, maxSections: maxSections)
                ?? signedDenial(name, $0, responder: responder, from: c.servedFrom, maxSections: maxSections)
        }
        // (Not RRSIG's own: the slow path's, as rare as it is dear to make.)
        return signed(n.answers.filter { !dnssecTypes.contains($0.qtype) }) + (denial.map { [$0] } ?? [])
            + signed(n.answers.filter { dnssecTypes.contains($0.qtype) && $0.qtype != RRType.rrsig.rawValue })
    }

    /// The types a CNAME's owner is asked: CNAME, those asked of every name, and those of the
    /// name its chain ends at in the zone (a change there reaches the owner: `reached`).
    static func cnameTypes(_ owner: DNSName, _ zone: Zone) -> [RRType] {
        var end = owner
        for _ in 0..<Zone.maxCNAMEChain {
            guard case .cname(let t)? = zone.rrset(end, .cname)?.rdatas.first, t.isSubdomain(of: zone.origin),
                t != owner
            else { break }
            end = t
        }
        let types = Set(zone.types(at: end).filter { !$0.isMetaType }).union(askedOfEveryName).union([.cname])
        return types.sorted()
    }

    /// The answer to one question: nil when the reply is not a positive authoritative answer with
    /// nothing in its authority section, `.some(nil)` when it is but does not fit `maxSections`.
    /// `zone`: the zone the responder answers `name` from, when known (`ZoneContext.servedFrom`).
    /// `dnssec`: asked with the DO bit, the answer without the reply's OPT (the fast path writes
    /// its own, DO echoed), nil when that OPT is not the plain one last.
    static func answer(
        name: DNSName, type: RRType, responder: Responder, from zone: Zone?, maxSections: Int, dnssec: Bool = false
    ) -> Answer?? {
        let reply =
            zone.map { responder.plainReply(name, type, zone: $0, dnssec: dnssec) }
            ?? responder.respond(to: plainQuery(name, type, dnssec: dnssec), transport: .tcp)
        guard let reply, reply.count >= 12 else { return nil }
        func u16(_ at: Int) -> UInt16 { UInt16(reply[at]) << 8 | UInt16(reply[at + 1]) }
        let flags = u16(2)
        // Authoritative, not truncated, NOERROR, with answers: read from the header alone. Nothing in
        // the authority section: there a CNAME's chain that ends in NODATA carries the zone's SOA,
        // whose serial every change moves (and `reached` does not follow).
        guard flags & 0x0400 != 0, flags & 0x0200 == 0, flags & 0x000F == 0, u16(6) > 0, u16(8) == 0 else {
            return nil
        }
        var arcount = u16(10)
        var end = reply.count
        if dnssec {
            guard arcount > 0, let opt = plainOPTStart(reply) else { return nil }
            arcount -= 1
            end = opt
        }
        let start = 12 + name.wire.count + 4
        let sections = Array(reply[start..<end])
        guard sections.count <= maxSections else { return .some(nil) }
        return Answer(
            qtype: type.rawValue, flags: flags & ~0x0100, ancount: u16(6), nscount: u16(8), arcount: arcount,
            sections: sections, checksum: Self.onesComplementSum(sections))
    }

    /// Where the reply's OPT starts when it is last and plain: the root, type OPT, any size,
    /// RCODE and version 0, DO and no other flag, no option.
    static func plainOPTStart(_ reply: [UInt8]) -> Int? {
        let at = reply.count - 11
        guard at >= 12, reply[at] == 0, reply[at + 1] == 0, reply[at + 2] == 41,
            reply[(at + 5)..<(at + 11)].elementsEqual([0, 0, 0x80, 0, 0, 0])
        else { return nil }
        return at
    }

    /// The answer to the plain question of `set`'s type about `owner`, which `set` answers as it
    /// is: written as `Responder.dataReply` writes it (an authoritative reply, each record's owner
    /// a pointer at the question, nothing in the other sections) without a message made and read
    /// back, a third of the image's time at 1M names. Nil where the reply has more than that or
    /// is written otherwise: data that holds names (compressed against the message, or whose
    /// targets bring additional data), the root (not pointed at), data that cannot be written.
    /// `.some(nil)` when it does not fit `maxSections`. The image's tests hold it to the
    /// responder's reply for every type of a zone of every kind of record.
    static func plainAnswer(_ set: RRSet, owner: DNSName, maxSections: Int) -> Answer?? {
        guard owner.wire.count > 1, set.type != .ns, set.type != .mx, set.type != .srv, set.type != .cname,
            set.type != .soa, set.type != .ptr, !set.rdatas.isEmpty, set.rdatas.count <= 0xFFFF
        else { return nil }
        var w = WireWriter(capacity: 16 * set.rdatas.count)
        for rdata in set.rdatas {
            switch rdata {
            case .a, .aaaa, .txt, .caa, .unknown: break
            case .ns, .cname, .ptr, .soa, .mx, .srv: return nil
            }
            w.u16(0xC000 | 12)  // the question's name
            do {
                try w.recordAfterOwner(type: set.type, rrClass: .in, ttl: set.ttl(of: rdata), rdata: rdata)
            } catch {
                return nil
            }
        }
        let sections = w.bytes
        guard sections.count <= maxSections else { return .some(nil) }
        return Answer(
            qtype: set.type.rawValue, flags: 0x8400, ancount: UInt16(set.rdatas.count), nscount: 0, arcount: 0,
            sections: sections, checksum: Self.onesComplementSum(sections))
    }

    /// `signedDenial` written rather than asked, in a zone that denies with NSEC: a NODATA's
    /// proof at a name that owns an NSEC and answers as it is (`node`) is that NSEC with its
    /// signatures (`Zone.Proofs.noData`), written as the answer to the NSEC question is. Nil
    /// elsewhere (an empty non-terminal's is the NSEC that covers it: asked).
    static func nsecDenial(
        _ node: Zone.NameNode?, signatures: RRSet?, name: DNSName, _ soa: SignedSOA, _ c: ZoneContext,
        maxSections: Int
    ) -> Answer? {
        guard !c.zone.deniesWithNSEC3, let nsec = node?.sets.first(where: { $0.type == .nsec }),
            case .some(.some(let a)) = plainSignedAnswer(
                nsec, signatures: signatures, owner: name, maxSections: maxSections)
        else { return nil }
        return Answer(
            qtype: 0, flags: soa.flags, ancount: 0, nscount: a.ancount, arcount: 0, sections: a.sections,
            checksum: a.checksum)
    }

    /// The answer to the question of `set`'s type about `owner` with the DO bit, where `set`
    /// answers it as it is (`plainAnswer`): its records, then each of `signatures` (the name's
    /// RRSIG RRset) that covers its type, at the question's name with the RRset's TTL, as
    /// `Zone.Proofs.signed` has the responder write them, without a message made and read back
    /// (the signed image asks a million). Nil where `plainAnswer` is, or nothing covers the set.
    static func plainSignedAnswer(_ set: RRSet, signatures: RRSet?, owner: DNSName, maxSections: Int) -> Answer?? {
        guard case .some(.some(var a)) = plainAnswer(set, owner: owner, maxSections: Int.max) else { return nil }
        let covering = (signatures?.rdatas ?? []).filter { Signature($0)?.typeCovered == set.type }
        guard !covering.isEmpty, Int(a.ancount) + covering.count <= 0xFFFF else { return nil }
        var w = WireWriter(capacity: a.sections.count + 128 * covering.count)
        w.append(a.sections)
        for rdata in covering {
            w.u16(0xC000 | 12)  // the question's name
            do {
                try w.recordAfterOwner(type: .rrsig, rrClass: .in, ttl: set.ttl, rdata: rdata)
            } catch {
                return nil
            }
        }
        guard w.bytes.count <= maxSections else { return .some(nil) }
        a.sections = w.bytes
        a.ancount += UInt16(covering.count)
        a.checksum = onesComplementSum(a.sections)
        return a
    }

    /// The plain question of `name` and `type`: ID 0, no flags, class IN, nothing else (as
    /// `DNSMessage` writes it, without building one: the image asks millions); `dnssec`, and an
    /// OPT with the DO bit and no option.
    static func plainQuery(_ name: DNSName, _ type: RRType, dnssec: Bool = false) -> [UInt8] {
        var q = [UInt8](repeating: 0, count: 12)
        q.reserveCapacity(12 + name.wire.count + 4 + 11)
        q[5] = 1  // QDCOUNT
        q += name.wire
        q += [UInt8(type.rawValue >> 8), UInt8(type.rawValue & 0xFF), 0, 1]
        if dnssec {
            q[11] = 1  // ARCOUNT
            q += [0, 0, 41, 0x10, 0, 0, 0, 0x80, 0, 0, 0]  // OPT: 4096 octets, DO
        }
        return q
    }

    /// RFC 1071 sum of `bytes` taken as 16-bit big-endian words from an even offset, folded.
    public static func onesComplementSum(_ bytes: [UInt8]) -> UInt16 {
        var sum: UInt32 = 0
        var i = 0
        while i + 1 < bytes.count {
            sum += UInt32(bytes[i]) << 8 | UInt32(bytes[i + 1])
            i += 2
        }
        if i < bytes.count { sum += UInt32(bytes[i]) << 8 }
        while sum >> 16 != 0 { sum = (sum & 0xFFFF) + (sum >> 16) }
        return UInt16(sum)
    }
}
