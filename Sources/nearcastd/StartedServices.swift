import ArgumentParser
import Logging
import ServiceLifecycle
import UnixSignals

/// The daemon's parts in the order they started (ARCHITECTURE §7): each is started by the daemon
/// in turn, and its stop is remembered here. Start-up that fails half way stops what started, in
/// reverse, and exits 1 (nothing is left running or attached). Once everything has started, the
/// parts run as one ServiceGroup (swift-service-lifecycle): on SIGTERM or SIGINT each is stopped
/// gracefully in the reverse order of its start (the API first, the DNS listeners and event loops
/// last, so queries in flight are answered), and SIGHUP asks for a reload meanwhile.
actor StartedServices {
    private var stops: [(name: String, stop: @Sendable () async throws -> Void)] = []

    /// Remembers how to stop what was just started.
    func add(_ name: String, _ stop: @escaping @Sendable () async throws -> Void) { stops.append((name, stop)) }

    /// Stops everything, the most recently started first.
    func stopAll(logger: Logger) async {
        while let s = stops.popLast() {
            do { try await s.stop() } catch {
                logger.warning("stopping failed", metadata: ["service": "\(s.name)", "error": "\(error)"])
            }
        }
    }

    /// Logs why start-up failed, stops what started, and ends the process with status 1.
    func giveUp(_ message: Logger.Message, _ metadata: Logger.Metadata, logger: Logger) async throws -> Never {
        logger.error(message, metadata: metadata)
        await stopAll(logger: logger)
        throw ExitCode(1)
    }

    /// Runs what started as one service group until SIGTERM or SIGINT, then stops each part in
    /// reverse order. `onReady` is called once every signal is trapped (a SIGTERM from then on
    /// stops the daemon gracefully), `onHangup` for each SIGHUP until the group stops.
    func runUntilStopped(
        onReady: @escaping @Sendable () -> Void, onHangup: @escaping @Sendable () async -> Void,
        onStopping: @escaping @Sendable () -> Void = {}, logger: Logger
    ) async throws {
        var services: [ServiceGroupConfiguration.ServiceConfiguration] = stops.map { part in
            .init(service: StopOnShutdown(name: part.name, stop: part.stop, logger: logger))
        }
        stops = []
        // Last, so it is the first to end: no reload starts once stopping has begun.
        services.append(.init(service: HangupReloads(onReady: onReady, onHangup: onHangup, onStopping: onStopping)))
        let group = ServiceGroup(
            configuration: .init(services: services, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        try await group.run()
    }
}

/// A started part of the daemon as a service: it runs until the group shuts down gracefully, then
/// stops the part.
struct StopOnShutdown: Service {
    var name: String
    var stop: @Sendable () async throws -> Void
    var logger: Logger

    func run() async throws {
        // Cancelled rather than shut down (the group failed): the part is stopped all the same.
        try? await gracefulShutdown()
        logger.info("stopping", metadata: ["service": "\(name)"])
        do { try await stop() } catch {
            logger.warning("stopping failed", metadata: ["service": "\(name)", "error": "\(error)"])
        }
    }
}

/// SIGHUP asks for a reload (the config and zone files read again), one at a time, until the
/// group shuts down. The group traps SIGTERM and SIGINT before it starts its services, so once
/// this has trapped SIGHUP too, every signal is handled: then `onReady`. Once the group shuts
/// down, `onStopping`.
struct HangupReloads: Service {
    var onReady: @Sendable () -> Void
    var onHangup: @Sendable () async -> Void
    var onStopping: @Sendable () -> Void

    func run() async throws {
        let hangups = await UnixSignalsSequence(trapping: .sighup)
        onReady()
        for await _ in hangups.cancelOnGracefulShutdown() {
            await onHangup()
        }
        onStopping()
    }
}
