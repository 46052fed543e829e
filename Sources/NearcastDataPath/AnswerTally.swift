import BPFKit
import CNearcastABI
import Synchronization

/// What the fast path's answers went to since this process started: by question type, by zone
/// (its lower-cased wire name) and by the geo node an answer put first (its id).
public struct XDPTallies: Equatable, Sendable {
    /// By type; types from `XDPTallies.otherTypes` up are counted together there.
    public var byType: [UInt16: UInt64] = [:]
    public var byZone: [[UInt8]: UInt64] = [:]
    public var byNode: [String: UInt64] = [:]

    public init() {}

    /// Where the program counts every type it has no place of its own for (NC_TYPE_TALLY - 1).
    public static let otherTypes = UInt16(NC_TYPE_TALLY - 1)
}

/// Reads what the program counted per CPU by index (nc_stats' by type, nc_by_zone, nc_by_node:
/// nearcast_abi.h) and names what each index stood for when it was counted (ARCHITECTURE §16):
/// a zone by the index of its negative answers, which stays an anchor's from write to write; a
/// node by its index in the geo maps of the generation that answered, which another compile may
/// give to another node. So a generation's node counts are attributed to the geo maps it answered
/// with before it answers with others (`attribute`, from `FastPath.switchTo`), and each read
/// attributes what was counted since the one before it, from the counts then.
final class AnswerTally: Sendable {
    /// nc_stats, whose value holds the counts by type after the verdicts.
    private let counters: BPFMap
    private let byZone: BPFMap
    private let byNode: BPFMap
    private let counted: Mutex<Counted>

    private struct Counted {
        /// The maps' sums when last read, by index: what is above them is not attributed yet.
        var typeBase: [UInt64]
        var zoneBase: [UInt64]
        var nodeBase: [UInt64]
        var tallies = XDPTallies()
    }

    /// What the indexes stand for: the zones by negative answer index (the same in both
    /// generations), and each generation's nodes by index in its half of the nodes maps (a
    /// generation without geo maps has none).
    struct Meaning {
        var zones: [UInt16: [UInt8]]
        var nodes: [(generation: Int, index: [String: UInt32])]
    }

    /// The counts so far are taken as the start (a pinned map keeps an earlier instance's).
    init(object: BPFObject) throws(BPFError) {
        counters = try object.map(NC_MAP_STATS, keySize: 4, valueSize: MemoryLayout<nc_stats>.size)
        byZone = try object.map(NC_MAP_BY_ZONE, keySize: 4, valueSize: MemoryLayout<nc_tally_block>.size)
        byNode = try object.map(NC_MAP_BY_NODE, keySize: 4, valueSize: MemoryLayout<nc_tally_block>.size)
        counted = Mutex(Counted(typeBase: [], zoneBase: [], nodeBase: []))
        let (types, zones, nodes) = (
            try typeSums(), try byZone.counterSums(count: Int(NC_NEGATIVES_MAX)),
            try byNode.counterSums(count: Int(NC_GEO_GENERATIONS * NC_NODES_MAX))
        )
        counted.withLock {
            $0.typeBase = types
            $0.zoneBase = zones
            $0.nodeBase = nodes
        }
    }

    /// Attributes what was counted since the last read, as `meaning` says.
    func attribute(_ meaning: Meaning) throws(BPFError) {
        let zoneCount = Int(meaning.zones.keys.max() ?? 0) + 1
        let zones = try byZone.counterSums(count: zoneCount)
        let halves = meaning.nodes.filter { !$0.index.isEmpty }
        let last = halves.map(\.generation).max().map { ($0 + 1) * Int(NC_NODES_MAX) } ?? 0
        let nodes = last == 0 ? [] : try byNode.counterSums(count: last)
        // The sums were read outside the lock: another read may have brought a base past them
        // since, and only what is above a base is new.
        func take(_ now: UInt64, _ base: inout UInt64) -> UInt64 {
            guard now > base else { return 0 }
            defer { base = now }
            return now - base
        }
        counted.withLock { c in
            for (i, zone) in meaning.zones where Int(i) < zones.count {
                c.tallies.byZone[zone, default: 0] += take(zones[Int(i)], &c.zoneBase[Int(i)])
            }
            for i in 0..<zones.count { _ = take(zones[i], &c.zoneBase[i]) }
            for (generation, index) in halves {
                let half = generation * Int(NC_NODES_MAX)
                for (id, i) in index where half + Int(i) < nodes.count {
                    c.tallies.byNode[id, default: 0] += take(nodes[half + Int(i)], &c.nodeBase[half + Int(i)])
                }
                for i in half..<min(half + Int(NC_NODES_MAX), nodes.count) { _ = take(nodes[i], &c.nodeBase[i]) }
            }
        }
    }

    /// Everything counted so far, what is new attributed as `meaning` says.
    func read(_ meaning: Meaning) throws(BPFError) -> XDPTallies {
        try attribute(meaning)
        let types = try typeSums()
        return counted.withLock { c in
            var out = c.tallies
            for (t, n) in types.enumerated() where n > c.typeBase[t] { out.byType[UInt16(t)] = n - c.typeBase[t] }
            return out
        }
    }

    private func typeSums() throws(BPFError) -> [UInt64] {
        var sums = [UInt64](repeating: 0, count: Int(NC_TYPE_TALLY))
        let at = MemoryLayout<nc_stats>.offset(of: \nc_stats.answered_by_type)!
        for cpu in try counters.lookup(key: FastPath.bytes(of: UInt32(0))) ?? [] {
            cpu.withUnsafeBytes { b in
                for t in 0..<sums.count { sums[t] &+= b.loadUnaligned(fromByteOffset: at + t * 8, as: UInt64.self) }
            }
        }
        return sums
    }
}
