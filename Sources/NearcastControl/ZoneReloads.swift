import DNSWire
import Foundation
import Logging
import NearcastAPIModel
import NearcastAnswers
import NearcastBasics
import NearcastConfiguration
import NearcastDNSSEC
import NearcastGeo
import NearcastHealth
import NearcastServer
import NearcastTransfer
import NearcastZones

/// Reloads of the config and zone files (SIGHUP, `POST /v1/reload`, a fleet's store), each
/// audited, served through `ServedConfig.switchTo` on a turn of their own.
///
/// A reload goes the way docs/ARCHITECTURE.md §2 asks: the new files are read and checked first,
/// and a rejected reload leaves everything as it was; the zones read are compared with those
/// served, and what changed is a change of each zone (a reload of one file of a thousand costs
/// that file). Then the fast path's names table (and geo maps) are written, and the slow path's
/// responder is replaced whole. Each answer is the old data or the new, never a mix.
///
/// A changed geo section (nodes, pools, geo names, the database or its file) is compiled anew,
/// off the turn's thread, before anything changes; nodes and pools that stay keep their health,
/// new ones start as at cold start, and the health monitor follows (geo names may be added where
/// there were none, or all removed). What only a restart applies (listen addresses, XDP, the API,
/// UDP size, the state directory) must be unchanged, or the reload is refused.
package struct ZoneReloads: Sendable {
    let served: ServedConfig
    /// Reads the config (with a fleet's store's over it).
    let load: @Sendable () throws(DiagnosticsError) -> NearcastConfig
    let live: LiveGeo
    /// The refresh of the secondary zones, told of those configured after each reload.
    let secondaries: SecondaryZones?
    let monitor: HealthMonitor?
    let changes: OperatorChanges?
    let metrics: NearcastMetrics?
    let audit: AuditLog?
    let logger: Logger

    package init(
        served: ServedConfig, load: @escaping @Sendable () throws(DiagnosticsError) -> NearcastConfig, live: LiveGeo,
        secondaries: SecondaryZones? = nil, monitor: HealthMonitor? = nil, changes: OperatorChanges? = nil,
        metrics: NearcastMetrics? = nil,
        audit: AuditLog? = nil, logger: Logger
    ) {
        self.served = served
        self.load = load
        self.live = live
        self.secondaries = secondaries
        self.monitor = monitor
        self.changes = changes
        self.metrics = metrics
        self.audit = audit
        self.logger = logger
    }

    /// Reloads; `by` says who asked, for the log and the audit log. A reload that cannot be
    /// audited is refused. `zonesUnchanged`: the caller knows no zone file changed (a fleet's
    /// store changed nodes or the geo section): if the config names the same zone files, they are
    /// not read again (seconds at a million names), the zones served stay.
    package func reload(by: String, zonesUnchanged: Bool = false) async throws(ReloadError) -> ReloadReport {
        let (audit, metrics, logger) = (self.audit, self.metrics, self.logger)
        let reloads = self
        return try await served.withTurn { (s) throws(ReloadError) -> ReloadReport in
            let started = ContinuousClock.now
            do throws(ReloadError) {
                let before = s.servedDigest
                var after = before
                let report = try await reloads.apply(
                    s, zonesUnchanged: zonesUnchanged,
                    beforeSwitch: { (next, digest) throws(ReloadError) in
                        after = digest
                        do {
                            try audit?.record(
                                AuditLog.entry(
                                    who: by, action: "reload", target: "config and zones",
                                    detail: "\(next.zones.count) zone file\(next.zones.count == 1 ? "" : "s")",
                                    before: before, after: after))
                        } catch {
                            throw .fastPath("the audit log cannot be written (\(error))")
                        }
                    })
                s.servedDigest = after
                metrics?.countReload(seconds: report.seconds)
                logger.notice(
                    "reloaded",
                    metadata: [
                        "by": "\(by)", "zones": "\(report.zones)", "records": "\(report.records)",
                        "fast-path-written": "\(report.fastPathWritten.map(String.init) ?? "-")",
                        "geo-compiled": "\(report.geoCompiled)",
                        "rrsets-changed": "\(report.rrsetsChanged.map(String.init) ?? "all")",
                        "seconds": "\(ContinuousClock.now - started)",
                    ])
                return report
            } catch {
                metrics?.countReload(seconds: nil)
                let unchanged = s.servedDigest
                try? audit?.record(
                    AuditLog.entry(
                        who: by, action: "reload", target: "config and zones", detail: "\(error)", before: unchanged,
                        after: unchanged, outcome: "refused"))
                logger.error("reload refused", metadata: ["by": "\(by)", "why": "\(error)"])
                throw error
            }
        }
    }

    /// What a reload reads, off the turn's thread.
    typealias Loaded = (
        config: NearcastConfig, zones: ReloadedZones, read: Duration, compared: Duration, digest: String,
        unavailable: [ZoneSource], notes: [String], keys: [DNSName: [DNSSECKey]]
    )

    /// Reads the config and its zones and has `s` switch to them; `beforeSwitch` is given the new
    /// config and the digest of its files (`ServedConfig.digest`), once all is checked.
    func apply(
        _ s: isolated ServedConfig, zonesUnchanged: Bool,
        beforeSwitch: (NearcastConfig, _ digest: String) throws(ReloadError) -> Void
    ) async throws(ReloadError) -> ReloadReport {
        let started = ContinuousClock.now
        let loaded = try await read(s, zonesUnchanged: zonesUnchanged, started: started)
        let (next, reloaded) = (loaded.config, loaded.zones)
        for note in loaded.notes { logger.notice("catalog", metadata: ["note": "\(note)"]) }
        logger.info(
            reloaded.changes?.isEmpty == true && reloaded.unused.isEmpty && loaded.compared == .zero
                ? "zones not read: the same files, unchanged" : "zones read",
            metadata: [
                "zones": "\(reloaded.zones.count)", "read-seconds": "\(loaded.read.seconds)",
                "compared-seconds": "\(loaded.compared.seconds)",
                "rrsets-changed": "\(reloaded.rrsetsChanged.map(String.init) ?? "all")",
            ])
        defer { if !reloaded.unused.isEmpty { Retired.release(reloaded.unused, thenGiveBackMemory: true) } }
        let fixed = Self.restartOnlyChanges(from: s.running, to: next)
        if !fixed.isEmpty { throw .needsRestart(fixed) }
        let geo = try await geoChange(next)
        try beforeSwitch(next, loaded.digest)
        let wasUnavailable = s.unavailable
        let wasMembers = (s.running.zones + s.unavailable).filter { $0.memberOf != nil }
        s.unavailable = loaded.unavailable
        // A new geo compile changes the records of the names it changes (a node's target, a geo
        // name's ranking) beside the geo maps it brings: those names are a change of their zones.
        var changes = reloaded.changes
        if case .to(let compiled) = geo, let c = changes {
            let names = GeoTable.namesChanged(from: live.current?.table, to: compiled?.table)
            changes = AnswerImage.Change.adding(names, to: c, zones: reloaded.zones)
        }
        // Zones unchanged (a registration, a geo section changed): what is let go shares them, and
        // is small; glibc's trim of a heap that holds a million names is not worth a registration.
        var report: ReloadReport
        do {
            report = try await s.switchTo(
                next, reloaded.zones, geo: geo, started: started, oneChange: reloaded.changes?.isEmpty == true,
                zoneChanges: changes, histories: Self.histories(s.histories, after: reloaded), keys: loaded.keys)
        } catch {
            s.unavailable = wasUnavailable
            throw error
        }
        await secondaries?.follow(s.secondarySources)
        await SecondaryServing.removeFormerMembers(wasMembers, keeping: s.running.zones + s.unavailable, logger)
        report.rrsetsChanged = reloaded.rrsetsChanged
        if reloaded.changes?.isEmpty != true { s.zonesReloaded += 1 }
        s.files.restamp(s.running.zones.map(\.path))
        s.reloadCount += 1
        switch geo {
        case .none: break
        case .to(let compiled): await followGeo(compiled?.config, compiled: compiled)
        case .checks(let config): await followGeo(config, compiled: nil)
        }
        return report
    }

    /// The config and zones read, compared with those served (on a thread of its own, not the
    /// cooperative pool: the turn is held, and those stay served), with the digest of the files.
    func read(_ s: isolated ServedConfig, zonesUnchanged: Bool, started: ContinuousClock.Instant)
        async throws(ReloadError) -> Loaded
    {
        let (load, served) = (load, s.zones)
        let servedFiles = zonesUnchanged ? s.running.zones.map { [$0.origin.description, $0.path] } : nil
        let loaded: Result<Loaded, DiagnosticsError>
        do {
            loaded = try await onOwnThread {
                Result { () throws(DiagnosticsError) -> Loaded in
                    let clock = ContinuousClock()
                    // Catalogs' members added, and catalogs made here written; secondary zones
                    // not transferred yet, or expired, are not read (SERVFAIL).
                    let catalogued: (config: NearcastConfig, notes: [String]) = try load().withCatalogs()
                    let (next, unavailable): (NearcastConfig, [ZoneSource]) = catalogued.config.servable()
                    let keys = try ZoneSigning.keys(next)
                    if let servedFiles, next.zones.map({ [$0.origin.description, $0.path] }) == servedFiles {
                        let kept = ReloadedZones(zones: served, changes: [], rrsetsChanged: 0)
                        return (
                            next, kept, clock.now - started, .zero, ServedConfig.digest(next), unavailable,
                            catalogued.notes, keys
                        )
                    }
                    let zones = try next.loadZones()
                    let read = clock.now
                    let compared = ReloadedZones.compare(served: served, loaded: zones)
                    return (
                        next, compared, read - started, clock.now - read, ServedConfig.digest(next), unavailable,
                        catalogued.notes, keys
                    )
                }
            }
        } catch {
            throw .invalid(
                DiagnosticsError([Diagnostic(file: s.running.sourcePath ?? "config", line: 0, message: "\(error)")]))
        }
        switch loaded {
        case .success(let r): return r
        case .failure(let error): throw .invalid(error)
        }
    }

    /// What the reload of `next` does to the geo data: nothing, a new compile (off the turn's
    /// thread), or the compile served kept for a geo section whose nodes' checks alone changed.
    func geoChange(_ next: NearcastConfig) async throws(ReloadError) -> ServedConfig.GeoChange {
        guard !live.isCurrent(next.geo) else { return .none }
        if next.geo.names.isEmpty { return .to(nil) }
        if live.compilesLike(next.geo) { return .checks(next.geo) }  // only nodes' checks changed: no compile
        do { return .to(try await live.compile(next.geo)) } catch let e as DiagnosticsError {
            throw .invalid(e)
        } catch {
            let file = next.geo.databasePath ?? "geo"
            throw .invalid(DiagnosticsError([Diagnostic(file: file, line: 0, message: "geo compile: \(error)")]))
        }
    }

    /// The zones' histories after a reload: each changed zone's change added (a zone changed in
    /// more RRsets than a history keeps begins anew, as do all when the set of zones changed).
    static func histories(_ histories: [DNSName: ZoneHistory], after reloaded: ReloadedZones)
        -> [DNSName: ZoneHistory]
    {
        guard let changes = reloaded.changes else { return [:] }
        var out = histories.filter { h in reloaded.zones.contains { $0.origin == h.key } }
        for c in changes where c.before.origin == c.after.origin {
            var h = out[c.after.origin] ?? ZoneHistory()
            if c.owners.count > h.recordLimit {
                h.clear()
            } else {
                let changeset = ZoneChangeset.between(c.before, c.after, owners: c.owners)
                // A change of geo names alone (a new compile) leaves the zone's data as it was.
                guard
                    changeset.removed.contains(where: { $0.type != .soa })
                        || changeset.added.contains(where: { $0.type != .soa })
                        || changeset.serialBefore != changeset.serialAfter
                else { continue }
                h.append(changeset)
            }
            out[c.after.origin] = h
        }
        return out
    }

    /// After a changed geo section (`config`; nil: no geo names) is served, from a new compile or
    /// the one before: the health monitor checks its nodes and pools, and operators' overrides of
    /// nodes that are gone are no longer kept.
    func followGeo(_ config: GeoConfig?, compiled: LiveGeo.Compiled?) async {
        if let compiled {
            compiled.log(to: logger)
        } else if config == nil {
            logger.notice("no geo names any more")
        }
        let config = config ?? GeoConfig()
        await monitor?.reconfigure(nodes: HealthWiring.plan(config), pools: config.pools, observers: config.observers)
        await changes?.keepOnly(nodes: Set(config.nodes.map(\.id)))
    }

    /// The settings, by config key, that differ and only a restart applies.
    static func restartOnlyChanges(from a: NearcastConfig, to b: NearcastConfig) -> [String] {
        var out: [String] = []
        if a.listen != b.listen { out.append("listen") }
        if a.xdp != b.xdp { out.append("xdp") }
        if a.api != b.api { out.append("api") }
        if a.maxUDPPayload != b.maxUDPPayload { out.append("max-udp-payload") }
        if a.tcpIdleTimeout != b.tcpIdleTimeout { out.append("tcp-idle-timeout") }
        if a.stateDirectory != b.stateDirectory { out.append("state-dir") }
        if a.rrl != b.rrl { out.append("rrl") }
        if a.store != b.store { out.append("store") }
        if a.dnstap != b.dnstap { out.append("dnstap") }
        return out
    }
}
