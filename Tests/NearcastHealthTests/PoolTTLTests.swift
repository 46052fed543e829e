import NearcastCore
import Testing

@testable import NearcastHealth

/// TTL follows health, alone: a pool answers with its low TTL while a member is down or degraded
/// or changed lately, and goes back once it has settled (DESIGN §6).
struct PoolTTLTests {
    let t0 = ContinuousClock.now
    func at(_ s: Double) -> ContinuousClock.Instant { t0 + .milliseconds(Int64(s * 1000)) }

    static let web = PoolConfig(id: "web", members: ["fra1", "par1"], minTTL: 5, maxTTL: 120, settle: 30, declaredAt: "c.yaml:1")
    static let api = PoolConfig(id: "api", members: ["nyc1"], declaredAt: "c.yaml:2")

    @Test func aDownMemberLowersTheTTLUntilThePoolHasBeenSteadyForItsSettleTime() {
        var states: [String: HealthState] = ["fra1": .up, "par1": .up, "nyc1": .up]
        var p = PoolTTL(pools: [Self.web, Self.api], states: states)
        #expect(p.caps == ["web": 120, "api": .max], "cold start, all up: settled")

        states["fra1"] = .down
        #expect(p.nodeChanged("fra1", states: states, at: at(1)) == [PoolTTL.Change(pool: "web", cap: 5, settled: false)])
        #expect(p.caps["api"] == .max, "a pool without the node keeps its TTL")
        #expect(p.settle(states: states, at: at(100)).isEmpty, "still down: unsettled however long")

        states["fra1"] = .up
        #expect(p.nodeChanged("fra1", states: states, at: at(101)).isEmpty, "back up, but it just changed")
        #expect(p.nextSettle(after: at(101)) == at(131))
        #expect(p.settle(states: states, at: at(130)).isEmpty)
        #expect(p.settle(states: states, at: at(131)) == [PoolTTL.Change(pool: "web", cap: 120, settled: true)])
        #expect(p.isSettled("web") == true && p.nextSettle(after: at(131)) == nil)
    }

    @Test func aFlappingMemberKeepsThePoolUnsettledAndDegradedCounts() {
        var states: [String: HealthState] = ["fra1": .up, "par1": .up]
        var p = PoolTTL(pools: [Self.web], states: states)
        // Up and down every 10 s: never 30 s steady.
        for i in 0..<8 {
            states["par1"] = i % 2 == 0 ? .down : .up
            _ = p.nodeChanged("par1", states: states, at: at(Double(10 * i)))
            #expect(p.caps["web"] == 5, "change \(i)")
            #expect(p.settle(states: states, at: at(Double(10 * i + 9))).isEmpty)
        }
        states["par1"] = .degraded
        _ = p.nodeChanged("par1", states: states, at: at(200))
        #expect(p.settle(states: states, at: at(1000)).isEmpty && p.caps["web"] == 5, "degraded: up but failing checks")
    }

    @Test func aColdStartWithAMemberDownStartsLowAndDrainedMembersSettle() {
        var states: [String: HealthState] = ["nyc1": .down]
        var p = PoolTTL(pools: [Self.api], states: states)
        #expect(p.caps["api"] == 5 && p.isSettled("api") == false)
        states["nyc1"] = .drained
        #expect(p.nodeChanged("nyc1", states: states, at: at(1)).isEmpty)
        #expect(p.settle(states: states, at: at(31)) == [PoolTTL.Change(pool: "api", cap: .max, settled: true)], "a drain is no fault")
        #expect(p.nodeChanged("unknown", states: states, at: at(40)).isEmpty)
    }
}
