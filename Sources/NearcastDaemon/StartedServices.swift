import Logging
import ServiceLifecycle
import UnixSignals

/// The daemon's parts in the order they started (ARCHITECTURE §7): each is started by the daemon
/// in turn and remembered here, either a `DaemonPart` (what it holds is held from its start) or a
/// service of its own (cookie rotation, the fleet's health views, the management API), kept to
/// run in the group in its place in the order. A start that fails half way stops what started,
/// in reverse, and the daemon exits 1 (nothing is left running or attached). Once everything has started, the parts run as
/// one ServiceGroup (swift-service-lifecycle): on SIGTERM or SIGINT each is stopped gracefully in
/// the reverse order of its start (the API first, the DNS listeners and event loops last, so
/// queries in flight are answered), and SIGHUP asks for a reload meanwhile. A SIGTERM or SIGINT
/// that comes before (the daemon traps them from its first step) ends the start at its next step
/// (`checkpoint`): what started is stopped, and the daemon exits 0.
actor StartedServices {
    private var parts: [(name: String, part: any DaemonPart)] = []
    /// Parts that are services of their own, each after the parts added before it.
    private var services: [(after: Int, name: String, service: any Service)] = []
    /// A stop was asked for (SIGTERM, SIGINT).
    private var stopAsked = false
    /// The group, once it is made: a stop asked for then shuts it down.
    private var group: ServiceGroup?

    /// A SIGTERM or SIGINT: the group shuts down gracefully, or, before it runs, the start ends at
    /// its next step.
    func stopRequested() async {
        stopAsked = true
        await group?.triggerGracefulShutdown()
    }

    /// Ends the start here, gracefully, if a stop was asked for meanwhile: what started is stopped
    /// and the daemon exits 0.
    func checkpoint(logger: Logger) async throws {
        guard stopAsked else { return }
        logger.notice("asked to stop before it was ready: stopping what started")
        await stopAll(logger: logger)
        logger.info("stopped")
        throw Daemon.Exit.stoppedBeforeReady
    }

    /// Remembers a part that was just started.
    func add(_ name: String, _ part: any DaemonPart) { parts.append((name, part)) }

    /// A part that runs as a service of its own in the group (it starts when the group runs), and
    /// is shut down before everything added until now.
    func add(_ name: String, _ service: any Service) {
        services.append((parts.count, name, service))
    }

    /// Stops everything, the most recently started first.
    func stopAll(logger: Logger) async {
        while let s = parts.popLast() {
            do { try await s.part.stop() } catch {
                logger.warning("stopping failed", metadata: ["service": "\(s.name)", "error": "\(error)"])
            }
        }
    }

    /// Logs why start-up failed, stops what started, and ends the process with status 1.
    func giveUp(_ message: Logger.Message, _ metadata: Logger.Metadata, logger: Logger) async throws -> Never {
        logger.error(message, metadata: metadata)
        await stopAll(logger: logger)
        throw Daemon.Exit.failed
    }

    /// Runs what started as one service group until SIGTERM or SIGINT, then stops each part in
    /// reverse order. `onReady` is called once every signal is trapped (a SIGTERM from then on
    /// stops the daemon gracefully), `onHangup` for each SIGHUP until the group stops.
    func runUntilStopped(
        onReady: @escaping @Sendable () async throws -> Void, onHangup: @escaping @Sendable () async -> Void,
        onStopping: @escaping @Sendable () -> Void = {}, logger: Logger
    ) async throws {
        var services: [ServiceGroupConfiguration.ServiceConfiguration] = []
        for (i, started) in parts.enumerated() {
            for s in self.services where s.after == i {
                services.append(Self.inGroup(NamedService(name: s.name, service: s.service, logger: logger)))
            }
            services.append(Self.inGroup(PartService(name: started.name, part: started.part, logger: logger)))
        }
        for s in self.services where s.after == parts.count {
            services.append(Self.inGroup(NamedService(name: s.name, service: s.service, logger: logger)))
        }
        parts = []
        self.services = []
        // Last, so it is the first to end: no reload starts once stopping has begun.
        services.append(Self.inGroup(HangupReloads(onReady: onReady, onHangup: onHangup, onStopping: onStopping)))
        // SIGTERM and SIGINT are the daemon's own (`stopRequested`), trapped since its first step.
        let group = ServiceGroup(configuration: .init(services: services, logger: logger))
        self.group = group
        if stopAsked { await group.triggerGracefulShutdown() }
        try await group.run()
    }
}

extension StartedServices {
    /// A service of the group: should it end or fail, the group shuts down gracefully.
    static func inGroup(_ service: any Service) -> ServiceGroupConfiguration.ServiceConfiguration {
        .init(
            service: service, successTerminationBehavior: .gracefullyShutdownGroup,
            failureTerminationBehavior: .gracefullyShutdownGroup)
    }
}

/// A part of the daemon that is a service of its own, under its name in the log: "stopping" when
/// the group's graceful shutdown reaches it, as for the others.
struct NamedService: Service {
    var name: String
    var service: any Service
    var logger: Logger

    func run() async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await noteStopping() }
            try await service.run()
            group.cancelAll()  // ended by itself: no shutdown to note
        }
    }

    func noteStopping() async {
        guard (try? await gracefulShutdown()) != nil else { return }  // cancelled: it ended by itself
        logger.info("stopping", metadata: ["service": "\(name)"])
    }
}

/// SIGHUP asks for a reload (the config and zone files read again), one at a time, until the
/// group shuts down. SIGTERM and SIGINT are the daemon's from its first step (`Daemon.run`), so
/// once this has trapped SIGHUP too, every signal is handled: then `onReady`. Once the group
/// shuts down, `onStopping`.
struct HangupReloads: Service {
    var onReady: @Sendable () async throws -> Void
    var onHangup: @Sendable () async -> Void
    var onStopping: @Sendable () -> Void

    func run() async throws {
        let hangups = await UnixSignalsSequence(trapping: .sighup)
        try await onReady()
        for await _ in hangups.cancelOnGracefulShutdown() {
            await onHangup()
        }
        onStopping()
    }
}
