import NearcastBasics

extension NamesTable {
    /// The records a generation uses, each found by its bytes without a second copy of them: a
    /// digest of the bytes names where the record is (its reference and length), and the bytes
    /// themselves are read where they are, in the arena, to tell a record from another of the same
    /// digest (`holds`). At 1M names this holds 108 MiB less than a dictionary keyed by the
    /// records' bytes did.
    ///
    /// The digests are kept in shards, by digest, so that a whole generation's records are noted
    /// on every core (`init(noting:parts:)`), each thread a shard of its own: noted one at a time
    /// on one thread, a million records took 0.3 s of a generation's writing.
    struct LiveRecords: Sendable {
        /// Whether the record at a reference (arena offset / 8 + 1) is these bytes.
        typealias Holds = (_ ref: UInt32, _ bytes: [UInt8]) -> Bool

        /// Digest → place (the reference, and the length above it); records whose digests
        /// collide (64 bits: rare) past the first in `more`.
        private struct Shard: Sendable {
            var first: [UInt64: UInt64] = [:]
            var more: [UInt64: [UInt64]] = [:]
        }
        private var shards: [Shard]
        private(set) var count = 0
        /// The digest of a record's bytes (`digest(_:)`; tests give one that collides).
        private let digestOf: @Sendable ([UInt8]) -> UInt64

        init(digest: @escaping @Sendable ([UInt8]) -> UInt64 = LiveRecords.digest, shards: Int = 1) {
            digestOf = digest
            self.shards = Array(repeating: Shard(), count: max(1, shards))
        }

        /// `records` noted, on `parts` threads: their digests made on every core, then each
        /// thread notes those of its shard. As `insert` of each, in any order.
        init(
            noting records: [(entry: Entry, ref: UInt32)], parts: Int,
            digest: @escaping @Sendable ([UInt8]) -> UInt64 = LiveRecords.digest
        ) {
            let places = ParallelWork.map(records, parts: parts) { slice in
                slice.map { (digest: digest($0.entry.bytes), place: Self.place($0.ref, $0.entry.bytes.count)) }
            }
            self.init(digested: places, parts: parts, digest: digest)
        }

        /// Records noted by their digests (made with `digest`) and places, in lists of any
        /// number: each of `parts` threads notes those of its shard.
        init(
            digested places: [[(digest: UInt64, place: UInt64)]], parts: Int,
            digest: @escaping @Sendable ([UInt8]) -> UInt64 = LiveRecords.digest
        ) {
            self.init(digest: digest, shards: parts)
            let shardCount = shards.count
            let count = places.reduce(0) { $0 + $1.count }
            let perShard = count / shardCount + 1
            shards = ParallelWork.map(Array(0..<shardCount), parts: shardCount, smallest: 1) { mine in
                var shard = Shard()
                shard.first.reserveCapacity(perShard + perShard / 8)
                for part in places {
                    for (d, p) in part where Self.shard(of: d, among: shardCount) == mine.first! {
                        if shard.first[d] == nil { shard.first[d] = p } else { shard.more[d, default: []].append(p) }
                    }
                }
                return shard
            }
            self.count = count
        }

        /// The names' word hash from a seed of this process's own: a record's bytes are a whole
        /// number of words, a few loads and multiplies each (SipHash, as `Hasher` makes it, was
        /// four times as long: a third of noting a generation of a million records).
        static func digest(_ bytes: [UInt8]) -> UInt64 { NamesTable.wordHash(bytes, seed: digestSeed) }

        /// `digest` of a record where it is (in the arena).
        static func digest(_ bytes: UnsafeRawBufferPointer) -> UInt64 { NamesTable.wordHash(bytes, seed: digestSeed) }

        private static let digestSeed = UInt64.random(in: .min ... .max)

        static func place(_ ref: UInt32, _ length: Int) -> UInt64 { UInt64(length) << 32 | UInt64(ref) }

        /// The shard of a digest: its top bits, which the dictionaries' own hashing does not
        /// depend on.
        private static func shard(of d: UInt64, among n: Int) -> Int { n == 1 ? 0 : Int((d >> 48) % UInt64(n)) }

        /// The reference of the record `e`'s bytes, when a generation uses one.
        func ref(of e: Entry, holds: Holds) -> UInt32? {
            guard count > 0 else { return nil }  // a first generation's million digests unasked
            let d = digestOf(e.bytes)
            let shard = shards[Self.shard(of: d, among: shards.count)]
            func at(_ p: UInt64) -> UInt32? {
                let ref = UInt32(truncatingIfNeeded: p)
                return Int(p >> 32) == e.bytes.count && holds(ref, e.bytes) ? ref : nil
            }
            guard let p = shard.first[d] else { return nil }
            if let ref = at(p) { return ref }
            for p in shard.more[d] ?? [] { if let ref = at(p) { return ref } }
            return nil
        }

        /// Notes that the record `e` is at `ref`. Records are noted once each: a record's bytes
        /// hold its name, and a generation holds a name once.
        mutating func insert(_ e: Entry, ref: UInt32) {
            let d = digestOf(e.bytes)
            let p = Self.place(ref, e.bytes.count)
            let s = Self.shard(of: d, among: shards.count)
            if shards[s].first[d] == nil { shards[s].first[d] = p } else { shards[s].more[d, default: []].append(p) }
            count += 1
        }

        /// Forgets the record `e` (still in the arena, for `holds` to read).
        mutating func remove(_ e: Entry, holds: Holds) {
            let d = digestOf(e.bytes)
            let s = Self.shard(of: d, among: shards.count)
            func matches(_ p: UInt64) -> Bool {
                Int(p >> 32) == e.bytes.count && holds(UInt32(truncatingIfNeeded: p), e.bytes)
            }
            if let p = shards[s].first[d], matches(p) {
                shards[s].first[d] = shards[s].more[d]?.first
                if shards[s].more[d]?.isEmpty == false { shards[s].more[d]!.removeFirst() }
                if shards[s].more[d]?.isEmpty == true { shards[s].more[d] = nil }
                count -= 1
            } else if let i = shards[s].more[d]?.firstIndex(where: matches) {
                shards[s].more[d]!.remove(at: i)
                if shards[s].more[d]!.isEmpty { shards[s].more[d] = nil }
                count -= 1
            }
        }

        /// Where every record is, in arena order: its offset and length. (Sorted as words of
        /// reference and length: a million places sorted as pairs by a closure took 0.1 s of a
        /// generation's writing.)
        var places: [(offset: Int, length: Int)] {
            var keys: [UInt64] = []
            keys.reserveCapacity(count)
            for shard in shards {
                for p in shard.first.values { keys.append(p << 32 | p >> 32) }
                for ps in shard.more.values { for p in ps { keys.append(p << 32 | p >> 32) } }
            }
            keys.sort()
            return keys.map { (Int(UInt32(truncatingIfNeeded: $0 >> 32) - 1) * 8, Int(UInt32(truncatingIfNeeded: $0))) }
        }
    }
}
