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

/// The daemon's running parts as the management API's desks (APIDesks): the daemon's own figures
/// here, the rest each part's own. Parts that are off (no XDP, no geo names, no state directory,
/// no store) have no desk, and their routes answer 404, or their fields are empty.
struct DaemonParts: DaemonDesk {
    var startedAt: ContinuousClock.Instant
    var deployment: XDPDeployment?
    /// The geo data live now (a reload may replace it): read at each request.
    var live: LiveGeo
    var stateDirectory: String?
    var monitor: HealthMonitor
    var changes: OperatorChanges
    var healthWrites: HealthWriteLog
    /// The zones served and their records, and record changes.
    var zones: ZonesDesk
    /// Reloads, the tokens file's read again with them.
    var reloads: Reloads
    var metrics: NearcastMetrics
    /// The fleet's store, when this server follows one.
    var store: StoreFollower?
    /// This server's audit log; nil without a state directory.
    var audit: AuditLog?
    var logger: Logger

    /// Each route's desk.
    func desks() -> APIDesks {
        // In a fleet, the store's audit lines of every server; else this server's log.
        var auditSource = audit.map(AuditSource.log)
        if let audit, let store {
            auditSource = AuditSource.fleet(
                { count in try await store.lastAudit(count) }, revision: { await store.auditRevision }, log: audit)
        }
        return APIDesks(
            daemon: self, health: NodeHealthDesk(monitor: monitor, changes: changes, writes: healthWrites),
            geo: live, zones: zones,
            registrations: store.map { NodeRegistry(store: $0, monitor: monitor, logger: logger) }, audit: auditSource)
    }

    func stats() throws -> StatsReport {
        StatsReport(
            uptime: (ContinuousClock.now - startedAt).seconds, xdp: try deployment?.fastPath.statistics().counters,
            health: healthWrites.report, slowPath: metrics.slowPathTotals())
    }

    func metrics() async throws -> [UInt8] {
        let snapshot = MetricsSnapshot(
            uptime: (ContinuousClock.now - startedAt).seconds,
            geoCompileSeconds: live.current?.compileSeconds,
            xdp: try deployment?.fastPath.statistics().counters,
            nodes: await monitor.statuses(), pools: await monitor.poolStatuses(), health: healthWrites.report,
            maps: deployment?.fastPath.mapSizes(geo: live.current?.table) ?? [], store: await store?.status,
            zones: await zones.zoneList().filter { $0.secondary?.state ?? "served" == "served" }.map {
                $0.origin.lowercased()
            },
            // (Counters that cannot be read leave the rest of the scrape as it is.)
            xdpAnswers: deployment.flatMap { d in
                (try? d.fastPath.tallies()).map(MetricsSnapshot.AnswerBreakdown.init)
            })
        return metrics.render(snapshot)
    }

    func status() async throws -> StatusReport {
        let nodes = await monitor.statuses()
        return StatusReport(
            version: Daemon.version, uptime: (ContinuousClock.now - startedAt).seconds,
            zones: await zones.zoneListWithChecksums(), xdpInterfaces: deployment?.interfaceNames ?? [],
            fastPathAnswers: deployment?.fastPath.mapSizes(geo: nil).first?.entries,
            geoNames: live.current?.table.allNames.count ?? 0,
            nodes: Dictionary(nodes.map { ($0.state, 1) }, uniquingKeysWith: +),
            unsettledPools: (await monitor.poolStatuses()).filter { !$0.settled }.map(\.id),
            stateDirectory: stateDirectory, store: await store?.status)
    }

    func reload(by: String) async throws(ReloadError) -> ReloadReport { try await reloads.reload(by: by) }
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
