import DNSWire
import Synchronization

/// What the slow path's answers went to (ARCHITECTURE §16): by zone, and by the node a geo
/// answer puts first. One counter per zone or node served since the start, kept here; a
/// responder holds a `View` of those of its zones and nodes, made when the set of them changes
/// (not at each record change), so an answer costs a lookup in a table no one changes and an
/// atomic add.
public final class AnswerCounts: Sendable {
    public final class Counter: Sendable {
        private let value = Atomic<UInt64>(0)

        public func add() { value.add(1, ordering: .relaxed) }

        public var total: UInt64 { value.load(ordering: .relaxed) }
    }

    private let counters = Mutex<(zones: [DNSName: Counter], nodes: [String: Counter])>(([:], [:]))

    public init() {}

    /// The counters of `zones` (their origins) and `nodes` (their ids), made for those not counted yet.
    public func view(zones: [DNSName], nodes: [String]) -> View {
        counters.withLock { c in
            var byOrigin: [UInt64: [(origin: [UInt8], counter: Counter)]] = [:]
            for origin in zones {
                let o = origin.lowercased()
                let counter = c.zones[o] ?? Counter()
                c.zones[o] = counter
                byOrigin[View.hash(o.wire[...]), default: []].append((o.wire, counter))
            }
            var byNode: [String: Counter] = [:]
            for id in nodes {
                let counter = c.nodes[id] ?? Counter()
                c.nodes[id] = counter
                byNode[id] = counter
            }
            return View(zones: byOrigin, nodes: byNode)
        }
    }

    /// Every counter's total: the zones' by origin (lower-cased), the nodes' by id.
    public func totals() -> (zones: [DNSName: UInt64], nodes: [String: UInt64]) {
        counters.withLock { c in (c.zones.mapValues(\.total), c.nodes.mapValues(\.total)) }
    }

    /// Where the one question of a message's name ends (the offset of its root label), read from
    /// its bytes (a question's name is never compressed: it comes first); nil without one.
    public static func questionNameEnd(_ m: [UInt8]) -> Int? {
        guard m.count > 12, m[4] == 0, m[5] == 1 else { return nil }
        var i = 12
        while i < m.count, m[i] != 0 {
            guard m[i] & 0xC0 == 0 else { return nil }
            i += Int(m[i]) + 1
        }
        return i < m.count ? i : nil
    }

    /// The counters of one responder's zones and nodes.
    public struct View: Sendable {
        /// By the hash of the origin's lower-cased wire name (`hash`), with the name to compare.
        let zones: [UInt64: [(origin: [UInt8], counter: Counter)]]
        let nodes: [String: Counter]

        /// Counts a reply from the zone of its question's name (the zone whose origin is the
        /// longest suffix of it), when it is an answer from the zone's data: NOERROR or NXDOMAIN.
        /// Read from the reply's bytes, so a reply from the cache counts as one computed.
        public func countAnswer(_ reply: [UInt8]) {
            if let end = AnswerCounts.questionNameEnd(reply) { countAnswer(reply, nameEnd: end) }
        }

        /// `countAnswer(_:)` of a reply whose question's name ends (its root label) at `nameEnd`
        /// (`AnswerCounts.questionNameEnd`), for a caller that has read that already.
        public func countAnswer(_ reply: [UInt8], nameEnd end: Int) {
            guard !zones.isEmpty, end < reply.count else { return }
            let rcode = reply[3] & 0x0F
            guard rcode == 0 || rcode == 3 else { return }
            // Its suffixes from the longest, each label's start found as the walk goes (no array
            // made per reply).
            var start = 12
            while start <= end {
                let suffix = reply[start...end]
                if let candidates = zones[Self.hash(suffix)] {
                    for c in candidates where Self.equalFolded(suffix, c.origin) {
                        c.counter.add()
                        return
                    }
                }
                start += Int(reply[start]) + 1
            }
        }

        /// Counts a geo answer that puts `node` first.
        func countNode(_ node: String) { nodes[node]?.add() }

        /// FNV-1a of a wire name's bytes with ASCII letters lower-cased.
        static func hash(_ name: ArraySlice<UInt8>) -> UInt64 {
            var h: UInt64 = 0xcbf2_9ce4_8422_2325
            for b in name {
                h = (h ^ UInt64(b >= 0x41 && b <= 0x5A ? b | 0x20 : b)) &* 0x100_0000_01b3
            }
            return h
        }

        static func equalFolded(_ a: ArraySlice<UInt8>, _ lowered: [UInt8]) -> Bool {
            a.count == lowered.count
                && zip(a, lowered).allSatisfy { x, y in (x >= 0x41 && x <= 0x5A ? x | 0x20 : x) == y }
        }
    }
}
