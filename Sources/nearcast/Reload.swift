import ArgumentParser
import NearcastAPIModel
import NearcastBasics

/// `nearcast reload`: the daemon reads its config and zone files again (as on SIGHUP) and switches
/// to them at once, or refuses and keeps serving what it has.
struct Reload: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Reload the config and zone files; on any error nothing changes and the error is printed.")

    @OptionGroup var options: APIOptions

    func run() async throws {
        try await Nodes.reportingFailures {
            // A reload compiles a new geo section: seconds for a whole GeoLite2-City, more on a busy host.
            let r = try await options.client(role: .admin).post(
                "/v1/reload", timeout: .seconds(600), as: ReloadReport.self)
            var line = "reloaded: \(counted(r.zones, "zone")), \(counted(r.records, "record"))"
            if let c = r.rrsetsChanged { line += " (\(counted(c, "RRset")) changed)" }
            if let n = r.fastPathAnswers, let w = r.fastPathWritten {
                line += "; XDP names table: \(n) answers, \(w) written"
            }
            if r.geoCompiled { line += "; geo section changed and switched in" }
            print(line + String(format: " (%.2f s)", r.seconds))
        }
    }
}
