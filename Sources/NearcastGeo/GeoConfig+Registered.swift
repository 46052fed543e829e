/// Nodes that registered themselves with a fleet (ARCHITECTURE §13), added to the geo section a
/// server serves as if it declared them: values parsed once when their registration came, not
/// text merged into the section and read again at every reload.
extension GeoConfig {
    /// This section with `registered` nodes added, in order of id: each appended to the nodes and
    /// to the members of those of `pools` that exist here. A node whose id the section declares
    /// is left out (the section wins).
    public func registering(_ registered: [(node: NodeConfig, pools: [String])]) -> GeoConfig {
        guard !registered.isEmpty else { return self }
        var out = self
        let declared = Set(nodes.map(\.id))
        var joining: [String: [String]] = [:]
        for r in registered.sorted(by: { $0.node.id < $1.node.id }) where !declared.contains(r.node.id) {
            out.nodes.append(r.node)
            for pool in Set(r.pools) { joining[pool, default: []].append(r.node.id) }
        }
        for i in out.pools.indices {
            if let more = joining[out.pools[i].id] { out.pools[i].members += more }
        }
        return out
    }
}
