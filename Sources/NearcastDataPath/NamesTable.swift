import CNearcastABI

/// The control plane's half of the names table (see `nearcast_abi.h`): the hash of a question, as
/// the XDP program computes it, and the placement of a new generation of entries and slots. Pure:
/// `FastPath` writes what a plan says, so the placement rules are tested without a kernel.
///
/// The rules that keep every query correct while the table changes:
/// - an entry the live generation uses is never rewritten: a changed answer gets a free index;
/// - the slots of the new generation are written whole before the generation switches;
/// - nothing is placed behind a slot whose tag equals its own (the program stops at the first tag
///   that matches), nor more than `probes` slots from its home. What cannot be placed, or finds no
///   free index, is left to the slow path, which answers it all the same.
struct NamesTable: Equatable {
    /// Entries of the nc_names map.
    let capacity: Int
    /// Slots per generation: a power of two, at least twice the capacity.
    let slotCount: Int
    static let probes = Int(NC_PROBES)

    init(capacity: Int) {
        self.capacity = capacity
        var n = 16
        while n < 2 * capacity { n <<= 1 }
        slotCount = n
    }

    /// The hash of a question: `name` the lower-cased wire name (NC_HASH_* in nearcast_abi.h).
    static func hash(name: [UInt8], qtype: UInt16) -> UInt64 {
        func mix(_ h: UInt64, _ w: UInt64) -> UInt64 {
            let m = (h ^ w) &* NC_HASH_MUL
            return m ^ (m >> 32)
        }
        var h = NC_HASH_SEED ^ UInt64(name.count)
        var i = 0
        while i < name.count {
            var w: UInt64 = 0
            for k in 0..<8 where i + k < name.count { w |= UInt64(name[i + k]) << (8 * UInt64(k)) }
            h = mix(h, w)
            i += 8
        }
        h = mix(h, UInt64(qtype))
        h ^= h >> 33
        h = h &* NC_HASH_FMIX1
        h ^= h >> 33
        h = h &* NC_HASH_FMIX2
        return h ^ (h >> 33)
    }

    /// One question and its answer, encoded as an nc_name_entry, with its hash.
    struct Entry: Hashable, Sendable {
        var hash: UInt64
        var bytes: [UInt8]
    }

    /// What to write for a new generation.
    struct Plan: Sendable {
        /// Entries to write at indexes the live generation does not use.
        var writes: [(index: UInt32, entry: Entry)] = []
        /// The new generation's slots, `slotCount` of them.
        var slots: [UInt64]
        /// The new generation: entry -> index.
        var live: [Entry: UInt32] = [:]
        /// Entries left to the slow path: no free index.
        var full = 0
        /// Entries left to the slow path: no slot within `probes` of their home, or a slot of the
        /// same tag before them (a hash collision).
        var collisions = 0
        /// The NXDOMAIN walk's entries left out together (FastPath.prepare).
        var belowLeftOut = 0
    }

    /// Places `entries` in a new generation beside `live` (the generation queries use now).
    func plan(_ entries: [Entry], live: [Entry: UInt32]) -> Plan {
        var plan = Plan(slots: [UInt64](repeating: 0, count: slotCount))
        let inUse = Set(live.values)
        var nextFree: UInt32 = 0
        let mask = UInt64(slotCount - 1)
        for e in entries {
            let reused = live[e]
            // A new index only when the entry can be placed: find the slot first.
            var slot: Int?
            for p in 0..<UInt64(Self.probes) {
                let s = Int((e.hash &+ p) & mask)
                if plan.slots[s] == 0 {
                    slot = s
                    break
                }
                if plan.slots[s] >> 32 == e.hash >> 32 { break }
            }
            guard let s = slot else {
                plan.collisions += 1
                continue
            }
            var index: UInt32
            if let r = reused {
                index = r
            } else {
                while nextFree < capacity && inUse.contains(nextFree) { nextFree += 1 }
                guard nextFree < capacity else {
                    plan.full += 1
                    continue
                }
                index = nextFree
                nextFree += 1
                plan.writes.append((index, e))
            }
            plan.slots[s] = (e.hash >> 32) << 32 | UInt64(index + 1)
            plan.live[e] = index
        }
        return plan
    }
}
