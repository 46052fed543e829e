import CNearcastABI
import Testing

@testable import NearcastAnswers
@testable import NearcastDataPath

/// The names table's placement rules, without a kernel (the program's side of them is tested on
/// the real program in XDPProgramTests).
@Suite(.timeLimit(.minutes(1))) struct NamesTableTests {
    /// An entry of `length` bytes (a multiple of 8, as records are) whose bytes differ by `tag`.
    func entry(_ hash: UInt64, _ tag: UInt8 = 0, length: Int = 16) -> NamesTable.Entry {
        let head = [tag] + withUnsafeBytes(of: hash) { Array($0) }
        return NamesTable.Entry(hash: hash, bytes: head + [UInt8](repeating: 0, count: length - head.count))
    }

    /// The arena offset (nil for a slot kept without a record) and tag a slot holds, or nil when empty.
    func slot(_ plan: NamesTable.Plan, _ s: Int) -> (offset: Int?, tag: UInt32)? {
        let v = plan.slots[s]
        let ref = UInt32(truncatingIfNeeded: v)
        return v == 0 ? nil : (ref == 0 ? nil : Int(ref - 1) * 8, UInt32(v >> 32))
    }

    /// The arena the plans of a test write into (each plan's writes made, as FastPath makes them),
    /// where live records are read to be told apart.
    final class Arena: @unchecked Sendable {
        var bytes: [Int: [UInt8]] = [:]
        func holds(_ ref: UInt32, _ b: [UInt8]) -> Bool { bytes[Int(ref - 1) * 8] == b }
    }
    let arena = Arena()

    /// Where `plan` put `e`.
    func offset(_ plan: NamesTable.Plan, _ e: NamesTable.Entry) -> Int? {
        plan.live.ref(of: e, holds: arena.holds).map { Int($0 - 1) * 8 }
    }

    /// Whether `plan`'s generation holds `e`.
    func holds(_ plan: NamesTable.Plan, _ e: NamesTable.Entry) -> Bool { offset(plan, e) != nil }

    /// `entries` placed in `t` and planned beside `live`, as FastPath does: the plan, with the
    /// names left out for a full table or a collision; its records written into `arena`.
    func plan(_ t: NamesTable, _ entries: [NamesTable.Entry], live: NamesTable.LiveRecords) -> NamesTable.Plan {
        let placement = t.place(entries.map(\.hash))
        let slots = placement.slots
        var p = t.plan(
            entries.indices.compactMap { i in slots[i].map { ($0, entries[i]) } }, kept: placement.kept, live: live,
            holds: arena.holds)
        p.full = placement.full
        p.collisions = slots.filter { $0 == nil }.count - placement.full
        for (offset, e) in p.writes { arena.bytes[offset] = e.bytes }
        // The plan's places, made from what it wrote and kept, are its records' places.
        #expect(p.places.elementsEqual(p.live.places) { $0 == $1 })
        return p
    }

    @Test func slotsArePowersOfTwoAtLeastTwiceTheCapacity() {
        #expect(NamesTable(capacity: 16384, pages: 1).slotCount == 32768)
        #expect(NamesTable(capacity: 1000, pages: 1).slotCount == 2048)
        #expect(NamesTable(capacity: 1, pages: 1).slotCount == 16)
    }

    @Test func aRecordIsItsHeadItsPaddedNameItsDirectoryAndItsAnswers() {
        let name: [UInt8] = [3] + Array("www".utf8) + [0]  // 5 octets, padded to 8
        let (r, complete) = NamesTable.record(
            name: name, flags: UInt8(NC_NAME_NODATA), negative: 3,
            answers: [
                .init(
                    qtype: 28, head: .init(flags: 0x8400, ancount: 1, checksum: 0xBEEF, kind: 0), sections: [1, 2, 3]),
                .init(qtype: 1, head: .init(flags: 0x8400, ancount: 2), sections: [UInt8](repeating: 9, count: 8)),
            ])
        func u16(_ at: Int) -> UInt16 {
            r.bytes.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: at, as: UInt16.self) }
        }
        #expect(complete)
        #expect(r.bytes.count == 8 + 8 + 8 + (16 + 8) + (16 + 8), "head, name to 8, directory to 8, answers to 8")
        #expect(u16(0) == 5 && r.bytes[2] == 2 && r.bytes[3] == UInt8(NC_NAME_NODATA) && u16(4) == 3)
        #expect(Int(u16(6)) * 8 == r.bytes.count, "the record's length in words")
        #expect(Array(r.bytes[8..<13]) == name && r.bytes[13..<16].allSatisfy { $0 == 0 })
        #expect(u16(16) == 28 && u16(18) == 24 && u16(20) == 1 && u16(22) == 48, "the directory: type, where")
        #expect(u16(24) == 0x8400 && u16(26) == 1 && u16(32) == 3 && u16(34) == 0xBEEF && r.bytes[36] == 0)
        #expect(Array(r.bytes[40..<43]) == [1, 2, 3] && r.bytes[43..<48].allSatisfy { $0 == 0 })
        #expect(u16(48 + 2) == 2 && u16(48 + 8) == 8 && Array(r.bytes[64..<72]) == [UInt8](repeating: 9, count: 8))
        #expect(r.bytes.withUnsafeBytes { NamesTable.recordLength($0) } == r.bytes.count)
        #expect(r.hash == NamesTable.hash(name: name) && NamesTable.recordName(r.bytes) == name)
        // The longest name with the longest answer fits what the program allows for a record;
        // answers past where one may start are left out.
        let longest = NamesTable.Answer(
            qtype: 16, head: .init(), sections: [UInt8](repeating: 0, count: Int(NC_SECTIONS_MAX)))
        let (big, all) = NamesTable.record(
            name: [UInt8](repeating: 1, count: 255), flags: 0, negative: 0,
            answers: [longest, longest, longest, longest])
        #expect(!all && big.bytes[2] == 3 && big.bytes.count <= NamesTable.recordMax)
        let many = (1...20).map { NamesTable.Answer(qtype: UInt16($0), head: .init(), sections: [1]) }
        let (capped, _) = NamesTable.record(name: name, flags: 0, negative: 0, answers: many)
        #expect(Int(capped.bytes[2]) == NamesTable.typesMax)
    }

    @Test func theHashIsTheOneTheHeaderDefines() {
        // fmix64(mix(mix(SEED ^ 3, word of "\u{1}a\u{0}"), 0)), worked out by hand.
        func mix(_ h: UInt64, _ w: UInt64) -> UInt64 {
            let m = (h ^ w) &* NC_HASH_MUL
            return m ^ (m >> 32)
        }
        var h = mix(mix(NC_HASH_SEED ^ 3, 0x00_61_01), 0)
        h ^= h >> 33
        h = h &* NC_HASH_FMIX1
        h ^= h >> 33
        h = h &* NC_HASH_FMIX2
        h ^= h >> 33
        #expect(NamesTable.hash(name: [1, 0x61, 0]) == h)
        // Nine octets: two words, the second zero padded.
        #expect(
            NamesTable.hash(name: [7] + Array("example".utf8) + [0])
                != NamesTable.hash(name: [7] + Array("examplf".utf8) + [0]))
    }

    @Test func anEntryGoesToItsHomeSlotOrTheNextFree() {
        let t = NamesTable(capacity: 8, pages: 1)  // 16 slots
        let a = entry(0xAAAA_0000_0000_0003)
        let b = entry(0xBBBB_0000_0000_0013)
        let c = entry(0xCCCC_0000_0000_0004)
        let p = plan(t, [a, b, c], live: .init())
        #expect(slot(p, 3)?.tag == 0xAAAA_0000 && slot(p, 3)?.offset == 0)
        #expect(slot(p, 4)?.tag == 0xBBBB_0000 && slot(p, 4)?.offset == 16, "home 3 is taken: the next slot")
        #expect(slot(p, 5)?.tag == 0xCCCC_0000 && slot(p, 5)?.offset == 32, "home 4 is taken by b")
        #expect(p.writes.map(\.offset) == [0, 16, 32] && p.live.count == 3 && p.full == 0 && p.collisions == 0)
        #expect(p.recordBytes == 48)
    }

    /// Robin Hood: a name takes the slot of one nearer its own home, which moves on; so names
    /// stay near their homes and few are left beyond the probe limit.
    @Test func aNameFarFromHomeTakesTheSlotOfOneNearerItsOwn() {
        let t = NamesTable(capacity: 8, pages: 1)
        let a = entry(0xAAAA_0000_0000_0004)
        let b = entry(0xBBBB_0000_0000_0003)
        let c = entry(0xCCCC_0000_0000_0013)  // home 3, like b
        let p = plan(t, [a, b, c], live: .init())
        #expect(slot(p, 3)?.tag == 0xBBBB_0000 && slot(p, 4)?.tag == 0xCCCC_0000 && slot(p, 5)?.tag == 0xAAAA_0000)
        #expect(p.live.count == 3 && p.collisions == 0)
    }

    @Test func nothingIsPlacedBehindASlotOfTheSameTag() {
        // The program stops at the first slot whose tag matches: b could never be found behind a.
        // b is left out; its slot keeps the tag without a record, so that c, past it, is found.
        let t = NamesTable(capacity: 8, pages: 1)
        let a = entry(0xAAAA_0000_0000_0003, 1)
        let b = entry(0xAAAA_0000_0000_0003, 2)
        let c = entry(0xCCCC_0000_0000_0003)
        let p = plan(t, [a, b, c], live: .init())
        #expect(holds(p, a) && !holds(p, b) && holds(p, c) && p.collisions == 1)
        #expect(slot(p, 4)?.tag == 0xAAAA_0000 && slot(p, 4)?.offset == nil && slot(p, 5)?.tag == 0xCCCC_0000)
    }

    @Test func nothingIsPlacedBeyondTheProbeLimit() {
        let t = NamesTable(capacity: 64, pages: 1)
        let crowd = (0..<(NamesTable.probes + 1)).map { entry(UInt64($0 + 1) << 32 | 5) }
        let p = plan(t, crowd, live: .init())
        #expect(p.live.count == NamesTable.probes && p.collisions == 1)
        #expect(!holds(p, crowd.last!))
    }

    /// Records are known by a digest of their bytes, told apart by the bytes in the arena: records
    /// whose digests collide are all found, and each goes alone.
    @Test func liveRecordsWhoseDigestsCollideAreToldApartByTheirBytes() {
        var live = NamesTable.LiveRecords(digest: { _ in 7 })
        let (a, b, c) = (entry(1 << 32 | 1), entry(2 << 32 | 2), entry(3 << 32 | 3, length: 24))
        for (i, e) in [a, b, c].enumerated() {
            arena.bytes[i * 32] = e.bytes
            live.insert(e, ref: UInt32(i * 4 + 1))
        }
        #expect(live.count == 3 && [a, b, c].map { live.ref(of: $0, holds: arena.holds) } == [1, 5, 9])
        #expect(live.ref(of: entry(4 << 32 | 4), holds: arena.holds) == nil)
        live.remove(b, holds: arena.holds)
        #expect(
            live.count == 2 && live.ref(of: b, holds: arena.holds) == nil && live.ref(of: c, holds: arena.holds) == 9)
        live.remove(a, holds: arena.holds)
        #expect(
            live.count == 1 && live.ref(of: a, holds: arena.holds) == nil && live.ref(of: c, holds: arena.holds) == 9)
        #expect(live.places.map(\.offset) == [64] && live.places.map(\.length) == [24])
        live.remove(c, holds: arena.holds)
        #expect(live.count == 0 && live.places.isEmpty)
    }

    /// A generation's records noted at once on several threads, each a shard of the digests, are
    /// found as those noted one at a time, colliding digests too; changes after find their shards.
    @Test func recordsNotedAtOnceOnSeveralThreadsAreFoundAsThoseNotedOneByOne() {
        let entries = (0..<6000).map {
            entry(UInt64($0) << 32 | UInt64($0), UInt8($0 % 251), length: 16 + 8 * ($0 % 3))
        }
        let records = entries.enumerated().map { (entry: $1, ref: UInt32($0 * 8 + 1)) }
        for (e, r) in records { arena.bytes[Int(r - 1) * 8] = e.bytes }
        var one = NamesTable.LiveRecords()
        for (e, r) in records { one.insert(e, ref: r) }
        for digest in [NamesTable.LiveRecords.digest, { _ in 7 }] as [@Sendable ([UInt8]) -> UInt64] {
            var many = NamesTable.LiveRecords(noting: records, parts: 3, digest: digest)
            #expect(many.count == one.count)
            #expect(records.allSatisfy { many.ref(of: $0.entry, holds: arena.holds) == $0.ref })
            #expect(many.places.elementsEqual(one.places) { $0 == $1 })
            many.remove(entries[42], holds: arena.holds)
            many.insert(entry(99 << 32 | 99), ref: 60001)
            arena.bytes[60000 * 8] = entry(99 << 32 | 99).bytes
            #expect(many.count == one.count && many.ref(of: entries[42], holds: arena.holds) == nil)
            #expect(many.ref(of: entry(99 << 32 | 99), holds: arena.holds) == 60001)
        }
    }

    /// The arena's free space is found around the live records in their arena order, whatever
    /// order they were noted in.
    @Test func liveRecordsArePlacedInArenaOrder() {
        var live = NamesTable.LiveRecords()
        for (i, ref) in [UInt32(50), 3, 20, 7].enumerated() { live.insert(entry(UInt64(i + 1) << 32 | 1), ref: ref) }
        #expect(live.places.map(\.offset) == [16, 48, 152, 392] && Set(live.places.map(\.length)).count == 1)
    }

    @Test func liveRecordsAreKeptForEqualEntriesAndNeverWrittenOver() {
        let t = NamesTable(capacity: 4, pages: 1)
        let a = entry(1 << 32 | 1)
        let b = entry(2 << 32 | 2)
        let c = entry(3 << 32 | 3, length: 24)
        let first = plan(t, [a, b], live: .init())
        #expect(offset(first, a) == 0 && offset(first, b) == 16)
        // b changes (c stands for its new bytes): a keeps its record and is not written again; c
        // goes where no live record is, so queries reading b are undisturbed.
        let second = plan(t, [a, c], live: first.live)
        #expect(offset(second, a) == 0 && offset(second, c) == 32)
        #expect(second.writes.map(\.offset) == [32])
        // Next round: b's old bytes are free again.
        let third = plan(t, [a, c, b], live: second.live)
        #expect(offset(third, b) == 16 && third.writes.map(\.offset) == [16])
        // A record longer than a gap goes past it: 16 bytes free at 16, before c.
        let d = entry(4 << 32 | 4, length: 24)
        let fourth = plan(t, [a, c, d], live: second.live)
        #expect(offset(fourth, d) == 56)
    }

    /// A first generation is written as it is made (each thread's records copied from one array
    /// of its own straight to their places): the same bytes at the same places, the same slots
    /// and the same records noted as `plan` gives, page boundaries and kept slots included.
    @Test func aFirstGenerationWrittenAsItIsMadeIsTheOnePlanWrites() throws {
        let t = NamesTable(capacity: 300, pages: 3)
        let unslotted = [entry(7 << 32 | 7, 9, length: 40)]
        let lengths = [16, 64, NamesTable.recordMax]
        var entries: [NamesTable.Entry] = (0..<240).map { (i: Int) in
            let hash = UInt64(i % 200 + 1) << 32 | UInt64(i * 7)
            return entry(hash, UInt8(i % 200), length: lengths[i % 3])
        }
        // Two of one hash, the second kept out behind the first (its slot kept), and one past them.
        entries += [entry(0xAAAA_0000_0000_0003, 1), entry(0xAAAA_0000_0000_0003, 2), entry(0xCCCC_0000_0000_0003)]
        let placement = t.place(entries.map(\.hash))
        #expect(!placement.kept.isEmpty, "tags that collide keep slots")
        let placed = entries.indices.compactMap { i in placement.slots[i].map { ($0, entries[i]) } }
        let planned = t.plan(unslotted: unslotted, placed, kept: placement.kept, live: .init(), holds: arena.holds)
        #expect(planned.noRoom.isEmpty)
        var written = [UInt8](repeating: 0, count: t.arenaBytes)
        for (offset, e) in planned.writes { written.replaceSubrange(offset..<(offset + e.bytes.count), with: e.bytes) }
        // Made in three parts, as three threads would.
        var made = [NamesTable.MadeRecords](repeating: .init(), count: 3)
        for (k, (s, e)) in placed.enumerated() {
            made[k * 3 / placed.count].append(slot: s, hash: e.hash, length: e.bytes.count) { out in
                e.bytes.withUnsafeBytes { out.copyMemory(from: $0) }
            }
        }
        var memory = [UInt8](repeating: 0, count: t.arenaBytes)
        let fresh = try #require(
            memory.withUnsafeMutableBytes { t.freshPlan(unslotted: unslotted, made, kept: placement.kept, arena: $0) })
        #expect(memory == written && fresh.slots == planned.slots)
        #expect(fresh.places.elementsEqual(planned.places) { $0 == $1 })
        #expect(fresh.names == planned.names && fresh.recordBytes == planned.recordBytes)
        #expect(fresh.writes.isEmpty && fresh.writtenInPlace == planned.writes.count)
        let holds: NamesTable.LiveRecords.Holds = { ref, b in
            Array(memory[(Int(ref - 1) * 8)..<(Int(ref - 1) * 8 + b.count)]) == b
        }
        for e in unslotted + placed.map(\.1) {
            let ref = fresh.live.ref(of: e, holds: holds)
            #expect(ref != nil && ref == planned.live.ref(of: e, holds: holds))
        }
        // Records that do not all fit: no plan, and nothing written (`plan` leaves some out).
        var small = [UInt8](repeating: 0, count: NamesTable.pageBytes)
        let none = small.withUnsafeMutableBytes {
            NamesTable(capacity: 300, pages: 1).freshPlan(unslotted: unslotted, made, kept: [], arena: $0)
        }
        #expect(none == nil && small.allSatisfy { $0 == 0 })
    }

    @Test func noRecordStartsWhereTheLongestCouldOverrunItsPage() {
        let t = NamesTable(capacity: 200, pages: 2)
        let perPage = (NamesTable.pageBytes - NamesTable.recordMax) / NamesTable.recordMax + 1
        let big = (0..<(perPage + 1)).map { entry(UInt64($0 + 1) << 32 | UInt64($0), length: NamesTable.recordMax) }
        let p = plan(t, big, live: .init())
        #expect(p.full == 0)
        #expect(offset(p, big[perPage - 1]) == (perPage - 1) * NamesTable.recordMax)
        #expect(offset(p, big[perPage]) == NamesTable.pageBytes, "the next page")
        #expect(NamesTable.pages(forRecordBytes: perPage * NamesTable.recordMax) <= 2)
    }

    @Test func aFullTableLeavesTheRestToTheSlowPath() {
        // The arena: one page holds `perPage` of the longest records; half of them live, and all
        // of them change at once: only the room beside the live ones is taken.
        let perPage = (NamesTable.pageBytes - NamesTable.recordMax) / NamesTable.recordMax + 1
        let t = NamesTable(capacity: 1000, pages: 1)
        func big(_ i: Int) -> NamesTable.Entry { entry(UInt64(i + 1) << 32 | UInt64(i), length: NamesTable.recordMax) }
        let live = plan(t, (0..<(perPage / 2)).map(big), live: .init()).live
        let p = plan(t, (1000..<(1000 + perPage / 2 + 2)).map(big), live: live)
        #expect(p.live.count == perPage - perPage / 2 && p.noRoom.count == perPage / 2 + 2 - p.live.count)
        #expect(p.slots.filter { $0 != 0 }.count == p.live.count, "an entry without room takes no slot")
        // The capacity: names a generation holds, whatever room the arena has.
        let small = NamesTable(capacity: 2, pages: 1)
        let q = plan(small, [entry(1 << 32 | 1), entry(2 << 32 | 2), entry(3 << 32 | 3)], live: .init())
        #expect(q.live.count == 2 && q.full == 1)
    }

    /// A name without a record would let the walk to a closest encloser pass over it: the
    /// encloser would answer NXDOMAIN for a name that exists.
    @Test func aNameLeftOutClearsNXDOMAINOnItsClosestEncloserPlaced() throws {
        func wire(_ labels: String...) -> [UInt8] { labels.flatMap { [UInt8($0.utf8.count)] + Array($0.utf8) } + [0] }
        let apex = wire("example")
        let names = [apex, wire("a", "example"), wire("b", "a", "example"), wire("c", "b", "a", "example")].map {
            var n = AnswerImage.Name(name: $0)
            n.nxdomain = true
            n.apexLength = apex.count
            return n
        }
        func flags(_ layout: FastPath.Layout, _ i: Int) -> UInt8? {
            layout.index.firstIndex(of: i).map { layout.placed[$0].entry.bytes[3] }
        }
        let t = NamesTable(capacity: 64, pages: 1)
        let all = FastPath.layout(names, geo: [:], negatives: [apex: 1], table: t)
        #expect(all.leftOut.isEmpty && (0..<4).allSatisfy { flags(all, $0) == UInt8(NC_NAME_NXDOMAIN) })
        // Without its negative answer's index, no flag stands.
        let none = FastPath.layout(names, geo: [:], negatives: [:], table: t)
        #expect((0..<4).allSatisfy { flags(none, $0) == 0 })
        // c and b left out (say the arena had no room): a is the closest encloser of both.
        let some = FastPath.layout(names, geo: [:], negatives: [apex: 1], table: t, leaveOut: [2, 3])
        #expect(some.leftOut == [2, 3] && some.full == 2)
        #expect(flags(some, 0) == UInt8(NC_NAME_NXDOMAIN) && flags(some, 1) == 0)
        #expect(flags(some, 2) == nil && flags(some, 3) == nil)
    }

    /// A negative answer keeps its index from write to write (its names' records stay as they
    /// are); a new one takes the lowest free index, and one past the indexes there are is left
    /// out, counted, its names' negatives the slow path's.
    @Test func negativeAnswersKeepTheirIndexAndThoseWithoutOneAreCounted() {
        func anchor(_ label: String) -> AnswerImage.Name {
            var n = AnswerImage.Name(name: [UInt8(label.utf8.count)] + Array(label.utf8) + [0])
            n.negative = AnswerImage.Negative(
                flags: 0x8403, nscount: 1, sections: [0xC0, 0x0C], questionLength: 5, pointers: [0], zone: n.name)
            return n
        }
        let (a, b) = (anchor("a"), anchor("b"))
        let first = FastPath.negativeAnswers([a, b], index: [b.name: 7])
        #expect(first.index == [a.name: 1, b.name: 7] && first.leftOut == 0 && first.records.count == 2)
        var full: [[UInt8]: UInt16] = [:]
        for i in 1..<FastPath.negativesMax { full[[UInt8(i & 0xFF), UInt8(i >> 8)]] = UInt16(i) }
        let none = FastPath.negativeAnswers([a], index: full)
        #expect(none.leftOut == 1 && none.records.isEmpty && none.index.isEmpty)
    }

    /// Every record names its zone's negative answer, with its flags or without: XDP counts the
    /// answers from a name by it (ARCHITECTURE §16), whether NODATA or NXDOMAIN apply there or not.
    @Test func aRecordNamesItsNegativeAnswerWhateverItsFlags() {
        var n = AnswerImage.Name(name: [1, 0x77, 0])
        for (nodata, nxdomain) in [(false, false), (true, false), (false, true), (true, true)] {
            n.nodata = nodata
            let (entry, _) = FastPath.record(n, geo: [], negative: 9, nxdomain: nxdomain)
            let negative = UInt16(entry.bytes[4]) | UInt16(entry.bytes[5]) << 8
            let flags = entry.bytes[3]
            #expect(negative == 9, "nodata \(nodata), nxdomain \(nxdomain)")
            #expect(flags == UInt8(nodata ? NC_NAME_NODATA : 0) | UInt8(nxdomain ? NC_NAME_NXDOMAIN : 0))
        }
    }
}
