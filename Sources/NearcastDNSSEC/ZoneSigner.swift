import DNSWire
import Foundation
import NearcastBasics
import NearcastZones

/// Signs a whole zone ahead (RFC 4035 §2): the keys' DNSKEY RRset at the apex, an NSEC at every
/// authoritative name and delegation in canonical order, and an RRSIG by every key on every
/// authoritative RRset (at a delegation only its DS and NSEC; nothing below it). What the zone
/// held of DNSSEC before (signatures, NSEC, NSEC3, DNSKEY) is replaced.
///
/// Why an NSEC chain made ahead, rather than compact denial (RFC 9824) or NSEC3 white lies made
/// for each query: every negative answer is then made of records signed once, so no query costs
/// a signature (a random-subdomain flood with the DO bit would otherwise be one ECDSA signature
/// per query in the slow path), and a change re-signs the NSEC of the names it adds or removes and
/// of their predecessors only. The chain lets the zone be walked, which hides nothing a GeoDNS's
/// service names need hidden, and NSEC3's hashing would add little against it (RFC 9276).
public struct ZoneSigner: Sendable {
    /// The keys that sign: the zone-signing keys the zone's data (or, with none, the others), and
    /// every one the DNSKEY RRset.
    public let keys: [DNSSECKey]
    /// The keys in the DNSKEY RRset: those that sign, and those a rollover publishes before they
    /// sign or after they stop (RFC 7583 §3.2).
    public let published: [DNSSECKey]
    /// Signatures valid from `inception` to `expiration`, seconds since 1970 (RFC 4034 §3.1.5).
    public let inception: UInt32
    public let expiration: UInt32
    /// Names whose answers are made for each query rather than held (geo names, their discovery
    /// targets), with the types they answer: each is in the NSEC chain with those types, as if
    /// the zone held them, so the chain never denies a name that answers (docs/ARCHITECTURE.md
    /// §18, "Geo names"). Those outside the zone or below a delegation are left out.
    public var online: [DNSName: Set<RRType>]

    public init(
        keys: [DNSSECKey], published: [DNSSECKey]? = nil, inception: UInt32, expiration: UInt32,
        online: [DNSName: Set<RRType>] = [:]
    ) {
        (self.keys, self.inception, self.expiration, self.online) = (keys, inception, expiration, online)
        var all = published ?? keys
        for k in keys where !all.contains(where: { $0.dnskeyRData == k.dnskeyRData }) { all.append(k) }
        self.published = all
    }

    /// The zone's DNSKEY RRset: the published keys', with the SOA's TTL.
    func dnskeySet(_ zone: Zone) -> RRSet {
        RRSet(name: zone.origin, type: .dnskey, ttl: zone.soa.ttl, rdatas: published.map { .unknown($0.dnskeyRData) })
    }

    /// The keys that sign an RRset of `type`.
    func signers(of type: RRType) -> [DNSSECKey] {
        guard type != .dnskey, keys.contains(where: \.isZSK) else { return keys }
        return keys.filter(\.isZSK)
    }

    /// Whether the signer replaces the RRset of `type` at `name`: signatures and denial anywhere,
    /// the apex's keys and NSEC3 parameters (a DNSKEY elsewhere is data).
    public static func replaces(_ type: RRType, at name: DNSName, origin: DNSName) -> Bool {
        type == .rrsig || type == .nsec || type == .nsec3
            || (name == origin && (type == .dnskey || type == .nsec3param))
    }

    /// Every record of `zone` signed: its data as it is, and the DNSKEY, NSEC and RRSIG records.
    public func sign(_ zone: Zone) throws -> [ResourceRecord] {
        let origin = zone.origin
        // The names, each with its RRsets (no DNSSEC ones) and what it is.
        var owners: [(DNSName, [RRSet], delegation: Bool)] = []
        zone.forEachName(from: 0, to: zone.nameCount) { name, node in
            guard !node.isRedirected, !node.isHashedOwner else { return }
            let sets = node.sets.filter { !Self.replaces($0.type, at: name, origin: origin) }
            guard !sets.isEmpty || name == origin else { return }
            owners.append((name, sets, node.isDelegation))
        }
        let held = Set(owners.map(\.0))
        for name in online.keys.sorted() where !held.contains(name) && Self.answersOnline(name, in: zone) {
            owners.append((name, [], false))
        }
        let order = CanonicalNames(owners.map(\.0))
        let dnskey = dnskeySet(zone)
        let nsecTTL = zone.negativeSOA.ttl  // RFC 9077: min(SOA TTL, MINIMUM)

        var out: [ResourceRecord] = []
        // Glue and whatever else lies below a delegation: kept, never signed.
        zone.forEachName(from: 0, to: zone.nameCount) { name, node in
            guard node.isRedirected else { return }
            for s in node.sets where !Self.replaces(s.type, at: name, origin: origin) { out += s.records() }
        }
        // Each name's records, NSEC and signatures, on every core (a signature is tens of
        // microseconds: most of the time).
        let jobs: [(name: DNSName, sets: [RRSet], delegation: Bool, next: DNSName)] = order.indices.enumerated().map {
            (i, k) in
            let (name, sets, delegation) = owners[k]
            let next = owners[order.indices[(i + 1) % order.indices.count]].0
            return (name, name == origin ? sets + [dnskey] : sets, delegation, next)
        }
        let signer = self
        let parts = ParallelWork.map(jobs, parts: ProcessInfo.processInfo.activeProcessorCount, smallest: 256) {
            slice -> Result<[ResourceRecord], Error> in
            Result {
                var records: [ResourceRecord] = []
                for (name, sets, delegation, next) in slice {
                    let types = signer.nsecTypes(name, sets)
                    let nsec = RRSet(
                        name: name, type: .nsec, ttl: nsecTTL, rdatas: [.unknown(next.wire + Self.typeBitmap(types))])
                    for s in sets { records += s.records() }
                    records += nsec.records()
                    // A delegation's NS (and any glue it has) belong to the child: only its DS
                    // and NSEC are signed.
                    for s in sets + [nsec] where !delegation || s.type == .ds || s.type == .nsec {
                        records += try signer.signatures(s, origin: origin)
                    }
                }
                return records
            }
        }
        for part in parts { out += try part.get() }
        return out
    }

    /// An RRSIG by each key over `set` (RFC 4034 §3.1.8.1): the RRSIG's fields, then each record
    /// in canonical form (§6.2), in canonical order (§6.3).
    public func signatures(_ set: RRSet, origin: DNSName) throws -> [ResourceRecord] {
        let owner = set.name.lowercased()
        var labels = owner.labels.count
        if owner.isWildcard { labels -= 1 }
        let rdatas = set.rdatas.map { Canonical.rdata($0, type: set.type) }.sorted { $0.lexicographicallyPrecedes($1) }
        var out: [ResourceRecord] = []
        for key in signers(of: set.type) {
            var head: [UInt8] = []
            head += Self.u16(set.type.rawValue) + [key.algorithm.rawValue, UInt8(labels)] + Self.u32(set.ttl)
            head += Self.u32(expiration) + Self.u32(inception) + Self.u16(key.keyTag) + origin.lowercased().wire
            var data = head
            for r in rdatas {
                data += owner.wire + Self.u16(set.type.rawValue) + Self.u16(1) + Self.u32(set.ttl)
                data += Self.u16(UInt16(r.count)) + r
            }
            let rdata = head + (try key.sign(data))
            out.append(ResourceRecord(name: set.name, type: .rrsig, ttl: set.ttl, rdata: .unknown(rdata)))
        }
        return out
    }

    /// The types of the NSEC at `name`, which holds `sets` (none of the signer's own): theirs, the
    /// NSEC's and its signatures', and what the name answers online.
    func nsecTypes(_ name: DNSName, _ sets: [RRSet]) -> Set<RRType> {
        Set(sets.map(\.type)).union([.nsec, .rrsig]).union(online[name] ?? [])
    }

    /// Whether `name` of `zone` may answer online, and so be in its chain: in the zone, neither
    /// at nor below a delegation, nor below a DNAME, nor a hashed owner.
    static func answersOnline(_ name: DNSName, in zone: Zone) -> Bool {
        guard name.isSubdomain(of: zone.origin) else { return false }
        if let node = zone.node(at: name) { return !node.isRedirected && !node.isDelegation && !node.isHashedOwner }
        var n = name.parent
        while n != zone.origin && n.isSubdomain(of: zone.origin) {
            if zone.rrset(n, .ns) != nil || zone.rrset(n, .dname) != nil { return false }
            n = n.parent
        }
        return true
    }

    /// The NSEC type bitmap of `types` (RFC 4034 §4.1.2): a window per 256 types that has any.
    static func typeBitmap(_ types: Set<RRType>) -> [UInt8] {
        var windows: [UInt8: [UInt8]] = [:]
        for t in types {
            let (window, low) = (UInt8(t.rawValue >> 8), Int(t.rawValue & 0xFF))
            var bits = windows[window] ?? []
            if bits.count <= low / 8 { bits += [UInt8](repeating: 0, count: low / 8 + 1 - bits.count) }
            bits[low / 8] |= 0x80 >> UInt8(low % 8)
            windows[window] = bits
        }
        return windows.keys.sorted().flatMap { [$0, UInt8(windows[$0]!.count)] + windows[$0]! }
    }

    static func u16(_ v: UInt16) -> [UInt8] { [UInt8(v >> 8), UInt8(v & 0xFF)] }
    static func u32(_ v: UInt32) -> [UInt8] {
        [UInt8(v >> 24), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)]
    }
}

/// Names in canonical order (RFC 4034 §6.1): `indices` of the names given, sorted.
struct CanonicalNames {
    let indices: [Int]

    init(_ names: [DNSName]) {
        // Each name's labels from the right, case-folded, as one key: compared bytewise.
        let keys = names.map { name -> [[UInt8]] in name.labels.reversed().map { $0.map(DNSName.fold) } }
        indices = Array(names.indices).sorted { a, b in
            for (x, y) in zip(keys[a], keys[b]) where x != y { return x.lexicographicallyPrecedes(y) }
            return keys[a].count < keys[b].count
        }
    }
}

/// The canonical form of RDATA (RFC 4034 §6.2, RFC 6840 §5.1): uncompressed, and the names of
/// the types that RFC lists in lower case.
enum Canonical {
    static func rdata(_ rdata: RData, type: RRType) -> [UInt8] {
        func name(_ n: DNSName) -> [UInt8] { n.lowercased().wire }
        switch rdata {
        case .a(let a): return a.array
        case .aaaa(let a): return a.bytes
        case .ns(let n), .cname(let n), .ptr(let n): return name(n)
        case .soa(let s):
            return name(s.mname) + name(s.rname) + ZoneSigner.u32(s.serial) + ZoneSigner.u32(s.refresh)
                + ZoneSigner.u32(s.retry) + ZoneSigner.u32(s.expire) + ZoneSigner.u32(s.minimum)
        case .mx(let p, let n): return ZoneSigner.u16(p) + name(n)
        case .txt(let strings): return strings.flatMap { [UInt8($0.count)] + $0 }
        case .srv(let p, let w, let port, let t):
            return ZoneSigner.u16(p) + ZoneSigner.u16(w) + ZoneSigner.u16(port) + name(t)
        case .caa(let flags, let tag, let value): return [flags, UInt8(tag.count)] + tag + value
        case .unknown(let bytes): return unknown(bytes, type: type)
        }
    }

    /// RDATA held as its bytes: the names of the listed types this server holds so lowered
    /// (DNAME, RP, AFSDB, RT, NAPTR, KX, PX); the rest as they are.
    static func unknown(_ bytes: [UInt8], type: RRType) -> [UInt8] {
        // Where each type's names are: (offset of the first, how many follow one another).
        let layout: [UInt16: (Int, Int)] = [39: (0, 1), 17: (0, 2), 18: (2, 1), 21: (2, 1), 36: (2, 1), 26: (2, 2)]
        if type.rawValue == 35 { return naptr(bytes) }
        guard let (start, count) = layout[type.rawValue] else { return bytes }
        var out = Array(bytes.prefix(start))
        var at = start
        for _ in 0..<count {
            guard at < bytes.count, let (n, used) = DNSName.uncompressed(Array(bytes[at...])) else { return bytes }
            out += n.lowercased().wire
            at += used
        }
        return out + bytes[at...]
    }

    /// NAPTR (RFC 3403): order, preference, three character-strings, then the replacement name.
    static func naptr(_ bytes: [UInt8]) -> [UInt8] {
        var at = 4
        for _ in 0..<3 {
            guard at < bytes.count else { return bytes }
            at += 1 + Int(bytes[at])
        }
        guard at < bytes.count, let (n, _) = DNSName.uncompressed(Array(bytes[at...])) else { return bytes }
        return Array(bytes.prefix(at)) + n.lowercased().wire
    }
}
