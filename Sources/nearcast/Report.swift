import ArgumentParser
import NearcastAPIModel

/// `nearcast report ID [--failing] [--detail TEXT]`: a node agent's health report (a heartbeat
/// unless `--failing`), for nodes with a `report` check.
struct Report: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Post a node's health report (a heartbeat unless --failing), as its agent does.",
        discussion: """
            The node needs a `{ type: report, stale-after: SECONDS }` check; without a report for that long it
            counts as failing. Run it from cron or a timer more often than stale-after. The token is the node's
            agent token (agent:ID or agent) or a write token.
            """)

    @OptionGroup var options: APIOptions
    @Argument(help: "The node's id.") var id: String
    @Flag(help: "Report the node as failing (it is taken out after the check's fall reports).") var failing = false
    @Option(help: ArgumentHelp("Words for the daemon's log.", valueName: "TEXT")) var detail: String?

    func run() async throws {
        try await Nodes.reportingFailures {
            let client = try options.client(
                choosing: { $0.mayReport(for: id) }, need: "that may report for \(id) (agent:\(id), agent, or write)")
            let status = try await client.post(
                "/v1/nodes/\(id)/report", body: NodeReport(ok: !failing, detail: detail), as: NodeStatus.self)
            print(NodeCommand.line(status))
        }
    }
}
