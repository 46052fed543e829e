import Logging
import NIOPosix
import NearcastControl
import NearcastDataPath
import NearcastFleet
import NearcastHealth
import NearcastServer
import ServiceLifecycle

/// A part of the daemon that holds what it works with from the moment its step starts it: the
/// event loops, bound sockets, an open query log, an attached XDP program, running health checks,
/// a watch on the store (ARCHITECTURE §7). It has to hold them before the group runs (the ports
/// are announced, and a start that cannot bind fails before `ready`), so it is not a Service that
/// acquires in `run()`: from its start it is either stopped by a start that gives up, or run in the
/// daemon's group as a `PartService` until the group's graceful shutdown reaches it, then stopped.
/// Should it end on its own meanwhile, that is a failure: the group stops every part, in reverse.
protocol DaemonPart: Sendable {
    /// Lets go of what the part holds; called once.
    func stop() async throws
    /// Returns, or throws, when the part has ended on its own before it was stopped. A part that
    /// cannot end on its own waits until cancelled (the default).
    func ended() async throws
}

extension DaemonPart {
    func ended() async throws {
        while true { try await Task.sleep(for: .seconds(3600)) }
    }
}

/// The slow path's event loops: the TCP listeners and connections, timers, health checks.
struct EventLoops: DaemonPart {
    var group: MultiThreadedEventLoopGroup
    func stop() async throws { try await group.shutdownGracefully() }
}

/// The slow path's UDP and TCP listeners. A TCP listener closed under the daemon ends the part:
/// the daemon would no longer answer on an address it announced.
struct DNSListeners: DaemonPart {
    var server: DNSServer
    func stop() async { await server.stop() }
    func ended() async throws {
        try await server.anyListenerClosed()
        throw DaemonPartEnded(reason: "a TCP listener closed")
    }
}

/// The query log (dnstap): closed last among the slow path's parts, once nothing logs any more,
/// and the messages it had to drop (a reader too slow) said then.
struct QueryLogPart: DaemonPart {
    var log: QueryLog
    var logger: Logger
    func stop() {
        if log.dropped > 0 { logger.warning("dnstap messages dropped", metadata: ["count": "\(log.dropped)"]) }
        log.close()
    }
}

/// The XDP program attached, and its maps: detached on stop unless the settings keep it.
extension XDPDeployment: DaemonPart {}

/// The NOTIFY sender's thread and sockets: NOTIFYs not answered by the stop are not sent again.
extension ZoneNotifier: DaemonPart {}

/// The secondary zones' refresh: transfers under way end at their deadline, unserved.
extension SecondaryZones: DaemonPart {}

/// The geo nodes' health checks.
extension HealthMonitor: DaemonPart {}

/// The fleet store's watch, applying the other servers' changes as they come.
extension StoreMirror: DaemonPart {}

/// A part that ended on its own, which it should not while the daemon runs.
struct DaemonPartEnded: Error, CustomStringConvertible {
    var reason: String
    var description: String { "ended on its own: \(reason)" }
}

/// A started part of the daemon as a service of the group: it runs until the group's graceful
/// shutdown reaches it, or the group is cancelled (another part failed), or the part ends on its
/// own; then the part is stopped, and in the last case the service fails with why.
struct PartService: Service {
    var name: String
    var part: any DaemonPart
    var logger: Logger

    func run() async throws {
        let part = self.part
        // The first to come of the part's end (why it ended) and the shutdown (nil); the end's
        // wait, cancelled because the shutdown came first or the group failed, gives no outcome.
        let ending: (any Error)? = await withTaskGroup(of: (any Error)??.self) { waits in
            waits.addTask {
                do {
                    try await part.ended()
                    return DaemonPartEnded(reason: "no reason given")
                } catch {
                    if Task.isCancelled { return .none }
                    return .some(error)
                }
            }
            waits.addTask {
                try? await gracefulShutdown()
                return .some(nil)
            }
            defer { waits.cancelAll() }
            for await outcome in waits {
                if let outcome { return outcome }
            }
            return nil
        }
        if let ending {
            logger.error("a part ended on its own", metadata: ["service": "\(name)", "error": "\(ending)"])
        }
        logger.info("stopping", metadata: ["service": "\(name)"])
        do { try await part.stop() } catch {
            logger.warning("stopping failed", metadata: ["service": "\(name)", "error": "\(error)"])
        }
        if let ending { throw ending }
    }
}
