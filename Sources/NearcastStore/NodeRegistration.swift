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
        guard let node, d.isEmpty else { throw DiagnosticsError(d) }
        return NodeRegistration(id: node.id, pools: pools, json: text)
    }

    /// The registration as the store keeps it, read back (not checked against a geo section: the
    /// merge skips what no longer fits).
    public init?(stored json: String) {
        guard let m = (try? Yams.compose(yaml: json, .basic))?.mapping, let id = m["id"]?.string else { return nil }
        self.id = id
        pools = (m["pools"]?.sequence.map(Array.init) ?? []).compactMap(\.string)
        self.json = json
    }

    public init(id: String, pools: [String], json: String) {
        self.id = id
        self.pools = pools
        self.json = json
    }

    /// `geo` (YAML) with `registered` nodes added as it would declare them: each appended to its
    /// nodes and to the members of those of its pools that exist. A registration whose id the
    /// section declares itself is left out (the section wins). Linear in the nodes: a fleet
    /// merges its thousands of registrations at each one that comes (each pool's members are
    /// appended once, and no scalar is typed by the default resolver's regular expressions).
    public static func merge(_ registered: [NodeRegistration], into geo: String) -> String {
        guard !registered.isEmpty, let root = try? Yams.compose(yaml: geo, .basic), var m = root.mapping else {
            return geo
        }
        let declared = Set(ids(m["nodes"]))
        var nodes = m["nodes"]?.sequence ?? Node.Sequence()
        var joining: [String: [Node]] = [:]
        for r in registered.sorted(by: { $0.id < $1.id }) where !declared.contains(r.id) {
            guard var entry = (try? Yams.compose(yaml: r.json, .basic))?.mapping else { continue }
            entry["pools"] = nil
            nodes.append(.mapping(entry))
            for pool in Set(r.pools) { joining[pool, default: []].append(Node(r.id, Tag(.str, .basic))) }
        }
        var pools = m["pools"]?.sequence ?? Node.Sequence()
        for i in pools.indices {
            guard var pool = pools[i].mapping, let id = pool["id"]?.string, let more = joining[id] else { continue }
            var members = pool["members"]?.sequence ?? Node.Sequence()
            members.append(contentsOf: more)
            pool["members"] = .sequence(members)
            pools[i] = .mapping(pool)
        }
        m["nodes"] = .sequence(nodes)
        if !pools.isEmpty { m["pools"] = .sequence(pools) }
        return (try? Yams.serialize(node: .mapping(m))) ?? geo
    }

    /// The ids of a list of mappings (nodes or pools).
    static func ids(_ list: Node?) -> [String] {
        (list?.sequence.map(Array.init) ?? []).compactMap { $0.mapping?["id"]?.string }
    }
}
