import CNearcastABI
import NearcastBasics

/// The control plane's half of the names table (see `nearcast_abi.h`): the hash of a name, as the
/// XDP program computes it, the layout of a record in the arena, and the placement of a new
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
    /// Names (records) a generation holds.
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

    static let answerAtMax = Int(NC_ANSWER_AT_MAX)
    static let typesMax = Int(NC_TYPES_MAX)

    /// The hash of a name (NC_HASH_* in nearcast_abi.h): `name` the lower-cased wire name.
    static func hash(name: [UInt8]) -> UInt64 { wordHash(name, seed: NC_HASH_SEED) }

    /// The program's hash (nearcast_abi.h) of `bytes` from `seed`: their length, each 8-octet
    /// word (the last zero padded) and a zero word mixed in, then finished. Each word's mix is a
    /// bijection of the state, so inputs of one length that differ in one word never collide.
    static func wordHash(_ bytes: [UInt8], seed: UInt64) -> UInt64 {
        bytes.withUnsafeBytes { wordHash($0, seed: seed) }
    }

    /// `wordHash` of bytes where they are.
    static func wordHash(_ b: UnsafeRawBufferPointer, seed: UInt64) -> UInt64 {
        func mix(_ h: UInt64, _ w: UInt64) -> UInt64 {
            let m = (h ^ w) &* NC_HASH_MUL
            return m ^ (m >> 32)
        }
        var h = seed ^ UInt64(b.count)
        // Whole words loaded as such (little-endian, as the program reads them): a byte at a
        // time, a million names' hashes took 0.08 s of a start.
        var i = 0
        while i + 8 <= b.count {
            h = mix(h, UInt64(littleEndian: b.loadUnaligned(fromByteOffset: i, as: UInt64.self)))
            i += 8
        }
        if i < b.count {
            var w: UInt64 = 0
            for k in 0..<(b.count - i) { w |= UInt64(b[i + k]) << (8 * UInt64(k)) }
            h = mix(h, w)
        }
        h = mix(h, 0)
        h ^= h >> 33
        h = h &* NC_HASH_FMIX1
        h ^= h >> 33
        h = h &* NC_HASH_FMIX2
        return h ^ (h >> 33)
    }

    /// One name's record, encoded as in the arena, with the name's hash.
    struct Entry: Hashable, Sendable {
        var hash: UInt64
        var bytes: [UInt8]

        /// The bytes in one piece: hashed a byte at a time (as synthesized), a million records
        /// took a second of a generation's writing.
        func hash(into hasher: inout Hasher) {
            hasher.combine(hash)
            bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
        }
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

    /// One answer of a record: its type, head and sections, and whether it is the answer to a
    /// query with the DO bit (NC_AT_SIGNED in its directory entry).
    struct Answer {
        var qtype: UInt16
        var head: AnswerHead
        var sections: [UInt8]
        var signed = false

        /// The bytes it takes in a record: struct nc_answer's head and the sections padded to 8.
        var length: Int { 16 + (sections.count + 7) & ~7 }
    }

    /// The record of a name (lower-cased wire `name`): struct nc_record_head, the name zero padded
    /// to 8 octets, the directory (struct nc_type_ref each, padded to 8), then each answer as
    /// struct nc_answer's head and its sections zero padded to 8 (nearcast_abi.h), in host order as
    /// the program reads it. Answers that do not fit (past NC_TYPES_MAX, or past where an answer may
    /// start) are left out: `complete` says whether all are in. `hash`: the name's, when known.
    static func record<Answers: RandomAccessCollection<Answer>>(
        name: [UInt8], hash known: UInt64? = nil, flags: UInt8, negative: UInt16, answers: Answers
    ) -> (entry: Entry, complete: Bool) {
        let (length, kept, _) = encodeRecord(
            name: name, flags: flags, negative: negative, answers: answers, into: nil)
        let bytes = [UInt8](unsafeUninitializedCapacity: length) { buffer, initialized in
            encodeRecord(
                name: name, flags: flags, negative: negative, answers: answers,
                into: UnsafeMutableRawBufferPointer(buffer))
            initialized = length
        }
        return (Entry(hash: known ?? hash(name: name), bytes: bytes), kept == answers.count)
    }

    /// `record`'s bytes written to the start of `out` (which has room for them, and is 8-aligned
    /// in the arena), or with `out` nil only measured: their length, how many of `answers` they
    /// keep, and how many they keep before the first left out. The two share one pass's rules,
    /// so a record measured first and written later (a first generation's, straight into the
    /// arena) takes exactly the room measured.
    @discardableResult
    static func encodeRecord<Answers: RandomAccessCollection<Answer>>(
        name: [UInt8], flags: UInt8, negative: UInt16, answers: Answers, into out: UnsafeMutableRawBufferPointer?
    ) -> (length: Int, kept: Int, leading: Int) {
        func padded(_ n: Int) -> Int { (n + 7) & ~7 }
        let nameEnd = 8 + padded(name.count)
        // Which answers are kept, on the stack, and the record written in place: a generation
        // makes a million records, and each array made for one (the answers kept, each answer's
        // head) was an allocation and a free.
        return withUnsafeTemporaryAllocation(of: Answers.Index.self, capacity: typesMax) { kept in
            var count = 0
            var leading: Int?
            var at = nameEnd + padded(4 * min(answers.count, typesMax))
            for i in answers.indices {
                let length = answers[i].length
                guard count < typesMax, at <= answerAtMax && at + length <= recordMax else {
                    if leading == nil { leading = count }
                    continue
                }
                kept[count] = i
                count += 1
                at += length
            }
            let directoryEnd = nameEnd + padded(4 * count)
            let total = at - padded(4 * min(answers.count, typesMax)) + padded(4 * count)
            guard let out else { return (total, count, leading ?? count) }
            precondition(out.count >= total, "a record written where it has no room")
            out.baseAddress!.initializeMemory(as: UInt8.self, repeating: 0, count: total)
            func u16(_ v: UInt16, _ offset: Int) { out.storeBytes(of: v, toByteOffset: offset, as: UInt16.self) }
            u16(UInt16(name.count), 0)
            out[2] = UInt8(count)
            out[3] = flags
            u16(negative, 4)
            u16(UInt16(total / 8), 6)
            name.withUnsafeBytes {
                out.baseAddress!.advanced(by: 8).copyMemory(from: $0.baseAddress!, byteCount: $0.count)
            }
            var answerAt = directoryEnd
            for k in 0..<count {
                let a = answers[kept[k]]
                u16(a.qtype, nameEnd + 4 * k)
                u16(UInt16(answerAt) | (a.signed ? UInt16(NC_AT_SIGNED) : 0), nameEnd + 4 * k + 2)
                u16(a.head.flags, answerAt)
                u16(a.head.ancount, answerAt + 2)
                u16(a.head.nscount, answerAt + 4)
                u16(a.head.arcount, answerAt + 6)
                u16(UInt16(a.sections.count), answerAt + 8)
                u16(a.head.checksum, answerAt + 10)
                out[answerAt + 12] = a.head.kind
                a.sections.withUnsafeBytes { s in
                    if let from = s.baseAddress {
                        out.baseAddress!.advanced(by: answerAt + 16).copyMemory(from: from, byteCount: s.count)
                    }
                }
                answerAt += a.length
            }
            return (total, count, leading ?? count)
        }
    }

    /// The length of the record at the start of `bytes` (its head read from them), or nil when
    /// they cannot be one.
    static func recordLength(_ head: UnsafeRawBufferPointer) -> Int? {
        guard head.count >= 8 else { return nil }
        let len = Int(head.loadUnaligned(fromByteOffset: 0, as: UInt16.self))
        let length = 8 * Int(head.loadUnaligned(fromByteOffset: 6, as: UInt16.self))
        guard len >= 1, len < 256, length >= 8 + (len + 7) & ~7, length <= recordMax else { return nil }
        return length
    }

    /// The name of the record `bytes`.
    static func recordName(_ bytes: [UInt8]) -> [UInt8] {
        let len = Int(bytes[0]) | Int(bytes[1]) << 8
        return Array(bytes[8..<(8 + len)])
    }

    /// What to write for a new generation.
    struct Plan: Sendable {
        /// Records to write at arena offsets the live generation does not use.
        var writes: [(offset: Int, entry: Entry)] = []
        /// Records the plan wrote itself, where they go (`freshPlan`).
        var writtenInPlace = 0
        /// The new generation's slots, `slotCount` of them.
        var slots: [UInt64]
        /// The new generation's records and their references (arena offset / 8 + 1).
        var live = LiveRecords()
        /// Entries (indexes) that found no room in the arena.
        var noRoom: [Int] = []
        /// Names in the new generation (records in its slots).
        var names = 0
        /// Names left to the slow path: the generation holds `capacity`, or no room in the arena.
        var full = 0
        /// Names left to the slow path: no slot within `probes` of their home, or a slot of the
        /// same tag before them (a hash collision).
        var collisions = 0
        /// Answers left out because their name's record could not hold them.
        var tooBig = 0
        /// Negative answers left out (FastPath.TableWrite.negativesLeftOut).
        var negativesLeftOut = 0
        /// Names and negative answers left out for want of arena room (FastPath.TableWrite.noRoom).
        var noRoomLeftOut = 0
        /// Bytes of the arena the new generation's records take.
        var recordBytes = 0
        /// Where the new generation's records are, in arena order (`ArenaSpace` around them).
        var places: [(offset: Int, length: Int)] = []
    }

    /// Where a new generation's names go in its slots.
    struct Placement {
        /// The slot of each name (nil: left out, or in `skip`).
        var slots: [Int?]
        /// Names left out because the generation holds `capacity` (the rest were collisions).
        var full = 0
        /// Slots that must hold a tag and no record: a name that could not be reached behind
        /// another of the same tag keeps its slot, so that the names past it stay reachable.
        var kept: [(slot: Int, tag: UInt32)] = []
        /// The names left out behind another of the same tag (those of `kept`): the program
        /// passes their queries when it meets the other's record, so their enclosers keep
        /// NC_NAME_NXDOMAIN (nearcast_abi.h).
        var shadowed: Set<Int> = []
    }

    /// The slot of each name whose hash is in `hashes` (nil for those in `skip`) in a new
    /// generation, at most `capacity` of them: nil for a name left out, because the generation is
    /// full, or no slot within `probes` of its home is free, or one of the same tag lies on the
    /// way (a hash collision). Robin Hood placement: a name takes the slot of one nearer its own
    /// home and that one moves on, so no name lies far from its home while others lie near theirs
    /// (with plain linear probing, about one name in a thousand found no slot within 8 of its home
    /// at the load the daemon sizes for).
    func place(_ hashes: [UInt64], skip: Set<Int> = []) -> Placement {
        let mask = slotCount - 1
        var occupant = [Int32](repeating: -1, count: slotCount)
        var out = Placement(slots: [Int?](repeating: nil, count: hashes.count))
        var placed = 0
        func home(_ i: Int) -> Int { Int(truncatingIfNeeded: hashes[i]) & mask }
        func tag(_ i: Int) -> UInt32 { UInt32(truncatingIfNeeded: hashes[i] >> 32) }
        for i in hashes.indices where !skip.contains(i) {
            guard placed < capacity else {
                out.full += 1
                continue
            }
            var (current, distance, s) = (i, 0, home(i))
            while distance < Self.probes {
                let o = Int(occupant[s])
                if o < 0 {
                    occupant[s] = Int32(current)
                    out.slots[current] = s
                    placed += 1
                    break
                }
                let theirs = (s - home(o)) & mask
                if theirs < distance {
                    occupant[s] = Int32(current)
                    out.slots[current] = s
                    out.slots[o] = nil
                    (current, distance) = (o, theirs)
                }
                s = (s + 1) & mask
                distance += 1
            }
        }
        // The program stops at the first slot of a name's tag: a name behind another of its tag
        // cannot be found, and is left out (its slot kept, for those past it).
        for s in 0..<slotCount where occupant[s] >= 0 {
            let i = Int(occupant[s])
            var p = home(i)
            while p != s {
                if tag(Int(occupant[p])) == tag(i) {
                    out.slots[i] = nil
                    out.kept.append((s, tag(i)))
                    out.shadowed.insert(i)
                    break
                }
                p = (p + 1) & mask
            }
        }
        return out
    }

    /// Writes for a new generation beside `live` (the generation queries use now): the records of
    /// `unslotted` (negative answers', which no slot points at), then each of `placed` at the
    /// slot `place` gave it; each record where the live generation has it or in free arena space,
    /// and the `kept` slots. An entry that finds no room in the arena is in `noRoom` (by its index,
    /// `unslotted`'s first), and the plan is to be made again without it. The new generation's
    /// records are noted (`Plan.live`) on `parts` threads.
    func plan(
        unslotted: [Entry] = [], _ placed: [(slot: Int, entry: Entry)], kept: [(slot: Int, tag: UInt32)] = [],
        live: LiveRecords, holds: LiveRecords.Holds, parts: Int = 1
    ) -> Plan {
        var plan = Plan(slots: [UInt64](repeating: 0, count: slotCount))
        let count = unslotted.count + placed.count
        // The new generation's records, noted at the end on every core (`LiveRecords`).
        var noted: [(entry: Entry, ref: UInt32)] = []
        noted.reserveCapacity(count)
        // The places of the records the live generation has already, in the order met.
        var reused: [(offset: Int, length: Int)] = []
        plan.writes.reserveCapacity(count - min(count, live.count))
        for (s, tag) in kept { plan.slots[s] = UInt64(tag) << 32 }
        var space = ArenaSpace(table: self, inUse: live)
        // (Walked as one sequence of indexes: joined into one array of optional slots, a
        // million entries were cast one by one, a third of the plan's time.)
        for i in 0..<count {
            let (s, e): (Int?, Entry) =
                i < unslotted.count
                ? (nil, unslotted[i]) : (placed[i - unslotted.count].slot, placed[i - unslotted.count].entry)
            var ref: UInt32
            if let r = live.ref(of: e, holds: holds) {
                ref = r
                reused.append((Int(r - 1) * 8, e.bytes.count))
            } else {
                guard let offset = space.take(e.bytes.count) else {
                    plan.noRoom.append(i)
                    continue
                }
                ref = UInt32(offset / 8 + 1)
                plan.writes.append((offset, e))
            }
            if let s {
                plan.slots[s] = (e.hash >> 32) << 32 | UInt64(ref)
                plan.names += 1
            }
            noted.append((e, ref))
            plan.recordBytes += e.bytes.count
        }
        plan.live = LiveRecords(noting: noted, parts: parts)
        // The records written are in arena order already (`space` takes room forward): only
        // those reused are sorted, and none are in a first generation (a million sorted, 0.1 s).
        reused.sort { $0.offset < $1.offset }
        plan.places.reserveCapacity(reused.count + plan.writes.count)
        var (r, w) = (0, 0)
        while r < reused.count || w < plan.writes.count {
            if w == plan.writes.count || (r < reused.count && reused[r].offset < plan.writes[w].offset) {
                plan.places.append(reused[r])
                r += 1
            } else {
                plan.places.append((plan.writes[w].offset, plan.writes[w].entry.bytes.count))
                w += 1
            }
        }
        return plan
    }

    /// Records made one after another into one array (each 8-aligned, as in the arena), with
    /// each one's slot, its name's hash and its length: a thread's share of a first generation
    /// (`freshPlan`), made without an array of each record's own.
    struct MadeRecords: Sendable {
        var bytes: [UInt8] = []
        var records: [(slot: Int, hash: UInt64, length: Int)] = []

        /// Makes room for `count` records in all, their bytes at the mean length of those made so
        /// far, and an eighth more: a part's bytes grown by doubling were copied, and their new
        /// pages zeroed by the kernel, about twice over (at 1M names, a tenth of the write).
        mutating func expect(_ count: Int) {
            records.reserveCapacity(count)
            guard !records.isEmpty else { return }
            bytes.reserveCapacity(bytes.count / records.count * count * 9 / 8)
        }

        /// Appends a record of `length` bytes (a multiple of 8) that `write` writes into the
        /// room given (zeroed).
        mutating func append(
            slot: Int, hash: UInt64, length: Int, _ write: (UnsafeMutableRawBufferPointer) -> Void
        ) {
            let at = bytes.count
            bytes.append(contentsOf: repeatElement(0, count: length))
            bytes.withUnsafeMutableBytes { write(UnsafeMutableRawBufferPointer(rebasing: $0[at..<(at + length)])) }
            records.append((slot, hash, length))
        }
    }

    /// A first generation's plan, its records copied to the arena as it is made. With nothing
    /// live, nothing is reused and nothing is in the way: every record goes to free space in
    /// order, so where each goes follows from the lengths alone (as `plan` would place them). The
    /// records of `unslotted` first, then those of each of `made` in turn, each copied to its
    /// place in `arena` and noted from there, `made`'s on a thread each: no array made and freed
    /// for each record (at 1M names, with the plan's copies of them, 0.5 s of a start). The
    /// `kept` slots as `plan` keeps them. nil when the records do not all fit in the arena: then
    /// `plan`, which leaves out what finds no room, is the way.
    func freshPlan(
        unslotted: [Entry], _ made: [MadeRecords], kept: [(slot: Int, tag: UInt32)],
        arena: UnsafeMutableRawBufferPointer
    ) -> Plan? {
        precondition(arena.count >= arenaBytes, "an arena smaller than the table's")
        var space = ArenaSpace(table: self, places: [])
        var placesOfUnslotted: [(offset: Int, length: Int)] = []
        for e in unslotted {
            guard let offset = space.take(e.bytes.count) else { return nil }
            placesOfUnslotted.append((offset, e.bytes.count))
        }
        var offsets: [[Int]] = []
        for part in made {
            var mine = [Int](repeating: 0, count: part.records.count)
            for (k, r) in part.records.enumerated() {
                guard let offset = space.take(r.length) else { return nil }
                mine[k] = offset
            }
            offsets.append(mine)
        }
        var plan = Plan(slots: [UInt64](repeating: 0, count: slotCount))
        for (s, tag) in kept { plan.slots[s] = UInt64(tag) << 32 }
        var noted: [(digest: UInt64, place: UInt64)] = []
        for (e, at) in zip(unslotted, placesOfUnslotted) {
            e.bytes.withUnsafeBytes {
                arena.baseAddress!.advanced(by: at.offset).copyMemory(from: $0.baseAddress!, byteCount: $0.count)
            }
            noted.append((LiveRecords.digest(e.bytes), LiveRecords.place(UInt32(at.offset / 8 + 1), e.bytes.count)))
        }
        let at = offsets
        let parted = plan.slots.withUnsafeMutableBufferPointer { slots in
            let out = ParallelWork.Disjoint((arena: arena.baseAddress!, slots: slots.baseAddress!))
            return ParallelWork.map(Array(made.indices), parts: made.count, smallest: 1) { mine in
                let p = mine.first!
                return made[p].bytes.withUnsafeBytes { bytes in
                    var from = 0
                    return made[p].records.indices.map { k -> (digest: UInt64, place: UInt64) in
                        let (offset, r) = (at[p][k], made[p].records[k])
                        let record = UnsafeRawBufferPointer(rebasing: bytes[from..<(from + r.length)])
                        (out.base.arena + offset).copyMemory(from: record.baseAddress!, byteCount: r.length)
                        from += r.length
                        let ref = UInt32(offset / 8 + 1)
                        out.base.slots[r.slot] = (r.hash >> 32) << 32 | UInt64(ref)
                        return (LiveRecords.digest(record), LiveRecords.place(ref, r.length))
                    }
                }
            }
        }
        plan.live = LiveRecords(digested: [noted] + parted, parts: made.count)
        plan.writtenInPlace = unslotted.count + made.reduce(0) { $0 + $1.records.count }
        plan.names = made.reduce(0) { $0 + $1.records.count }
        plan.recordBytes = placesOfUnslotted.reduce(0) { $0 + $1.length } + made.reduce(0) { $0 + $1.bytes.count }
        // In arena order as taken (`space` takes room forward).
        plan.places = placesOfUnslotted
        plan.places.reserveCapacity(plan.writtenInPlace)
        for (p, part) in made.enumerated() {
            for (k, r) in part.records.enumerated() { plan.places.append((at[p][k], r.length)) }
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

        init(table: NamesTable, inUse live: LiveRecords) {
            self.init(table: table, places: live.places)
        }

        /// Around the records at `places`, in arena order.
        init(table: NamesTable, places: [(offset: Int, length: Int)]) {
            size = table.arenaBytes
            used = places.map { ($0.offset, $0.offset + $0.length) }
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
