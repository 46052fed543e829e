import NearcastAPIModel
import NearcastServer

/// A daemon with nothing to say: no counters, no status, no metrics, and no reload.
struct IdleDaemonDesk: DaemonDesk {
    struct NotHere: Error {}

    func stats() throws -> StatsReport { StatsReport(uptime: 0, xdp: nil) }
    func status() async throws -> StatusReport { throw NotHere() }
    func metrics() async throws -> [UInt8] { [] }
    func reload(by: String) async throws(ReloadError) -> ReloadReport { throw .needsRestart(["everything"]) }
}

/// Nodes as `read` returns them, no pools, and a listener for changes handed to `listening`.
struct ReadNodesDesk: HealthDesk {
    var read: @Sendable () -> [NodeStatus]
    var listening: @Sendable (@escaping @Sendable () -> Void) -> Void = { _ in }

    func nodes() async -> [NodeStatus] { read() }
    func pools() async -> [PoolStatus] { [] }
    func report(_ node: String, _ report: NodeReport) async -> NodeReportOutcome { .unknownNode }
    func setOverride(_ node: String, kind: String?, seconds: Double?, by: String) async throws -> NodeStatus? { nil }
    func onChange(_ listener: @escaping @Sendable () -> Void) { listening(listener) }
}
