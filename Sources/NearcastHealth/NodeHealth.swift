import NearcastGeo

/// How one check turns results into up or down: `rise` successes in a row to go up, `fall`
/// failures in a row to go down. In between, it keeps its state: no flapping on one bad result.
public struct CheckPolicy: Hashable, Sendable {
    public var rise: Int
    public var fall: Int

    public init(rise: Int = 2, fall: Int = 3) {
        precondition(rise >= 1 && fall >= 1, "rise and fall count results: at least 1")
        self.rise = rise
        self.fall = fall
    }
}

/// An operator's word on a node, until it expires (nil: until taken back).
public struct HealthOverride: Hashable, Sendable {
    public enum Kind: String, Sendable, Codable {
        case drain
        case forceUp = "force-up"
        case forceDown = "force-down"
    }
    public var kind: Kind
    public var until: ContinuousClock.Instant?

    public init(_ kind: Kind, until: ContinuousClock.Instant? = nil) {
        self.kind = kind
        self.until = until
    }
}

/// One node's health: each check's state by rise and fall, and the operator's override. A value type, driven by results and time, so the rules are
/// tested without a network or a clock.
public struct NodeHealth: Sendable {
    /// One check's state.
    struct Check: Sendable {
        var policy: CheckPolicy
        var up: Bool
        var successes = 0
        var failures = 0
    }

    var checks: [String: Check] = [:]
    public private(set) var override: HealthOverride?
    var checkState: HealthState

    /// What this server's own checks say (what it publishes as its view in a fleet).
    public var ownView: HealthState { checkState }

    /// A node with `checks` (name -> policy), each starting `initial` (`up` or `down`): a cold start
    /// is what the operator configured, not "everything down" until the first results.
    public init(checks: [String: CheckPolicy], initial: HealthState = .up) {
        let up = initial != .down
        for (name, policy) in checks { self.checks[name] = Check(policy: policy, up: up) }
        checkState = checks.isEmpty ? .up : (up ? .up : .down)
    }

    /// Whether the node has checks (a node without is up wherever it is judged).
    public var isChecked: Bool { !checks.isEmpty }

    /// The state answers follow at `now`: an unexpired override, else what this server's checks
    /// and a fleet's other servers' views of the node (`peers`, ARCHITECTURE §13) make of it by
    /// `observers`' rule (the checks alone without peers).
    public func state(
        at now: ContinuousClock.Instant, peers: [HealthState] = [],
        observers: ObserversConfig = ObserversConfig()
    ) -> HealthState {
        if let o = override, o.until.map({ now < $0 }) ?? true {
            switch o.kind {
            case .drain: return .drained
            case .forceUp: return .up
            case .forceDown: return .down
            }
        }
        return observers.judge(own: checkState, peers: peers)
    }

    /// Records one result of check `name`. Returns the new combined state of the checks
    /// when it changed (what to log, count and write), else nil.
    @discardableResult
    public mutating func record(_ name: String, success: Bool) -> HealthState? {
        guard var c = checks[name] else { return nil }
        if success {
            c.successes += 1
            c.failures = 0
            if !c.up && c.successes >= c.policy.rise { c.up = true }
        } else {
            c.failures += 1
            c.successes = 0
            if c.up && c.failures >= c.policy.fall { c.up = false }
        }
        checks[name] = c
        let ups = checks.values.filter(\.up).count
        let combined: HealthState = ups == checks.count ? .up : ups == 0 ? .down : .degraded
        guard combined != checkState else { return nil }
        checkState = combined
        return combined
    }

    /// Sets (or with nil, takes back) the operator's override.
    public mutating func setOverride(_ o: HealthOverride?) { override = o }

    /// Drops an override that expired by `now`; true when one did (its end is a state change).
    @discardableResult
    public mutating func expireOverride(at now: ContinuousClock.Instant) -> Bool {
        guard let o = override, let until = o.until, now >= until else { return false }
        override = nil
        return true
    }
}
