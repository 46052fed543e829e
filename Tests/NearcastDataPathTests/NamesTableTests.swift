import CNearcastABI
import Testing

@testable import NearcastDataPath

/// The names table's placement rules, without a kernel (the program's side of them is tested on
/// the real program in XDPProgramTests).
@Suite(.timeLimit(.minutes(1))) struct NamesTableTests {
    func entry(_ hash: UInt64, _ tag: UInt8 = 0) -> NamesTable.Entry {
        NamesTable.Entry(hash: hash, bytes: [tag] + withUnsafeBytes(of: hash) { Array($0) })
    }

    /// The index and tag a slot holds, or nil when empty.
    func slot(_ plan: NamesTable.Plan, _ s: Int) -> (index: UInt32, tag: UInt32)? {
        let v = plan.slots[s]
        return v == 0 ? nil : (UInt32(truncatingIfNeeded: v) - 1, UInt32(v >> 32))
    }

    @Test func slotsArePowersOfTwoAtLeastTwiceTheCapacity() {
        #expect(NamesTable(capacity: 16384).slotCount == 32768)
        #expect(NamesTable(capacity: 1000).slotCount == 2048)
        #expect(NamesTable(capacity: 1).slotCount == 16)
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
        let t = NamesTable(capacity: 8)  // 16 slots
        let a = entry(0xAAAA_0000_0000_0003)
        let b = entry(0xBBBB_0000_0000_0013)
        let c = entry(0xCCCC_0000_0000_0004)
        let p = t.plan([a, b, c], live: [:])
        #expect(slot(p, 3)?.tag == 0xAAAA_0000 && slot(p, 3)?.index == 0)
        #expect(slot(p, 4)?.tag == 0xBBBB_0000 && slot(p, 4)?.index == 1, "home 3 is taken: the next slot")
        #expect(slot(p, 5)?.tag == 0xCCCC_0000 && slot(p, 5)?.index == 2, "home 4 is taken by b")
        #expect(p.writes.map(\.index) == [0, 1, 2] && p.live.count == 3 && p.full == 0 && p.collisions == 0)
    }

    @Test func nothingIsPlacedBehindASlotOfTheSameTag() {
        // The program stops at the first slot whose tag matches: b could never be found behind a.
        let t = NamesTable(capacity: 8)
        let a = entry(0xAAAA_0000_0000_0003, 1)
        let b = entry(0xAAAA_0000_0000_0003, 2)
        let p = t.plan([a, b], live: [:])
        #expect(p.live.keys.contains(a) && !p.live.keys.contains(b) && p.collisions == 1)
        #expect(slot(p, 4) == nil)
    }

    @Test func nothingIsPlacedBeyondTheProbeLimit() {
        let t = NamesTable(capacity: 64)
        let crowd = (0..<(NamesTable.probes + 1)).map { entry(UInt64($0 + 1) << 32 | 5) }
        let p = t.plan(crowd, live: [:])
        #expect(p.live.count == NamesTable.probes && p.collisions == 1)
        #expect(!p.live.keys.contains(crowd.last!))
    }

    @Test func liveIndexesAreKeptForEqualEntriesAndNeverReusedForNewOnes() {
        let t = NamesTable(capacity: 4)
        let a = entry(1 << 32 | 1)
        let b = entry(2 << 32 | 2)
        let c = entry(3 << 32 | 3)
        let first = t.plan([a, b], live: [:])
        #expect(first.live == [a: 0, b: 1])
        // b changes (c stands for its new bytes): a keeps its index and is not written again; c
        // gets an index the live generation does not use, so queries reading b are undisturbed.
        let second = t.plan([a, c], live: first.live)
        #expect(second.live[a] == 0 && second.live[c] == 2)
        #expect(second.writes.map(\.index) == [2])
        // Next round: b's old index 1 is free again.
        let third = t.plan([a, c, b], live: second.live)
        #expect(third.live[b] == 1 && third.writes.map(\.index) == [1])
    }

    @Test func aFullTableLeavesTheRestToTheSlowPath() {
        let t = NamesTable(capacity: 3)
        let live = t.plan([entry(1 << 32 | 1), entry(2 << 32 | 2)], live: [:]).live
        // Two live entries change at once: only one free index beside them.
        let p = t.plan([entry(3 << 32 | 3), entry(4 << 32 | 4)], live: live)
        #expect(p.live.count == 1 && p.full == 1 && p.writes.map(\.index) == [2])
        let occupied = p.slots.filter { $0 != 0 }.count
        #expect(occupied == 1, "an entry without an index takes no slot")
    }
}
