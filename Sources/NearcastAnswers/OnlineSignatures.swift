import DNSWire
import Foundation
import NearcastBasics
import NearcastZones
import Synchronization

/// The signatures of answers made for each query (a geo name's nodes for a client), in the zones
/// this server signs (Sources/NearcastAnswers/README.md, "Geo names"). A geo name answers one of a few
/// RRsets, whatever the client: each distinct one is signed once, as a variant, and kept. The
/// variants a geo section gives are signed when it is compiled or its zone's keys change
/// (`sign(_:)`); a set health makes that none was signed for is signed when first asked for.
///
/// One per daemon, shared by every responder: a new set of keys (`use`) makes the variants
/// signed by others stale, and they are signed anew as they are asked for.
public final class OnlineSignatures: Sendable {
    /// What signs a zone's variants: the keys' tags (which signatures are still good), the
    /// signing itself, and how long before their end signatures are made anew.
    public struct Signer: Sendable {
        public var keyTags: [UInt16]
        public var renewBefore: UInt32
        public var sign: @Sendable (RRSet) throws -> [ResourceRecord]

        public init(
            keyTags: [UInt16], renewBefore: UInt32, sign: @escaping @Sendable (RRSet) throws -> [ResourceRecord]
        ) {
            (self.keyTags, self.renewBefore, self.sign) = (keyTags, renewBefore, sign)
        }
    }

    /// An RRset, as its signature covers it: the owner lower-cased, the type, the TTL, and the
    /// data in canonical order (the order of the answer does not matter).
    struct Variant: Hashable, Sendable {
        var owner: DNSName
        var type: UInt16
        var ttl: UInt32
        /// A set: the same records in any order are one variant.
        var rdatas: Set<RData>

        init(_ set: RRSet) {
            owner = set.name.lowercased()
            (type, ttl) = (set.type.rawValue, set.ttl)
            rdatas = Set(set.rdatas)
        }
    }

    struct Signed: Sendable {
        var records: [ResourceRecord]
        var keyTags: [UInt16]
        /// The earliest end of its signatures (seconds since 1970).
        var expiration: UInt32
    }

    struct State: Sendable {
        var signers: [DNSName: Signer] = [:]
        var variants: [Variant: Signed] = [:]
    }
    private let state = Mutex(State())
    /// The most variants kept: past it, they are let go and signed again as asked for.
    static let limit = 1 << 20

    public init() {}

    /// Signs the variants of the zones `signers` holds from now on (a zone not in it: none).
    public func use(_ signers: [DNSName: Signer]) {
        state.withLock { $0.signers = signers }
    }

    /// The signer of the zone `owner` is in, and the zone's name.
    private func signer(of owner: DNSName, in s: State) -> (DNSName, Signer)? {
        var n = owner
        while true {
            if let signer = s.signers[n] { return (n, signer) }
            if n.isRoot { return nil }
            n = n.parent
        }
    }

    /// The signatures over `set`, made now if none good is kept; nil when its zone is not signed
    /// here or signing failed. Their owner is `set`'s name as given (the question's case).
    public func signatures(_ set: RRSet, now: UInt32) -> [ResourceRecord]? {
        let variant = Variant(set)
        let found = state.withLock { s -> (Signer, [ResourceRecord]?)? in
            guard let (_, signer) = signer(of: variant.owner, in: s) else { return nil }
            if let kept = s.variants[variant], kept.keyTags == signer.keyTags,
                kept.expiration > now &+ signer.renewBefore
            {
                return (signer, kept.records)
            }
            return (signer, nil)
        }
        guard let (signer, kept) = found else { return nil }
        let records: [ResourceRecord]
        if let kept {
            records = kept
        } else {
            guard let made = try? signer.sign(set) else { return nil }
            keep([(variant, made)], by: signer.keyTags)
            records = made
        }
        return records.map { ResourceRecord(name: set.name, type: $0.type, ttl: $0.ttl, rdata: $0.rdata) }
    }

    /// Signs those of `sets` whose variant has no good signatures kept, on every core; how many
    /// variants `sets` are, and how many of them were signed now. Blocking.
    @discardableResult
    public func sign(_ sets: [RRSet], now: UInt32) -> (variants: Int, signed: Int) {
        let distinct = Array(Set(sets.map(Variant.init)))
        let wanted = state.withLock { s in
            distinct.compactMap { v -> (Variant, Signer)? in
                guard let (_, signer) = signer(of: v.owner, in: s) else { return nil }
                if let kept = s.variants[v], kept.keyTags == signer.keyTags, kept.expiration > now &+ signer.renewBefore
                {
                    return nil
                }
                return (v, signer)
            }
        }
        let parts = ParallelWork.map(wanted, parts: ProcessInfo.processInfo.activeProcessorCount, smallest: 64) {
            slice in
            slice.compactMap { v, signer -> (Variant, [ResourceRecord], [UInt16])? in
                let set = RRSet(name: v.owner, type: RRType(rawValue: v.type), ttl: v.ttl, rdatas: Array(v.rdatas))
                return (try? signer.sign(set)).map { (v, $0, signer.keyTags) }
            }
        }
        var signed = 0
        for part in parts {
            for (v, records, tags) in part {
                keep([(v, records)], by: tags)
                signed += 1
            }
        }
        return (distinct.count, signed)
    }

    /// How many variants are kept.
    public var count: Int { state.withLock { $0.variants.count } }

    /// The variants kept whose signatures are good at `now` and by their zone's keys of now: what
    /// the fast path may answer with (each set's owner lower-cased, its TTL the signed one).
    public func current(now: UInt32) -> [(set: RRSet, signatures: [ResourceRecord])] {
        state.withLock { s in
            s.variants.compactMap { v, kept in
                guard let (_, signer) = signer(of: v.owner, in: s), kept.keyTags == signer.keyTags,
                    kept.expiration > now &+ signer.renewBefore
                else { return nil }
                return (
                    RRSet(name: v.owner, type: RRType(rawValue: v.type), ttl: v.ttl, rdatas: Array(v.rdatas)),
                    kept.records
                )
            }
        }
    }

    private func keep(_ made: [(Variant, [ResourceRecord])], by keyTags: [UInt16]) {
        state.withLock { s in
            if s.variants.count + made.count > Self.limit { s.variants = [:] }
            for (v, records) in made {
                let end = records.compactMap { Signature($0.rdata)?.expiration }.min() ?? 0
                s.variants[v] = Signed(records: records, keyTags: keyTags, expiration: end)
            }
        }
    }
}
