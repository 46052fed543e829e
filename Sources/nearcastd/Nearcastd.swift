import ArgumentParser
import DNSWire
import Dispatch
import Foundation
import Logging
import MaxMindDB
import NIOCore
import NIOPosix
import NearcastAnswers
import NearcastBasics
import NearcastConfiguration
import NearcastControl
import NearcastDataPath
import NearcastFleet
import NearcastGeo
import NearcastHealth
import NearcastServer
import NearcastStore
import NearcastZones
import UnixSignals

#if canImport(Glibc)
import Glibc
#endif

/// `nearcastd`: the nearcast DNS daemon.
@main
struct Nearcastd: AsyncParsableCommand {
    /// This build's version, reported by `nearcast status`.
    static let version = "0.6.0"

    static let configuration = CommandConfiguration(
        commandName: "nearcastd",
        abstract: "nearcast authoritative GeoDNS server.",
        discussion: """
            Serve zone files directly:
              nearcastd --zone example.net=example.net.zone --listen 127.0.0.1:53 --listen [::1]:53
            or from a YAML config:
              nearcastd --config /etc/nearcast/nearcast.yaml
            """,
        version: version
    )

    @Option(name: .long, help: ArgumentHelp("YAML configuration file.", valueName: "FILE"))
    var config: String?

    @Option(name: .long, help: ArgumentHelp("Serve a zone: ORIGIN=PATH (repeatable).", valueName: "ORIGIN=PATH"))
    var zone: [String] = []

    @Option(name: .long, help: ArgumentHelp("Listen on ADDR:PORT, UDP and TCP (repeatable).", valueName: "ADDR:PORT"))
    var listen: [String] = []

    @Option(
        name: .long,
        help: ArgumentHelp("Answer hot queries in XDP on IFACE (repeatable).", valueName: "IFACE[:native|:generic]"))
    var xdp: [String] = []

    @Option(
        name: .long,
        help: ArgumentHelp("bpffs directory for the pinned maps (default /sys/fs/bpf/nearcast).", valueName: "DIR"))
    var pinRoot: String?

    @Option(
        name: .long, help: ArgumentHelp("The compiled XDP program (default: next to nearcastd).", valueName: "PATH"))
    var bpfObject: String?

    @Flag(name: .long, help: "Leave the XDP program attached and its maps pinned when stopping.")
    var keepXdp = false

    @Option(
        name: .long,
        help: ArgumentHelp("Serve the management API on ADDR:PORT (e.g. 127.0.0.1:8053).", valueName: "ADDR:PORT"))
    var api: String?

    @Option(name: .long, help: ArgumentHelp("The management API's tokens: ROLE TOKEN lines.", valueName: "FILE"))
    var apiTokens: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Keep operators' overrides and the audit log here (e.g. /var/lib/nearcast).", valueName: "DIR"))
    var stateDir: String?

    @Option(
        name: .long,
        help: "Threads that answer DNS: UDP sockets per address, and TCP event loops (default: one per core).")
    var threads: Int = System.coreCount

    @Option(name: .long, help: "Log level: trace, debug, info, notice, warning, error, critical.")
    var logLevel: String = "info"

    func validate() throws {
        if config == nil && zone.isEmpty {
            throw ValidationError("give --config FILE, or at least one --zone ORIGIN=PATH")
        }
        if config == nil && listen.isEmpty { throw ValidationError("give at least one --listen ADDR:PORT") }
        for l in listen where ListenAddress(l) == nil {
            throw ValidationError("--listen '\(l)' is not ADDR:PORT (e.g. 127.0.0.1:53 or [::1]:53)")
        }
        for z in zone where !z.contains("=") { throw ValidationError("--zone '\(z)' is not ORIGIN=PATH") }
        if let a = api, ListenAddress(a) == nil {
            throw ValidationError("--api '\(a)' is not ADDR:PORT (e.g. 127.0.0.1:8053)")
        }
        for x in xdp where XDPSettings.Interface(x) == nil {
            throw ValidationError("--xdp '\(x)' is not IFACE, IFACE:native or IFACE:generic")
        }
        guard threads >= 1 else { throw ValidationError("--threads must be at least 1") }
        guard Logger.Level(rawValue: logLevel) != nil else {
            throw ValidationError("unknown --log-level '\(logLevel)'")
        }
    }

    /// The config from --config, with --zone and --listen added to it.
    func effectiveConfig() throws(DiagnosticsError) -> NearcastConfig {
        var cfg =
            try config.map { path throws(DiagnosticsError) in try NearcastConfig.load(path: path) } ?? NearcastConfig()
        for z in zone {
            let parts = z.split(separator: "=", maxSplits: 1).map(String.init)
            let originText = parts[0].hasSuffix(".") ? parts[0] : parts[0] + "."
            do {
                cfg.zones.append(ZoneSource(origin: try DNSName(originText), path: parts[1], declaredAt: "--zone"))
            } catch {
                throw DiagnosticsError([Diagnostic(file: "--zone", line: 0, message: "origin '\(parts[0])': \(error)")])
            }
        }
        cfg.listen += listen.compactMap(ListenAddress.init)
        cfg.xdp.interfaces += xdp.compactMap(XDPSettings.Interface.init)
        if let pinRoot { cfg.xdp.pinRoot = pinRoot }
        if let bpfObject { cfg.xdp.objectPath = bpfObject }
        if keepXdp { cfg.xdp.keepOnExit = true }
        if let api { cfg.api.listen = ListenAddress(api) }
        if let apiTokens { cfg.api.tokensPath = apiTokens }
        if let stateDir { cfg.stateDirectory = stateDir }
        if cfg.listen.isEmpty {
            throw DiagnosticsError([
                Diagnostic(
                    file: config ?? "command line", line: 0,
                    message: "no listen address: give --listen ADDR:PORT or 'listen:' in the config")
            ])
        }
        return cfg
    }

    func run() async throws {
        FreedMemory.trimHeapsAsTheyGo()
        LoggingSystem.bootstrap { label in
            var h = StreamLogHandler.standardError(label: label)
            h.logLevel = Logger.Level(rawValue: logLevel) ?? .info
            return h
        }
        let logger = Logger(label: "nearcastd")
        let startedAt = ContinuousClock.now
        // SIGTERM and SIGINT are trapped from here on: before ready, one ends the start at its next
        // step (StartedServices.checkpoint, exit 0); once the parts run, it stops them gracefully.
        let started = StartedServices()
        let stopSignals = await UnixSignalsSequence(trapping: .sigterm, .sigint)
        let stopWatch = Task { for await _ in stopSignals { await started.stopRequested() } }
        defer { stopWatch.cancel() }
        logger.info("starting", metadata: ["version": "\(Self.version)", "pid": "\(getpid())"])
        var cfg: NearcastConfig
        // Emptied once ServedConfig owns them: a local of this function lives as long as the
        // daemon, and would keep the first zones' memory after a reload replaced them.
        var zones: [Zone]
        let tokens: APITokens
        do { cfg = try effectiveConfig() } catch {
            FileHandle.standardError.write(error.description + "\n")
            throw ExitCode(1)
        }
        // A fleet's server serves the store's zones and geo section, read (or, with etcd out of
        // reach, its last snapshot) before anything starts.
        let follower = try await Self.followStore(cfg, logger: logger)
        do {
            if let follower { cfg = try follower.source.config(over: cfg) }
            zones = try cfg.loadZones()
            tokens = try cfg.api.loadTokens()
        } catch {
            FileHandle.standardError.write(error.description + "\n")
            throw ExitCode(1)
        }
        for z in zones { logger.info("zone loaded", metadata: ["zone": "\(z.origin)", "records": "\(z.recordCount)"]) }
        try await started.checkpoint(logger: logger)

        // Geo names: the MaxMind database compiled for them (a reload may add or remove them).
        let live = LiveGeo(board: HealthBoard())
        if !cfg.geo.names.isEmpty {
            do {
                let compiled = try await live.compile(cfg.geo)
                live.switchTo(compiled)
                compiled.log(to: logger)
            } catch {
                FileHandle.standardError.write("\(error)\n")
                throw ExitCode(1)
            }
        }
        try await started.checkpoint(logger: logger)
        let geo = live.current?.table

        let cookies = CookieRotation.cookies(cfg.cookies)
        let metrics = NearcastMetrics()
        let responders = ResponderSource(
            Responder(serving: cfg, zones: zones, geo: geo, cookies: cookies, counts: metrics.answers.view(zones, geo)))
        let queryLog = try await Self.openQueryLog(cfg, started: started, logger: logger)
        let group = MultiThreadedEventLoopGroup(numberOfThreads: threads)
        let server = DNSServer(
            responders: responders, metrics: metrics,
            limiter: Self.rateLimiter(cfg, responders: responders, logger: logger), log: queryLog,
            group: group, tcpIdleTimeout: .seconds(Int64(cfg.tcpIdleTimeout)), logger: logger)
        await started.add("event loops") { try await group.shutdownGracefully() }
        await started.add("DNS listeners") { await server.stop() }
        // The ports bound, in the order of the listen addresses. Port 0: the kernel's choice, the
        // same for every address given port 0 (the fast path answers one port).
        var dnsPorts: [Int] = []
        var boundAddresses: [SocketAddress] = []
        var anyPort: Int?
        do {
            for address in cfg.listen {
                let asked = address.isAnyPort ? ListenAddress(host: address.host, port: anyPort ?? 0) : address
                let bound = try await server.listen(on: asked)
                if address.isAnyPort { anyPort = anyPort ?? bound.port }
                let port = bound.port ?? address.port
                dnsPorts.append(port)
                boundAddresses.append(bound)
                Self.announce("dns listening on \(ListenAddress(host: address.host, port: port))")
            }
        } catch {
            try await started.giveUp("cannot listen", ["error": "\(error)"], logger: logger)
        }
        // The fast path answers only what the slow path would; it is started once the slow path
        // listens, so nothing it passes up finds no listener.
        var fastPath: XDPDeployment?
        if cfg.xdp.enabled {
            if Set(dnsPorts).count > 1 {
                logger.warning(
                    "XDP answers one UDP port; listen addresses use several", metadata: ["port": "\(dnsPorts[0])"])
            }
            do {
                // Loading through the verifier and filling the maps block: on a thread of its own.
                let settings = cfg.xdp
                let port = UInt16(dnsPorts[0])
                let answering = Self.answeredAddresses(boundAddresses, port: Int(port))
                let payload = cfg.maxUDPPayload
                let rateLimit = RateLimit(cfg.rrl)
                fastPath = try await onOwnThread {
                    let deployment = try {
                        let stream = AnswerImage.Stream(
                            responder: responders.current.responder, maxSections: FastPath.sectionsCapacity)
                        return try XDPDeployment(
                            settings: settings, stream: stream, geo: geo, dnsPort: port, answering: answering,
                            udpPayload: payload,
                            rateLimit: rateLimit, cookies: cookies?.secrets, logger: logger)
                    }()
                    // The first generation's records (and an image, when one was made) let go: their pages given back.
                    FreedMemory.giveBack()
                    return deployment
                }
            } catch {
                try await started.giveUp("cannot start the XDP fast path", ["error": "\(error)"], logger: logger)
            }
            if let deployment = fastPath { await started.add("XDP fast path") { deployment.stop() } }
        }
        try await started.checkpoint(logger: logger)
        // The state directory: kept overrides and the audit log.
        var audit: AuditLog?
        if let dir = cfg.stateDirectory {
            do {
                try FileManager.default.createDirectory(
                    atPath: dir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            } catch {
                try await started.giveUp(
                    "cannot create the state directory", ["state-dir": "\(dir)", "error": "\(error)"], logger: logger)
            }
            audit = AuditLog(path: dir + "/audit.log")
        }
        // Health: the geo nodes' checks (none while there are no geo names) and operators' overrides.
        let healthWrites = HealthWriteLog()
        let monitor = await HealthWiring.start(
            live: live, fastPath: fastPath?.fastPath, group: group, writes: healthWrites,
            observerName: follower?.serverName, logger: logger)
        await started.add("health checks") { await monitor.stop() }
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
        if cfg.stateDirectory == nil && cfg.api.listen != nil {
            logger.warning("no state-dir: changes made through the API last until a restart, and no audit log is kept")
        }
        // DNS cookies: this server's own secret made anew as it ages, the fast path's clock kept right.
        let cookieRotation = cookies.map {
            CookieRotation(cookies: $0, settings: cfg.cookies, fastPath: fastPath?.fastPath, logger: logger)
        }
        if let cookieRotation { await started.add("DNS cookie secrets", cookieRotation) }
        let command = self
        let storeSource = follower?.source
        // The API's tokens: this server's file, and a fleet's from its store.
        let liveTokens = LiveTokens(tokens)
        let served = ServedConfig(
            running: cfg, zones: zones,
            load: { () throws(DiagnosticsError) -> NearcastConfig in
                let local = try command.effectiveConfig()
                return try storeSource?.config(over: local) ?? local
            }, live: live,
            responders: responders, writer: fastPath.map { GenerationWriter($0.fastPath) }, monitor: monitor,
            changes: changes, metrics: metrics, audit: audit, shared: follower, cookies: cookieRotation,
            logger: logger)
        zones = []
        let reloads = Reloads(served: served, tokens: liveTokens, api: cfg.api, logger: logger)
        if let follower {
            await follower.start(served, changes: changes, tokens: liveTokens)
            await started.add("store follower") { await follower.stop() }
            // Nodes are judged from every server's vantage point (stopped before the follower,
            // which closes the connection).
            let views = FleetHealth(
                connection: follower.connection, monitor: monitor, name: follower.serverName, logger: logger)
            await started.add("fleet health views", views)
        }
        var api: (address: ListenAddress, service: ManagementAPI)?
        if let address = cfg.api.listen {
            if tokens.entries.isEmpty && follower == nil {
                logger.warning(
                    "management API without tokens: only /healthz answers",
                    metadata: ["hint": "give --api-tokens FILE or api: tokens:"])
            }
            let parts = DaemonParts(
                startedAt: startedAt, deployment: fastPath, live: live, stateDirectory: cfg.stateDirectory,
                monitor: monitor, changes: changes,
                healthWrites: healthWrites, served: served, reloads: reloads, metrics: metrics, store: follower,
                audit: audit, logger: logger)
            do {
                let tls = cfg.api.tlsCertificate.flatMap { c in cfg.api.tlsKey.map { (certificate: c, key: $0) } }
                let service = try ManagementAPI(
                    on: address, tokens: liveTokens, desks: parts.desks(), tls: tls, logger: logger)
                await started.add("management API", service)
                api = (address, service)
            } catch {
                try await started.giveUp(
                    "cannot start the management API", ["address": "\(address)", "error": "\(error)"], logger: logger)
            }
        }
        // Under systemd (Type=notify), readiness, reloads and the stop are told to it too.
        let serving = fastPath == nil ? "serving" : "serving, with the XDP fast path"
        let listening = api
        let keepsFastPath = fastPath != nil
        try await started.runUntilStopped(
            onReady: {
                // The API runs in the group: ready once it listens (a port it cannot bind stops the daemon).
                if let (address, service) = listening {
                    let port: Int
                    do { port = try await service.bound.value } catch {
                        logger.error(
                            "cannot start the management API", metadata: ["address": "\(address)", "error": "\(error)"])
                        throw ExitCode(1)
                    }
                    Self.announce("api listening on \(ListenAddress(host: address.host, port: port))")
                }
                // Everything that needed privileges is done (the program loaded and attached, its
                // maps pinned, the ports bound): what is left of them is what serving still needs.
                Capabilities.narrow(keepingFastPath: keepsFastPath, logger: logger)
                Self.announce("ready")
                SystemdNotify.ready(status: serving)
            },
            onHangup: {
                // Refused reloads are logged by ServedConfig; the old data goes on being served.
                SystemdNotify.reloading()
                do {
                    _ = try await reloads.reload(by: "SIGHUP")
                    SystemdNotify.ready(status: serving + "; reloaded")
                } catch {
                    SystemdNotify.ready(status: serving + "; the last reload was refused: \(error)")
                }
            },
            onStopping: { SystemdNotify.stopping() }, logger: logger)
        logger.info("stopped")
    }

    /// The query log the config's `dnstap` section asks for, if any, opened and stopped last (once
    /// no listener or event loop logs any more); a log that cannot be opened stops the start.
    static func openQueryLog(_ cfg: NearcastConfig, started: StartedServices, logger: Logger) async throws -> QueryLog?
    {
        guard cfg.dnstap.destination != nil else { return nil }
        let log: QueryLog
        do {
            log = try QueryLog(cfg.dnstap, identity: cfg.identity, version: "nearcast \(version)")
        } catch {
            try await started.giveUp("cannot open the query log", ["error": "\(error)"], logger: logger)
        }
        await started.add("query log") {
            if log.dropped > 0 { logger.warning("dnstap messages dropped", metadata: ["count": "\(log.dropped)"]) }
            log.close()
        }
        return log
    }

    /// The response rate limiting of the slow path's UDP replies, when the config turns it on.
    /// NXDOMAINs are classed by the zone the responder answers them from.
    static func rateLimiter(_ cfg: NearcastConfig, responders: ResponderSource, logger: Logger) -> ResponseRateLimiter?
    {
        guard cfg.rrl.enabled else { return nil }
        return ResponseRateLimiter(ResponseRateLimiter.Limits(cfg.rrl)) { name in
            responders.current.1.authority.zone(for: name)?.origin
        }
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

    /// The follower of the config's store, its first read done; nil without a store section.
    static func followStore(_ cfg: NearcastConfig, logger: Logger) async throws -> StoreFollower? {
        guard let etcd = cfg.store.etcd else { return nil }
        guard let stateDirectory = cfg.stateDirectory else {
            FileHandle.standardError.write(
                "\(cfg.sourcePath ?? "config"): a store needs a state-dir, where the last good copy of it is kept\n")
            throw ExitCode(1)
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
            FileHandle.standardError.write("\(error)\n")
            throw ExitCode(1)
        }
        do { try await follower.prepare() } catch {
            await follower.stop()
            FileHandle.standardError.write("\(error)\n")
            throw ExitCode(1)
        }
        return follower
    }

    /// A line on standard output for whoever started the daemon: where it listens (with port 0, the
    /// port the kernel chose) and when it is ready, as `nearcastd: dns listening on ADDR:PORT`,
    /// `nearcastd: api listening on ADDR:PORT` and `nearcastd: ready`. Logs go to standard error.
    static func announce(_ line: String) {
        FileHandle.standardOutput.write("nearcastd: \(line)\n")
    }
}
