import DNSWire
import NearcastZones

/// NODATA and NXDOMAIN on the fast path (bpf/README.md, "Negative answers";
/// `NC_QTYPE_NEGATIVE` in nearcast_abi.h).
///
/// A zone's negative replies differ only in their RCODE and in where their SOA's names point: the
/// slow path compresses the SOA's owner (the zone's name) against the question's last labels, and
/// its MNAME and RNAME against those too. So one reply stands for many, once its compression
/// pointers are moved by the query's length against the one it was taken for: the `Negative` of
/// an anchor, the slow path's NODATA at the anchor (or its NXDOMAIN directly below it), checked
/// against each other. The zone's apex is an anchor; so is every name at or above the SOA's MNAME
/// and RNAME below the apex, for a name that shares more than the apex with one of those is
/// compressed against itself. A name's negative replies are those of its closest anchor (itself
/// or an ancestor): no longer suffix of it is a suffix of the SOA's names.
///
/// Which names it stands for is asked of the zone itself, by the lookup the slow path makes: a name
/// is `nodata` where the zone answers a type no record has (65534) with NODATA and the zone's SOA
/// alone, and `nxdomain` where it answers a probe directly below the name so (no wildcard, no
/// delegation or DNAME at or above the name). Anchors that do not exist in the zone get records
/// (without `nodata`), so that a walk to a closest encloser stops at them.
extension AnswerImage {
    /// A zone's negative answer: the slow path's NXDOMAIN, taken for a question `questionLength`
    /// octets long, with the compression pointers at `pointers` in its sections.
    public struct Negative: Hashable, Sendable, NegativeSections {
        /// The NXDOMAIN's flags word with RD clear; a NODATA's has RCODE 0.
        public var flags: UInt16
        public var nscount: UInt16
        public var sections: [UInt8]
        public var questionLength: Int
        public var pointers: [Int]
        /// The lower-cased wire name of the zone (the rate limiter's class for NXDOMAINs).
        public var zone: [UInt8]
        /// In a signed zone, the part of a NODATA with the DO bit that every name's shares.
        public var signed: SignedSOA?
    }

    /// A signed zone's NODATA to a query with the DO bit, up to the name's own proof: the SOA and
    /// its signatures, taken at the anchor (its NODATA), whose pointers move with the query's
    /// length as the negative answer's do. A name's proof (the NSEC at it, or what the slow path
    /// sends there, and their signatures) is its record's own (`signedDenial`), sent after it.
    public struct SignedSOA: Hashable, Sendable, NegativeSections {
        /// A NODATA's flags word with RD clear.
        public var flags: UInt16
        public var nscount: UInt16
        public var sections: [UInt8]
        public var questionLength: Int
        public var pointers: [Int]

        /// Its sections for a question `length` octets long: each pointer moved by the
        /// difference, as the fast path moves them.
        func sections(forQuestionLength length: Int) -> [UInt8] {
            var moved = sections
            for at in pointers {
                let to = (Int(sections[at] & 0x3F) << 8 | Int(sections[at + 1])) + length - questionLength
                moved[at] = 0xC0 | UInt8((to >> 8) & 0x3F)
                moved[at + 1] = UInt8(to & 0xFF)
            }
            return moved
        }
    }

    /// What a negative answer's record holds (NC_KIND_NEGATIVE): the sections of a reply taken
    /// for a question `questionLength` octets long, with the compression pointers at `pointers`,
    /// which move with the query's length.
    public protocol NegativeSections {
        var flags: UInt16 { get }
        var nscount: UInt16 { get }
        var sections: [UInt8] { get }
        var questionLength: Int { get }
        var pointers: [Int] { get }
    }

    /// Compression pointers a negative answer may hold (NC_NX_PTRS): the SOA's owner, MNAME, RNAME.
    public static let negativePointersMax = 4

    /// Bytes a negative answer's head takes before its sections (struct nc_nx_head).
    public static let negativeHeadBytes = 24

    /// The label of the probes below a name: no zone is expected to hold it, and a name that does
    /// is not `nxdomain`.
    static let probeLabel = Array("nc--nx-probe".utf8)

    /// A type no record has, asked to see what a name's other types are answered.
    static let probeType = RRType(65534)

    /// The negative answer of `anchor` (lower-cased): the slow path's NODATA there, the SOA
    /// alone, whose NXDOMAIN directly below it (where that is one) is the same with RCODE 3 and
    /// every pointer moved by the difference in length; or that NXDOMAIN alone, where the anchor
    /// has no NODATA (it does not exist). Nil when neither is of that shape, they disagree, or
    /// they do not fit.
    static func negative(at anchor: DNSName, zone: Zone, responder: Responder, maxSections: Int) -> Negative? {
        let nodata = soaReply(anchor, probeType, rcode: 0, responder: responder)
        let probe = try? anchor.prepending(probeLabel)
        var nx = probe.flatMap { soaReply($0, .a, rcode: 3, responder: responder) }
        // Every pointer points into the anchor's labels at the question's end, or past it.
        if let p = probe, let r = nx, !r.targets.allSatisfy({ $0 >= 12 + p.wire.count - anchor.wire.count }) {
            nx = nil
        }
        let taken: (flags: UInt16, sections: [UInt8], pointers: [Int], targets: [Int], length: Int)
        if let d = nodata {
            var flags = d.flags | 3
            if let r = nx, let p = probe {
                let shift = p.wire.count - anchor.wire.count
                var moved = d.sections
                for (at, to) in zip(d.pointers, d.targets) {
                    moved[at] = 0xC0 | UInt8((to + shift) >> 8)
                    moved[at + 1] = UInt8((to + shift) & 0xFF)
                }
                guard r.pointers == d.pointers, r.sections == moved, r.flags == flags else { return nil }
                flags = r.flags
            }
            taken = (flags, d.sections, d.pointers, d.targets, anchor.wire.count)
        } else if let r = nx, let p = probe {
            taken = (r.flags, r.sections, r.pointers, r.targets, p.wire.count)
        } else {
            return nil
        }
        guard taken.sections.count + negativeHeadBytes <= maxSections else { return nil }
        var signed: SignedSOA?
        if zone.isSigned, nodata != nil, let d = signedNODATA(anchor, responder: responder),
            d.soa.count + negativeHeadBytes <= maxSections
        {
            let pointers = d.pointers.filter { $0 < d.soa.count }
            if pointers.count <= negativePointersMax {
                signed = SignedSOA(
                    flags: d.flags, nscount: 2, sections: Array(d.soa), questionLength: anchor.wire.count,
                    pointers: pointers)
            }
        }
        return Negative(
            flags: taken.flags, nscount: 1, sections: taken.sections, questionLength: taken.length,
            pointers: taken.pointers, zone: zone.origin.lowercased().wire, signed: signed)
    }

    /// The slow path's NODATA to `name` (a type no record has) asked with the DO bit, split
    /// where its name's own proof starts: the SOA and its signatures first (`soa`), then the
    /// proof (`proof`, `proofCount` records), the reply's OPT left out; with its flags (RD
    /// clear) and the offsets of the compression pointers in its sections. Nil when the reply
    /// is not that shape.
    static func signedNODATA(_ name: DNSName, responder: Responder, from zone: Zone? = nil) -> (
        flags: UInt16, soa: ArraySlice<UInt8>, proof: ArraySlice<UInt8>, proofCount: Int, pointers: [Int]
    )? {
        guard
            let reply = zone.map({ responder.plainReply(name, probeType, zone: $0, dnssec: true) })
                ?? responder.respond(to: plainQuery(name, probeType, dnssec: true), transport: .tcp),
            reply.count >= 12, let opt = plainOPTStart(reply)
        else { return nil }
        func u16(_ at: Int) -> Int { Int(reply[at]) << 8 | Int(reply[at + 1]) }
        let flags = UInt16(u16(2))
        // Authoritative, NOERROR, no answer, the SOA, its signature and a proof, the OPT alone.
        guard flags & 0x0400 != 0, flags & 0x0200 == 0, flags & 0x000F == 0, u16(6) == 0, u16(8) >= 3, u16(10) == 1
        else { return nil }
        let start = 12 + name.wire.count + 4
        guard start <= opt else { return nil }
        let sections = Array(reply[start..<opt])
        guard let records = SectionRecords(sections, count: u16(8)), records.types.count == u16(8),
            records.types[0] == RRType.soa.rawValue, records.types[1] == RRType.rrsig.rawValue,
            !records.types[2...].contains(RRType.soa.rawValue)
        else { return nil }
        let split = records.ends[1]
        return (flags & ~0x0100, sections[..<split], sections[split...], u16(8) - 2, records.pointers)
    }

    /// `name`'s part of its signed NODATA (type 0, NC_QTYPE_NEGATIVE; the fast path sends its
    /// anchor's `soa` before it): the name's proof, from the slow path's NODATA there with the DO
    /// bit. Nil unless the rest of that reply is `soa` moved to the name's length, and every
    /// pointer in the proof points into the question, so that it reads the same after whatever
    /// the fast path puts before it. `zone`: the zone the responder answers `name` from, when known (`ZoneContext.servedFrom`).
    static func signedDenial(
        _ name: DNSName, _ soa: SignedSOA, responder: Responder, from zone: Zone?, maxSections: Int
    )
        -> Answer?
    {
        guard let d = signedNODATA(name, responder: responder, from: zone), d.proof.count <= maxSections,
            d.soa.elementsEqual(soa.sections(forQuestionLength: name.wire.count))
        else { return nil }
        let questionEnd = 12 + name.wire.count + 4
        for at in d.pointers where at >= d.proof.startIndex {
            guard Int(d.proof[at] & 0x3F) << 8 | Int(d.proof[at + 1]) < questionEnd else { return nil }
        }
        let proof = Array(d.proof)
        return Answer(
            qtype: 0, flags: d.flags, ancount: 0, nscount: UInt16(d.proofCount), arcount: 0, sections: proof,
            checksum: onesComplementSum(proof))
    }

    /// The anchors of `zone`'s negative answers, lower-cased (the apex first), and the closest
    /// anchor of a name in it.
    static func negativeAnchors(_ zone: Zone) -> (names: [DNSName], closest: @Sendable (DNSName) -> DNSName) {
        let apex = zone.origin.lowercased()
        guard case .soa(let soa) = zone.soa.rdatas.first else { return ([apex], { _ in apex }) }
        var below: Set<DNSName> = []
        for n in [soa.mname, soa.rname] where n.isSubdomain(of: apex) && n.wire.count > apex.wire.count {
            below.insert(n.lowercased())
            below.formUnion(n.lowercased().ancestors(upTo: apex).filter { $0.wire.count > apex.wire.count })
        }
        guard !below.isEmpty else { return ([apex], { _ in apex }) }
        // The deepest anchor a name is at or below: its labels compared where they are, with
        // the few anchors there are, rather than each ancestor made and looked up in a set.
        let deepestFirst = below.sorted { $0.wire.count > $1.wire.count }
        return (
            [apex] + below.sorted(),
            { name in deepestFirst.first { name.isSubdomain(of: $0) } ?? apex }
        )
    }

    /// The slow path's reply to `name`/`type` when it is authoritative, of RCODE `rcode`, with the
    /// zone's SOA alone in its authority section and nothing else: its flags (RD clear), sections
    /// and the offsets of their compression pointers.
    static func soaReply(_ name: DNSName, _ type: RRType, rcode: UInt16, responder: Responder)
        -> (flags: UInt16, sections: [UInt8], pointers: [Int], targets: [Int])?
    {
        guard let reply = responder.respond(to: plainQuery(name, type), transport: .tcp),
            let msg = try? DNSMessage(wire: reply),
            msg.header.aa, !msg.header.tc, msg.answers.isEmpty, msg.additional.isEmpty, msg.edns == nil,
            msg.authority.count == 1, msg.authority[0].type == .soa
        else { return nil }
        let flags = UInt16(reply[2]) << 8 | UInt16(reply[3])
        guard flags & 0x000F == rcode else { return nil }
        let sections = Array(reply[(12 + name.wire.count + 4)...])
        guard let pointers = soaPointers(sections), pointers.count <= negativePointersMax else { return nil }
        let targets = pointers.map { Int(sections[$0] & 0x3F) << 8 | Int(sections[$0 + 1]) }
        return (flags & ~0x0100, sections, pointers, targets)
    }

    /// Whether the zone answers every type `name` has no records of with its NODATA, as the slow
    /// path does (a discovery target's, and a geo name's that is not in the zone, included).
    /// `node`: what the zone holds at `name` (`Zone.node(at:)`), nil where it holds nothing.
    static func answersOtherTypesNegatively(_ name: DNSName, _ node: Zone.NameNode?, zone: Zone, responder: Responder)
        -> Bool
    {
        if responder.geo?.target(name) != nil { return true }  // targetReply: NODATA but for A and AAAA
        if let known = node?.answersNODATA(probeType) { return known }
        var answer = zone.lookup(name, probeType)
        if answer.rcode == .nxDomain, responder.geo?.exists(name) == true { answer.rcode = .noError }
        return isZoneNegative(answer, .noError, zone)
    }

    /// Whether the zone answers a name directly below `name` that does not exist with its NXDOMAIN.
    /// `node`: what the zone holds at `name` (`Zone.node(at:)`), nil where it holds nothing.
    static func answersBelowNegatively(_ name: DNSName, _ node: Zone.NameNode?, _ c: ZoneContext, responder: Responder)
        -> Bool
    {
        guard 1 + probeLabel.count + name.wire.count <= 255 else { return false }  // no name below it
        // The probe's name made only where something must look it up: the slow path's NXDOMAIN
        // for every name of a large zone of no geo names is the node's word alone.
        var probe: DNSName { try! name.prepending(probeLabel) }
        if c.nested || responder.geo != nil {
            let probe = probe
            guard !c.nested || c.inZone(probe), responder.geo?.exists(probe) != true,
                responder.geo?.target(probe) == nil
            else { return false }
        }
        return node?.answersNXDOMAINBelow ?? isZoneNegative(c.zone.lookup(probe, .a), .nxDomain, c.zone)
    }

    static func isZoneNegative(_ a: ZoneAnswer, _ rcode: RCode, _ zone: Zone) -> Bool {
        a.rcode == rcode && a.authoritative && a.answer.isEmpty && a.additional.isEmpty && a.extendedError == nil
            && a.authority == [zone.negativeSOA]
    }

    /// The offsets of the compression pointers in `sections`, which hold one SOA record (owner,
    /// fixed fields, MNAME, RNAME, five numbers); nil when it is not that shape.
    static func soaPointers(_ sections: [UInt8]) -> [Int]? {
        guard let r = SectionRecords(sections, count: 1), r.types == [RRType.soa.rawValue] else { return nil }
        return r.pointers
    }

    /// The records of a reply's sections, read as far as the fast path needs: each one's type
    /// and where it ends, and the offsets of the compression pointers in their owners and an
    /// SOA's names. Other data is not read for names: those the negative answers hold (RRSIG,
    /// NSEC, NSEC3) have none compressed (RFC 4034 §3.1.7, §4.1.1; RFC 5155 §3.2).
    struct SectionRecords {
        var types: [UInt16] = []
        var ends: [Int] = []
        var pointers: [Int] = []

        /// `count` records that take the whole of `sections`, or nil.
        init?(_ sections: [UInt8], count: Int) {
            var i = 0
            var pointers: [Int] = []
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
            for _ in 0..<count {
                guard name(), i + 10 <= sections.count else { return nil }
                let type = UInt16(sections[i]) << 8 | UInt16(sections[i + 1])
                let end = i + 10 + (Int(sections[i + 8]) << 8 | Int(sections[i + 9]))
                i += 10
                if type == RRType.soa.rawValue {
                    guard name(), name() else { return nil }
                    i += 20
                }
                guard end <= sections.count, type != RRType.soa.rawValue || i == end else { return nil }
                i = end
                types.append(type)
                ends.append(end)
            }
            guard i == sections.count else { return nil }
            self.pointers = pointers
        }
    }
}
