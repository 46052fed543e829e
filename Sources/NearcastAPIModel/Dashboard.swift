/// What the dashboard (`/ui/`) reads besides the API's other answers.

/// A geo node where the map draws it (`GET /v1/map`): its place, addresses and pools.
public struct MapNode: Codable, Equatable, Sendable {
    public var id: String
    public var latitude: Double
    public var longitude: Double
    public var country: String?
    public var ipv4: String?
    public var ipv6: String?
    /// The pools it is a member of.
    public var pools: [String]

    public init(
        id: String, latitude: Double, longitude: Double, country: String?, ipv4: String?, ipv6: String?,
        pools: [String]
    ) {
        self.id = id
        self.latitude = latitude
        self.longitude = longitude
        self.country = country
        self.ipv4 = ipv4
        self.ipv6 = ipv6
        self.pools = pools
    }
}

/// Who a token says the caller is (`GET /v1/whoami`): the page offers only what the role may do.
public struct CallerInfo: Codable, Equatable, Sendable {
    /// agent, read, write or admin.
    public var role: String
    /// Where the token is declared (`file:line`), as the audit log names the caller.
    public var source: String
    /// Whether the role may drain and force nodes (write and above).
    public var mayChangeNodes: Bool

    public init(role: String, source: String, mayChangeNodes: Bool) {
        self.role = role
        self.source = source
        self.mayChangeNodes = mayChangeNodes
    }
}

/// One second of the live figures (`GET /v1/events`, event `sample`): when, in seconds since the
/// daemon started, the XDP program's counters by name (nil without the fast path) and the slow
/// path's (`StatsReport.slowPath`). Rates are differences between samples.
public struct DashboardSample: Codable, Equatable, Sendable {
    public var uptime: Double
    public var xdp: [String: UInt64]?
    public var slow: [String: UInt64]?

    public init(uptime: Double, xdp: [String: UInt64]?, slow: [String: UInt64]? = nil) {
        self.uptime = uptime
        self.xdp = xdp
        self.slow = slow
    }
}
