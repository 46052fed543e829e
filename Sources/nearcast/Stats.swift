import ArgumentParser
import Foundation
import NearcastAPIModel

/// `nearcast stats [--watch]`: the XDP fast path's verdicts by reason, from the daemon's API.
struct Stats: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print the XDP fast path's counters by reason; with --watch, refresh them with rates per second."
    )

    @OptionGroup var options: APIOptions

    @Flag(name: .long, help: "Refresh in place every --interval seconds, with rates per second, until interrupted.")
    var watch = false

    @Option(name: .long, help: "Seconds between refreshes with --watch.")
    var interval: Double = 1

    @Option(name: .long, help: ArgumentHelp("Stop after N refreshes with --watch.", visibility: .hidden))
    var count: Int?

    func validate() throws {
        guard interval >= 0.1 else { throw ValidationError("--interval must be at least 0.1 seconds") }
    }

    func run() async throws {
        do {
            let client = try options.client(role: .read)
            var previous = try await client.get("/v1/stats", as: StatsReport.self)
            guard watch else {
                print(Self.render(previous, rates: nil), terminator: "")
                return
            }
            let inPlace = isatty(STDOUT_FILENO) == 1
            var shown = 0
            while count.map({ shown < $0 }) ?? true {
                try await Task.sleep(for: .milliseconds(Int(interval * 1000)))
                let now = try await client.get("/v1/stats", as: StatsReport.self)
                let seconds = now.uptime - previous.uptime
                var rates: [String: Double] = [:]
                if seconds > 0, let a = previous.xdp, let b = now.xdp {
                    for (x, y) in zip(a, b) where x.name == y.name {
                        rates[y.name] = Double(y.value &- x.value) / seconds
                    }
                }
                // Home and clear on a terminal, so the table stays in place; a pipe gets blocks.
                let block = (inPlace ? "\u{1B}[H\u{1B}[J" : "") + Self.render(now, rates: rates) + (inPlace ? "" : "\n")
                FileHandle.standardOutput.write(block.data(using: .utf8)!)  // unbuffered: a pipe sees each block
                previous = now
                shown += 1
            }
        } catch let e as APIClient.Failure {
            FileHandle.standardError.write(("nearcast: " + e.description + "\n").data(using: .utf8)!)
            throw ExitCode(1)
        }
    }

    /// The counters as a table: reason, total, and per second when `rates` are known.
    static func render(_ report: StatsReport, rates: [String: Double]?) -> String {
        var health = ""
        if let h = report.health {
            health =
                "health: \(counted(h.nodeChanges, "node change")), \(counted(h.poolChanges, "pool TTL change")), \(counted(h.mapWrites, "map write"))"
            if h.samples > 0 {
                health += String(
                    format: "; decision to map write p50 %.1f us, p99 %.1f us, max %.1f us (last %d)", h.p50Micros,
                    h.p99Micros, h.maxMicros, h.samples)
            }
            health += "\n"
        }
        guard let xdp = report.xdp else { return "XDP fast path: off (nearcastd runs without --xdp)\n" + health }
        let width = max(xdp.map(\.name.count).max() ?? 0, 6)
        var out = "XDP fast path: verdicts by reason, all CPUs, since its maps were created\n"
        out += "  " + "reason".padding(toLength: width, withPad: " ", startingAt: 0) + "  " + Self.pad("total", 16)
        out += rates == nil ? "\n" : "  " + Self.pad("per second", 12) + "\n"
        for c in xdp {
            out +=
                "  " + c.name.padding(toLength: width, withPad: " ", startingAt: 0) + "  " + Self.pad("\(c.value)", 16)
            if let r = rates { out += "  " + Self.pad(String(format: "%.0f", r[c.name] ?? 0), 12) }
            out += "\n"
        }
        return out + health
    }

    static func pad(_ s: String, _ width: Int) -> String {
        String(repeating: " ", count: max(0, width - s.count)) + s
    }
}
