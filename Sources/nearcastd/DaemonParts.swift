import DNSWire
import Logging
import MaxMindDB
import NearcastAPIModel
import NearcastBasics
import NearcastControl
import NearcastDataPath
import NearcastFleet
import NearcastGeo
import NearcastHealth
import NearcastServer
import NearcastZones

/// The daemon's running parts, and the management API wired to them: what each route reads or
/// changes (ManagementAPI.Sources). Parts that are off (no XDP, no geo names, no state
/// directory) leave their routes answering 404, or their fields empty.
struct DaemonParts: Sendable {
    var startedAt: ContinuousClock.Instant
    var deployment: XDPDeployment?
    /// The geo data live now (a reload may replace it): read at each request.
    var live: LiveGeo
    var stateDirectory: String?
    var monitor: HealthMonitor?
    var changes: OperatorChanges?
    var healthWrites: HealthWriteLog
    var served: ServedConfig
    /// Reloads, the tokens file's read again with them.
    var reloads: Reloads
    var metrics: NearcastMetrics
    /// The fleet's store, when this server follows one.
    var store: StoreFollower?
    /// This server's audit log; nil without a state directory.
    var audit: AuditLog?
    var logger: Logger

    func apiSources() -> ManagementAPI.Sources {
        let startedAt = startedAt
        let deployment = deployment
        let stateDirectory = stateDirectory
        let changes = changes
        let healthWrites = healthWrites
        let served = served
        let reloads = reloads
        let metrics = metrics
        let store = store
        let live = live
        let explain: @Sendable (String, String, String, String?) throws -> GeoExplanation = { name, type, client, ecs in
            guard let c = live.current else {
                throw GeoExplainError(description: "no geo names are configured", notConfigured: true)
            }
            return try c.table.explain(name: name, type: type, client: client, ecs: ecs, database: c.database)
        }
        let health = monitor
        // In a fleet, the store's audit lines of every server; else this server's log.
        var auditSource = audit.map(AuditSource.log)
        if let audit, let store {
            auditSource = AuditSource.fleet(
                { count in try await store.lastAudit(count) }, revision: { await store.auditRevision }, log: audit)
        }
        let registry = store.flatMap { s in monitor.map { NodeRegistry(store: s, monitor: $0, logger: logger) } }
        var registerSource: (@Sendable (String, String) async throws(RegistrationError) -> NodeStatus?)?
        var deregisterSource: (@Sendable (String, String) async throws(RegistrationError) -> Void)?
        if let registry {
            registerSource = { json, who throws(RegistrationError) in try await registry.register(json, by: who) }
            deregisterSource = { id, who throws(RegistrationError) in try await registry.deregister(id, by: who) }
        }
        var nodesSource: (@Sendable () async -> [NodeStatus])?
        var poolsSource: (@Sendable () async -> [PoolStatus])?
        var reportSink: (@Sendable (String, NodeReport) async -> NodeReportOutcome)?
        var overrideSource: (@Sendable (String, String?, Double?, String) async throws -> NodeStatus?)?
        if let health {
            nodesSource = { await health.statuses() }
            poolsSource = { await health.poolStatuses() }
            reportSink = { id, r in await health.report(id, passed: r.ok, detail: r.detail) }
            if let desk = changes {
                overrideSource = { id, kind, seconds, who in
                    try await desk.setOverride(id, kind: kind, seconds: seconds, who: who)
                }
            }
        }
        var healthChangeSource: (@Sendable (@escaping @Sendable () -> Void) -> Void)?
        if health != nil { healthChangeSource = { listener in healthWrites.onChange(listener) } }
        return ManagementAPI.Sources(
            stats: {
                let uptime = ContinuousClock.now - startedAt
                return StatsReport(
                    uptime: uptime.seconds,
                    xdp: try deployment?.fastPath.statistics().counters,
                    health: health.map { _ in healthWrites.report },
                    slowPath: metrics.slowPathTotals())
            }, explain: explain, nodes: nodesSource, pools: poolsSource, report: reportSink,
            setOverride: overrideSource, reload: { by throws(ReloadError) in try await reloads.reload(by: by) },
            metrics: {
                let uptime = ContinuousClock.now - startedAt
                let snapshot = MetricsSnapshot(
                    uptime: uptime.seconds,
                    geoCompileSeconds: live.current?.compileSeconds,
                    xdp: try deployment?.fastPath.statistics().counters,
                    nodes: await health?.statuses() ?? [], pools: await health?.poolStatuses() ?? [],
                    health: health.map { _ in healthWrites.report },
                    maps: deployment?.fastPath.mapSizes(geo: live.current?.table) ?? [], store: await store?.status,
                    zones: await served.zoneList().map { $0.origin.lowercased() },
                    // (Counters that cannot be read leave the rest of the scrape as it is.)
                    xdpAnswers: deployment.flatMap { d in
                        (try? d.fastPath.tallies()).map(MetricsSnapshot.AnswerBreakdown.init)
                    })
                return metrics.render(snapshot)
            },
            zones: { await served.zoneList() },
            records: { origin, name, type throws(ZoneEditError) in
                try await served.records(origin, name: name, type: type)
            },
            editRecords: { origin, edit, who, ifMatch throws(ZoneEditError) in
                try await served.edit(origin, edit, by: who, ifMatch: ifMatch)
            },
            rrsetVersion: { origin, name, type throws(ZoneEditError) in
                try await served.version(origin, name: name, type: type)
            },
            status: {
                let uptime = ContinuousClock.now - startedAt
                let nodes = await health?.statuses() ?? []
                return StatusReport(
                    version: Nearcastd.version, uptime: uptime.seconds,
                    zones: await served.zoneListWithChecksums(), xdpInterfaces: deployment?.interfaceNames ?? [],
                    fastPathAnswers: deployment?.fastPath.mapSizes(geo: nil).first?.entries,
                    geoNames: live.current?.table.allNames.count ?? 0,
                    nodes: Dictionary(nodes.map { ($0.state, 1) }, uniquingKeysWith: +),
                    unsettledPools: (await health?.poolStatuses() ?? []).filter { !$0.settled }.map(\.id),
                    stateDirectory: stateDirectory, store: await store?.status)
            },
            register: registerSource, deregister: deregisterSource,
            layout: {
                (live.current?.table.nodePlaces ?? []).map {
                    MapNode(
                        id: $0.id, latitude: $0.latitude, longitude: $0.longitude, country: $0.country, ipv4: $0.ipv4,
                        ipv6: $0.ipv6, pools: $0.pools)
                }
            }, audit: auditSource, onHealthChange: healthChangeSource)
    }
}

extension MetricsSnapshot.AnswerBreakdown {
    /// The fast path's tallies, its zones by their origins' text.
    init(_ t: XDPTallies) {
        self.init(
            byType: t.byType,
            byZone: Dictionary(
                t.byZone.compactMap { z, n in DNSName.uncompressed(z).map { ($0.0.description, n) } },
                uniquingKeysWith: +),
            byNode: t.byNode)
    }
}
