import CNearcastABI
import Testing

@testable import NearcastDataPath

/// The names table's placement rules, without a kernel (the program's side of them is tested on
/// the real program in XDPProgramTests).
@Suite(.timeLimit(.minutes(1))) struct NamesTableTests {
    /// An entry of `length` bytes (a multiple of 8, as records are) whose bytes differ by `tag`.
    func entry(_ hash: UInt64, _ tag: UInt8 = 0, length: Int = 16) -> NamesTable.Entry {
        let head = [tag] + withUnsafeBytes(of: hash) { Array($0) }
        return NamesTable.Entry(hash: hash, bytes: head + [UInt8](repeating: 0, count: length - head.count))
    }

    /// The arena offset and tag a slot holds, or nil when empty.
    func slot(_ plan: NamesTable.Plan, _ s: Int) -> (offset: Int, tag: UInt32)? {
        let v = plan.slots[s]
        return v == 0 ? nil : (Int(UInt32(truncatingIfNeeded: v) - 1) * 8, UInt32(v >> 32))
    }

    /// Where `plan` put `e`.
    func offset(_ plan: NamesTable.Plan, _ e: NamesTable.Entry) -> Int? { plan.live[e].map { Int($0 - 1) * 8 } }

    @Test func slotsArePowersOfTwoAtLeastTwiceTheCapacity() {
        #expect(NamesTable(capacity: 16384, pages: 1).slotCount == 32768)
        #expect(NamesTable(capacity: 1000, pages: 1).slotCount == 2048)
        #expect(NamesTable(capacity: 1, pages: 1).slotCount == 16)
    }

    @Test func aRecordIsItsHeadItsPaddedNameAndItsAnswer() {
        let name: [UInt8] = [3] + Array("www".utf8) + [0]  // 5 octets, padded to 8
        let r = NamesTable.record(
            name: name, qtype: 28, answer: .init(flags: 0x8400, ancount: 1, checksum: 0xBEEF, kind: 2),
            sections: [1, 2, 3])
        func u16(_ at: Int) -> UInt16 {
            r.bytes.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: at, as: UInt16.self) }
        }
        #expect(r.bytes.count == 8 + 8 + 16 + 8, "head, name to 8, answer head, sections to 8")
        #expect(
            u16(0) == 28 && u16(2) == 5 && Array(r.bytes[8..<13]) == name && r.bytes[13..<16].allSatisfy { $0 == 0 })
        #expect(u16(16) == 0x8400 && u16(18) == 1 && u16(24) == 3 && u16(26) == 0xBEEF && r.bytes[28] == 2)
        #expect(Array(r.bytes[32..<35]) == [1, 2, 3] && r.bytes[35...].allSatisfy { $0 == 0 })
        #expect(r.bytes.withUnsafeBytes { NamesTable.recordLength($0) } == r.bytes.count)
        #expect(r.hash == NamesTable.hash(name: name, qtype: 28))
        // The longest record fits what the program allows for one.
        let longest = NamesTable.record(
            name: [UInt8](repeating: 1, count: 255), qtype: 1, answer: .init(),
            sections: [UInt8](repeating: 0, count: Int(NC_SECTIONS_MAX)))
        #expect(longest.bytes.count == NamesTable.recordMax)
    }

    @Test func theHashIsTheOneTheHeaderDefines() {
        // fmix64(mix(mix(SEED ^ 3, word of "\u{1}a\u{0}"), qtype 1)), worked out by hand.
        func mix(_ h: UInt64, _ w: UInt64) -> UInt64 {
            let m = (h ^ w) &* NC_HASH_MUL
            return m ^ (m >> 32)
        }
        var h = mix(mix(NC_HASH_SEED ^ 3, 0x00_61_01), 1)
        h ^= h >> 33
        h = h &* NC_HASH_FMIX1
        h ^= h >> 33
        h = h &* NC_HASH_FMIX2
        h ^= h >> 33
        #expect(NamesTable.hash(name: [1, 0x61, 0], qtype: 1) == h)
        // Nine octets: two words, the second zero padded.
        #expect(
            NamesTable.hash(name: [7] + Array("example".utf8) + [0], qtype: 1)
                != NamesTable.hash(name: [7] + Array("examplf".utf8) + [0], qtype: 1))
        #expect(NamesTable.hash(name: [1, 0x61, 0], qtype: 1) != NamesTable.hash(name: [1, 0x61, 0], qtype: 28))
    }

    @Test func anEntryGoesToItsHomeSlotOrTheNextFree() {
        let t = NamesTable(capacity: 8, pages: 1)  // 16 slots
        let a = entry(0xAAAA_0000_0000_0003)
        let b = entry(0xBBBB_0000_0000_0013)
        let c = entry(0xCCCC_0000_0000_0004)
        let p = t.plan([a, b, c], live: [:])
        #expect(slot(p, 3)?.tag == 0xAAAA_0000 && slot(p, 3)?.offset == 0)
        #expect(slot(p, 4)?.tag == 0xBBBB_0000 && slot(p, 4)?.offset == 16, "home 3 is taken: the next slot")
        #expect(slot(p, 5)?.tag == 0xCCCC_0000 && slot(p, 5)?.offset == 32, "home 4 is taken by b")
        #expect(p.writes.map(\.offset) == [0, 16, 32] && p.live.count == 3 && p.full == 0 && p.collisions == 0)
        #expect(p.recordBytes == 48)
    }

    @Test func nothingIsPlacedBehindASlotOfTheSameTag() {
        // The program stops at the first slot whose tag matches: b could never be found behind a.
        let t = NamesTable(capacity: 8, pages: 1)
        let a = entry(0xAAAA_0000_0000_0003, 1)
        let b = entry(0xAAAA_0000_0000_0003, 2)
        let p = t.plan([a, b], live: [:])
        #expect(p.live.keys.contains(a) && !p.live.keys.contains(b) && p.collisions == 1)
        #expect(slot(p, 4) == nil)
    }

    @Test func nothingIsPlacedBeyondTheProbeLimit() {
        let t = NamesTable(capacity: 64, pages: 1)
        let crowd = (0..<(NamesTable.probes + 1)).map { entry(UInt64($0 + 1) << 32 | 5) }
        let p = t.plan(crowd, live: [:])
        #expect(p.live.count == NamesTable.probes && p.collisions == 1)
        #expect(!p.live.keys.contains(crowd.last!))
    }

    @Test func liveRecordsAreKeptForEqualEntriesAndNeverWrittenOver() {
        let t = NamesTable(capacity: 4, pages: 1)
        let a = entry(1 << 32 | 1)
        let b = entry(2 << 32 | 2)
        let c = entry(3 << 32 | 3, length: 24)
        let first = t.plan([a, b], live: [:])
        #expect(offset(first, a) == 0 && offset(first, b) == 16)
        // b changes (c stands for its new bytes): a keeps its record and is not written again; c
        // goes where no live record is, so queries reading b are undisturbed.
        let second = t.plan([a, c], live: first.live)
        #expect(offset(second, a) == 0 && offset(second, c) == 32)
        #expect(second.writes.map(\.offset) == [32])
        // Next round: b's old bytes are free again.
        let third = t.plan([a, c, b], live: second.live)
        #expect(offset(third, b) == 16 && third.writes.map(\.offset) == [16])
        // A record longer than a gap goes past it: 16 bytes free at 16, before c.
        let d = entry(4 << 32 | 4, length: 24)
        let fourth = t.plan([a, c, d], live: second.live)
        #expect(offset(fourth, d) == 56)
    }

    @Test func noRecordStartsWhereTheLongestCouldOverrunItsPage() {
        let t = NamesTable(capacity: 200, pages: 2)
        let perPage = (NamesTable.pageBytes - NamesTable.recordMax) / NamesTable.recordMax + 1
        let big = (0..<(perPage + 1)).map { entry(UInt64($0 + 1) << 32 | UInt64($0), length: NamesTable.recordMax) }
        let p = t.plan(big, live: [:])
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
        let live = t.plan((0..<(perPage / 2)).map(big), live: [:]).live
        let p = t.plan((1000..<(1000 + perPage / 2 + 2)).map(big), live: live)
        #expect(p.live.count == perPage - perPage / 2 && p.full == perPage / 2 + 2 - p.live.count)
        #expect(p.slots.filter { $0 != 0 }.count == p.live.count, "an entry without room takes no slot")
        // The capacity: answers a generation holds, whatever room the arena has.
        let small = NamesTable(capacity: 2, pages: 1)
        let q = small.plan([entry(1 << 32 | 1), entry(2 << 32 | 2), entry(3 << 32 | 3)], live: [:])
        #expect(q.live.count == 2 && q.full == 1)
    }
}
