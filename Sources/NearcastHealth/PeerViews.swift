import NearcastGeo

/// A fleet's other servers' views of its nodes (ARCHITECTURE §13), as the fleet's follower reads
/// them from the store: one value, held by the health monitor alone and weighed there with its
/// own checks. Kept by node, as the monitor asks for them.
public struct PeerViews: Sendable, Equatable {
    /// One server's view of one node, changed (nil: gone, its key deleted or its lease ended).
    public struct Change: Sendable, Equatable {
        public var server: String
        public var node: String
        public var view: HealthState?

        public init(server: String, node: String, view: HealthState?) {
            self.server = server
            self.node = node
            self.view = view
        }
    }

    /// node -> server -> view.
    private var byNode: [String: [String: HealthState]] = [:]

    public init() {}

    /// The views `changes` leave, applied in order to none.
    public init(_ changes: some Sequence<Change>) {
        for c in changes { apply(c) }
    }

    /// True when no peer has a view of any node (a server alone, or cut off from its peers).
    public var isEmpty: Bool { byNode.isEmpty }

    /// The servers that have a view of some node.
    public var servers: [String] { Set(byNode.values.flatMap(\.keys)).sorted() }

    public mutating func apply(_ c: Change) {
        byNode[c.node, default: [:]][c.server] = c.view
        if byNode[c.node]?.isEmpty == true { byNode[c.node] = nil }
    }

    /// The peers' views of `node`, by server.
    public func of(_ node: String) -> [String: HealthState] { byNode[node] ?? [:] }
}

extension ObserversConfig {
    /// The observers' verdict on a node from this server's own view and its peers': down where
    /// enough of them see it down, degraded where enough see it down or degraded, else up.
    /// Without peers, this server's own view.
    public func judge(own: HealthState, peers: some Collection<HealthState>) -> HealthState {
        guard !peers.isEmpty else { return own }
        let total = peers.count + 1
        let down = peers.count { $0 == .down } + (own == .down ? 1 : 0)
        if isEnough(down, of: total) { return .down }
        let notUp = peers.count { $0 == .down || $0 == .degraded } + (own == .down || own == .degraded ? 1 : 0)
        return isEnough(notUp, of: total) ? .degraded : .up
    }
}
