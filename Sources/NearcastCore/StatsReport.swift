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
