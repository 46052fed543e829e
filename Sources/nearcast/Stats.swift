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
                func rates(_ a: [StatsReport.Counter]?, _ b: [StatsReport.Counter]?) -> [String: Double] {
                    guard seconds > 0, let a, let b else { return [:] }
                    let before = Dictionary(a.map { ($0.name, $0.value) }, uniquingKeysWith: { x, _ in x })
                    return Dictionary(
                        b.map { ($0.name, Double($0.value &- (before[$0.name] ?? 0)) / seconds) },
                        uniquingKeysWith: { x, _ in x })
                }
                // Home and clear on a terminal, so the table stays in place; a pipe gets blocks.
                let table = Self.render(
                    now, rates: rates(previous.xdp, now.xdp), slowRates: rates(previous.slowPath, now.slowPath))
                let block = (inPlace ? "\u{1B}[H\u{1B}[J" : "") + table + (inPlace ? "" : "\n")
                FileHandle.standardOutput.write(block.data(using: .utf8)!)  // unbuffered: a pipe sees each block
                previous = now
                shown += 1
            }
        } catch let e as APIClient.Failure {
            FileHandle.standardError.write(("nearcast: " + e.description + "\n").data(using: .utf8)!)
            throw ExitCode(1)
        }
    }

    /// The counters as tables (XDP's verdicts, the slow path's replies): reason, total, and per
    /// second when `rates` (and `slowRates`) are known.
    static func render(_ report: StatsReport, rates: [String: Double]?, slowRates: [String: Double]? = nil) -> String {
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
        var out =
            report.xdp.map {
                table("XDP fast path: verdicts by reason, all CPUs, since its maps were created", $0, rates)
            } ?? "XDP fast path: off (nearcastd runs without --xdp)\n"
        if let slow = report.slowPath {
            out += table(
                "slow path: replies by rcode, and over the rate limit, since nearcastd started", slow, slowRates)
        }
        return out + health
    }

    static func table(_ title: String, _ counters: [StatsReport.Counter], _ rates: [String: Double]?) -> String {
        let width = max(counters.map(\.name.count).max() ?? 0, 6)
        var out = title + "\n"
        out += "  " + "reason".padding(toLength: width, withPad: " ", startingAt: 0) + "  " + Self.pad("total", 16)
        out += rates == nil ? "\n" : "  " + Self.pad("per second", 12) + "\n"
        for c in counters {
            out +=
                "  " + c.name.padding(toLength: width, withPad: " ", startingAt: 0) + "  " + Self.pad("\(c.value)", 16)
            if let r = rates { out += "  " + Self.pad(String(format: "%.0f", r[c.name] ?? 0), 12) }
            out += "\n"
        }
        return out
    }

    static func pad(_ s: String, _ width: Int) -> String {
        String(repeating: " ", count: max(0, width - s.count)) + s
    }
}
