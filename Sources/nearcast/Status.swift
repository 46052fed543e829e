import ArgumentParser
import Foundation
import NearcastAPIModel

/// `nearcast status`: the daemon at a glance.
struct Status: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show the daemon at a glance: zones, fast path, nodes, pools, state.")

    @OptionGroup var options: APIOptions

    func run() async throws {
        try await Nodes.reportingFailures {
            let s = try await options.client(role: .read).get("/v1/status", as: StatusReport.self)
            print(Self.render(s), terminator: "")
        }
    }

    static func render(_ s: StatusReport) -> String {
        let up = Int(s.uptime)
        var out = "nearcastd \(s.version), up \(up / 86400)d \(up % 86400 / 3600)h \(up % 3600 / 60)m \(up % 60)s\n"
        out +=
            "zones:     "
            + (s.zones.isEmpty
                ? "none"
                : s.zones.map {
                    "\($0.origin) (serial \($0.serial), \($0.records) records"
                        + ($0.checksum.map { ", checksum \($0)" } ?? "") + ")"
                }.joined(separator: ", "))
            + "\n"
        out +=
            "fast path: "
            + (s.xdpInterfaces.isEmpty
                ? "off" : "XDP on \(s.xdpInterfaces.joined(separator: ", ")), \(s.fastPathAnswers ?? 0) answers") + "\n"
        if s.geoNames > 0 {
            let order = ["up", "degraded", "down", "drained"]
            out +=
                "geo:       \(counted(s.geoNames, "name")); nodes "
                + order.compactMap { k in s.nodes[k].map { "\($0) \(k)" } }.joined(separator: ", ") + "\n"
            out +=
                "pools:     "
                + (s.unsettledPools.isEmpty
                    ? "all settled" : "unsettled (low TTL): " + s.unsettledPools.joined(separator: ", ")) + "\n"
        }
        out +=
            "state:     "
            + (s.stateDirectory.map { "\($0) (overrides and audit log kept)" }
                ?? "none: API changes last until a restart") + "\n"
        if let st = s.store {
            out +=
                "store:     etcd \(st.endpoints.joined(separator: " ")) \(st.prefix), revision \(st.revision.map(String.init) ?? "none")"
                + (st.degraded.map { "; DEGRADED: \($0) (serving what was last read)" } ?? "") + "\n"
        }
        return out
    }
}
