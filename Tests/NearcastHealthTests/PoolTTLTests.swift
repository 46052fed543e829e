import NearcastGeo
import Testing

@testable import NearcastHealth

/// TTL follows health, alone: a pool answers with its low TTL while a member is down or degraded
/// or changed lately, and goes back once it has settled (ARCHITECTURE §6).
@Suite(.timeLimit(.minutes(1))) struct PoolTTLTests {
    let t0 = ContinuousClock.now
    func at(_ s: Double) -> ContinuousClock.Instant { t0 + .milliseconds(Int64(s * 1000)) }

    static let web = PoolConfig(
        id: "web", members: ["fra1", "par1"], minTTL: 5, maxTTL: 120, settle: 30, declaredAt: "c.yaml:1")
    static let api = PoolConfig(id: "api", members: ["nyc1"], declaredAt: "c.yaml:2")

    @Test func aDownMemberLowersTheTTLUntilThePoolHasBeenSteadyForItsSettleTime() {
        var states: [String: HealthState] = ["fra1": .up, "par1": .up, "nyc1": .up]
        var p = PoolTTL(pools: [Self.web, Self.api], states: states)
        #expect(p.caps == ["web": 120, "api": .max], "cold start, all up: settled")

        states["fra1"] = .down
        #expect(
            p.nodeChanged("fra1", states: states, at: at(1)) == [PoolTTL.Change(pool: "web", cap: 5, settled: false)])
        #expect(p.caps["api"] == .max, "a pool without the node keeps its TTL")
        #expect(p.settle(states: states, at: at(100)).isEmpty, "still down: unsettled however long")

        states["fra1"] = .up
        #expect(p.nodeChanged("fra1", states: states, at: at(101)).isEmpty, "back up, but it just changed")
        #expect(p.nextSettle(after: at(101)) == at(131))
        #expect(p.settle(states: states, at: at(130)).isEmpty)
        #expect(p.settle(states: states, at: at(131)) == [PoolTTL.Change(pool: "web", cap: 120, settled: true)])
        #expect(p.caps["web"] == 120 && p.nextSettle(after: at(131)) == nil)
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
        #expect(p.caps["api"] == 5)
        states["nyc1"] = .drained
        #expect(p.nodeChanged("nyc1", states: states, at: at(1)).isEmpty)
        #expect(
            p.settle(states: states, at: at(31)) == [PoolTTL.Change(pool: "api", cap: .max, settled: true)],
            "a drain is no fault")
        #expect(p.nodeChanged("unknown", states: states, at: at(40)).isEmpty)
    }

    /// A reload: a pool that stays keeps its cap and its settle clock unless its members changed
    /// (then it is a change now); a new pool starts as at cold start and is reported; one that is
    /// gone is forgotten.
    @Test func aReloadKeepsThePoolsThatStayAndReportsTheNewOnes() {
        var states: [String: HealthState] = ["fra1": .up, "par1": .up, "nyc1": .up]
        var p = PoolTTL(pools: [Self.web, Self.api], states: states)
        states["fra1"] = .down
        _ = p.nodeChanged("fra1", states: states, at: at(0))
        states["fra1"] = .up
        _ = p.nodeChanged("fra1", states: states, at: at(10))
        #expect(p.caps["web"] == 5 && p.nextSettle(after: at(10)) == at(40))

        // Same members: the settle clock runs on; a new pool with a member down starts low.
        let cdn = PoolConfig(id: "cdn", members: ["lon1"], minTTL: 3, declaredAt: "c.yaml:3")
        states["lon1"] = .down
        #expect(
            p.reconfigure(pools: [Self.web, cdn], states: states, at: at(20)) == [
                PoolTTL.Change(pool: "cdn", cap: 3, settled: false)
            ])
        #expect(p.caps == ["web": 5, "cdn": 3], "api is gone")
        #expect(p.nextSettle(after: at(20)) == at(40))
        #expect(p.settle(states: states, at: at(40)) == [PoolTTL.Change(pool: "web", cap: 120, settled: true)])

        // New members: a change now, so the pool waits for its settle time again.
        var bigger = Self.web
        bigger.members.append("ams1")
        #expect(
            p.reconfigure(pools: [bigger, cdn], states: states, at: at(50)) == [
                PoolTTL.Change(pool: "web", cap: 5, settled: false)
            ])
        #expect(p.nextSettle(after: at(50)) == at(80))
        #expect(
            p.nodeChanged("ams1", states: states, at: at(60)).isEmpty && p.nextSettle(after: at(60)) == at(90),
            "the new member counts")
    }
}
