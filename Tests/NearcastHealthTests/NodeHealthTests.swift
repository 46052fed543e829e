import NearcastGeo
import Testing

@testable import NearcastHealth

/// The health state machine alone: rise and fall, several checks, flapping, overrides and their
/// expiry, and the cold start (ARCHITECTURE §6).
@Suite(.timeLimit(.minutes(1))) struct NodeHealthTests {
    let t0 = ContinuousClock.now

    func at(_ s: Int) -> ContinuousClock.Instant { t0 + .seconds(s) }

    @Test func fallFailuresInARowTakeANodeDownAndRiseSuccessesBringItBack() {
        var h = NodeHealth(checks: ["http": CheckPolicy(rise: 2, fall: 3)])
        #expect(h.state(at: at(0)) == .up, "cold start: the configured initial state")
        #expect(h.record("http", success: false) == nil)
        #expect(h.record("http", success: false) == nil)
        #expect(h.record("http", success: true) == nil, "a success resets the failures")
        #expect(h.record("http", success: false) == nil)
        #expect(h.record("http", success: false) == nil)
        #expect(h.record("http", success: false) == .down, "the third failure in a row")
        #expect(h.state(at: at(6)) == .down && !h.state(at: at(6)).isServing)
        #expect(h.record("http", success: true) == nil)
        #expect(h.record("http", success: true) == .up, "the second success in a row")
        #expect(h.record("nosuch", success: false) == nil)
    }

    @Test func aColdStartCanBeDownAndWaitsForRise() {
        var h = NodeHealth(checks: ["tcp": CheckPolicy(rise: 1, fall: 1)], initial: .down)
        #expect(h.state(at: at(0)) == .down)
        #expect(h.record("tcp", success: true) == .up)
        #expect(NodeHealth(checks: [:]).state(at: at(0)) == .up, "no checks: always up")
    }

    @Test func someChecksFailingIsDegradedAndStillServed() {
        var h = NodeHealth(checks: ["http": CheckPolicy(rise: 1, fall: 1), "dns": CheckPolicy(rise: 1, fall: 1)])
        #expect(h.record("dns", success: false) == .degraded)
        #expect(h.state(at: at(1)).isServing)
        #expect(h.record("http", success: false) == .down)
        #expect(h.record("dns", success: true) == .degraded)
        #expect(h.record("http", success: true) == .up)
    }

    @Test func overridesWinUntilTheyExpire() {
        var h = NodeHealth(checks: ["http": CheckPolicy(rise: 1, fall: 1)])
        h.setOverride(HealthOverride(.drain, until: at(600)))
        #expect(h.state(at: at(1)) == .drained)
        h.record("http", success: false)
        #expect(h.state(at: at(599)) == .drained, "the checks go on underneath")
        #expect(h.state(at: at(600)) == .down, "expired: what the checks say")
        #expect(!h.expireOverride(at: at(10)) && h.expireOverride(at: at(600)) && h.override == nil)
        h.setOverride(HealthOverride(.forceUp))
        #expect(h.state(at: at(10_000)) == .up, "no expiry: until taken back")
        h.setOverride(nil)
        #expect(h.state(at: at(10_000)) == .down)
        h.setOverride(HealthOverride(.forceDown))
        h.record("http", success: true)
        #expect(h.state(at: at(10_001)) == .down)
    }

    /// A fleet's observers (ARCHITECTURE §13): a node is down where enough live observers see it
    /// down (by default more than half), so one server's bad link neither takes a node out nor
    /// keeps a dead one in; alone, a server follows its own checks.
    @Test func aFleetJudgesANodeByItsObserversViews() {
        var h = NodeHealth(checks: ["tcp": CheckPolicy(rise: 1, fall: 1)])
        h.record("tcp", success: false)
        #expect(h.state(at: at(1)) == .down, "alone: its own checks")
        #expect(h.state(at: at(1), peers: [.up, .up]) == .up, "one of three sees it down: up")
        #expect(h.state(at: at(1), peers: [.down, .up]) == .down, "two of three: down")
        #expect(h.state(at: at(1), peers: [.down, .degraded]) == .down)
        #expect(
            h.state(at: at(1), peers: [.degraded]) == .degraded, "one down and one degraded of two: a majority not up")
        #expect(h.state(at: at(1), peers: [.up]) == .up, "one of two is not a majority")
        let half = ObserversConfig(downWhen: 0.5)
        #expect(h.state(at: at(1), peers: [.up], observers: half) == .down, "down-when: 50% takes it out at one of two")
        h.setOverride(HealthOverride(.forceUp))
        #expect(h.state(at: at(1), peers: [.down, .down]) == .up, "an operator's word beats every observer")
        #expect(h.ownView == .down, "what this server publishes is its checks' view, overrides aside")
    }

    /// The peers' views are one value, kept by node: a server's view replaced or forgotten leaves
    /// the others'.
    @Test func peersViewsAreKeptByNode() {
        var views = PeerViews([
            .init(server: "b", node: "n1", view: .up), .init(server: "c", node: "n1", view: .down),
            .init(server: "b", node: "n2", view: .degraded),
        ])
        #expect(views.of("n1") == ["b": .up, "c": .down] && views.of("n2") == ["b": .degraded])
        #expect(views.servers == ["b", "c"])
        views.apply(.init(server: "b", node: "n1", view: nil))
        views.apply(.init(server: "b", node: "n2", view: nil))
        #expect(views.of("n1") == ["c": .down] && views.of("n2").isEmpty && views.servers == ["c"])
        views.apply(.init(server: "c", node: "n1", view: nil))
        #expect(views.isEmpty && views == PeerViews())
    }

    @Test func theShareNeededCountsLiveObservers() {
        let majority = ObserversConfig()
        #expect(majority.isEnough(1, of: 1) && !majority.isEnough(1, of: 2) && majority.isEnough(2, of: 3))
        #expect(!majority.isEnough(0, of: 0))
        let third = ObserversConfig(downWhen: 1.0 / 3)
        #expect(third.isEnough(1, of: 3) && !third.isEnough(1, of: 4))
        let all = ObserversConfig(downWhen: 1)
        #expect(all.isEnough(5, of: 5) && !all.isEnough(4, of: 5))
    }
}
