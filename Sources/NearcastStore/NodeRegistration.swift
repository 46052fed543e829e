import Foundation
import NearcastBasics
import NearcastGeo
import Yams

/// A node that registered itself with a fleet (`POST /v1/nodes`, `nearcast node register`): the
/// geo section's keys for a node (id, addresses, location, weight as its capacity, checks) plus
/// the pools it joins. The store keeps it as JSON under `P nodes/ID`; every server serves it as if
/// the geo section declared it, a member of its pools, checked like any node (ARCHITECTURE §13).
public struct NodeRegistration: Sendable, Equatable {
    public var id: String
    public var pools: [String]
    /// The registration as the store keeps it (the JSON it came as).
    public var json: String
    /// The node as the geo section would declare it (nil: it does not read as one, and is not
    /// served), parsed once, when the registration is read.
    public var node: NodeConfig?

    /// Reads `text` (JSON) and checks it as the geo section checks a node, and against `geo` (the
    /// section it would join, YAML): its pools exist there, and its id is not a node declared
    /// there. Problems are reported against `fileName`.
    public static func parse(_ text: String, joining geo: String?, fileName: String) throws(DiagnosticsError)
        -> NodeRegistration
    {
        var d: [Diagnostic] = []
        func fail(_ n: Node?, _ m: String) {
            d.append(Diagnostic(file: fileName, line: n?.mark?.line ?? 0, message: m))
        }
        guard let root = try? Yams.compose(yaml: text, .basic), var m = root.mapping else {
            throw DiagnosticsError([
                Diagnostic(
                    file: fileName, line: 0,
                    message:
                        "a registration is a JSON object: the keys of a geo node (id, ipv4, ipv6, latitude, longitude, country, region, weight, bias, checks) and pools"
                )
            ])
        }
        let poolsNode = m["pools"]
        m["pools"] = nil
        let node = GeoConfig.parseNode(.mapping(m), fileName, "", fail)
        let pools = (poolsNode?.sequence.map(Array.init) ?? []).compactMap(\.string)
        if poolsNode == nil || pools.isEmpty || pools.count != poolsNode?.sequence?.count {
            fail(poolsNode ?? root, "a registration needs pools: a list of the pool ids the node joins")
        }
        let shared = geo.flatMap { try? Yams.compose(yaml: $0, .basic) }?.mapping
        let declaredPools = Set(Self.ids(shared?["pools"]))
        for p in pools where !declaredPools.contains(p) {
            fail(
                poolsNode,
                "pool \(p) is not in the fleet's geo section (pools: \(declaredPools.sorted().joined(separator: ", ")))"
            )
        }
        if let node, Self.ids(shared?["nodes"]).contains(node.id) {
            fail(root, "node \(node.id) is declared in the fleet's geo section: change it there, not by registration")
        }
        guard var node, d.isEmpty else { throw DiagnosticsError(d) }
        node.declaredAt = Self.declaredAt(node.id)
        return NodeRegistration(id: node.id, pools: pools, json: text, node: node)
    }

    /// The registration as the store keeps it, read back (not checked against a geo section:
    /// `GeoConfig.registering` skips what no longer fits).
    public init?(stored json: String) {
        guard var m = (try? Yams.compose(yaml: json, .basic))?.mapping, let id = m["id"]?.string else { return nil }
        self.id = id
        pools = (m["pools"]?.sequence.map(Array.init) ?? []).compactMap(\.string)
        self.json = json
        m["pools"] = nil
        var ok = true
        node = GeoConfig.parseNode(.mapping(m), "", "") { _, _ in ok = false }
        node?.declaredAt = Self.declaredAt(id)
        if !ok { node = nil }
    }

    public init(id: String, pools: [String], json: String, node: NodeConfig? = nil) {
        self.id = id
        self.pools = pools
        self.json = json
        self.node = node
    }

    /// Where a registered node is declared, for messages (`NodeConfig.declaredAt`).
    static func declaredAt(_ id: String) -> String { "registration of \(id)" }

    /// The registrations that read as nodes, as the geo section takes them
    /// (`GeoConfig.registering`).
    public static func nodes(_ registered: some Sequence<NodeRegistration>) -> [(node: NodeConfig, pools: [String])] {
        registered.compactMap { r in r.node.map { ($0, r.pools) } }
    }

    /// The ids of a list of mappings (nodes or pools).
    static func ids(_ list: Node?) -> [String] {
        (list?.sequence.map(Array.init) ?? []).compactMap { $0.mapping?["id"]?.string }
    }
}
