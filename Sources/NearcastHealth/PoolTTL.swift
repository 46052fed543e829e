import NearcastGeo

/// TTL follows health (ARCHITECTURE §6): each pool's TTL cap from its members' states and how recently
/// they changed. A pool is unsettled while a member is down or degraded, or changed state less
/// than the pool's `settle` seconds ago (so a flapping member keeps it unsettled); its names then
/// answer with at most `minTTL`, and once settled with their own TTL, at most `maxTTL`. A drained
/// member is settled once its drain is `settle` old: an operator's choice, not a fault.
///
/// A value type driven by states and time, so its rules are tested without a clock; the health
/// monitor feeds it and writes what changes.
public struct PoolTTL: Sendable {
    struct Pool: Sendable {
        var config: PoolConfig
        var lastChange: ContinuousClock.Instant?
        var cap: UInt32
        var settled: Bool
    }

    var pools: [String: Pool] = [:]
    /// Node id -> the pools it is a member of.
    var poolsOf: [String: [String]] = [:]

    /// The pools at cold start, members in `states` (a member not there counts as up).
    public init(pools: [PoolConfig], states: [String: HealthState]) {
        for p in pools {
            let settled = !Self.faulty(p.members.map { states[$0] ?? .up })
            self.pools[p.id] = Pool(config: p, lastChange: nil, cap: p.ttlCap(settled: settled), settled: settled)
            for m in p.members { poolsOf[m, default: []].append(p.id) }
        }
    }

    /// Follows a new set of pools (a reload), given every node's state now: a pool that stays
    /// keeps its time of last change, or starts one now when its members changed; a new pool
    /// starts as at cold start. Returns the caps that changed for the pools that stay, and every
    /// new pool's cap (whoever writes caps has not written it yet).
    public mutating func reconfigure(
        pools configs: [PoolConfig], states: [String: HealthState], at now: ContinuousClock.Instant
    ) -> [Change] {
        let old = pools
        var next = PoolTTL(pools: configs, states: states)
        for (id, p) in old {
            guard var q = next.pools[id] else { continue }
            q.lastChange = p.config.members == q.config.members ? p.lastChange : now
            q.cap = p.cap
            q.settled = p.settled
            next.pools[id] = q
        }
        self = next
        let added = next.pools.keys.filter { old[$0] == nil }.sorted().map {
            Change(pool: $0, cap: next.pools[$0]!.cap, settled: next.pools[$0]!.settled)
        }
        return reevaluate(states: states, at: now, only: old.keys.filter { next.pools[$0] != nil }.sorted()) + added
    }

    /// A change of one pool's cap.
    public struct Change: Sendable, Equatable {
        public var pool: String
        public var cap: UInt32
        public var settled: Bool
    }

    /// Whether member states alone leave a pool unsettled.
    static func faulty(_ states: [HealthState]) -> Bool { states.contains { $0 == .down || $0 == .degraded } }

    /// Records that `node` changed state at `now`; returns the caps that changed, given every
    /// node's state now.
    public mutating func nodeChanged(_ node: String, states: [String: HealthState], at now: ContinuousClock.Instant)
        -> [Change]
    {
        for id in poolsOf[node] ?? [] { pools[id]?.lastChange = now }
        return reevaluate(states: states, at: now, only: poolsOf[node] ?? [])
    }

    /// Re-evaluates every pool at `now` (a settle time passed); returns the caps that changed.
    public mutating func settle(states: [String: HealthState], at now: ContinuousClock.Instant) -> [Change] {
        reevaluate(states: states, at: now, only: pools.keys.sorted())
    }

    /// When the next unsettled pool may settle (nil: none is waiting on time).
    public func nextSettle(after now: ContinuousClock.Instant) -> ContinuousClock.Instant? {
        pools.values.compactMap { p in p.lastChange.map { $0 + .seconds(p.config.settle) } }.filter { $0 > now }.min()
    }

    /// Every pool's cap now, by id.
    public var caps: [String: UInt32] { pools.mapValues(\.cap) }

    mutating func reevaluate(states: [String: HealthState], at now: ContinuousClock.Instant, only ids: [String])
        -> [Change]
    {
        var out: [Change] = []
        for id in ids {
            guard var p = pools[id] else { continue }
            let recent = p.lastChange.map { now - $0 < .seconds(p.config.settle) } ?? false
            let settled = !recent && !Self.faulty(p.config.members.map { states[$0] ?? .up })
            let cap = p.config.ttlCap(settled: settled)
            let before = p.cap
            p.cap = cap
            p.settled = settled
            pools[id] = p
            guard cap != before else { continue }
            out.append(Change(pool: id, cap: cap, settled: settled))
        }
        return out
    }
}
