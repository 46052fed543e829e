import DNSWire

/// The answers the fast path may send, computed by the slow path itself.
///
/// For every name of every zone and every type held in that zone, the responder is asked the plain
/// question (lower-case name, no EDNS, over TCP so nothing is cut). Positive authoritative replies
/// become entries: the reply's flags and counts and its sections after the question, whose names
/// that equal the question point at it. The fast path keeps the query's own header and question and
/// appends these bytes, so both paths send the same reply by construction.
///
/// Negative answers are mostly left to the slow path, with one exception: NODATA for the types
/// clients ask of every name (`askedOfEveryName`). Browsers and stub resolvers ask A, AAAA and
/// HTTPS together, so an IPv4-only service name draws two NODATA questions for each positive one.
/// Those replies become entries too (the SOA in their authority section included). They come after
/// every positive entry, so when the table is full they are the ones left to the slow path.
/// Referrals and names that only wildcards produce are always left to the slow path. NXDOMAIN is
/// the fast path's only through `below` (AnswerImage+Below.swift).
public struct AnswerImage: Sendable {
    public struct Entry: Hashable, Sendable {
        /// Lower-cased uncompressed wire name.
        public var name: [UInt8]
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
        /// What the fast path does with the entry: send it, or (the `below` entries) what its walk
        /// to a query's closest encloser finds there.
        public var kind: Kind = .answer
    }

    /// What an entry is to the fast path.
    public enum Kind: Hashable, Sendable {
        /// The reply to its question.
        case answer
        /// Under `belowType`: the NXDOMAIN for a name directly below this one that does not exist.
        /// `sections` were taken from the reply to a question `questionLength` octets long; the
        /// compression pointers at the offsets `pointers` move with the query's length. `zone`:
        /// the lower-cased wire name of the zone (the rate limiter's class for NXDOMAINs).
        case nxdomain(questionLength: Int, pointers: [Int], zone: [UInt8])
        /// Under `belowType`: the name exists, and what lies below it is the slow path's (a
        /// wildcard, a delegation, a DNAME, another zone's data, or a reply that cannot be moved).
        case exists
    }

    public var entries: [Entry]
    /// Answers left out because their sections exceed the fast path's capacity.
    public var tooBig: Int
    /// Of `entries`, the NODATA ones (they are the last).
    public var nodata: Int
    /// One entry under `belowType` for every name that exists (AnswerImage+Below.swift): the fast
    /// path may answer NXDOMAIN only while it holds all of them.
    public var below: [Entry] = []

    /// The types asked of nearly every name, whose NODATA replies the fast path also sends.
    public static let askedOfEveryName: [RRType] = [.a, .aaaa, .https]

    /// Builds the image of every zone `responder` serves; entries hold at most `maxSections` bytes.
    public static func build(responder: Responder, maxSections: Int) -> AnswerImage {
        var positive: [Entry] = []
        var negative: [Entry] = []
        var tooBig = 0
        for zone in responder.authority.zones.values.sorted(by: { $0.origin < $1.origin }) {
            let types = zone.typesPresent.filter { !$0.isMetaType }.union(askedOfEveryName)
                .sorted()
            // Geo names' owners need not be in the zone: they answer their other types too.
            let geoOwners = (responder.geo?.allNames ?? []).map(\.config.name).filter {
                responder.authority.zone(for: $0)?.origin == zone.origin
            }
            // Discovery targets answer the same for every client: static entries too.
            let targets = (responder.geo?.targetNames ?? []).filter {
                responder.authority.zone(for: $0)?.origin == zone.origin
            }
            // Owners of discovery (SRV) names: that type is the slow path's, so no other-types entry.
            let slowOwners = Set(
                (responder.geo?.allNames ?? []).filter { $0.config.type != .a && $0.config.type != .aaaa }.map(
                    \.config.name))
            for name in Set(zone.names + geoOwners + targets).sorted() where !name.isWildcard {
                // Whether every type the name has is in the table as an answer: only then may a
                // miss there stand for "no such type" (its other-types entry).
                var complete = !slowOwners.contains(name)
                let present = Set(zone.types(at: name))
                // A geo name's answer depends on the client: it has no static entry.
                for type in types where responder.geo?.name(name, type) == nil {
                    let nodata = askedOfEveryName.contains(type)
                    switch entry(
                        name: name.lowercased(), type: type, responder: responder, maxSections: maxSections,
                        nodata: nodata)
                    {
                    case .some(.some(let e)):
                        if e.ancount > 0 { positive.append(e) } else { negative.append(e) }
                        if present.contains(type) && e.ancount == 0 { complete = false }
                    case .some(.none):
                        tooBig += 1
                        complete = false
                    case .none:
                        if present.contains(type) { complete = false }
                    }
                }
                if present.contains(where: { !types.contains($0) }) { complete = false }  // meta-types
                guard complete else { continue }
                switch otherTypesEntry(name: name.lowercased(), responder: responder, maxSections: maxSections) {
                case .some(.some(let e)): negative.append(e)
                case .some(.none): tooBig += 1
                case .none: break
                }
            }
        }
        return AnswerImage(
            entries: positive + negative, tooBig: tooBig, nodata: negative.count,
            below: belowEntries(responder: responder, maxSections: maxSections))
    }

    /// The entry for one question: nil when the reply is not a positive authoritative answer (or,
    /// with `nodata`, an authoritative NODATA: no answers, the zone's SOA as authority),
    /// `.some(nil)` when it is but does not fit `maxSections`.
    static func entry(name: DNSName, type: RRType, responder: Responder, maxSections: Int, nodata: Bool = false)
        -> Entry??
    {
        let query = try! DNSMessage(questions: [DNSQuestion(name: name, type: type)]).serialize()
        guard let reply = responder.respond(to: query, transport: .tcp),
            let msg = try? DNSMessage(wire: reply),
            msg.rcode == .noError, msg.header.aa, !msg.header.tc
        else { return nil }
        let isNODATA = msg.answers.isEmpty && msg.authority.count == 1 && msg.authority[0].type == .soa
        guard !msg.answers.isEmpty || (nodata && isNODATA) else { return nil }
        let start = 12 + name.wire.count + 4
        let sections = Array(reply[start...])
        guard sections.count <= maxSections else { return .some(nil) }
        func u16(_ at: Int) -> UInt16 { UInt16(reply[at]) << 8 | UInt16(reply[at + 1]) }
        return Entry(
            name: name.wire, qtype: type.rawValue, flags: u16(2) & ~0x0100, ancount: u16(6), nscount: u16(8),
            arcount: u16(10), sections: sections, checksum: Self.onesComplementSum(sections))
    }

    /// The type a name's other-types entry is kept under (NC_QTYPE_OTHER in nearcast_abi.h).
    public static let otherTypes: UInt16 = 0

    /// The NODATA `name` answers for every type it has no records of, kept under `otherTypes`
    /// for the fast path to find after a miss: only where the slow path answers types no record
    /// can have (0, 65534, 65533) with one and the same authoritative NODATA; not at delegations
    /// (referrals), CNAMEs, or names with a geo name of another type.
    static func otherTypesEntry(name: DNSName, responder: Responder, maxSections: Int) -> Entry?? {
        var first: Entry?
        for probe in [RRType(0), RRType(65534), RRType(65533)] {
            guard
                case .some(.some(var e)) = entry(
                    name: name, type: probe, responder: responder, maxSections: maxSections, nodata: true)
            else {
                // A NODATA too big for the table is one (counted); anything else is no NODATA.
                if case .some(.none) = entry(
                    name: name, type: probe, responder: responder, maxSections: maxSections, nodata: true)
                {
                    return .some(nil)
                }
                return nil
            }
            guard e.ancount == 0 else { return nil }
            e.qtype = Self.otherTypes
            if let f = first, f != e { return nil }
            first = e
        }
        return first
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
