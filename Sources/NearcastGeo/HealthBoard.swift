import Synchronization

/// What a node's health says about answering with it (ARCHITECTURE §6).
public enum HealthState: String, Sendable, CaseIterable, Codable {
    /// Every check passes: answered.
    case up
    /// Some checks fail, not all: still answered, and counted.
    case degraded
    /// Every check fails (or an operator forced it down): not answered.
    case down
    /// Taken out by an operator: not answered.
    case drained

    /// Whether the node is answered with.
    public var isServing: Bool { self == .up || self == .degraded }
}

/// The one place a node's health is read from (ARCHITECTURE §6): each node's state and each pool's
/// TTL cap, by id, for the daemon's whole life, across every compile and reload. The health monitor
/// decides and is its only writer; the slow path's answers, the fast path's map writes, explain
/// and the API read it. A node or pool the board does not hold (new in a compile the monitor has
/// not followed yet, or a table built without a monitor) is in its cold-start state, which the
/// compile knows (`GeoTable.Health`).
public final class HealthBoard: Sendable {
    /// The board at one moment.
    public struct Snapshot: Equatable, Sendable {
        public var nodes: [String: HealthState]
        public var ttlCaps: [String: UInt32]

        public init(nodes: [String: HealthState] = [:], ttlCaps: [String: UInt32] = [:]) {
            self.nodes = nodes
            self.ttlCaps = ttlCaps
        }
    }

    private let state: Mutex<Snapshot>

    public init(_ snapshot: Snapshot = Snapshot()) { state = Mutex(snapshot) }

    /// Everything on the board now, read at once.
    public var snapshot: Snapshot { state.withLock { $0 } }

    /// A node's state now; nil: not on the board.
    public func state(of node: String) -> HealthState? { state.withLock { $0.nodes[node] } }

    /// Sets a node's state; nil takes the node off the board.
    public func set(_ node: String, _ s: HealthState?) { state.withLock { $0.nodes[node] = s } }

    /// Puts `snapshot` on the board in place of everything on it.
    public func replace(_ snapshot: Snapshot) { state.withLock { $0 = snapshot } }

    /// Sets a pool's TTL cap (UInt32.max: none); nil takes the pool off the board.
    public func setTTLCap(_ pool: String, _ cap: UInt32?) { state.withLock { $0.ttlCaps[pool] = cap } }
}
