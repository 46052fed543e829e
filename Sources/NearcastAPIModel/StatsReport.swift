import NearcastBasics
import NearcastZones

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
    /// How health changes reached the answers; nil without geo nodes.
    public var health: HealthWrites?
    /// The slow path's replies since the daemon started: by rcode (NOERROR and NXDOMAIN always,
    /// the others once sent), then `rrl_slipped` and `rrl_dropped` (over the rate limit).
    public var slowPath: [Counter]?

    public init(uptime: Double, xdp: [Counter]?, health: HealthWrites? = nil, slowPath: [Counter]? = nil) {
        self.uptime = uptime
        self.xdp = xdp
        self.health = health
        self.slowPath = slowPath
    }
}

/// Health changes and the map writes they made since the daemon started, with the time from each
/// node's state decision to its map write (ARCHITECTURE §6), over the most recent changes.
public struct HealthWrites: Codable, Equatable, Sendable {
    /// Changes of a node's state, and of a pool's TTL cap.
    public var nodeChanges: Int
    public var poolChanges: Int
    /// Writes into the XDP maps they made (one per change: a node's or a pool's entry).
    public var mapWrites: Int
    /// Decision to map write, in microseconds: median, 99th percentile and most, over `samples`.
    public var p50Micros: Double
    public var p99Micros: Double
    public var maxMicros: Double
    public var samples: Int

    public init(
        nodeChanges: Int, poolChanges: Int, mapWrites: Int, p50Micros: Double, p99Micros: Double, maxMicros: Double,
        samples: Int
    ) {
        self.nodeChanges = nodeChanges
        self.poolChanges = poolChanges
        self.mapWrites = mapWrites
        self.p50Micros = p50Micros
        self.p99Micros = p99Micros
        self.maxMicros = maxMicros
        self.samples = samples
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
    /// State changes since the daemon started, and the last one's reason and age in seconds.
    public var changes: Int
    public var lastReason: String?
    public var secondsSinceChange: Double?
    /// In a fleet: each live observer's view of the node (up, degraded or down by its own checks),
    /// this server's first; nil outside a fleet.
    public var observers: [ObserverView]?

    public init(
        id: String, state: String, override: String? = nil, overrideSecondsLeft: Double? = nil, changes: Int = 0,
        lastReason: String? = nil, secondsSinceChange: Double? = nil, observers: [ObserverView]? = nil
    ) {
        self.observers = observers
        self.id = id
        self.state = state
        self.override = override
        self.overrideSecondsLeft = overrideSecondsLeft
        self.changes = changes
        self.lastReason = lastReason
        self.secondsSinceChange = secondsSinceChange
    }
}

/// One fleet server's view of a node, by its own checks.
public struct ObserverView: Codable, Equatable, Sendable {
    public var server: String
    public var view: String

    public init(server: String, view: String) {
        self.server = server
        self.view = view
    }
}

/// What became of a node agent's health report.
public enum NodeReportOutcome: Sendable, Equatable {
    case recorded(NodeStatus)
    case unknownNode
    /// The node has no report check: reports are not expected from it.
    case notExpected
}

/// A node agent's health report, as posted to `POST /v1/nodes/ID/report` (an empty body is a
/// heartbeat: `ok` true).
public struct NodeReport: Codable, Equatable, Sendable {
    /// Whether the node is fit to serve.
    public var ok: Bool
    /// Words for the log (at most 200 characters are kept).
    public var detail: String?

    public init(ok: Bool = true, detail: String? = nil) {
        self.ok = ok
        self.detail = detail
    }
}

/// A pool's TTL state, as the management API reports it.
public struct PoolStatus: Codable, Equatable, Sendable {
    public var id: String
    public var members: [String]
    /// Whether every member is up (or drained) and none changed within the pool's settle time.
    public var settled: Bool
    /// The cap on its names' TTLs now; nil: none (their own TTLs).
    public var ttlCap: UInt32?

    public init(id: String, members: [String], settled: Bool, ttlCap: UInt32?) {
        self.id = id
        self.members = members
        self.settled = settled
        self.ttlCap = ttlCap
    }
}

/// What a reload did (`POST /v1/reload`, SIGHUP): the zones now served and the answers written.
public struct ReloadReport: Codable, Equatable, Sendable {
    public var zones: Int
    public var records: Int
    /// Answers in the XDP names table after the switch, and how many were written (changed).
    public var fastPathAnswers: Int?
    public var fastPathWritten: Int?
    /// Whether the geo section changed and was compiled anew (nodes, pools, names, database), or
    /// removed with the last geo name, and switched in (not for a change of nodes' checks alone).
    public var geoCompiled: Bool
    /// RRsets the reload found added, changed or removed in the zones served (each zone compared
    /// with the file read again); nil when it changed which zones are served.
    public var rrsetsChanged: Int?
    public var seconds: Double

    public init(
        zones: Int, records: Int, fastPathAnswers: Int?, fastPathWritten: Int?, geoCompiled: Bool = false,
        rrsetsChanged: Int? = nil, seconds: Double
    ) {
        self.zones = zones
        self.records = records
        self.fastPathAnswers = fastPathAnswers
        self.fastPathWritten = fastPathWritten
        self.geoCompiled = geoCompiled
        self.rrsetsChanged = rrsetsChanged
        self.seconds = seconds
    }
}

/// Why a reload was refused; the running state is untouched.
public enum ReloadError: Error, CustomStringConvertible, Sendable {
    /// The config or a zone has errors (each with file and line).
    case invalid(DiagnosticsError)
    /// Settings that only a restart applies changed.
    case needsRestart([String])
    /// Writing the fast path's maps failed (the live generation stays).
    case fastPath(String)

    public var description: String {
        switch self {
        case .invalid(let d): return "the new config is not valid, nothing was changed:\n" + d.description
        case .needsRestart(let what):
            return "\(what.joined(separator: ", ")) changed: those apply at a restart; nothing was changed"
        case .fastPath(let e): return "the fast path's maps could not be written (\(e)); the old data is still served"
        }
    }
}

/// A fleet's store as one server follows it.
public struct StoreStatus: Codable, Equatable, Sendable {
    public var endpoints: [String]
    public var prefix: String
    /// The store's revision what is served was read at.
    public var revision: Int64?
    /// Why the store cannot be followed now; nil: it is followed.
    public var degraded: String?

    public init(endpoints: [String], prefix: String, revision: Int64?, degraded: String?) {
        self.endpoints = endpoints
        self.prefix = prefix
        self.revision = revision
        self.degraded = degraded
    }
}

/// The daemon at a glance (`GET /v1/status`, `nearcast status`).
public struct StatusReport: Codable, Equatable, Sendable {
    public var version: String
    public var uptime: Double
    public var zones: [ZoneSummary]
    /// The interfaces XDP is attached to (empty: the fast path is off) and the answers its names table holds.
    public var xdpInterfaces: [String]
    public var fastPathAnswers: Int?
    /// Geo names, and the nodes by health state (state -> count).
    public var geoNames: Int
    public var nodes: [String: Int]
    /// Pools whose TTL is lowered now.
    public var unsettledPools: [String]
    /// Where overrides and the audit log are kept (nil: changes last until a restart).
    public var stateDirectory: String?
    /// The fleet's store, when this server follows one.
    public var store: StoreStatus?

    public init(
        version: String, uptime: Double, zones: [ZoneSummary], xdpInterfaces: [String], fastPathAnswers: Int?,
        geoNames: Int,
        nodes: [String: Int], unsettledPools: [String], stateDirectory: String?, store: StoreStatus? = nil
    ) {
        self.store = store
        self.version = version
        self.uptime = uptime
        self.zones = zones
        self.xdpInterfaces = xdpInterfaces
        self.fastPathAnswers = fastPathAnswers
        self.geoNames = geoNames
        self.nodes = nodes
        self.unsettledPools = unsettledPools
        self.stateDirectory = stateDirectory
    }
}

/// Why a node's registration (or its end) was not made; nothing changed.
public enum RegistrationError: Error, CustomStringConvertible, Sendable {
    /// The registration is not valid (each problem on its line).
    case invalid(String)
    case notFound(String)
    /// It cannot be made as asked: a declared node, or a change that came first.
    case conflict(String)
    /// Where registrations are kept cannot be reached now (a fleet's store): try again later.
    case unavailable(String)

    public var description: String {
        switch self {
        case .invalid(let why), .notFound(let why), .conflict(let why), .unavailable(let why): why
        }
    }
}
