import Logging
import NearcastAnswers
import NearcastBasics
import NearcastConfiguration
import NearcastControl
import NearcastDataPath
import NearcastFleet
import NearcastGeo
import NearcastServer
import NearcastZones

extension Daemon {
    /// The slow path's first responder: the zones read (their signed copies where signed here),
    /// the geo table, the cookies' secrets, the answers' counters.
    func firstResponder(_ data: Inputs, geo: GeoTable?, cookies: ServerCookies?, _ metrics: NearcastMetrics)
        -> Responder
    {
        var first = Responder(
            serving: data.config, zones: data.served, geo: geo, cookies: cookies,
            counts: metrics.answers.view(data.zones, geo), histories: data.histories, unavailable: data.unavailable)
        first.onlineSignatures = data.signing.onlineSignatures
        return first
    }

    /// DNS cookies: this server's own secret made anew as it ages, the fast path's clock kept right.
    func rotateCookies(
        _ cookies: ServerCookies?, _ cfg: NearcastConfig, fastPath: XDPDeployment?, _ started: StartedServices
    ) async -> CookieRotation? {
        guard let cookies else { return nil }
        let rotation = CookieRotation(
            cookies: cookies, settings: cfg.cookies, fastPath: fastPath?.fastPath, logger: logger)
        await started.add("DNS cookie secrets", rotation)
        return rotation
    }

    /// The zones served (`ServedConfig`) and the owners of their changes, each given what it needs
    /// when made (docs/ARCHITECTURE.md §15 draws the path a change takes through them).
    struct ZoneParts {
        var served: ServedConfig
        /// Record changes through the API, and a fleet's store's.
        var edits: ZoneEdits
        /// Reloads of the config and zone files, or of a fleet's store.
        var reloads: ZoneReloads
        /// The refresh of the secondary zones: transfers in, NOTIFY in, expire.
        var secondaries: SecondaryZones
        /// Signatures made anew, and key rollovers driven.
        var signatures: SignatureRefresh
        /// The API's zone routes.
        var desk: ZonesDesk
        /// What a fleet's store brings, served.
        var fromStore: FleetServing
    }

    /// Serves the zones read (emptied from `data`: what is served owns them), then starts the
    /// owners of their changes: the signatures' refresh, the secondaries' refresh (NOTIFY from
    /// `notifies`), record changes, reloads.
    func serveZones(
        _ data: inout Inputs, live: LiveGeo, responders: ResponderSource, fastPath: XDPDeployment?,
        metrics: NearcastMetrics, audit: AuditLog?, health: Health, cookies: CookieRotation?, notifies: NotifyInbox,
        _ started: StartedServices
    ) async -> ZoneParts {
        let served = ServedConfig(
            serving: .init(config: data.config, zones: data.zones, unavailable: data.unavailable),
            histories: data.histories, signing: data.signing, live: live, responders: responders,
            writer: fastPath.map { GenerationWriter($0.fastPath) }, metrics: metrics, cookies: cookies,
            notifier: await startNotifier(started), writeBack: ZoneWriteBack(logger: logger), logger: logger)
        data.zones = []
        data.served = []
        data.signing = ZoneSigning()
        // Signed geo answers: XDP appends the signatures of their variants signed so far; a health
        // change may make new ones, signed by the refresh's next second.
        let signatures = SignatureRefresh(
            served: served, sharedKeys: data.fleetKeys, zonesShared: data.follower != nil,
            healthWrites: health.writes, logger: logger)
        await started.add("signature refresh", signatures)
        await served.writeGeoVariants(live.current?.table)
        // A fleet's server refreshes the secondary zones only while it holds the fleet's transfer
        // duty (`follow`).
        let transfers = SecondaryServing(served: served, shared: data.follower, logger: logger)
        let secondaries = await SecondaryZones(
            zones: transfers, notifies: notifies, fleet: data.follower != nil, logger: logger)
        await started.add("secondary zones' refresh", secondaries)
        let edits = ZoneEdits(served: served, audit: audit, shared: data.follower, logger: logger)
        let (load, storeSource) = (self.load, data.follower?.source)
        let reloads = ZoneReloads(
            served: served,
            load: { () throws(DiagnosticsError) -> NearcastConfig in
                let local = try load()
                return try storeSource?.config(over: local) ?? local
            }, live: live, secondaries: secondaries, monitor: health.monitor, changes: health.changes,
            metrics: metrics, audit: audit, logger: logger)
        return ZoneParts(
            served: served, edits: edits, reloads: reloads, secondaries: secondaries, signatures: signatures,
            desk: ZonesDesk(served: served, edits: edits, secondaries: secondaries),
            fromStore: FleetServing(served: served, reloads: reloads, edits: edits, logger: logger))
    }
}
