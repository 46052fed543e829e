import Foundation
import Logging
import NearcastAnswers
import NearcastBasics
import NearcastConfiguration
import NearcastControl
import NearcastDataPath
import NearcastFleet
import NearcastGeo
import NearcastServer
import NearcastTransfer
import NearcastZones
import UnixSignals

/// The daemon, `nearcastd`: its parts built from the config, each started once the one before is
/// up, then run as one ServiceGroup until SIGTERM or SIGINT (ARCHITECTURE §7). `nearcastd`'s main
/// gives it the config source and what only a process's main may do (narrow its capabilities).
public struct Daemon: Sendable {
    /// This build's version, reported by `nearcast status` and named in the query log.
    public static let version = "0.6.0"

    /// How a run ended other than by a stop once ready.
    public enum Exit: Error, Equatable {
        /// The start failed: why was logged (or, for an input, written to standard error) and what
        /// started was stopped.
        case failed
        /// A stop (SIGTERM, SIGINT) came before ready: what started was stopped.
        case stoppedBeforeReady
    }

    /// The config as a start or a reload reads it: the config file with the command line's
    /// additions (a fleet's store is laid over it by the daemon).
    let load: @Sendable () throws(DiagnosticsError) -> NearcastConfig
    /// Threads that answer DNS: UDP sockets per address, and TCP event loops.
    let threads: Int
    /// Called once every part has started, before `ready`: the process keeps of its privileges
    /// only what serving needs (with the fast path on, what a new generation and the stop need).
    let narrowPrivileges: @Sendable (_ keepingFastPath: Bool) -> Void
    let logger: Logger

    public init(
        threads: Int, logger: Logger, narrowPrivileges: @escaping @Sendable (_ keepingFastPath: Bool) -> Void,
        load: @escaping @Sendable () throws(DiagnosticsError) -> NearcastConfig
    ) {
        self.load = load
        self.threads = threads
        self.narrowPrivileges = narrowPrivileges
        self.logger = logger
    }

    /// Starts the parts and serves until SIGTERM or SIGINT. Those are trapped from the first step:
    /// one that comes before ready ends the start at its next step (`Exit.stoppedBeforeReady`).
    /// Throws `Exit.failed` when the start fails.
    public func run() async throws {
        let started = StartedServices()
        let stopSignals = await UnixSignalsSequence(trapping: .sigterm, .sigint)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { for await _ in stopSignals { await started.stopRequested() } }
            try await startAndServe(started)
            group.cancelAll()
        }
    }

    /// The parts in their order: the data read, the listeners, the fast path, health, the zones
    /// served and the owners of their changes, the store's mirror, the API; then the group.
    func startAndServe(_ started: StartedServices) async throws {
        logger.info("starting", metadata: ["version": "\(Self.version)", "pid": "\(getpid())"])
        let startedAt = ContinuousClock.now
        // Its zones emptied once ServedConfig owns them (`serveZones`): a local of this function
        // lives as long as the daemon, and would keep the first zones' memory after a reload
        // replaced them.
        var data = try await readData(started)
        let cfg = data.config
        let live = try await compileGeo(cfg, started)
        try await signZones(&data, geo: live.current?.table, started)
        let metrics = NearcastMetrics()
        let cookies = CookieRotation.cookies(cfg.cookies)
        let responders = ResponderSource(firstResponder(data, geo: live.current?.table, cookies: cookies, metrics))
        let listeners = try await listen(cfg, responders: responders, metrics: metrics, started)
        let fastPath = try await startFastPath(
            cfg, responders: responders, geo: live.current?.table, cookies: cookies, listeners: listeners, started)
        let audit = try await openStateDirectory(cfg, started)
        let health = try await startHealth(
            cfg, live: live, fastPath: fastPath, group: listeners.group, audit: audit, follower: data.follower, started)
        let cookieRotation = await rotateCookies(cookies, cfg, fastPath: fastPath, started)
        let zones = await serveZones(
            &data, live: live, responders: responders, fastPath: fastPath, metrics: metrics, audit: audit,
            health: health, cookies: cookieRotation, notifies: listeners.notifies, started)
        // The API's tokens: this server's file, and a fleet's from its store.
        let tokens = LiveTokens(data.tokens)
        let reloads = Reloads(zones: zones.reloads, tokens: tokens, api: cfg.api, logger: logger)
        if let follower = data.follower {
            await follow(follower, zones: zones, health: health, tokens: tokens, fleetKeys: data.fleetKeys, started)
        }
        let parts = DaemonParts(
            startedAt: startedAt, deployment: fastPath, live: live, stateDirectory: cfg.stateDirectory,
            monitor: health.monitor, changes: health.changes, healthWrites: health.writes, zones: zones.desk,
            reloads: reloads, metrics: metrics, store: data.follower, audit: audit, logger: logger)
        let api = try await startAPI(cfg, tokens: tokens, parts: parts, hasStore: data.follower != nil, started)
        try await serve(started, api: api, reloads: reloads, keepsFastPath: fastPath != nil)
        logger.info("stopped")
    }

    /// Runs the group until a stop: ready once the API listens (every signal is trapped by then),
    /// a reload at each SIGHUP. Under systemd (Type=notify), readiness, reloads and the stop are
    /// told to it too.
    func serve(_ started: StartedServices, api: StartedAPI?, reloads: Reloads, keepsFastPath: Bool) async throws {
        let serving = keepsFastPath ? "serving, with the XDP fast path" : "serving"
        let (logger, narrowPrivileges) = (self.logger, self.narrowPrivileges)
        try await started.runUntilStopped(
            onReady: {
                // The API runs in the group: ready once it listens (a port it cannot bind stops the daemon).
                if let api {
                    let port: Int
                    do { port = try await api.service.bound.value } catch {
                        logger.error(
                            "cannot start the management API",
                            metadata: ["address": "\(api.address)", "error": "\(error)"])
                        throw Exit.failed
                    }
                    Self.announce("api listening on \(ListenAddress(host: api.address.host, port: port))")
                }
                // Everything that needed privileges is done (the program loaded and attached, its
                // maps pinned, the ports bound): what is left of them is what serving still needs.
                narrowPrivileges(keepsFastPath)
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
    }

    /// A line on standard output for whoever started the daemon: where it listens (with port 0, the
    /// port the kernel chose) and when it is ready, as `nearcastd: dns listening on ADDR:PORT`,
    /// `nearcastd: api listening on ADDR:PORT` and `nearcastd: ready`. Logs go to standard error.
    static func announce(_ line: String) {
        FileHandle.standardOutput.write(Data("nearcastd: \(line)\n".utf8))
    }

    /// An input the start cannot use (the config, a zone file, the tokens), said on standard error
    /// as it is (file, line, what is wrong): the start fails.
    static func refuse(_ problem: Any) -> Exit {
        FileHandle.standardError.write(Data("\(problem)\n".utf8))
        return .failed
    }
}
