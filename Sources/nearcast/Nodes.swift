import ArgumentParser
import Foundation
import NearcastAPIModel
import Yams

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

/// `nearcast node drain|undrain|force-up|force-down ID [--for DURATION]`: an operator's word on a
/// node; `nearcast node register|deregister`: a node joining or leaving a fleet.
struct NodeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "node",
        abstract: "Drain a node (or force it up or down) for a while or until undrained; register a node with a fleet.",
        discussion: "nearcast node drain fra1 --for 10m; nearcast node undrain fra1",
        subcommands: [
            NodeOverride<Drain>.self, NodeOverride<Undrain>.self, NodeOverride<ForceUp>.self,
            NodeOverride<ForceDown>.self, NodeRegister.self, NodeDeregister.self,
        ])

    enum Action: String, CaseIterable {
        case drain, undrain
        case forceUp = "force-up"
        case forceDown = "force-down"
    }
    protocol Kind {
        static var action: Action { get }
        static var abstract: String { get }
    }
    enum Drain: Kind {
        static let action = Action.drain
        static let abstract = "Drain a node (no answers go to it), for a while or until undrained."
    }
    enum Undrain: Kind {
        static let action = Action.undrain
        static let abstract = "Take back a node's override (drain, force-up or force-down)."
    }
    enum ForceUp: Kind {
        static let action = Action.forceUp
        static let abstract = "Force a node up whatever its checks say, for a while or until undrained."
    }
    enum ForceDown: Kind {
        static let action = Action.forceDown
        static let abstract = "Force a node down whatever its checks say, for a while or until undrained."
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

/// `nearcast node drain|undrain|force-up|force-down ID [--for DURATION]`.
struct NodeOverride<K: NodeCommand.Kind>: AsyncParsableCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(commandName: K.action.rawValue, abstract: K.abstract)
    }

    @OptionGroup var options: APIOptions
    @Argument(help: "The node's id.") var id: String
    @Option(
        name: .customLong("for"),
        help: ArgumentHelp("How long: 90s, 10m, 2h (default: until undrained).", valueName: "DURATION"))
    var duration: String?

    func validate() throws {
        if let d = duration, NodeCommand.seconds(d) == nil {
            throw ValidationError("--for '\(d)' is not a duration such as 90s, 10m or 2h")
        }
        if duration != nil && K.action == .undrain {
            throw ValidationError("--for goes with drain, force-up or force-down")
        }
    }

    func run() async throws {
        try await Nodes.reportingFailures {
            var path = "/v1/nodes/\(id)/\(K.action.rawValue)"
            if let d = duration, let s = NodeCommand.seconds(d) { path += "?for=\(Int(s))" }
            let status = try await options.client(role: .write).post(path, as: NodeStatus.self)
            print(NodeCommand.line(status))
        }
    }
}

/// `nearcast node register ID --ipv4 A --latitude X --longitude Y --pool P …`: a node joins a
/// fleet (run from the node with its agent token, or by an operator with a write token).
struct NodeRegister: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "register",
        abstract: "Register a node with a fleet: every server answers with it and checks it.",
        discussion: """
            nearcast node register edge7 --ipv4 192.0.2.70 --latitude 50.1 --longitude 8.7 --country DE \\
              --pool web --check '{type: http, port: 80, path: /health}'
            Registering again replaces the node's registration. The token is the node's agent token
            (agent:ID or agent) or a write token.
            """)

    @OptionGroup var options: APIOptions
    @Argument(help: "The node's id.") var id: String
    @Option(help: "Its IPv4 address (what A answers give).") var ipv4: String?
    @Option(help: "Its IPv6 address (what AAAA answers give).") var ipv6: String?
    @Option(help: "Where it is (nodes are never geolocated from their address).") var latitude: Double
    @Option(help: "Where it is.") var longitude: Double
    @Option(help: "ISO 3166-1 country code (e.g. DE).") var country: String?
    @Option(help: "ISO 3166-2 subdivision, without the country (e.g. HE).") var region: String?
    @Option(help: "Its capacity relative to the pool's other nodes (the geo section's weight).") var weight: Double?
    @Option(name: .customLong("pool"), help: "A pool it joins (repeatable).") var pools: [String] = []
    @Option(
        name: .customLong("check"),
        help: ArgumentHelp(
            "A health check, as in the geo section, e.g. '{type: tcp, port: 443}' (repeatable).", valueName: "YAML"))
    var checks: [String] = []

    func validate() throws {
        if pools.isEmpty { throw ValidationError("give at least one --pool: the pools the node joins") }
        if ipv4 == nil && ipv6 == nil { throw ValidationError("give --ipv4 or --ipv6: what the geo names answer") }
        for c in checks where !((try? Yams.load(yaml: c)) is [String: Any]) {
            throw ValidationError("--check '\(c)' is not a mapping such as '{type: tcp, port: 443}'")
        }
    }

    /// The registration as the API takes it.
    var registration: [String: Any] {
        var r: [String: Any] = ["id": id, "latitude": latitude, "longitude": longitude, "pools": pools]
        r["ipv4"] = ipv4
        r["ipv6"] = ipv6
        r["country"] = country
        r["region"] = region
        r["weight"] = weight
        if !checks.isEmpty { r["checks"] = checks.compactMap { (try? Yams.load(yaml: $0)) as? [String: Any] } }
        return r
    }

    func run() async throws {
        try await Nodes.reportingFailures {
            let client = try options.client(
                choosing: { $0.mayReport(for: id) }, need: "that may register \(id) (agent:\(id), agent, or write)")
            let body = try JSONSerialization.data(withJSONObject: registration, options: [.sortedKeys])
            let status = try await client.call("POST", "/v1/nodes", body: body, as: NodeStatus.self)
            print(NodeCommand.line(status))
        }
    }
}

/// `nearcast node deregister ID`: a node leaves a fleet.
struct NodeDeregister: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "deregister", abstract: "End a node's registration: it is no longer answered or checked.")

    @OptionGroup var options: APIOptions
    @Argument(help: "The node's id.") var id: String

    func run() async throws {
        try await Nodes.reportingFailures {
            let client = try options.client(
                choosing: { $0.mayReport(for: id) }, need: "that may deregister \(id) (agent:\(id), agent, or write)")
            _ = try await client.call("DELETE", "/v1/nodes/\(id)", as: [String: String].self)
            print("\(id) deregistered")
        }
    }
}
