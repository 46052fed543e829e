import ArgumentParser
import Foundation
import NearcastAPIModel

/// `nearcast nodes`: every geo node's health and override, then every pool's TTL state.
struct Nodes: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the geo nodes with their health (up, degraded, down, drained) and the pools' TTL state.")

    @OptionGroup var options: APIOptions

    func run() async throws {
        try await Self.reportingFailures {
            let client = try options.client(role: .read)
            let list = try await client.get("/v1/nodes", as: [NodeStatus].self)
            print(list.map(NodeCommand.line).joined(separator: "\n"))
            let pools = try await client.get("/v1/pools", as: [PoolStatus].self)
            if !pools.isEmpty { print("\n" + pools.map(Self.poolLine).joined(separator: "\n")) }
        }
    }

    static func poolLine(_ p: PoolStatus) -> String {
        let name = "pool " + p.id
        return name.padding(toLength: max(12, name.count), withPad: " ", startingAt: 0) + "  "
            + (p.settled ? "settled" : "unsettled") + (p.ttlCap.map { ", TTL at most \($0) s" } ?? "") + "  ["
            + p.members.joined(separator: " ") + "]"
    }

    static func reportingFailures(_ body: () async throws -> Void) async throws {
        do { try await body() } catch let e as APIClient.Failure {
            FileHandle.standardError.write(("nearcast: " + e.description + "\n").data(using: .utf8)!)
            throw ExitCode(1)
        }
    }
}

/// `nearcast node drain|undrain|force-up|force-down ID [--for DURATION]`: an operator's word on a node.
struct NodeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "node",
        abstract: "Drain a node (or force it up or down) for a while or until undrained.",
        discussion: "nearcast node drain fra1 --for 10m; nearcast node undrain fra1")

    enum Action: String, ExpressibleByArgument, CaseIterable {
        case drain, undrain
        case forceUp = "force-up"
        case forceDown = "force-down"
    }

    @OptionGroup var options: APIOptions
    @Argument(help: "drain, undrain, force-up or force-down.") var action: Action
    @Argument(help: "The node's id.") var id: String
    @Option(
        name: .customLong("for"),
        help: ArgumentHelp("How long: 90s, 10m, 2h (default: until undrained).", valueName: "DURATION"))
    var duration: String?

    func validate() throws {
        if let d = duration, Self.seconds(d) == nil {
            throw ValidationError("--for '\(d)' is not a duration such as 90s, 10m or 2h")
        }
        if duration != nil && action == .undrain {
            throw ValidationError("--for goes with drain, force-up or force-down")
        }
    }

    func run() async throws {
        try await Nodes.reportingFailures {
            var path = "/v1/nodes/\(id)/\(action.rawValue)"
            if let d = duration, let s = Self.seconds(d) { path += "?for=\(Int(s))" }
            let status = try await options.client(role: .write).post(path, as: NodeStatus.self)
            print(Self.line(status))
        }
    }

    static func line(_ n: NodeStatus) -> String {
        var s = n.id.padding(toLength: max(12, n.id.count), withPad: " ", startingAt: 0) + "  " + n.state
        if let o = n.override {
            s += "  (\(o)" + (n.overrideSecondsLeft.map { String(format: ", %.0f s left", $0) } ?? "") + ")"
        }
        // In a fleet, each observer's own view, this server's first.
        if let views = n.observers, !views.isEmpty {
            s += "  seen: " + views.map { "\($0.server) \($0.view)" }.joined(separator: ", ")
        }
        if let r = n.lastReason, let age = n.secondsSinceChange {
            s += "  \(counted(n.changes, "change")), " + String(format: "last %.0f s ago: ", age) + r
        }
        return s
    }

    /// "90s", "10m", "2h", or a bare number of seconds.
    static func seconds(_ text: String) -> Double? {
        let units: [Character: Double] = ["s": 1, "m": 60, "h": 3600, "d": 86400]
        if let u = text.last, let f = units[u], let n = Double(text.dropLast()), n > 0 { return n * f }
        return Double(text).flatMap { $0 > 0 ? $0 : nil }
    }
}
