import Logging
import NIOCore
import NearcastAPIModel
import NearcastBasics
import NearcastDataPath
import NearcastGeo
import NearcastHealth
import Synchronization

/// Connects the health monitor to what answers (ARCHITECTURE §2, §6): the monitor writes each change
/// of a node's state on the health board, which the responders read; then the node's entry in the
/// XDP nodes map is written as the board says. A change of a pool's TTL cap the same, for the
/// pool. Both are logged with the reason.
package enum HealthWiring {
    /// What the monitor checks for `config`: each node's checks and its cold-start state.
    static func plan(_ config: GeoConfig) -> [String: (checks: [HealthMonitor.Scheduled], initial: HealthState)] {
        var nodes: [String: (checks: [HealthMonitor.Scheduled], initial: HealthState)] = [:]
        for n in config.nodes {
            nodes[n.id] = (
                n.checks.enumerated().map { HealthMonitor.Scheduled($0.element, index: $0.offset) },
                n.initiallyUp ? .up : .down
            )
        }
        return nodes
    }

    /// Starts monitoring every geo node (none while there are no geo names: a reload may add
    /// them): those without checks are up unless an operator says otherwise (drain, force-down).
    /// `observerName`: this server's name among a fleet's observers (nil: not in a fleet).
    package static func start(
        live: LiveGeo, fastPath: FastPath?, group: any EventLoopGroup, writes: HealthWriteLog,
        observerName: String? = nil, logger: Logger
    ) async -> HealthMonitor {
        let config = live.current?.config ?? GeoConfig()
        let nodes = plan(config)
        let board = live.board
        let m = HealthMonitor(
            checker: HealthChecker(group: group), nodes: nodes, pools: config.pools, observers: config.observers,
            observerName: observerName, board: board,
            onChange: { change in
                do {
                    if try fastPath?.writeNodeHealth(change.node) == true {
                        writes.nodeWritten(after: change.decidedAt)
                    }
                } catch {
                    logger.error(
                        "node health not written to the fast path",
                        metadata: ["node": "\(change.node)", "error": "\(error)"])
                }
                writes.nodeChanged()
                logger.notice(
                    "node health changed",
                    metadata: [
                        "node": "\(change.node)", "from": "\(change.from)", "to": "\(change.to)",
                        "reason": "\(change.reason)",
                    ])
                // A pool with no member left to answer falls back on its names' all-down policy
                // (ARCHITECTURE §5: always logged; XDP counts its fail-open answers).
                if change.from.isServing != change.to.isServing, let current = live.current {
                    let config = current.config
                    let health = current.table.health
                    for pool in config.pools where pool.members.contains(change.node) {
                        let othersDown = pool.members.allSatisfy { $0 == change.node || !health.isServing($0) }
                        guard othersDown else { continue }
                        if change.to.isServing {
                            logger.notice(
                                "pool has a node up again", metadata: ["pool": "\(pool.id)", "node": "\(change.node)"])
                        } else {
                            logger.warning(
                                "every node of the pool is down: its names answer by their all-down policy",
                                metadata: [
                                    "pool": "\(pool.id)",
                                    "names":
                                        "\(config.names.filter { $0.pool == pool.id }.map { "\($0.name) \($0.type) \($0.allDown.rawValue)" })",
                                ])
                        }
                    }
                }
            },
            onPoolTTL: { change in
                do { if try fastPath?.writePoolTTLCap(change.pool) == true { writes.mapWritten() } } catch {
                    logger.error(
                        "pool TTL not written to the fast path",
                        metadata: ["pool": "\(change.pool)", "error": "\(error)"])
                }
                writes.poolChanged()
                logger.notice(
                    "pool TTL changed",
                    metadata: [
                        "pool": "\(change.pool)", "settled": "\(change.settled)",
                        "ttl-cap": "\(change.cap == .max ? "none" : "\(change.cap)")",
                    ])
            })
        await m.start()
        logger.info(
            "health checks running",
            metadata: ["nodes": "\(nodes.count)", "checks": "\(nodes.values.map(\.checks.count).reduce(0, +))"])
        return m
    }
}

/// Counts health changes and the map writes they make, and keeps the time from decision to write
/// of the most recent node changes, for `GET /v1/stats`.
package final class HealthWriteLog: Sendable {
    private struct State {
        var nodeChanges = 0
        var poolChanges = 0
        var mapWrites = 0
        var latencies: [Double] = []  // microseconds, a ring of `keep`
        var next = 0
    }
    private let state = Mutex(State())
    static let keep = 4096
    /// Called after each change of a node's state or a pool's TTL cap (the dashboard's feed).
    private let listeners = Mutex<[@Sendable () -> Void]>([])

    package init() {}

    /// Calls `listener` after every change from now on (on the monitor's task: it must not block).
    package func onChange(_ listener: @escaping @Sendable () -> Void) { listeners.withLock { $0.append(listener) } }

    private func changed() { for l in listeners.withLock({ $0 }) { l() } }

    func nodeChanged() {
        state.withLock { $0.nodeChanges += 1 }
        changed()
    }

    func nodeWritten(after decided: ContinuousClock.Instant) {
        let d = ContinuousClock.now - decided
        let micros = d.seconds * 1e6
        state.withLock { s in
            s.mapWrites += 1
            if s.latencies.count < Self.keep { s.latencies.append(micros) } else { s.latencies[s.next] = micros }
            s.next = (s.next + 1) % Self.keep
        }
    }

    func poolChanged() {
        state.withLock { $0.poolChanges += 1 }
        changed()
    }

    func mapWritten() { state.withLock { $0.mapWrites += 1 } }

    /// The changes of nodes' states and pools' TTL caps so far.
    package var changes: Int { state.withLock { $0.nodeChanges + $0.poolChanges } }

    package var report: HealthWrites {
        let s = state.withLock { $0 }
        let sorted = s.latencies.sorted()
        func at(_ q: Double) -> Double {
            sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int(Double(sorted.count) * q))]
        }
        return HealthWrites(
            nodeChanges: s.nodeChanges, poolChanges: s.poolChanges, mapWrites: s.mapWrites, p50Micros: at(0.5),
            p99Micros: at(0.99),
            maxMicros: sorted.last ?? 0, samples: sorted.count)
    }
}
