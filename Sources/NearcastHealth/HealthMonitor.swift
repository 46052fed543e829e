import NIOCore
import NearcastAPIModel
import NearcastBasics
import NearcastGeo

/// Runs every node's checks on their intervals and keeps each node's NodeHealth; writes each node's
/// state and each pool's TTL cap on the health board, the one place answers read them from, and
/// reports each change after writing it there (ARCHITECTURE §6). Checks run concurrently, each on its own
/// schedule with jitter, so checks of many nodes do not fire in lockstep and a slow target holds
/// up only its own check.
public actor HealthMonitor {
    /// One check of one node, with its schedule.
    public struct Scheduled: Sendable, Equatable {
        public var name: String
        public var check: HealthCheck
        public var policy: CheckPolicy
        public var interval: Duration
        public var timeout: Duration

        public init(name: String, check: HealthCheck, policy: CheckPolicy, interval: Duration, timeout: Duration) {
            self.name = name
            self.check = check
            self.policy = policy
            self.interval = interval
            self.timeout = timeout
        }
    }

    /// A change of a node's state: what to log, count and write into the maps.
    public struct Change: Sendable {
        public var node: String
        public var from: HealthState
        public var to: HealthState
        /// The check and its result that made it.
        public var reason: String
        /// When the monitor decided it (the start of the way to the maps).
        public var decidedAt = ContinuousClock.now
    }

    let checker: HealthChecker
    /// Where every node's state and pool's cap is published; this monitor is its only writer.
    public nonisolated let board: HealthBoard
    var plan: [String: [Scheduled]]
    var health: [String: NodeHealth]
    let onChange: @Sendable (Change) -> Void
    let onPoolTTL: @Sendable (PoolTTL.Change) -> Void
    /// Each node's running loops (checks, report clocks, override timers).
    var tasks: [String: [Task<Void, Never>]] = [:]
    var started = false
    var settleTimer: Task<Void, Never>?
    /// The pools' TTL state, fed with every change.
    var poolTTL: PoolTTL
    /// Changes per node since start, and the last one's time and reason (counted and reported).
    var counts: [String: Int] = [:]
    var last: [String: (at: ContinuousClock.Instant, reason: String)] = [:]
    /// Results of each node's active checks since start (or since it joined): what a caller waits on
    /// to know that checks have run, rather than for a time. A node that leaves is forgotten here.
    var checksRun: [String: Int] = [:]
    /// Report checks: when each node's next report is due before it counts as a failure.
    var reportDue: [String: ContinuousClock.Instant] = [:]
    /// A fleet's other servers' views of each node, and how they are weighed with this server's
    /// (ARCHITECTURE §13). Empty: this server judges alone.
    var peerViews = PeerViews()
    var observers: ObserversConfig
    /// This server's name among a fleet's observers (nil: not in a fleet).
    public nonisolated let observerName: String?
    /// Told each time this server's own view of a node changes (what a fleet server publishes).
    var viewListener: (@Sendable () -> Void)?

    /// `nodes`: node id -> its checks and its cold-start state. `pools`: the pools whose TTL cap
    /// follows their members' health; each change of a cap goes to `onPoolTTL`. `board`: where
    /// states and caps are published (the daemon's one board), written at once with the cold start.
    /// `observers` and `observerName`: how a fleet's views are weighed, and this server's name
    /// among them.
    public init(
        checker: HealthChecker, nodes: [String: (checks: [Scheduled], initial: HealthState)], pools: [PoolConfig] = [],
        observers: ObserversConfig = ObserversConfig(), observerName: String? = nil,
        board: HealthBoard = HealthBoard(),
        onChange: @escaping @Sendable (Change) -> Void,
        onPoolTTL: @escaping @Sendable (PoolTTL.Change) -> Void = { _ in }
    ) {
        self.checker = checker
        self.observers = observers
        self.observerName = observerName
        plan = nodes.mapValues(\.checks)
        let health = nodes.mapValues { n in
            NodeHealth(
                checks: Dictionary(n.checks.map { ($0.name, $0.policy) }, uniquingKeysWith: { a, _ in a }),
                initial: n.initial)
        }
        self.health = health
        // (No peers yet: each node's state is its cold start.)
        poolTTL = PoolTTL(pools: pools, states: health.mapValues { $0.state(at: .now) })
        self.onChange = onChange
        self.onPoolTTL = onPoolTTL
        self.board = board
        board.replace(HealthBoard.Snapshot(nodes: health.mapValues { $0.state(at: .now) }, ttlCaps: poolTTL.caps))
    }

    /// Starts every check's loop.
    public func start() {
        started = true
        for node in plan.keys { startChecks(node) }
    }

    /// Starts `node`'s check loops.
    func startChecks(_ node: String) {
        for c in plan[node] ?? [] {
            if case .report = c.check {
                reportDue[node] = .now + c.interval
                tasks[node, default: []].append(Task { [weak self] in await self?.staleLoop(node, c) })
            } else {
                tasks[node, default: []].append(Task { [weak self] in await self?.loop(node, c) })
            }
        }
    }

    /// Stops `node`'s loops.
    func stopChecks(_ node: String) {
        for t in tasks[node] ?? [] { t.cancel() }
        tasks[node] = nil
        reportDue[node] = nil
    }

    /// Follows a new set of nodes and pools (a reload that changed the geo section): a node that is
    /// gone stops being checked and is forgotten; a new one starts as at cold start; one that
    /// stays keeps its state, override and counts, and its checks start again only if they
    /// changed (their run of results then starts from its state now). Pools follow (PoolTTL), and
    /// each cap that changes goes to `onPoolTTL`.
    public func reconfigure(
        nodes: [String: (checks: [Scheduled], initial: HealthState)], pools: [PoolConfig],
        observers: ObserversConfig = ObserversConfig()
    ) {
        let now = ContinuousClock.now
        for id in health.keys where nodes[id] == nil {
            stopChecks(id)
            health[id] = nil
            plan[id] = nil
            counts[id] = nil
            last[id] = nil
            checksRun[id] = nil
        }
        for (id, n) in nodes {
            let policies = Dictionary(n.checks.map { ($0.name, $0.policy) }, uniquingKeysWith: { a, _ in a })
            if let h = health[id] {
                guard plan[id] != n.checks else { continue }
                stopChecks(id)
                // The new checks start from what the old ones said (the override aside), and any
                // change that makes (checks removed: always up) is reported like any other.
                var fresh = NodeHealth(checks: policies, initial: h.checkState.isServing ? .up : .down)
                fresh.setOverride(h.override)
                health[id] = fresh
                if let until = h.override?.until { scheduleExpiry(id, at: until) }
                let (before, after) = (judged(id, h, at: now), judged(id, fresh, at: now))
                if before != after {
                    changed(Change(node: id, from: before, to: after, reason: "checks changed by a reload"))
                }
            } else {
                health[id] = NodeHealth(checks: policies, initial: n.initial)
            }
            plan[id] = n.checks
            if started { startChecks(id) }
        }
        if observers != self.observers {
            let rule = self.observers
            self.observers = observers
            rejudge(Array(health.keys), before: peerViews, rule) { _ in "observers' rule changed by a reload" }
        }
        viewListener?()
        let states = states(at: now)
        let changes = poolTTL.reconfigure(pools: pools, states: states, at: now)
        // The board holds exactly the nodes and pools followed now: those gone leave it, new ones
        // join in their cold start.
        board.replace(HealthBoard.Snapshot(nodes: states, ttlCaps: poolTTL.caps))
        for c in changes { onPoolTTL(c) }
        scheduleSettle(after: now)
    }

    /// A report from `node`'s agent (a heartbeat is one that passes): one result of its report
    /// check, and its staleness clock starts again.
    public func report(_ node: String, passed: Bool, detail: String?) -> NodeReportOutcome {
        guard health[node] != nil else { return .unknownNode }
        guard let c = plan[node]?.first(where: { if case .report = $0.check { true } else { false } }) else {
            return .notExpected
        }
        reportDue[node] = .now + c.interval
        record(
            node, c.name, passed,
            "\(c.name): " + (passed ? "reported up" : "reported failing") + (detail.map { " (\($0))" } ?? ""))
        return .recorded(status(of: node)!)
    }

    /// A report check's clock: each `interval` (its stale-after) without a report is a failure.
    func staleLoop(_ node: String, _ c: Scheduled) async {
        while !Task.isCancelled {
            guard let due = reportDue[node] else { return }
            try? await Task.sleep(until: due, clock: .continuous)
            if Task.isCancelled { return }
            let now = ContinuousClock.now
            guard let stillDue = reportDue[node], now >= stillDue else { continue }  // a report came meanwhile
            reportDue[node] = now + c.interval
            record(node, c.name, false, "\(c.name): no report for \(c.interval.seconds) s")
        }
    }

    /// Stops every loop (checks in flight end at their timeout at most).
    public func stop() {
        for t in tasks.values.joined() { t.cancel() }
        tasks = [:]
        started = false
        settleTimer?.cancel()
        settleTimer = nil
    }

    /// How many results `node`'s active checks have given since it was first followed (0 for one
    /// unknown): a check that is still running when the node leaves may count once more.
    public func checksRun(of node: String) -> Int { checksRun[node, default: 0] }

    /// A node's state now.
    public func state(of node: String) -> HealthState? { health[node].map { judged(node, $0, at: .now) } }

    /// Every node's state now.
    public func states() -> [String: HealthState] { states(at: .now) }

    /// Every node's state at `now`, its peers' views weighed in.
    func states(at now: ContinuousClock.Instant) -> [String: HealthState] {
        var out = [String: HealthState](minimumCapacity: health.count)
        for (id, h) in health { out[id] = judged(id, h, at: now) }
        return out
    }

    /// What `h` (node `id`'s health) makes of it at `now` with the peers' views `peers` by the
    /// observers' rule `rule` (by default, the ones followed now).
    func judged(
        _ id: String, _ h: NodeHealth, at now: ContinuousClock.Instant, peers: PeerViews? = nil,
        _ rule: ObserversConfig? = nil
    ) -> HealthState {
        h.state(at: now, peers: Array((peers ?? peerViews).of(id).values), observers: rule ?? observers)
    }

    /// Every node's state (as the board holds it: what answers follow) and override now, by id.
    public func statuses() -> [NodeStatus] {
        let now = ContinuousClock.now
        let board = board.snapshot
        return health.keys.sorted().compactMap { status(of: $0, board: board, at: now) }
    }

    /// One node's status, as `statuses` gives it (a registration answers with its node's: not
    /// all 5,000 of a fleet's made to find one).
    public func status(of id: String) -> NodeStatus? { status(of: id, board: board.snapshot, at: .now) }

    private func status(of id: String, board: HealthBoard.Snapshot, at now: ContinuousClock.Instant) -> NodeStatus? {
        guard let h = health[id] else { return nil }
        let o = h.override.flatMap { o in o.until.map { now < $0 } ?? true ? o : nil }
        return NodeStatus(
            id: id, state: (board.nodes[id] ?? judged(id, h, at: now)).rawValue, override: o?.kind.rawValue,
            overrideSecondsLeft: o?.until.map { ($0 - now).seconds }, changes: counts[id] ?? 0,
            lastReason: last[id]?.reason, secondsSinceChange: last[id].map { (now - $0.at).seconds },
            observers: observerName == nil ? nil : views(of: id))
    }

    /// Every pool's TTL state now, by id.
    public func poolStatuses() -> [PoolStatus] {
        let caps = poolTTL.caps
        return poolTTL.pools.keys.sorted().map { id in
            let p = poolTTL.pools[id]!
            return PoolStatus(
                id: id, members: p.config.members, settled: p.settled,
                ttlCap: caps[id].flatMap { $0 == .max ? nil : $0 })
        }
    }

    /// Reports a change of a node's state: counted, handed on, and fed to the pools' TTL state
    /// (whose changes are handed on too, with a timer for when the pools may settle).
    func changed(_ change: Change) {
        let now = ContinuousClock.now
        counts[change.node, default: 0] += 1
        last[change.node] = (now, change.reason)
        board.set(change.node, change.to)
        onChange(change)
        for c in poolTTL.nodeChanged(change.node, states: states(at: now), at: now) {
            poolCapChanged(c)
        }
        scheduleSettle(after: now)
    }

    /// Reports a change of a pool's cap, once it is on the board.
    func poolCapChanged(_ c: PoolTTL.Change) {
        board.setTTLCap(c.pool, c.cap)
        onPoolTTL(c)
    }

    /// One timer, for the next time a pool may settle.
    func scheduleSettle(after now: ContinuousClock.Instant) {
        settleTimer?.cancel()
        settleTimer = poolTTL.nextSettle(after: now).map { at in
            Task { [weak self] in
                try? await Task.sleep(until: at, clock: .continuous)
                if !Task.isCancelled { await self?.settlePools() }
            }
        }
    }

    /// Lets pools whose settle time has passed go back to their normal TTL.
    func settlePools() {
        let now = ContinuousClock.now
        for c in poolTTL.settle(states: states(at: now), at: now) { poolCapChanged(c) }
        scheduleSettle(after: now)
    }

    /// Sets or takes back an operator's override; returns the change it makes, if any.
    @discardableResult
    public func setOverride(_ node: String, _ o: HealthOverride?) -> Change? {
        guard var h = health[node] else { return nil }
        let now = ContinuousClock.now
        let before = judged(node, h, at: now)
        h.setOverride(o)
        health[node] = h
        let after = judged(node, h, at: now)
        guard before != after else { return nil }
        if let until = o?.until { scheduleExpiry(node, at: until) }
        let change = Change(
            node: node, from: before, to: after, reason: o.map { "override \($0.kind.rawValue)" } ?? "override removed")
        changed(change)
        return change
    }

    /// The override's end is a change too, checks or not: a timer reports it.
    func scheduleExpiry(_ node: String, at until: ContinuousClock.Instant) {
        tasks[node, default: []].append(
            Task { [weak self] in
                try? await Task.sleep(until: until, clock: .continuous)
                await self?.expire(node)
            })
    }

    /// Ends `node`'s override if it has expired, reporting the change it makes.
    func expire(_ node: String) {
        guard var h = health[node] else { return }
        let now = ContinuousClock.now
        // What answers followed until the override ended (state(at:) already ignores it now).
        let before = judged(node, h, at: (h.override?.until ?? now) - .nanoseconds(1))
        guard h.expireOverride(at: now) else { return }
        health[node] = h
        let after = judged(node, h, at: now)
        if before != after { changed(Change(node: node, from: before, to: after, reason: "override expired")) }
    }

    func loop(_ node: String, _ c: Scheduled) async {
        // Jitter: the first run somewhere in the first interval, then each interval ± 10 %.
        var wait = Duration.nanoseconds(Int64.random(in: 0...max(1, Self.nanos(c.interval))))
        while !Task.isCancelled {
            try? await Task.sleep(for: wait)
            if Task.isCancelled { return }
            let r = await checker.run(c.check, timeout: .nanoseconds(Self.nanos(c.timeout)))
            checksRun[node, default: 0] += 1
            record(node, c.name, r.passed, "\(c.name) (\(c.check)): \(r.reason)")
            let spread = Self.nanos(c.interval) / 10
            wait = .nanoseconds(Self.nanos(c.interval) + Int64.random(in: -spread...max(-spread, spread)))
        }
    }

    func record(_ node: String, _ check: String, _ passed: Bool, _ reason: String) {
        guard var h = health[node] else { return }
        let now = ContinuousClock.now
        let before = judged(node, h, at: now)
        let ownChanged = h.record(check, success: passed) != nil  // an expired override is ended by its timer
        health[node] = h
        let after = judged(node, h, at: now)
        if before != after {
            let peers = peerViews.of(node)
            let observed = peers.isEmpty ? "" : " (\(h.ownView) here; \(Self.describe(peers)))"
            changed(Change(node: node, from: before, to: after, reason: reason + observed))
        }
        if ownChanged { viewListener?() }
    }
}

// A fleet's observers (ARCHITECTURE §13): each server publishes its own view of every node, and
// weighs the live peers' views with it.
extension HealthMonitor {
    /// This server's own view of every node it checks (what its checks say, overrides aside): what a
    /// fleet server publishes. A node without checks is up wherever it is judged: no view to share.
    public func ownViews() -> [String: HealthState] { health.filter(\.value.isChecked).mapValues(\.ownView) }

    /// `listener` is called each time this server's own view of a node changes.
    public func onOwnViewChange(_ listener: @escaping @Sendable () -> Void) { viewListener = listener }

    /// Applies peers' changed views (a batch of the store's watch, in order); reports each change of
    /// state they make, once per node.
    public func setPeerViews(_ changes: [PeerViews.Change]) {
        let before = peerViews
        var why: [String: String] = [:]
        for c in changes {
            peerViews.apply(c)
            why[c.node] = "\(c.server) sees it \(c.view.map(\.rawValue) ?? "no more")"
        }
        rejudge(Array(why.keys), before: before, observers) { why[$0] ?? "" }
    }

    /// Replaces every peer's views (empty: this server judges alone, e.g. cut off from the store);
    /// reports each change of state it makes.
    public func replacePeerViews(_ views: PeerViews, reason: String) {
        let before = peerViews
        peerViews = views
        rejudge(Array(health.keys), before: before, observers) { _ in reason }
    }

    /// Weighs `nodes` again with the peers' views and the rule now, reporting each change from what
    /// the peers' views `before` and the rule `rule` made of them.
    func rejudge(
        _ nodes: [String], before: PeerViews, _ rule: ObserversConfig, reason: (String) -> String
    ) {
        let now = ContinuousClock.now
        for node in nodes {
            guard let h = health[node] else { continue }
            let (from, to) = (judged(node, h, at: now, peers: before, rule), judged(node, h, at: now))
            if from != to {
                let peers = peerViews.of(node)
                changed(
                    Change(
                        node: node, from: from, to: to,
                        reason: "\(reason(node)) (\(h.ownView) here\(peers.isEmpty ? "" : "; " + Self.describe(peers)))"
                    ))
            }
        }
    }

    /// Every view of a node, this server's first (empty: not in a fleet).
    func views(of node: String) -> [ObserverView] {
        guard let me = observerName, let h = health[node] else { return [] }
        return [ObserverView(server: me, view: h.ownView.rawValue)]
            + peerViews.of(node).sorted { $0.key < $1.key }.map {
                ObserverView(server: $0.key, view: $0.value.rawValue)
            }
    }

    static func describe(_ peers: [String: HealthState]) -> String {
        peers.sorted { $0.key < $1.key }.map { "\($0.value) at \($0.key)" }.joined(separator: ", ")
    }

    static func nanos(_ d: Duration) -> Int64 {
        d.components.seconds * 1_000_000_000 + d.components.attoseconds / 1_000_000_000
    }
}

extension HealthMonitor.Scheduled {
    /// The check a node's config describes.
    public init(_ c: NodeCheckConfig, index: Int) {
        let check: HealthCheck
        switch c.kind {
        case .tcp: check = .tcp(host: c.host, port: c.port)
        case .http: check = .http(host: c.host, port: c.port, path: c.path, status: c.status, bodyContains: c.body)
        case .https:
            check = .https(
                host: c.host, port: c.port, path: c.path, status: c.status, bodyContains: c.body,
                tls: TLSCheck(verify: c.verify, serverName: c.serverName, caFile: c.caFile))
        case .dns: check = .dns(host: c.host, port: c.port, name: c.dnsName ?? .root, type: c.dnsType, rcode: c.rcode)
        case .report: check = .report
        }
        // A report check's interval is its stale-after: how long it waits for a report.
        self.init(
            name: "\(index + 1):\(c.label)", check: check, policy: CheckPolicy(rise: c.rise, fall: c.fall),
            interval: .seconds(c.kind == .report ? c.staleAfter : c.interval), timeout: .seconds(c.timeout))
    }
}
