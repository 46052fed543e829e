import ArgumentParser
import Foundation
import NearcastAPIModel

/// `nearcast audit [--last N]`: the last changes made through the API, oldest first; in a fleet,
/// every server's, each with the server that took it.
struct Audit: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print the last changes from the audit log: when, who (and on which server, in a fleet), what.")

    @OptionGroup var options: APIOptions

    @Option(name: .long, help: "How many entries (1 to 1000).")
    var last = 20

    func validate() throws {
        guard (1...1000).contains(last) else { throw ValidationError("--last must be from 1 to 1000") }
    }

    func run() async throws {
        try await Nodes.reportingFailures {
            let client = try options.client(role: .read)
            let entries = try await client.get("/v1/audit", query: [("last", "\(last)")], as: [AuditEntry].self)
            for e in entries { print(Self.line(e)) }
        }
    }

    /// `TIME  WHO[ on SERVER]  ACTION TARGET (DETAIL): OUTCOME`.
    static func line(_ e: AuditEntry) -> String {
        let who = e.server.map { "\(e.who) on \($0)" } ?? e.who
        return "\(e.time)  \(who)  \(e.action) \(e.target)" + (e.detail.isEmpty ? "" : " (\(e.detail))")
            + ": \(e.outcome)"
    }
}
