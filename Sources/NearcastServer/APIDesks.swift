import NearcastAPIModel
import NearcastGeo
import NearcastZones

/// What the management API's routes ask of the daemon, one desk per concern. A desk is a part of
/// the daemon that answers for itself (the zones served answer the zone routes, the fleet's
/// registry the registration routes); a part that is off has no desk, and its routes answer 404.
public struct APIDesks: Sendable {
    /// The daemon as a whole: counters, status, metrics, reloads.
    public var daemon: any DaemonDesk
    /// Geo nodes' and pools' health, overrides and agents' reports; nil without geo names.
    public var health: (any HealthDesk)?
    /// Geo answers explained and the nodes' places; nil without geo names.
    public var geo: (any GeoDesk)?
    /// The zones served and their records.
    public var zones: (any ZoneDesk)?
    /// Nodes registering with a fleet; nil outside a fleet.
    public var registrations: (any RegistrationDesk)?
    /// The audit entries (`GET /v1/audit`, the dashboard's last changes): this server's log, or
    /// the fleet's; nil without a state directory.
    public var audit: AuditSource?

    public init(
        daemon: any DaemonDesk, health: (any HealthDesk)? = nil, geo: (any GeoDesk)? = nil,
        zones: (any ZoneDesk)? = nil, registrations: (any RegistrationDesk)? = nil, audit: AuditSource? = nil
    ) {
        self.daemon = daemon
        self.health = health
        self.geo = geo
        self.zones = zones
        self.registrations = registrations
        self.audit = audit
    }
}

/// The daemon as a whole (`/v1/stats`, `/v1/status`, `/metrics`, `/v1/reload`).
public protocol DaemonDesk: Sendable {
    /// The counters (`nearcast stats`).
    func stats() throws -> StatsReport
    /// The daemon at a glance.
    func status() async throws -> StatusReport
    /// The Prometheus text exposition of the daemon's metrics.
    func metrics() async throws -> [UInt8]
    /// Reloads the config and zone files; `by` says who asked, for the log.
    func reload(by: String) async throws(ReloadError) -> ReloadReport
}

/// Geo nodes and pools (`/v1/nodes`, `/v1/pools`, overrides, agents' reports, the dashboard's
/// live changes).
public protocol HealthDesk: Sendable {
    func nodes() async -> [NodeStatus]
    func pools() async -> [PoolStatus]
    /// Records a node agent's report.
    func report(_ node: String, _ report: NodeReport) async -> NodeReportOutcome
    /// Sets a node's override (drain, force-up, force-down; nil takes it back) for some seconds
    /// (nil: until taken back), by a caller (for the audit log); the node's status, nil for an
    /// unknown node; throws when the change cannot be made durable.
    func setOverride(_ node: String, kind: String?, seconds: Double?, by: String) async throws -> NodeStatus?
    /// Registers a call made after every change of a node's state or a pool's TTL (it must not
    /// block): the dashboard's pages then hear of it at once.
    func onChange(_ listener: @escaping @Sendable () -> Void)
}

/// Geo answers (`/v1/explain`, `/v1/map`).
public protocol GeoDesk: Sendable {
    /// Explains the answer to (name, type) for a client and an optional ECS prefix.
    func explain(name: String, type: String, client: String, ecs: String?) throws -> GeoExplanation
    /// The geo nodes' places, addresses and pools, for the dashboard's map.
    func layout() -> [MapNode]
}

/// The zones served (`/v1/zones`, their records).
public protocol ZoneDesk: Sendable {
    func zoneList() async -> [ZoneSummary]
    /// A zone's records (owner name, type; nil: all).
    func records(_ origin: String, name: String?, type: String?) async throws(ZoneEditError) -> [RecordInput]
    /// Changes a zone's records, by a caller, made for an RRset's version (HTTP If-Match; nil: any).
    func edit(_ origin: String, _ edit: ZoneEditor.Edit, by: String, ifMatch: String?) async throws(ZoneEditError)
        -> RecordChange
    /// The version of a zone's RRset, which a change made for it names (HTTP ETag and If-Match).
    func version(_ origin: String, name: String, type: String) async throws(ZoneEditError) -> String
}

/// Nodes registering themselves with a fleet (`POST /v1/nodes`, `DELETE /v1/nodes/ID`).
public protocol RegistrationDesk: Sendable {
    /// Registers a node (its registration as JSON, who); its status once served.
    func register(_ json: String, by: String) async throws(RegistrationError) -> NodeStatus?
    /// Ends a node's registration.
    func deregister(_ id: String, by: String) async throws(RegistrationError)
}
