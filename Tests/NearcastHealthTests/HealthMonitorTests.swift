import NIOCore
import NIOPosix
import NearcastAPIModel
import NearcastGeo
import NearcastTestSupport
import Synchronization
import Testing

@testable import NearcastHealth

/// The monitor on real sockets: nodes whose check targets stop answering go down after `fall`
/// results, changes are reported once each, and overrides report their change at once.
@Suite(.timeLimit(.minutes(3))) struct HealthMonitorTests {
    /// How long a timer-driven change may take to be seen. The monitor's timers run on Swift's
    /// cooperative pool, two threads here, which the suite's synchronous tests (waiting for dig,
    /// nsd, nearcastd) can keep busy for seconds at a time when all run in parallel; a change seen
    /// late is still right, a change never seen is what these tests catch.
    static let patience: Double = 40

    final class Changes: Sendable {
        let list = Mutex<[HealthMonitor.Change]>([])
        func add(_ c: HealthMonitor.Change) { list.withLock { $0.append(c) } }
        var all: [HealthMonitor.Change] { list.withLock { $0 } }
    }

    @Test func nodesGoDownWhenTheirTargetsStopAndOnlyChangesAreReported() async throws {
        let group = HealthCheckerTests.group
        let listener = try await ServerBootstrap(group: group).bind(host: "127.0.0.1", port: 0).get()
        let open = listener.localAddress!.port!
        let closed = try await ServerBootstrap(group: group).bind(host: "127.0.0.1", port: 0).get()
        let closedPort = closed.localAddress!.port!
        try await closed.close()

        func scheduled(_ port: Int) -> HealthMonitor.Scheduled {
            .init(
                name: "tcp", check: .tcp(host: "127.0.0.1", port: port), policy: CheckPolicy(rise: 2, fall: 2),
                interval: .milliseconds(100), timeout: .seconds(1))
        }
        let changes = Changes()
        let monitor = HealthMonitor(
            checker: HealthChecker(group: group),
            nodes: ["a": ([scheduled(open)], .up), "b": ([scheduled(closedPort)], .up)],
            onChange: { changes.add($0) })
        await monitor.start()
        try await eventually("b goes down", timeout: Self.patience) { await monitor.state(of: "b") == .down }
        #expect(await monitor.state(of: "a") == .up)
        try await listener.close()
        try await eventually("a goes down once its listener is gone", timeout: Self.patience) {
            await monitor.state(of: "a") == .down
        }
        // Three more results each, all failures: still one change each.
        let (ranA, ranB) = (await monitor.checksRun(of: "a"), await monitor.checksRun(of: "b"))
        try await eventually("a and b checked three times more", timeout: Self.patience) {
            let (a, b) = (await monitor.checksRun(of: "a"), await monitor.checksRun(of: "b"))
            return a >= ranA + 3 && b >= ranB + 3
        }
        let seen = changes.all
        #expect(
            seen.map(\.node).sorted() == ["a", "b"],
            "one change each, however many results: \(seen.map { "\($0.node) \($0.to)" })")
        #expect(seen.allSatisfy { $0.from == .up && $0.to == .down && $0.reason.hasPrefix("tcp (tcp 127.0.0.1:") })

        // An operator's override is a change at once.
        let drained = await monitor.setOverride("b", HealthOverride(.drain))
        #expect(drained?.to == .drained && changes.all.count == 3)
        #expect(await monitor.setOverride("b", HealthOverride(.drain)) == nil, "no change, no report")
        await monitor.stop()
    }

    /// One health board (ARCHITECTURE §6): the monitor writes every node's state and pool's cap on
    /// it from the cold start on, each change before anyone is told of it (so a reader told of a
    /// change finds it there), and after a reload it holds exactly the nodes and pools followed.
    @Test func theBoardHoldsEveryDecisionBeforeAnyoneIsTold() async throws {
        let board = HealthBoard()
        let web = PoolConfig(id: "web", members: ["a", "b"], minTTL: 4, declaredAt: "c.yaml:1")
        let told = Mutex<[String]>([])
        // Never started: states change by overrides and reloads alone.
        let check = HealthMonitor.Scheduled(
            name: "tcp", check: .tcp(host: "127.0.0.1", port: 9), policy: CheckPolicy(), interval: .seconds(60),
            timeout: .seconds(1))
        let monitor = HealthMonitor(
            checker: HealthChecker(group: HealthCheckerTests.group), nodes: ["a": ([], .up), "b": ([check], .down)],
            pools: [web], board: board,
            onChange: { c in
                let seen = board.state(of: c.node).map { "\($0)" } ?? "-"
                told.withLock { $0.append("\(c.node) \(c.to) board \(seen)") }
            },
            onPoolTTL: { c in
                let seen = board.snapshot.ttlCaps[c.pool].map { "\($0)" } ?? "-"
                told.withLock { $0.append("\(c.pool) \(c.cap) board \(seen)") }
            })
        #expect(
            board.snapshot == HealthBoard.Snapshot(nodes: ["a": .up, "b": .down], ttlCaps: ["web": 4]), "cold start")

        await monitor.setOverride("a", HealthOverride(.drain))
        await monitor.setOverride("b", HealthOverride(.forceUp))
        #expect(told.withLock { $0 } == ["a drained board drained", "b up board up"])
        #expect(await monitor.statuses().map(\.state) == ["drained", "up"], "the API reads what answers follow")

        told.withLock { $0 = [] }
        let cdn = PoolConfig(id: "cdn", members: ["c"], declaredAt: "c.yaml:2")
        await monitor.reconfigure(nodes: ["b": ([check], .down), "c": ([check], .down)], pools: [cdn])
        #expect(
            board.snapshot
                == HealthBoard.Snapshot(nodes: ["b": .up, "c": .down], ttlCaps: ["cdn": cdn.ttlCap(settled: false)]),
            "a and web are gone, c and cdn start cold, b keeps its override")
        #expect(told.withLock { $0 } == ["cdn \(cdn.ttlCap(settled: false)) board \(cdn.ttlCap(settled: false))"])
    }

    @Test func aTimedOverrideReportsItsEnd() async throws {
        let changes = Changes()
        let monitor = HealthMonitor(
            checker: HealthChecker(group: HealthCheckerTests.group), nodes: ["c": ([], .up)],
            onChange: { changes.add($0) })
        await monitor.setOverride("c", HealthOverride(.drain, until: .now + .milliseconds(300)))
        #expect(await monitor.state(of: "c") == .drained)
        #expect(await monitor.statuses().first?.override == "drain")
        try await eventually("the drain ends", timeout: Self.patience) { changes.all.count == 2 }
        #expect(changes.all.map(\.to) == [.drained, .up] && changes.all.last?.reason == "override expired")
        #expect(await monitor.statuses().first?.override == nil)
        await monitor.stop()
    }

    @Test func aPoolsTTLDropsOnAChangeAndComesBackOnItsTimerAndChangesAreCounted() async throws {
        let caps = Mutex<[PoolTTL.Change]>([])
        let pool = PoolConfig(id: "web", members: ["d", "e"], minTTL: 4, maxTTL: 60, settle: 2, declaredAt: "c.yaml:1")
        let monitor = HealthMonitor(
            checker: HealthChecker(group: HealthCheckerTests.group), nodes: ["d": ([], .up), "e": ([], .up)],
            pools: [pool],
            onChange: { _ in }, onPoolTTL: { c in caps.withLock { $0.append(c) } })
        #expect(
            await monitor.poolStatuses() == [PoolStatus(id: "web", members: ["d", "e"], settled: true, ttlCap: 60)])
        await monitor.setOverride("d", HealthOverride(.forceDown))
        #expect(caps.withLock { $0 } == [PoolTTL.Change(pool: "web", cap: 4, settled: false)])
        await monitor.setOverride("d", nil)
        #expect(caps.withLock { $0.count } == 1, "back up, but not yet settled")
        try await eventually("the pool settles", timeout: Self.patience) { caps.withLock { $0.count } == 2 }
        #expect(caps.withLock { $0.last } == PoolTTL.Change(pool: "web", cap: 60, settled: true))
        let d = await monitor.statuses().first { $0.id == "d" }
        #expect(d?.changes == 2 && d?.lastReason == "override removed" && (d?.secondsSinceChange ?? -1) >= 0)
        await monitor.stop()
    }

    @Test func reportsDriveAReportCheckAndSilenceCountsAsFailure() async throws {
        let changes = Changes()
        let report = HealthMonitor.Scheduled(
            name: "1:report", check: .report, policy: CheckPolicy(rise: 1, fall: 1), interval: .seconds(2),
            timeout: .seconds(1))
        let monitor = HealthMonitor(
            checker: HealthChecker(group: HealthCheckerTests.group), nodes: ["f": ([report], .up), "g": ([], .up)],
            onChange: { changes.add($0) })
        await monitor.start()
        #expect(await monitor.report("g", passed: true, detail: nil) == .notExpected)
        #expect(await monitor.report("nosuch", passed: true, detail: nil) == .unknownNode)
        // Heartbeats keep it up. (That no stale failure slips in between heartbeats spaced in time
        // cannot be asserted: a loaded machine has starved this test's task for longer than
        // stale-after. Each is recorded as it comes, whenever it comes.)
        for _ in 0..<4 {
            guard case .recorded(let s) = await monitor.report("f", passed: true, detail: nil) else {
                Issue.record("not recorded")
                return
            }
            #expect(s.state == "up")
        }
        guard case .recorded(let down) = await monitor.report("f", passed: false, detail: "disk full") else {
            Issue.record("not recorded")
            return
        }
        #expect(down.state == "down" && down.lastReason == "1:report: reported failing (disk full)")
        #expect(await monitor.report("f", passed: true, detail: nil) != .unknownNode)
        #expect(await monitor.state(of: "f") == .up)
        // Silence: stale after 2 s.
        try await eventually("no report goes stale", timeout: Self.patience) { await monitor.state(of: "f") == .down }
        #expect(
            changes.all.last?.reason.hasPrefix("1:report: no report for 2.0 s") == true, "\(changes.all.map(\.reason))")
        await monitor.stop()
    }

    /// A reload: a node that stays keeps its state, override and counts (its checks restart only
    /// when they changed, from its state now); a node that is gone is forgotten and its checks
    /// stop; a new node starts as at cold start and is checked.
    @Test func aReloadKeepsTheNodesThatStayAndChecksTheNewOnes() async throws {
        let group = HealthCheckerTests.group
        let closed = try await ServerBootstrap(group: group).bind(host: "127.0.0.1", port: 0).get()
        let closedPort = closed.localAddress!.port!
        try await closed.close()
        let failing = HealthMonitor.Scheduled(
            name: "tcp", check: .tcp(host: "127.0.0.1", port: closedPort), policy: CheckPolicy(rise: 1, fall: 1),
            interval: .milliseconds(100), timeout: .seconds(1))
        let changes = Changes()
        let caps = Mutex<[PoolTTL.Change]>([])
        let web = PoolConfig(id: "web", members: ["a", "b"], minTTL: 4, declaredAt: "c.yaml:1")
        let monitor = HealthMonitor(
            checker: HealthChecker(group: group),
            nodes: ["a": ([], .up), "b": ([failing], .up), "gone": ([failing], .up)],
            pools: [web], onChange: { changes.add($0) }, onPoolTTL: { c in caps.withLock { $0.append(c) } })
        await monitor.start()
        try await eventually("b and gone go down", timeout: Self.patience) {
            let (b, gone) = (await monitor.state(of: "b"), await monitor.state(of: "gone"))
            return b == .down && gone == .down
        }
        await monitor.setOverride("a", HealthOverride(.drain))
        let countA = await monitor.statuses().first { $0.id == "a" }?.changes

        let cdn = PoolConfig(id: "cdn", members: ["new"], declaredAt: "c.yaml:2")
        await monitor.reconfigure(
            nodes: ["a": ([], .up), "b": ([failing], .up), "new": ([failing], .down)], pools: [web, cdn])
        #expect(await monitor.state(of: "a") == .drained)
        #expect(await monitor.statuses().first { $0.id == "a" }?.changes == countA, "kept as it was, counts too")
        #expect(await monitor.state(of: "b") == .down, "unchanged checks: not restarted, still down")
        #expect(await monitor.state(of: "gone") == nil)
        #expect(await monitor.statuses().map(\.id) == ["a", "b", "new"])
        #expect(await monitor.state(of: "new") == .down, "a cold start as configured")
        #expect(
            caps.withLock { $0.last } == PoolTTL.Change(pool: "cdn", cap: cdn.ttlCap(settled: false), settled: false),
            "the new pool's cap is reported")
        #expect(await monitor.poolStatuses().map(\.id) == ["cdn", "web"])

        // b's check changes to one that passes: it starts again from b's state now and comes up.
        // a (drained) gets a check too: it starts from what a's checks said (up), not from the drain.
        let listener = try await ServerBootstrap(group: group).bind(host: "127.0.0.1", port: 0).get()
        var passing = failing
        passing.check = .tcp(host: "127.0.0.1", port: listener.localAddress!.port!)
        passing.interval = .seconds(60)  // its first result comes late: a's state is the carried one
        var slowPassing = passing
        slowPassing.interval = .milliseconds(100)
        let before = changes.all.count
        await monitor.reconfigure(
            nodes: ["a": ([passing], .up), "b": ([slowPassing], .up), "new": ([failing], .down)], pools: [web, cdn])
        #expect(await monitor.state(of: "a") == .drained)
        await monitor.setOverride("a", nil)
        #expect(await monitor.state(of: "a") == .up, "undrained: up at once, as its checks were")
        try await eventually("b comes up on its new check", timeout: Self.patience) {
            await monitor.state(of: "b") == .up
        }
        // new's check (as often as gone's was) runs three times more; gone's ran at most once, a
        // check already under way when it left.
        let ranNew = await monitor.checksRun(of: "new")
        try await eventually("new checked three times more", timeout: Self.patience) {
            await monitor.checksRun(of: "new") >= ranNew + 3
        }
        #expect(await monitor.checksRun(of: "gone") <= 1, "the gone node's checks stopped")
        #expect(!changes.all.dropFirst(before).contains { $0.node == "gone" })

        // new (down on a failing check) loses its checks: always up now, and the change is reported.
        await monitor.reconfigure(
            nodes: ["a": ([passing], .up), "b": ([slowPassing], .up), "new": ([], .down)], pools: [web, cdn])
        #expect(await monitor.state(of: "new") == .up)
        #expect(
            changes.all.last.map { "\($0.node) \($0.from) -> \($0.to): \($0.reason)" }
                == "new down -> up: checks changed by a reload")
        await monitor.stop()
        try await listener.close()
    }
}

extension HealthMonitorTests {
    /// A fleet's peers' views are weighed with this server's own: each change of state they make is
    /// reported once (one map write), this server's own view is what it would publish, and cut
    /// off from its peers it judges alone again.
    @Test func peersViewsChangeTheStateAndAreShownPerObserver() async throws {
        let changes = Changes()
        let views = Mutex(0)
        // Never started: its own views stay at the cold start (a up, b down).
        let check = HealthMonitor.Scheduled(
            name: "tcp", check: .tcp(host: "127.0.0.1", port: 9), policy: CheckPolicy(), interval: .seconds(60),
            timeout: .seconds(1))
        let monitor = HealthMonitor(
            checker: HealthChecker(group: HealthCheckerTests.group),
            nodes: ["a": ([check], .up), "b": ([check], .down), "unchecked": ([], .up)],
            observerName: "s1", onChange: { changes.add($0) })
        await monitor.onOwnViewChange { views.withLock { $0 += 1 } }
        #expect(
            await monitor.ownViews() == ["a": .up, "b": .down],
            "a node without checks is up everywhere: no view of it is published")

        await monitor.setPeerViews([.init(server: "s2", node: "b", view: .up)])
        #expect(await monitor.state(of: "b") == .up, "down here, up at s2: one of two is not a majority")
        await monitor.setPeerViews([.init(server: "s3", node: "b", view: .up)])
        #expect(await monitor.state(of: "b") == .up)
        await monitor.setPeerViews([.init(server: "s2", node: "a", view: .down)])
        #expect(await monitor.state(of: "a") == .up, "one of two down")
        await monitor.setPeerViews([.init(server: "s3", node: "a", view: .down)])
        #expect(await monitor.state(of: "a") == .down, "two of three down")
        #expect(changes.all.map { "\($0.node) \($0.to)" } == ["b up", "a down"], "one change each")
        #expect(changes.all.last?.reason.contains("s3 sees it down") == true, "\(changes.all.last?.reason ?? "")")
        let b = await monitor.statuses().first { $0.id == "b" }
        #expect(
            b?.observers == [
                ObserverView(server: "s1", view: "down"), ObserverView(server: "s2", view: "up"),
                ObserverView(server: "s3", view: "up"),
            ])

        await monitor.setPeerViews([
            .init(server: "s2", node: "a", view: .up), .init(server: "s2", node: "a", view: .down),
        ])
        #expect(changes.all.count == 2, "a batch is judged by what it leaves: a is still down")

        await monitor.replacePeerViews(PeerViews(), reason: "store out of reach")
        #expect(await monitor.states() == ["a": .up, "b": .down, "unchecked": .up], "alone: its own checks again")
        #expect(changes.all.count == 4)
        #expect(views.withLock { $0 } == 0, "peers never change this server's own view")
    }
}
