import Crypto
import DNSWire

/// The fields of an RRSIG record (RFC 4034 §3.1) that serving a signed zone reads.
public struct Signature: Sendable {
    public let typeCovered: RRType
    public let originalTTL: UInt32
    /// When it stops being valid, seconds since 1970 (RFC 4034 §3.1.5).
    public let expiration: UInt32
    /// The tag of the key that made it.
    public let keyTag: UInt16

    /// The fields of `rdata`, an RRSIG's; nil when it is too short to be one.
    public init?(_ rdata: RData) {
        guard case .unknown(let b) = rdata, b.count >= 18 else { return nil }
        func u32(_ i: Int) -> UInt32 {
            UInt32(b[i]) << 24 | UInt32(b[i + 1]) << 16 | UInt32(b[i + 2]) << 8 | UInt32(b[i + 3])
        }
        typeCovered = RRType(UInt16(b[0]) << 8 | UInt16(b[1]))
        (originalTTL, expiration, keyTag) = (u32(4), u32(8), UInt16(b[16]) << 8 | UInt16(b[17]))
    }
}

/// How a signed zone hashes its names for NSEC3 (RFC 5155 §5), as its NSEC3PARAM says.
public struct NSEC3Parameters: Hashable, Sendable {
    public let algorithm: UInt8
    public let iterations: UInt16
    public let salt: [UInt8]

    /// The parameters of `rdata`, an NSEC3PARAM's; nil when it is malformed or its hash is not SHA-1.
    init?(_ rdata: RData) {
        guard case .unknown(let b) = rdata, b.count >= 5, b[0] == 1, b.count == 5 + Int(b[4]) else { return nil }
        (algorithm, iterations, salt) = (b[0], UInt16(b[2]) << 8 | UInt16(b[3]), Array(b[5...]))
    }

    /// The hashed owner name of `name` in the zone `origin` (RFC 5155 §5): the base32hex of the
    /// iterated SHA-1 of its canonical form, as the first label below the apex.
    func hashedOwner(_ name: DNSName, origin: DNSName) -> DNSName {
        var digest = Array(Insecure.SHA1.hash(data: name.lowercased().wire + salt))
        for _ in 0..<iterations { digest = Array(Insecure.SHA1.hash(data: digest + salt)) }
        return try! origin.prepending(Self.base32hex(digest))
    }

    /// Base32 with the extended hex alphabet (RFC 4648 §7), lower case, without padding: its
    /// order is the order of the bytes it encodes.
    static func base32hex(_ bytes: [UInt8]) -> [UInt8] {
        let alphabet = Array("0123456789abcdefghijklmnopqrstuv".utf8)
        var out: [UInt8] = []
        var (buffer, bits) = (0, 0)
        for b in bytes {
            buffer = buffer << 8 | Int(b)
            bits += 8
            while bits >= 5 {
                bits -= 5
                out.append(alphabet[(buffer >> bits) & 31])
            }
        }
        if bits > 0 { out.append(alphabet[(buffer << (5 - bits)) & 31]) }
        return out
    }
}

/// The owners of a zone's NSEC or NSEC3 records in their chain's order, so that the record that
/// matches or covers a name is found by a binary search: the canonical order of names (RFC 4034
/// §6.1) for NSEC, the order of the hashed label for NSEC3 (all its owners are below the apex).
/// Kept by `Zone.put` as records come and go. The owners are held in chunks of at most
/// `chunkLimit`: a change of a zone shared with the one served copies the chunk it changes and the
/// list of chunks (2,000 at a million owners), not the chain, whose million references took 30 ms
/// to copy (and as long to release) on every change of a signed zone.
struct DenialChain: Sendable {
    let hashed: Bool
    /// The owners in order, none of the chunks empty.
    private var chunks: [[DNSName]] = []
    private(set) var count = 0
    static let chunkLimit = 512

    init(hashed: Bool) { self.hashed = hashed }

    /// The chain of `owners`, in no order.
    init(hashed: Bool, owners: [DNSName]) {
        self.hashed = hashed
        let sorted: [DNSName]
        if hashed {
            sorted = owners.sorted { Self.labelPrecedes($0, $1) }
        } else {
            let order = ZoneText.CanonicalOrder(owners)
            sorted = order.order.map { order.names[Int($0)] }
        }
        let half = Self.chunkLimit / 2
        chunks = stride(from: 0, to: sorted.count, by: half).map { Array(sorted[$0..<min($0 + half, sorted.count)]) }
        count = sorted.count
    }

    var isEmpty: Bool { count == 0 }

    private func precedes(_ a: DNSName, _ b: DNSName) -> Bool { hashed ? Self.labelPrecedes(a, b) : a < b }

    /// Whether `a`'s first label precedes `b`'s, case-folded (base32hex keeps the hashes' order).
    static func labelPrecedes(_ a: DNSName, _ b: DNSName) -> Bool {
        a.wire.withUnsafeBufferPointer { x in
            b.wire.withUnsafeBufferPointer { y in
                let (m, n) = (Int(x[0]), Int(y[0]))
                for i in 1...max(1, min(m, n)) where i <= min(m, n) {
                    let (p, q) = (DNSName.fold(x[i]), DNSName.fold(y[i]))
                    if p != q { return p < q }
                }
                return m < n
            }
        }
    }

    /// A place in the chain: a chunk and an index in it (`chunk == chunks.count`: past the end).
    private struct Place {
        var chunk: Int
        var index: Int
    }

    /// The place of the first owner that does not precede `name`.
    private func position(_ name: DNSName) -> Place {
        var (low, high) = (0, chunks.count)
        while low < high {
            let mid = (low + high) / 2
            if precedes(chunks[mid][chunks[mid].count - 1], name) { low = mid + 1 } else { high = mid }
        }
        guard low < chunks.count else { return Place(chunk: low, index: 0) }
        let chunk = chunks[low]
        var (l, h) = (0, chunk.count)
        while l < h {
            let mid = (l + h) / 2
            if precedes(chunk[mid], name) { l = mid + 1 } else { h = mid }
        }
        return Place(chunk: low, index: l)
    }

    /// Whether the owner at `p` is `name` (`p` from `position(name)`).
    private func holds(_ p: Place, _ name: DNSName) -> Bool {
        p.chunk < chunks.count && !precedes(name, chunks[p.chunk][p.index])
    }

    /// The owner before place `p`, the chain wrapping around.
    private func before(_ p: Place) -> DNSName {
        if p.chunk < chunks.count, p.index > 0 { return chunks[p.chunk][p.index - 1] }
        let c = p.chunk > 0 ? p.chunk - 1 : chunks.count - 1
        return chunks[c][chunks[c].count - 1]
    }

    /// The owner after the one at `p`, the chain wrapping around.
    private func after(_ p: Place) -> DNSName {
        if p.index + 1 < chunks[p.chunk].count { return chunks[p.chunk][p.index + 1] }
        return chunks[p.chunk + 1 < chunks.count ? p.chunk + 1 : 0][0]
    }

    /// The owner whose record matches `name` (it is `name`), or else covers it (the last owner
    /// before it, the chain's last for a name before them all); nil for an empty chain.
    func matchingOrCovering(_ name: DNSName) -> DNSName? {
        guard !chunks.isEmpty else { return nil }
        let p = position(name)
        return holds(p, name) ? chunks[p.chunk][p.index] : before(p)
    }

    /// Whether `name` owns a record of the chain.
    func contains(_ name: DNSName) -> Bool { holds(position(name), name) }

    /// The owners before and after `name` in the chain, which wraps around (`name` itself
    /// whether or not it is in the chain: the previous owner is then the one that covers it);
    /// nil for an empty chain.
    func neighbours(of name: DNSName) -> (previous: DNSName, next: DNSName)? {
        guard !chunks.isEmpty else { return nil }
        let p = position(name)
        if holds(p, name) { return (before(p), after(p)) }
        return (before(p), p.chunk < chunks.count ? chunks[p.chunk][p.index] : chunks[0][0])
    }

    mutating func insert(_ name: DNSName) {
        var p = position(name)
        if holds(p, name) { return }
        count += 1
        guard !chunks.isEmpty else {
            chunks = [[name]]
            return
        }
        if p.chunk == chunks.count { p = Place(chunk: chunks.count - 1, index: chunks[chunks.count - 1].count) }
        chunks[p.chunk].insert(name, at: p.index)
        if chunks[p.chunk].count > Self.chunkLimit {
            let half = chunks[p.chunk].count / 2
            let tail = Array(chunks[p.chunk][half...])
            chunks[p.chunk].removeSubrange(half...)
            chunks.insert(tail, at: p.chunk + 1)
        }
    }

    mutating func remove(_ name: DNSName) {
        let p = position(name)
        guard holds(p, name) else { return }
        count -= 1
        chunks[p.chunk].remove(at: p.index)
        if chunks[p.chunk].isEmpty { chunks.remove(at: p.chunk) }
    }
}

/// A zone's NSEC and NSEC3 chains (empty in a zone that is not signed).
struct DenialChains: Sendable {
    var nsec = DenialChain(hashed: false)
    var nsec3 = DenialChain(hashed: true)

    init() {}

    /// The chains of the owners of NSEC and NSEC3 RRsets, in no order.
    init(nsecOwners: [DNSName], nsec3Owners: [DNSName]) {
        if !nsecOwners.isEmpty { nsec = DenialChain(hashed: false, owners: nsecOwners) }
        if !nsec3Owners.isEmpty { nsec3 = DenialChain(hashed: true, owners: nsec3Owners) }
    }

    /// Notes that `name` now has (`present`) or has not an RRset of `type`.
    mutating func note(_ name: DNSName, _ type: RRType, present: Bool) {
        switch (type, present) {
        case (.nsec, true): nsec.insert(name)
        case (.nsec, false): nsec.remove(name)
        case (.nsec3, true): nsec3.insert(name)
        case (.nsec3, false): nsec3.remove(name)
        default: break
        }
    }
}

extension ZoneNode {
    /// Whether this name owns an NSEC3 record and nothing else but its signatures: a hashed
    /// owner name, which is in no other chain and answers as a name that does not exist (RFC 5155
    /// §7.2.8), as NSD and Knot answer it.
    var isHashedOwner: Bool {
        var nsec3 = false
        for s in sets {
            if s.type == .nsec3 { nsec3 = true } else if s.type != .rrsig { return false }
        }
        return nsec3
    }
}

extension Zone {
    /// Whether the zone is signed: its SOA has a signature. Then a query with the DO bit is
    /// answered with the signatures of what it carries and the proofs of what does not exist
    /// (RFC 4035 §3.1), from the records the zone holds: nearcast serves a signed zone as NSD and
    /// Knot serve one signed ahead (docs/ARCHITECTURE.md §18).
    public var isSigned: Bool {
        guard let sigs = tree[origin]?[.rrsig] else { return false }
        return sigs.rdatas.contains { Signature($0)?.typeCovered == .soa }
    }

    /// The owners of NSEC records before and after `name` in canonical order, the chain
    /// wrapping around (`name` need not own one: the previous owner is then the one whose NSEC
    /// covers it); nil when the zone has no NSEC. What a signer needs to link a name in or out.
    public func nsecNeighbours(of name: DNSName) -> (previous: DNSName, next: DNSName)? {
        chains.nsec.neighbours(of: name)
    }

    /// Whether the zone denies with NSEC3 (`nsec3Parameters`), not NSEC.
    public var deniesWithNSEC3: Bool { nsec3Parameters != nil }

    /// The zone's NSEC3 parameters, when it denies with NSEC3: an NSEC3PARAM at the apex and
    /// NSEC3 records.
    var nsec3Parameters: NSEC3Parameters? {
        guard !chains.nsec3.isEmpty, let set = tree[origin]?[.nsec3param] else { return nil }
        return set.rdatas.lazy.compactMap(NSEC3Parameters.init).first
    }

    /// What a DNSSEC answer adds to the data of one lookup in a signed zone: signatures beside
    /// the RRsets, and the NSEC or NSEC3 records (with theirs) that prove what is not there.
    struct Proofs {
        let zone: Zone
        let nsec3: NSEC3Parameters?
        /// The NSEC and NSEC3 RRsets placed in the authority section so far (each once).
        var placed: Set<DNSName> = []

        /// The proofs of `zone`, nil when it is not signed.
        init?(_ zone: Zone) {
            guard zone.isSigned else { return nil }
            (self.zone, nsec3) = (zone, zone.nsec3Parameters)
        }

        /// The signatures of `set` (held at `set.name`) as served at `owner` with `ttl`.
        func signatures(of set: RRSet, at owner: DNSName? = nil, ttl: UInt32? = nil) -> [ResourceRecord] {
            guard let sigs = zone.tree[set.name]?[.rrsig] else { return [] }
            return sigs.rdatas.compactMap { rdata in
                guard Signature(rdata)?.typeCovered == set.type else { return nil }
                return ResourceRecord(name: owner ?? set.name, type: .rrsig, ttl: ttl ?? set.ttl, rdata: rdata)
            }
        }

        /// `set`'s records at `owner` and their signatures.
        func signed(_ set: RRSet, at owner: DNSName? = nil) -> [ResourceRecord] {
            set.records(owner: owner) + signatures(of: set, at: owner)
        }

        /// `records` (the additional section's addresses, an RRset's records one after another),
        /// each RRset followed by its signatures.
        func signedAdditional(_ records: [ResourceRecord]) -> [ResourceRecord] {
            var out: [ResourceRecord] = []
            for (i, r) in records.enumerated() {
                out.append(r)
                let next = i + 1 < records.count ? records[i + 1] : nil
                if next?.type != r.type || next?.name != r.name, let set = zone.rrset(r.name, r.type) {
                    out += signatures(of: set)
                }
            }
            return out
        }

        /// The negative answer's SOA and its signatures.
        var negativeSOA: [ResourceRecord] {
            let soa = zone.negativeSOA
            return [soa] + signatures(of: zone.soa, ttl: soa.ttl)
        }

        /// The denial record (NSEC or NSEC3) at `owner` with its signatures, unless placed already.
        mutating func denial(at owner: DNSName?, _ type: RRType) -> [ResourceRecord] {
            guard let owner, let set = zone.tree[owner]?[type], placed.insert(owner).inserted else { return [] }
            return signed(set)
        }

        /// The NSEC that matches `name` or covers it. One the name owns is found by the name
        /// (a NODATA's, the common case: the chain's search compares names all the way).
        mutating func nsec(for name: DNSName) -> [ResourceRecord] {
            if zone.tree[name]?[.nsec] != nil { return denial(at: name, .nsec) }
            return denial(at: zone.chains.nsec.matchingOrCovering(name), .nsec)
        }

        /// The NSEC3 that matches `name`'s hash or covers it.
        mutating func nsec3(for name: DNSName, _ p: NSEC3Parameters) -> [ResourceRecord] {
            denial(at: zone.chains.nsec3.matchingOrCovering(p.hashedOwner(name, origin: zone.origin)), .nsec3)
        }

        /// Whether an NSEC3 matches `name`'s hash.
        func nsec3Matches(_ name: DNSName, _ p: NSEC3Parameters) -> Bool {
            zone.chains.nsec3.contains(p.hashedOwner(name, origin: zone.origin))
        }

        /// The name one label longer than `encloser` on the way down to `name` (RFC 5155 §1.3).
        func nextCloser(_ name: DNSName, below encloser: DNSName) -> DNSName {
            var n = name
            while n.labels.count > encloser.labels.count + 1 { n = n.parent }
            return n
        }

        /// The closest encloser proof of `name` (RFC 5155 §7.2.1) from `encloser`, the closest
        /// name above it that an NSEC3 matches: that NSEC3, and the one covering the next closer
        /// name.
        mutating func closestEncloserProof(_ name: DNSName, _ encloser: DNSName, _ p: NSEC3Parameters)
            -> [ResourceRecord]
        {
            nsec3(for: encloser, p) + nsec3(for: nextCloser(name, below: encloser), p)
        }

        /// The closest provable encloser of `name` (RFC 5155 §7.2.4 and §7.2.7: under opt-out a
        /// delegation has no NSEC3 of its own): the closest ancestor an NSEC3 matches.
        func provableEncloser(of name: DNSName, _ p: NSEC3Parameters) -> DNSName {
            var a = name.parent
            while a != zone.origin && !nsec3Matches(a, p) { a = a.parent }
            return a
        }

        /// Proof that `name` does not exist, `encloser` being its closest encloser (RFC 4035
        /// §3.1.3.2, RFC 5155 §7.2.2): no such name, and no wildcard that could stand for it.
        mutating func nameError(_ name: DNSName, encloser: DNSName) -> [ResourceRecord] {
            // (An encloser always has room for a wildcard below it: the name is longer still.)
            if let p = nsec3 {
                let proof = closestEncloserProof(name, encloser, p)
                return proof + (encloser.wildcardChild.map { nsec3(for: $0, p) } ?? [])
            }
            return nsec(for: name) + (encloser.wildcardChild.map { nsec(for: $0) } ?? [])
        }

        /// Proof that `name`, which exists (at `wildcard` when a wildcard stands for it), has no
        /// RRset of `qtype` (RFC 4035 §3.1.3.1 and §3.1.3.4, RFC 5155 §7.2.3 to §7.2.5).
        mutating func noData(_ name: DNSName, _ qtype: RRType, wildcard: DNSName?) -> [ResourceRecord] {
            if let p = nsec3 {
                if let wildcard {
                    let encloser = wildcard.parent
                    return closestEncloserProof(name, encloser, p) + nsec3(for: wildcard, p)
                }
                if nsec3Matches(name, p) { return nsec3(for: name, p) }
                // A DS question at a delegation under opt-out: the closest provable encloser.
                return closestEncloserProof(name, provableEncloser(of: name, p), p)
            }
            if let wildcard { return nsec(for: name) + nsec(for: wildcard) }
            return nsec(for: name)
        }

        /// Proof that no closer name than `wildcard` matched `name` (RFC 4035 §3.1.3.3, RFC 5155 §7.2.6).
        mutating func wildcardAnswer(_ name: DNSName, wildcard: DNSName) -> [ResourceRecord] {
            if let p = nsec3 { return nsec3(for: nextCloser(name, below: wildcard.parent), p) }
            return nsec(for: name)
        }

        /// What a referral to `cut` carries beside its NS RRset: its DS RRset signed, or proof
        /// that it has none (RFC 4035 §3.1.4, RFC 5155 §7.2.7).
        mutating func referral(_ cut: DNSName) -> [ResourceRecord] {
            if let ds = zone.tree[cut]?[.ds] { return signed(ds) }
            if let p = nsec3 {
                if nsec3Matches(cut, p) { return nsec3(for: cut, p) }
                return closestEncloserProof(cut, provableEncloser(of: cut, p), p)
            }
            return nsec(for: cut)
        }
    }
}

/// An NSEC's type bitmap (RFC 4034 §4.1.2): windows of 256 types, each its number, its length,
/// and a bit per type, trailing zero octets and empty windows left out.
public enum NSECBitmap {
    /// `bitmap` with `type` taken out, in its canonical form; nil when it does not read.
    public static func removing(_ type: RRType, from bitmap: [UInt8]) -> [UInt8]? {
        var out: [UInt8] = []
        var at = 0
        while at < bitmap.count {
            guard at + 2 <= bitmap.count else { return nil }
            let (window, length) = (bitmap[at], Int(bitmap[at + 1]))
            guard (1...32).contains(length), at + 2 + length <= bitmap.count else { return nil }
            var bits = Array(bitmap[at + 2..<at + 2 + length])
            if UInt8(type.rawValue >> 8) == window, Int(type.rawValue & 0xFF) / 8 < length {
                bits[Int(type.rawValue & 0xFF) / 8] &= ~(0x80 >> UInt8(type.rawValue & 7))
            }
            while bits.last == 0 { bits.removeLast() }
            if !bits.isEmpty { out += [window, UInt8(bits.count)] + bits }
            at += 2 + length
        }
        return out
    }
}

extension Zone {
    /// A NODATA for `qtype` at `name` that the zone's records do not make: a geo name whose
    /// nodes are all down and whose policy is NODATA, which the zone's chain lists with the
    /// types it answers. The negative SOA with its signatures, and the NSEC `name` owns with
    /// `qtype` taken out of its types, for the caller to sign as it answers (what it says holds
    /// while the nodes are down). Nil when the zone is not signed, `name` owns no NSEC (an
    /// NSEC3 zone), or its NSEC does not read.
    public func onlineNoData(_ name: DNSName, _ qtype: RRType) -> (soa: [ResourceRecord], nsec: RRSet)? {
        guard let proofs = Proofs(self), let set = rrset(name, .nsec), case .unknown(let rdata)? = set.rdatas.first,
            let (_, used) = DNSName.uncompressed(rdata),
            let bitmap = NSECBitmap.removing(qtype, from: Array(rdata[used...]))
        else { return nil }
        let nsec = RRSet(name: set.name, type: .nsec, ttl: set.ttl, rdatas: [.unknown(Array(rdata[..<used]) + bitmap)])
        return (proofs.negativeSOA, nsec)
    }
}
