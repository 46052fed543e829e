import Logging
import NIOCore
import NearcastCore
import NearcastDataPath
import NearcastHealth

/// Connects the health monitor to what answers (DESIGN §2, §6): each change of a node's state is
/// one write of the board the responders read and one write of the node's entry in the XDP nodes
/// map; each change of a pool's TTL cap the same, for the pool. Both are logged with the reason.
enum HealthWiring {
    /// Starts monitoring every geo node of `config`: those without checks are up unless an
    /// operator says otherwise (drain, force-down).
    static func start(
        config: GeoConfig, table: GeoTable, fastPath: FastPath?, group: any EventLoopGroup, logger: Logger
    ) async -> HealthMonitor {
        var nodes: [String: (checks: [HealthMonitor.Scheduled], initial: HealthState)] = [:]
        for n in config.nodes {
            nodes[n.id] = (n.checks.enumerated().map { HealthMonitor.Scheduled($0.element, index: $0.offset) }, n.initiallyUp ? .up : .down)
        }
        let m = HealthMonitor(
            checker: HealthChecker(group: group), nodes: nodes, pools: config.pools,
            onChange: { change in
                table.board.set(change.node, up: change.to.isServing)
                do { try fastPath?.setNodeHealth(change.node, up: change.to.isServing) } catch {
                    logger.error("node health not written to the fast path", metadata: ["node": "\(change.node)", "error": "\(error)"])
                }
                logger.notice(
                    "node health changed",
                    metadata: ["node": "\(change.node)", "from": "\(change.from)", "to": "\(change.to)", "reason": "\(change.reason)"])
            },
            onPoolTTL: { change in
                table.board.setTTLCap(change.pool, change.cap)
                do { try fastPath?.setPoolTTLCap(change.pool, change.cap) } catch {
                    logger.error("pool TTL not written to the fast path", metadata: ["pool": "\(change.pool)", "error": "\(error)"])
                }
                logger.notice(
                    "pool TTL changed",
                    metadata: [
                        "pool": "\(change.pool)", "settled": "\(change.settled)", "ttl-cap": "\(change.cap == .max ? "none" : "\(change.cap)")",
                    ])
            })
        await m.start()
        logger.info("health checks running", metadata: ["nodes": "\(nodes.count)", "checks": "\(nodes.values.map(\.checks.count).reduce(0, +))"])
        return m
    }
}
