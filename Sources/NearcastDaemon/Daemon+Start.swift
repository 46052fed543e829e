import DNSWire
import Foundation
import Logging
import NIOCore
import NIOPosix
import NearcastAnswers
import NearcastBasics
import NearcastConfiguration
import NearcastControl
import NearcastDNSSEC
import NearcastDataPath
import NearcastFleet
import NearcastGeo
import NearcastHealth
import NearcastServer
import NearcastStore
import NearcastTransfer
import NearcastZones

/// The start's steps, in the order `startAndServe` takes them. Each part that started is added to
/// `started` (its stop, or the part itself when it is a service); a step that fails gives up, so
/// what started is stopped in reverse and the daemon exits 1 (ARCHITECTURE §7).
extension Daemon {
    /// What the start serves: the config (with a fleet's store laid over it), its zones and the
    /// API's tokens.
    struct Inputs {
        var config: NearcastConfig
        var zones: [Zone]
        var tokens: APITokens
        var follower: StoreFollower?
        /// The fleet's DNSSEC keys, when its store keeps them (`store: key-secret:`).
        var fleetKeys: FleetKeys?
        /// Each zone's history from its journal (IXFR across a restart).
        var histories: [DNSName: ZoneHistory] = [:]
        /// Secondary zones not served at the start: never transferred, or expired (SERVFAIL).
        var unavailable: [ZoneSource] = []
        /// The keys of the zones signed here (`signZones`), the signing, and what is served of
        /// `zones`: the signed copies of those.
        var keys: [DNSName: [DNSSECKey]] = [:]
        var signing = ZoneSigning()
        var served: [Zone] = []
    }

    /// The config, and what it names, read. A fleet's server serves the store's zones and geo
    /// section, read (or, with etcd out of reach, its last snapshot) before anything starts.
    func readData(_ started: StartedServices) async throws -> Inputs {
        var cfg: NearcastConfig
        do { cfg = try load() } catch { throw Self.refuse(error) }
        let follower = try await followStore(cfg)
        var data: Inputs
        do {
            if let follower { cfg = try follower.source.config(over: cfg) }
            let unavailable: [ZoneSource]
            let notes: [String]
            (cfg, notes) = try cfg.withCatalogs()
            for note in notes { logger.notice("catalog", metadata: ["note": "\(note)"]) }
            (cfg, unavailable) = cfg.servable()
            data = Inputs(config: cfg, zones: try cfg.loadZones(), tokens: try cfg.api.loadTokens(), follower: follower)
            data.unavailable = unavailable
        } catch {
            await follower?.stop()
            throw Self.refuse(error)
        }
        if let follower {
            do { data.fleetKeys = try await fleetKeys(cfg, follower) } catch {
                await follower.stop()
                throw Self.refuse(error)
            }
        }
        do { data.keys = try ZoneSigning.keys(cfg) } catch {
            await follower?.stop()
            throw Self.refuse(error)
        }
        for (source, z) in zip(cfg.zones, data.zones) {
            logger.info("zone loaded", metadata: ["zone": "\(z.origin)", "records": "\(z.recordCount)"])
            // The journal read again, for its changesets: a start replayed it onto the file.
            let journal = ZoneJournal.path(forZoneFile: source.path)
            if let changesets = try? ZoneJournal.read(journal, origin: z.origin), !changesets.isEmpty {
                data.histories[z.origin] = ZoneHistory.journaled(changesets, servedSerial: z.serial)
            }
        }
        try await started.checkpoint(logger: logger)
        return data
    }

    /// The follower of the config's store, its first read done; nil without a store section.
    func followStore(_ cfg: NearcastConfig) async throws -> StoreFollower? {
        guard let etcd = cfg.store.etcd else { return nil }
        guard let stateDirectory = cfg.stateDirectory else {
            throw Self.refuse(
                "\(cfg.sourcePath ?? "config"): a store needs a state-dir, where the last good copy of it is kept")
        }
        if !cfg.zones.isEmpty || !cfg.geo.names.isEmpty {
            logger.warning("the config's zones and geo section are not served: the store's are")
        }
        let follower: StoreFollower
        do {
            try FileManager.default.createDirectory(
                atPath: stateDirectory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            follower = StoreFollower(
                connection: try FleetStoreConnection(etcd), serverName: cfg.store.serverName,
                stateDirectory: stateDirectory, logger: logger)
        } catch {
            throw Self.refuse(error)
        }
        do { try await follower.prepare() } catch {
            await follower.stop()
            throw Self.refuse(error)
        }
        return follower
    }

    /// The fleet's keys brought into the state directory, where the start reads them; nil when
    /// the config names no key secret. Throws when the secret cannot be used (the server would
    /// otherwise sign with other keys than the fleet's). With etcd out of reach the server signs
    /// with the keys the state directory kept.
    func fleetKeys(_ cfg: NearcastConfig, _ follower: StoreFollower) async throws(DiagnosticsError) -> FleetKeys? {
        guard let file = cfg.store.keySecretFile, let stateDirectory = cfg.stateDirectory else {
            // The fleet's other servers may sign with keys this one cannot open: said at once.
            if let kept = try? await follower.connection.storedKeys(), !kept.keys.isEmpty {
                logger.warning(
                    "the store keeps DNSSEC keys, and this server has no key-secret: it signs those zones with its own keys or not at all",
                    metadata: ["zones": "\(Set(kept.keys.map(\.zone.description)).sorted())"])
            }
            return nil
        }
        let secret = try FleetKeySecret.load(path: file)
        let keys = FleetKeys(
            connection: follower.connection, secret: secret, stateDirectory: stateDirectory, logger: logger)
        do { try await keys.readAll() } catch {
            logger.warning(
                "the fleet's keys cannot be read: signing with those the state directory kept",
                metadata: ["error": "\(error)"])
        }
        return keys
    }

    /// The zones with keys signed whole, with the names of `geo` in their chains and their geo
    /// answers' variants signed: the journal's changesets are of their sources, so their
    /// histories begin with the signed copies.
    func signZones(_ data: inout Inputs, geo: GeoTable?, _ started: StartedServices) async throws {
        guard !data.keys.isEmpty else {
            data.served = data.zones
            return
        }
        let signingStarted = ContinuousClock.now
        do {
            data.signing.validity = .seconds(data.config.signatureValidity)
            let served = try data.signing.serve(data.zones, keys: data.keys, changes: nil, geo: geo)
            data.served = served.zones
            // A signed zone's history begins with its signed copy (the journal's are of its source).
            for origin in data.keys.keys where data.signing.signs(origin) { data.histories[origin] = nil }
            for origin in data.keys.keys {
                logger.info(
                    "zone signed",
                    metadata: [
                        "zone": "\(origin)", "keys": "\(data.keys[origin]!.map(\.keyTag))",
                        "seconds": "\((ContinuousClock.now - signingStarted).seconds)",
                    ])
            }
            let variantsStarted = ContinuousClock.now
            if let (variants, signed) = data.signing.useOnlineSigners(served, geo: geo) {
                ZoneSigning.logVariants(variants, signed, since: variantsStarted, logger)
            }
        } catch {
            await started.stopAll(logger: logger)
            await data.follower?.stop()
            throw Self.refuse(error)
        }
    }

    /// Geo names: the MaxMind database compiled for them (a reload may add or remove them later).
    func compileGeo(_ cfg: NearcastConfig, _ started: StartedServices) async throws -> LiveGeo {
        let live = LiveGeo(board: HealthBoard())
        if !cfg.geo.names.isEmpty {
            do {
                let compiled = try await live.compile(cfg.geo)
                live.switchTo(compiled)
                compiled.log(to: logger)
            } catch {
                await started.stopAll(logger: logger)
                throw Self.refuse(error)
            }
        }
        try await started.checkpoint(logger: logger)
        return live
    }

    /// The slow path's listeners, bound: their event loops, and the ports in the order of the
    /// listen addresses. Port 0: the kernel's choice, the same for every address given port 0
    /// (the fast path answers one port).
    struct Listeners {
        var group: MultiThreadedEventLoopGroup
        var ports: [Int]
        var bound: [SocketAddress]
        /// Where the NOTIFY the listeners accept go.
        var notifies: NotifyInbox
    }

    func listen(
        _ cfg: NearcastConfig, responders: ResponderSource, metrics: NearcastMetrics, _ started: StartedServices
    ) async throws -> Listeners {
        let queryLog = try await openQueryLog(cfg, started)
        let group = MultiThreadedEventLoopGroup(numberOfThreads: threads)
        let server = DNSServer(
            responders: responders, metrics: metrics,
            limiter: Self.rateLimiter(cfg, responders: responders), log: queryLog,
            group: group, tcpIdleTimeout: .seconds(Int64(cfg.tcpIdleTimeout)), logger: logger)
        await started.add("event loops", EventLoops(group: group))
        await started.add("DNS listeners", DNSListeners(server: server))
        var listeners = Listeners(group: group, ports: [], bound: [], notifies: server.notifies)
        var anyPort: Int?
        do {
            for address in cfg.listen {
                let asked = address.isAnyPort ? ListenAddress(host: address.host, port: anyPort ?? 0) : address
                let bound = try await server.listen(on: asked)
                if address.isAnyPort { anyPort = anyPort ?? bound.port }
                let port = bound.port ?? address.port
                listeners.ports.append(port)
                listeners.bound.append(bound)
                Self.announce("dns listening on \(ListenAddress(host: address.host, port: port))")
            }
        } catch {
            try await started.giveUp("cannot listen", ["error": "\(error)"], logger: logger)
        }
        return listeners
    }

    /// The query log the config's `dnstap` section asks for, if any, opened and stopped last (once
    /// no listener or event loop logs any more); a log that cannot be opened stops the start.
    func openQueryLog(_ cfg: NearcastConfig, _ started: StartedServices) async throws -> QueryLog? {
        guard cfg.dnstap.destination != nil else { return nil }
        let log: QueryLog
        do {
            log = try QueryLog(cfg.dnstap, identity: cfg.identity, version: "nearcast \(Self.version)")
        } catch {
            try await started.giveUp("cannot open the query log", ["error": "\(error)"], logger: logger)
        }
        await started.add("query log", QueryLogPart(log: log, logger: logger))
        return log
    }

    /// The response rate limiting of the slow path's UDP replies, when the config turns it on.
    /// NXDOMAINs are classed by the zone the responder answers them from.
    static func rateLimiter(_ cfg: NearcastConfig, responders: ResponderSource) -> ResponseRateLimiter? {
        guard cfg.rrl.enabled else { return nil }
        return ResponseRateLimiter(ResponseRateLimiter.Limits(cfg.rrl)) { name in
            responders.current.1.authority.zone(for: name)?.origin
        }
    }

    /// The XDP fast path, when the config asks for it. It answers only what the slow path would;
    /// it is started once the slow path listens, so nothing it passes up finds no listener.
    func startFastPath(
        _ cfg: NearcastConfig, responders: ResponderSource, geo: GeoTable?, cookies: ServerCookies?,
        listeners: Listeners, _ started: StartedServices
    ) async throws -> XDPDeployment? {
        guard cfg.xdp.enabled else { return nil }
        let ports = listeners.ports
        if Set(ports).count > 1 {
            logger.warning("XDP answers one UDP port; listen addresses use several", metadata: ["port": "\(ports[0])"])
        }
        let deployment: XDPDeployment
        do {
            // Loading through the verifier and filling the maps block: on a thread of its own.
            let (settings, port, payload) = (cfg.xdp, UInt16(ports[0]), cfg.maxUDPPayload)
            let answering = Self.answeredAddresses(listeners.bound, port: Int(port))
            let rateLimit = RateLimit(cfg.rrl)
            let logger = self.logger
            deployment = try await onOwnThread {
                let stream = AnswerImage.Stream(
                    responder: responders.current.responder, maxSections: FastPath.sectionsCapacity)
                let deployment = try XDPDeployment(
                    settings: settings, stream: stream, geo: geo, dnsPort: port, answering: answering,
                    udpPayload: payload, rateLimit: rateLimit, cookies: cookies?.secrets, logger: logger)
                // The first generation's records (and an image, when one was made) let go: their pages given back.
                FreedMemory.giveBack()
                return deployment
            }
        } catch {
            try await started.giveUp("cannot start the XDP fast path", ["error": "\(error)"], logger: logger)
        }
        await started.add("XDP fast path", deployment)
        try await started.checkpoint(logger: logger)
        return deployment
    }

    /// The addresses XDP answers queries to: those bound on its port, every one of a family for a
    /// wildcard of it (IPv6 sockets are IPv6-only: DNSServer).
    static func answeredAddresses(_ bound: [SocketAddress], port: Int) -> AnsweredAddresses {
        var out = AnsweredAddresses()
        for address in bound where address.port == port {
            let octets: [UInt8]
            switch address {
            case .v4(let a): octets = withUnsafeBytes(of: a.address.sin_addr) { Array($0) }
            case .v6(let a): octets = withUnsafeBytes(of: a.address.sin6_addr) { Array($0) }
            default: continue
            }
            if !octets.allSatisfy({ $0 == 0 }) {
                if let l = LocalAddress(octets: octets) { out.listed.insert(l) }
            } else if octets.count == 4 {
                out.everyIPv4 = true
            } else {
                out.everyIPv6 = true
            }
        }
        return out
    }

    /// The NOTIFY sender: its thread tells secondaries of each zone's changes (the zones' `notify`).
    func startNotifier(_ started: StartedServices) async -> ZoneNotifier {
        let notifier = ZoneNotifier(logger: logger)
        await started.add("NOTIFY to secondaries", notifier)
        return notifier
    }

    /// The state directory, made if need be: operators' overrides and the audit log are kept there.
    func openStateDirectory(_ cfg: NearcastConfig, _ started: StartedServices) async throws -> AuditLog? {
        guard let dir = cfg.stateDirectory else {
            if cfg.api.listen != nil {
                logger.warning(
                    "no state-dir: changes made through the API last until a restart, and no audit log is kept")
            }
            return nil
        }
        do {
            try FileManager.default.createDirectory(
                atPath: dir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            try await started.giveUp(
                "cannot create the state directory", ["state-dir": "\(dir)", "error": "\(error)"], logger: logger)
        }
        return AuditLog(path: dir + "/audit.log")
    }

    /// Health: the geo nodes' checks (none while there are no geo names), and operators'
    /// overrides restored from the state directory.
    struct Health {
        var monitor: HealthMonitor
        var changes: OperatorChanges
        var writes: HealthWriteLog
    }

    func startHealth(
        _ cfg: NearcastConfig, live: LiveGeo, fastPath: XDPDeployment?, group: any EventLoopGroup, audit: AuditLog?,
        follower: StoreFollower?, _ started: StartedServices
    ) async throws -> Health {
        let writes = HealthWriteLog()
        let monitor = await HealthWiring.start(
            live: live, fastPath: fastPath?.fastPath, group: group, writes: writes,
            observerName: follower?.serverName, logger: logger)
        await started.add("health checks", monitor)
        let changes = OperatorChanges(
            monitor: monitor, storePath: cfg.stateDirectory.map { $0 + "/overrides.json" }, audit: audit,
            shared: follower, logger: logger)
        do {
            try await changes.restore()
        } catch {
            try await started.giveUp(
                "cannot use the state directory", ["state-dir": "\(cfg.stateDirectory ?? "")", "error": "\(error)"],
                logger: logger)
        }
        return Health(monitor: monitor, changes: changes, writes: writes)
    }

    /// A fleet's server: the store's changes applied as they come, nodes judged from every
    /// server's vantage point, and the secondary zones transferred while this server holds the
    /// duty (the views and the duty stop before the mirror, which closes the connection).
    func follow(
        _ follower: StoreFollower, zones: ZoneParts, health: Health, tokens: LiveTokens, fleetKeys: FleetKeys?,
        _ started: StartedServices
    ) async {
        let targets = StoreFollower.Targets(
            served: zones.fromStore, overrides: health.changes, tokens: tokens, keys: fleetKeys)
        await started.add("store follower", await StoreMirror(follower, into: targets))
        if fleetKeys != nil {
            let signer = FleetDuty(
                connection: follower.connection, key: follower.connection.layout.signer,
                duty: "the fleet's signing duty", name: follower.serverName, logger: logger
            ) { held, holder in await zones.signatures.driveRollovers(held, holder: holder) }
            await started.add("fleet signing duty", signer)
        }
        let views = FleetHealth(
            connection: follower.connection, monitor: health.monitor, name: follower.serverName, logger: logger)
        await started.add("fleet health views", views)
        let duty = FleetDuty(
            connection: follower.connection, key: follower.connection.layout.transferrer,
            duty: "the fleet's transfer duty", name: follower.serverName, logger: logger
        ) {
            held, holder in await zones.secondaries.hold(held, holder: holder)
        }
        await started.add("fleet transfer duty", duty)
    }

    /// The management API, a service of the group: it binds when the group runs.
    struct StartedAPI: Sendable {
        var address: ListenAddress
        var service: ManagementAPI
    }

    func startAPI(
        _ cfg: NearcastConfig, tokens: LiveTokens, parts: DaemonParts, hasStore: Bool, _ started: StartedServices
    ) async throws -> StartedAPI? {
        guard let address = cfg.api.listen else { return nil }
        if tokens.current.entries.isEmpty && !hasStore {
            logger.warning(
                "management API without tokens: only /healthz answers",
                metadata: ["hint": "give --api-tokens FILE or api: tokens:"])
        }
        do {
            let tls = cfg.api.tlsCertificate.flatMap { c in cfg.api.tlsKey.map { (certificate: c, key: $0) } }
            let service = try ManagementAPI(on: address, tokens: tokens, desks: parts.desks(), tls: tls, logger: logger)
            await started.add("management API", service)
            return StartedAPI(address: address, service: service)
        } catch {
            try await started.giveUp(
                "cannot start the management API", ["address": "\(address)", "error": "\(error)"], logger: logger)
        }
    }
}
