import CNearcastABI

/// The control plane's half of the names table (see `nearcast_abi.h`): the hash of a question, as
/// the XDP program computes it, the layout of a record in the arena, and the placement of a new
/// generation of records and slots. Pure: `FastPath` writes what a plan says, so the placement
/// rules are tested without a kernel.
///
/// The rules that keep every query correct while the table changes:
/// - a record the live generation uses is never written over: a changed answer gets free space;
/// - the slots of the new generation are written whole before the generation switches;
/// - nothing is placed behind a slot whose tag equals its own (the program stops at the first tag
///   that matches), nor more than `probes` slots from its home. What cannot be placed, or finds no
///   room in the arena, is left to the slow path, which answers it all the same.
struct NamesTable: Equatable {
    /// Answers a generation holds.
    let capacity: Int
    /// Slots per generation: a power of two, at least twice the capacity.
    let slotCount: Int
    /// Pages of the arena (nc_names).
    let pages: Int
    static let probes = Int(NC_PROBES)
    static let pageBytes = Int(NC_ARENA_PAGE)
    static let recordMax = Int(NC_RECORD_MAX)

    init(capacity: Int, pages: Int) {
        self.capacity = capacity
        self.pages = pages
        var n = 16
        while n < 2 * capacity { n <<= 1 }
        slotCount = n
    }

    /// Bytes of the arena.
    var arenaBytes: Int { pages * Self.pageBytes }

    /// Pages that hold `bytes` of records, placed as `plan` places them (no record starts past
    /// `pageBytes - recordMax` into a page), with at least one.
    static func pages(forRecordBytes bytes: Int) -> Int {
        let usable = pageBytes - recordMax
        return max(1, (bytes + usable - 1) / usable)
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

    /// One question and its answer, encoded as a record of the arena, with its hash.
    struct Entry: Hashable, Sendable {
        var hash: UInt64
        var bytes: [UInt8]
    }

    /// The header of an answer (struct nc_answer before its sections).
    struct AnswerHead {
        var flags: UInt16 = 0
        var ancount: UInt16 = 0
        var nscount: UInt16 = 0
        var arcount: UInt16 = 0
        var checksum: UInt16 = 0
        var kind: UInt8 = 0
    }

    /// The record of a question (lower-cased wire `name`, `qtype`) and its answer: struct
    /// nc_record_head, the name zero padded to 8 octets, struct nc_answer's head, `sections`
    /// zero padded to 8 (nearcast_abi.h), in host order as the program reads it.
    static func record(name: [UInt8], qtype: UInt16, answer: AnswerHead, sections: [UInt8]) -> Entry {
        func padded(_ n: Int) -> Int { (n + 7) & ~7 }
        var r: [UInt8] = []
        r.reserveCapacity(8 + padded(name.count) + 16 + padded(sections.count))
        func u16(_ v: UInt16) { withUnsafeBytes(of: v) { r.append(contentsOf: $0) } }
        u16(qtype)
        u16(UInt16(name.count))
        r.append(contentsOf: [0, 0, 0, 0])
        r.append(contentsOf: name)
        r.append(contentsOf: repeatElement(0, count: padded(name.count) - name.count))
        for v in [
            answer.flags, answer.ancount, answer.nscount, answer.arcount, UInt16(sections.count), answer.checksum,
        ] {
            u16(v)
        }
        r.append(contentsOf: [answer.kind, 0, 0, 0])
        r.append(contentsOf: sections)
        r.append(contentsOf: repeatElement(0, count: padded(sections.count) - sections.count))
        return Entry(hash: hash(name: name, qtype: qtype), bytes: r)
    }

    /// The length of the record at the start of `bytes` (its head and answer head read from
    /// them), or nil when they cannot be one.
    static func recordLength(_ head: UnsafeRawBufferPointer) -> Int? {
        guard head.count >= 8 else { return nil }
        let len = Int(head.loadUnaligned(fromByteOffset: 2, as: UInt16.self))
        let answerAt = 8 + (len + 7) & ~7
        guard len >= 1, len < 256, head.count >= answerAt + 16 else { return nil }
        let sections = Int(head.loadUnaligned(fromByteOffset: answerAt + 8, as: UInt16.self))
        guard sections <= Int(NC_SECTIONS_MAX) else { return nil }
        return answerAt + 16 + (sections + 7) & ~7
    }

    /// What to write for a new generation.
    struct Plan: Sendable {
        /// Records to write at arena offsets the live generation does not use.
        var writes: [(offset: Int, entry: Entry)] = []
        /// The new generation's slots, `slotCount` of them.
        var slots: [UInt64]
        /// The new generation: entry -> its slot's reference (arena offset / 8 + 1).
        var live: [Entry: UInt32] = [:]
        /// Entries left to the slow path: the generation holds `capacity`, or no room in the arena.
        var full = 0
        /// Entries left to the slow path: no slot within `probes` of their home, or a slot of the
        /// same tag before them (a hash collision).
        var collisions = 0
        /// The NXDOMAIN walk's entries left out together (FastPath.prepare).
        var belowLeftOut = 0
        /// Bytes of the arena the new generation's records take.
        var recordBytes = 0
    }

    /// Places `entries` in a new generation beside `live` (the generation queries use now).
    func plan(_ entries: [Entry], live: [Entry: UInt32]) -> Plan {
        var plan = Plan(slots: [UInt64](repeating: 0, count: slotCount))
        var space = ArenaSpace(table: self, inUse: live)
        let mask = UInt64(slotCount - 1)
        for e in entries {
            let reused = live[e]
            guard plan.live.count < capacity else {
                plan.full += 1
                continue
            }
            // Arena space only when the entry can be placed: find the slot first.
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
            var ref: UInt32
            if let r = reused {
                ref = r
            } else {
                guard let offset = space.take(e.bytes.count) else {
                    plan.full += 1
                    continue
                }
                ref = UInt32(offset / 8 + 1)
                plan.writes.append((offset, e))
            }
            plan.slots[s] = (e.hash >> 32) << 32 | UInt64(ref)
            plan.live[e] = ref
            plan.recordBytes += e.bytes.count
        }
        return plan
    }

    /// The arena's free space for one plan: taken in address order, around the records the live
    /// generation uses and never starting a record past `pageBytes - recordMax` into a page.
    struct ArenaSpace {
        let size: Int
        /// The live records as (start, end) byte ranges, by start.
        let used: [(start: Int, end: Int)]
        var cursor = 0
        var next = 0

        init(table: NamesTable, inUse live: [Entry: UInt32]) {
            size = table.arenaBytes
            used = live.map { (Int($0.value - 1) * 8, Int($0.value - 1) * 8 + $0.key.bytes.count) }.sorted {
                $0.start < $1.start
            }
        }

        /// The offset of `length` free bytes (8-aligned), or nil when the arena has no more room.
        mutating func take(_ length: Int) -> Int? {
            while cursor < size {
                if cursor % NamesTable.pageBytes > NamesTable.pageBytes - NamesTable.recordMax {
                    cursor = (cursor / NamesTable.pageBytes + 1) * NamesTable.pageBytes
                    continue
                }
                while next < used.count && used[next].end <= cursor { next += 1 }
                if next < used.count && used[next].start < cursor + length {
                    cursor = used[next].end
                    continue
                }
                defer { cursor += (length + 7) & ~7 }
                return cursor
            }
            return nil
        }
    }
}
