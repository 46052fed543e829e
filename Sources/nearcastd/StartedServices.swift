import ArgumentParser
import Logging

/// What the daemon has started so far, stopped in the reverse order: when start-up fails half
/// way (nothing is left running or attached) and when the daemon stops.
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
}
