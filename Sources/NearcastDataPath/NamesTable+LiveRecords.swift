extension NamesTable {
    /// The records a generation uses, each found by its bytes without a second copy of them: a
    /// digest of the bytes names where the record is (its reference and length), and the bytes
    /// themselves are read where they are, in the arena, to tell a record from another of the same
    /// digest (`holds`). At 1M names this holds 108 MiB less than a dictionary keyed by the
    /// records' bytes did.
    struct LiveRecords: Sendable {
        /// Whether the record at a reference (arena offset / 8 + 1) is these bytes.
        typealias Holds = (_ ref: UInt32, _ bytes: [UInt8]) -> Bool

        /// Digest → place (the reference, and the length above it); records whose digests
        /// collide (64 bits: rare) past the first in `more`.
        private var first: [UInt64: UInt64] = [:]
        private var more: [UInt64: [UInt64]] = [:]
        private(set) var count = 0
        /// The digest of a record's bytes (`digest(_:)`; tests give one that collides).
        private let digestOf: @Sendable ([UInt8]) -> UInt64

        init(digest: @escaping @Sendable ([UInt8]) -> UInt64 = LiveRecords.digest) { digestOf = digest }

        mutating func reserveCapacity(_ n: Int) { first.reserveCapacity(n) }

        static func digest(_ bytes: [UInt8]) -> UInt64 {
            var h = Hasher()
            bytes.withUnsafeBytes { h.combine(bytes: $0) }
            return UInt64(bitPattern: Int64(h.finalize()))
        }

        private static func place(_ ref: UInt32, _ length: Int) -> UInt64 { UInt64(length) << 32 | UInt64(ref) }

        /// The reference of the record `e`'s bytes, when a generation uses one.
        func ref(of e: Entry, holds: Holds) -> UInt32? {
            guard count > 0 else { return nil }  // a first generation's million digests unasked
            let d = digestOf(e.bytes)
            func at(_ p: UInt64) -> UInt32? {
                let ref = UInt32(truncatingIfNeeded: p)
                return Int(p >> 32) == e.bytes.count && holds(ref, e.bytes) ? ref : nil
            }
            guard let p = first[d] else { return nil }
            if let ref = at(p) { return ref }
            for p in more[d] ?? [] { if let ref = at(p) { return ref } }
            return nil
        }

        /// Notes that the record `e` is at `ref`. Records are noted once each: a record's bytes
        /// hold its name, and a generation holds a name once.
        mutating func insert(_ e: Entry, ref: UInt32) {
            let d = digestOf(e.bytes)
            let p = Self.place(ref, e.bytes.count)
            if first[d] == nil { first[d] = p } else { more[d, default: []].append(p) }
            count += 1
        }

        /// Forgets the record `e` (still in the arena, for `holds` to read).
        mutating func remove(_ e: Entry, holds: Holds) {
            let d = digestOf(e.bytes)
            func matches(_ p: UInt64) -> Bool {
                Int(p >> 32) == e.bytes.count && holds(UInt32(truncatingIfNeeded: p), e.bytes)
            }
            if let p = first[d], matches(p) {
                first[d] = more[d]?.first
                if more[d]?.isEmpty == false { more[d]!.removeFirst() }
                if more[d]?.isEmpty == true { more[d] = nil }
                count -= 1
            } else if let i = more[d]?.firstIndex(where: matches) {
                more[d]!.remove(at: i)
                if more[d]!.isEmpty { more[d] = nil }
                count -= 1
            }
        }

        /// Where every record is, in arena order: its offset and length. (Sorted as words of
        /// reference and length: a million places sorted as pairs by a closure took 0.1 s of a
        /// generation's writing.)
        var places: [(offset: Int, length: Int)] {
            var keys: [UInt64] = []
            keys.reserveCapacity(count)
            for p in first.values { keys.append(p << 32 | p >> 32) }
            for ps in more.values { for p in ps { keys.append(p << 32 | p >> 32) } }
            keys.sort()
            return keys.map { (Int(UInt32(truncatingIfNeeded: $0 >> 32) - 1) * 8, Int(UInt32(truncatingIfNeeded: $0))) }
        }
    }
}
