import NearcastAPIModel
import NearcastHealth
import NearcastServer

/// The geo nodes' health as the API's health routes ask for it: the monitor's states and pools,
/// agents' reports, operators' overrides (kept and audited by OperatorChanges), and the changes
/// the dashboard follows (HealthWriteLog).
package struct NodeHealthDesk: HealthDesk {
    let monitor: HealthMonitor
    let changes: OperatorChanges
    let writes: HealthWriteLog

    package init(monitor: HealthMonitor, changes: OperatorChanges, writes: HealthWriteLog) {
        self.monitor = monitor
        self.changes = changes
        self.writes = writes
    }

    package func nodes() async -> [NodeStatus] { await monitor.statuses() }

    package func pools() async -> [PoolStatus] { await monitor.poolStatuses() }

    package func report(_ node: String, _ report: NodeReport) async -> NodeReportOutcome {
        await monitor.report(node, passed: report.ok, detail: report.detail)
    }

    package func setOverride(_ node: String, kind: String?, seconds: Double?, by who: String) async throws
        -> NodeStatus?
    {
        try await changes.setOverride(node, kind: kind, seconds: seconds, who: who)
    }

    package func onChange(_ listener: @escaping @Sendable () -> Void) { writes.onChange(listener) }
}
