/// What `GET /v1/stats` of the management API returns, and `nearcast stats` prints.
public struct StatsReport: Codable, Equatable, Sendable {
    /// One counter: its name (as `bpftool map dump` names the XDP ones) and its value.
    public struct Counter: Codable, Equatable, Sendable {
        public var name: String
        public var value: UInt64

        public init(name: String, value: UInt64) {
            self.name = name
            self.value = value
        }
    }

    /// Seconds the daemon has been running (a monotonic clock): rates are differences over it.
    public var uptime: Double
    /// The XDP program's verdicts by reason, summed over CPUs, since the program's maps were
    /// created (they outlive daemon restarts); nil when the fast path is off.
    public var xdp: [Counter]?

    public init(uptime: Double, xdp: [Counter]?) {
        self.uptime = uptime
        self.xdp = xdp
    }
}

/// A node's health as the management API reports it (`GET /v1/nodes`, `nearcast nodes`).
public struct NodeStatus: Codable, Equatable, Sendable {
    public var id: String
    /// up, degraded, down or drained.
    public var state: String
    /// The operator's override, if any: drain, force-up or force-down.
    public var override: String?
    /// Seconds until the override expires; nil: until taken back.
    public var overrideSecondsLeft: Double?

    public init(id: String, state: String, override: String? = nil, overrideSecondsLeft: Double? = nil) {
        self.id = id
        self.state = state
        self.override = override
        self.overrideSecondsLeft = overrideSecondsLeft
    }
}
