import BPFKit
import CNearcastABI
import Foundation
import NearcastBasics
import NearcastGeo
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The geo half of the fast path (ARCHITECTURE §2, §5): the maps one geo compile is written into, each
/// generation's slots of them, and the one-entry writes health changes make.
extension FastPath {
    /// The prefix and candidate maps written for one geo compile (`GeoTable.serial`), held while a
    /// generation slot refers to them; the kernel frees them once neither slot does.
    final class GeoMaps: Sendable {
        let serial: UInt64
        let geo4: BPFOwnedMap
        let geo6: BPFOwnedMap
        let cands: BPFOwnedMap
        /// Node and pool indexes within a half, by id.
        let nodeIndex: [String: UInt32]
        let poolIndex: [String: UInt32]
        /// The spans of the /16s over the IPv4 array, written into the half of nc_geo4_spans of each
        /// generation whose slot holds this compile.
        let spans: [UInt8]
        /// The prefixes written into the IPv6 trie (the compile's own array, not a copy): their
        /// keys, for `drainRetired`.
        let ipv6: [ClassPrefix]
        /// The IPv6 prefixes looked up as IPv4, written into the generation's part of nc_geo_alias.
        let aliases: [GeoAlias]
        /// How many of those `drainRetired` has deleted.
        let drained = Atomic<Int>(0)

        init(
            serial: UInt64, geo4: BPFOwnedMap, geo6: BPFOwnedMap, cands: BPFOwnedMap, nodeIndex: [String: UInt32],
            poolIndex: [String: UInt32], spans: [UInt8], ipv6: [ClassPrefix], aliases: [GeoAlias]
        ) {
            self.serial = serial
            self.geo4 = geo4
            self.geo6 = geo6
            self.cands = cands
            self.nodeIndex = nodeIndex
            self.poolIndex = poolIndex
            self.spans = spans
            self.ipv6 = ipv6
            self.aliases = aliases
        }
    }

    /// Whether geo maps of a compile no generation uses are waiting for `drainRetired`.
    public var hasRetired: Bool { retired.withLock { !$0.isEmpty } }

    /// Empties, a little at a time, the IPv6 tries of compiles no generation uses any more, then
    /// lets them go, their IPv4 arrays with them (an array is freed in one piece). Handed a whole
    /// trie, the kernel frees it in one loop that does not yield the CPU (kernels built without
    /// preemption, as distributions' are): for a GeoLite2-wide compile's tries, two million nodes
    /// and some 160 ms in which nothing else runs on that core, health changes and queries included
    /// (measured: `make bench-health`, when IPv4 was a trie too). Deleted all at once, the entries'
    /// RCU callbacks pile up and the kernel threads that run them hold a core for tens of
    /// milliseconds; `chunk` deletes and a `pause` at a time keep each batch small. Does at most
    /// `slice` deletes and returns whether any retired trie is left, so that the writer's thread
    /// can put a write asked for meanwhile before the rest (GenerationWriter).
    public func drainRetired(slice: Int = 16_384, chunk: Int = 128, pause: Duration = .milliseconds(2)) -> Bool {
        var done = 0
        while done < slice, let maps = retired.withLock({ $0.last }) {
            let total = maps.ipv6.count
            var i = maps.drained.load(ordering: .relaxed)
            while i < total && done < slice {
                try? maps.geo6.map.delete(key: Self.lpmKey(maps.ipv6[i]))
                i += 1
                done += 1
                if done % chunk == 0 { Thread.sleep(forTimeInterval: pause.seconds) }
            }
            maps.drained.store(i, ordering: .relaxed)
            // Empty: let go (the kernel frees an empty trie at once).
            if i == total { retired.withLock { $0.removeAll { $0 === maps } } }
        }
        return retired.withLock { !$0.isEmpty }
    }

    /// Writes generation `gen`'s health: its nodes map and its half of the pools map, as `geo`'s
    /// board says now. A few thousand entries at most: done under the state lock, at the switch.
    /// Returns the nodes and pools as written.
    func writeGeoHealth(_ gen: UInt32, _ maps: GeoMaps?, _ geo: GeoTable?) throws(BPFError) -> (
        [String: (index: UInt32, value: nc_node)], [String: (index: UInt32, cap: UInt32)]
    ) {
        guard let maps, let geo else { return ([:], [:]) }
        let health = geo.health
        var nodeValues: [String: (index: UInt32, value: nc_node)] = [:]
        for n in geo.allNodes {
            guard let i = maps.nodeIndex[n.id] else { continue }
            var v = Self.nodeValue(n)
            v.up = health.isServing(n.id) ? 1 : 0
            nodeValues[n.id] = (i, v)
        }
        var poolCaps: [String: (index: UInt32, cap: UInt32)] = [:]
        for p in geo.pools {
            guard let i = maps.poolIndex[p.id] else { continue }
            poolCaps[p.id] = (i, health.ttlCap(p.id))
        }
        let poolBase = gen * UInt32(NC_POOLS_MAX)
        if !nodeValues.isEmpty {
            let list = Array(nodeValues.values)
            try nodeMaps[Int(gen)].map.updateBatch(
                keys: list.map { Self.bytes(of: $0.index) }, values: list.map { Self.bytes(of: $0.value) })
        }
        if !poolCaps.isEmpty {
            let list = Array(poolCaps.values)
            try pools.updateBatch(
                keys: list.map { Self.bytes(of: poolBase + $0.index) },
                values: list.map { Self.bytes(of: nc_pool(ttl_cap: $0.cap)) })
        }
        return (nodeValues, poolCaps)
    }

    /// Points generation `gen`'s slots at `maps`' prefix and candidate maps and at its own nodes
    /// map, and writes its aliases and IPv4 spans; or empties them.
    func setGeoSlots(_ gen: UInt32, _ maps: GeoMaps?) throws(BPFError) {
        let serial = maps?.serial ?? 0
        if spansWritten.withLock({ $0[Int(gen)] }) != serial {
            geo4SpanWords.write(
                maps?.spans ?? IPv4PrefixArray.noSpans, at: Int(gen) * Int(NC_GEO4_SPANS) * IPv4PrefixArray.spanSize)
            spansWritten.withLock { $0[Int(gen)] = serial }
        }
        let list = maps?.aliases ?? []
        try aliases.updateBatch(
            keys: (0..<UInt32(NC_GEO_ALIASES)).map { Self.bytes(of: gen * UInt32(NC_GEO_ALIASES) + $0) },
            values: (0..<Int(NC_GEO_ALIASES)).map { Self.bytes(of: Self.aliasValue($0 < list.count ? list[$0] : nil)) })
        if let maps {
            try geo4.setInner(gen, to: maps.geo4.map)
            try geo6.setInner(gen, to: maps.geo6.map)
            try cands.setInner(gen, to: maps.cands.map)
            try nodes.setInner(gen, to: nodeMaps[Int(gen)].map)
        } else {
            for m in [geo4, geo6, cands, nodes] { try m.delete(key: Self.bytes(of: gen)) }
        }
    }

    /// A geo name as an answer of its name's record (kind NC_KIND_GEO, an nc_geo_name in its
    /// sections). `rankings`: the compile's count, the stride of its candidates map.
    static func encodeGeo(_ g: GeoTable.Name, rankings: Int) -> NamesTable.Answer {
        var n = nc_geo_name()
        n.ranking = UInt16(g.ranking)
        n.answers = UInt8(g.config.answers)
        n.fail_open = g.config.allDown == .failOpen ? 1 : 0
        n.qtype = g.config.type.rawValue
        n.pool = UInt16(g.pool)
        n.ttl = g.config.ttl
        n.rankings = UInt16(rankings)
        return NamesTable.Answer(
            qtype: g.config.type.rawValue, head: .init(kind: UInt8(NC_KIND_GEO.rawValue)), sections: bytes(of: n))
    }

    /// Writes a geo node's health for the XDP program as the live generation's health board says
    /// now: one write of its nodes-map entry (ARCHITECTURE §2: a health change never recomputes the
    /// prefix maps). Call it after each change of the node on the board: whatever the order of
    /// changes and calls, the map ends as the board says. Returns false for a node the live
    /// generation does not have, true when it wrote.
    @discardableResult
    public func writeNodeHealth(_ id: String) throws(BPFError) -> Bool {
        try state.withLock { (s: inout State) throws(BPFError) -> Bool in
            guard var n = s.nodes[id], let health = s.health else { return false }
            n.value.up = health.now().isServing(id) ? 1 : 0
            try nodeMaps[Int(s.settings.generation & 1)].map.update(
                key: Self.bytes(of: n.index), value: Self.bytes(of: n.value))
            s.nodes[id] = n
            return true
        }
    }

    /// Writes a pool's TTL cap for the XDP program as the board says now: one write of its
    /// pools-map entry. Returns false for a pool the live generation does not have.
    @discardableResult
    public func writePoolTTLCap(_ id: String) throws(BPFError) -> Bool {
        try state.withLock { (s: inout State) throws(BPFError) -> Bool in
            guard let p = s.pools[id], let health = s.health else { return false }
            let cap = health.now().ttlCap(id)
            try pools.update(
                key: Self.bytes(of: s.settings.generation * UInt32(NC_POOLS_MAX) + p.index),
                value: Self.bytes(of: nc_pool(ttl_cap: cap)))
            s.pools[id] = (p.index, cap)
            return true
        }
    }

    /// New prefix and candidate maps for `geo`, filled and not yet in any slot.
    func buildGeoMaps(_ geo: GeoTable) throws(BPFError) -> GeoMaps {
        let nodeList = geo.allNodes
        guard nodeList.count <= Int(NC_NODES_MAX) else {
            throw BPFError("write geo maps", "\(nodeList.count) nodes, the program takes \(NC_NODES_MAX)", errno: E2BIG)
        }
        guard geo.pools.count <= Int(NC_POOLS_MAX) else {
            throw BPFError(
                "write geo maps", "\(geo.pools.count) pools, the program takes \(NC_POOLS_MAX)", errno: E2BIG)
        }
        let need = GeoCapacity.needed(by: geo)
        guard geoCapacity.holds(need) else {
            throw BPFError(
                "write geo maps",
                "the geo data needs \(need), the fast path's maps were made for \(geoCapacity): restart nearcastd to make them anew",
                errno: E2BIG)
        }
        var nodeIndex: [String: UInt32] = [:]
        for (i, n) in nodeList.enumerated() { nodeIndex[n.id] = UInt32(i) }
        var poolIndex: [String: UInt32] = [:]
        for (i, p) in geo.pools.enumerated() { poolIndex[p.id] = UInt32(i) }

        var candKeys: [[UInt8]] = []
        var candValues: [[UInt8]] = []
        for c in geo.image.classes.indices {
            for r in geo.rankings.indices {
                var v = nc_cands()
                let ids = geo.image.classes[c][r].prefix(Int(NC_GEO_DEPTH)).compactMap { nodeIndex[$0] }
                v.count = UInt16(ids.count)
                withUnsafeMutableBytes(of: &v.node) { b in
                    for (k, id) in ids.enumerated() {
                        b.storeBytes(of: UInt16(id), toByteOffset: 2 * k, as: UInt16.self)
                    }
                }
                candKeys.append(Self.bytes(of: UInt32(c * geo.rankings.count + r)))
                candValues.append(Self.bytes(of: v))
            }
        }
        // Inner arrays of the one size the outer maps take (GeoCapacity).
        let cands = try BPFOwnedMap(like: candsInner, name: NC_MAP_CANDS, maxEntries: candsInner.maxEntries)
        try cands.map.updateBatch(keys: candKeys, values: candValues)

        let v4 = IPv4PrefixArray(geo.image.ipv4)
        let geo4 = try BPFOwnedMap(like: geo4Inner, name: NC_MAP_GEO4, maxEntries: geo4Inner.maxEntries)
        try geo4.map.writeArray(v4.prefixes)
        var keys: [[UInt8]] = []
        var values: [[UInt8]] = []
        keys.reserveCapacity(geo.image.ipv6.count)
        values.reserveCapacity(geo.image.ipv6.count)
        for p in geo.image.ipv6 {
            keys.append(Self.lpmKey(p))
            values.append(
                Self.bytes(of: nc_geo_class(cls: UInt32(p.locationClass), plen: UInt32(p.length), seed: p.seed)))
        }
        let geo6 = try BPFOwnedMap(like: geo6Inner, name: NC_MAP_GEO6, maxEntries: keys.count)
        try geo6.map.updateBatch(keys: keys, values: values)
        return GeoMaps(
            serial: geo.serial, geo4: geo4, geo6: geo6, cands: cands, nodeIndex: nodeIndex, poolIndex: poolIndex,
            spans: v4.spans, ipv6: geo.image.ipv6, aliases: geo.image.aliases)
    }

    /// An alias as the program reads it (struct nc_geo_alias): the prefix and its mask as the
    /// address's bytes, its length and where the IPv4 address starts; nil: the end of the list.
    static func aliasValue(_ a: GeoAlias?) -> nc_geo_alias {
        var v = nc_geo_alias()
        guard let a else { return v }
        let mask: UInt128 = ~UInt128(0) << (128 - a.length)
        // Copied within both closures: a buffer pointer must not outlive the one that lent it
        // (returned from withUnsafeBytes, it pointed at a dead temporary, and release builds wrote
        // garbage masks: found by make fuzz-xdp).
        let value = a.address.bigEndian
        let bits = mask.bigEndian
        withUnsafeMutableBytes(of: &v.value) { dst in withUnsafeBytes(of: value) { dst.copyMemory(from: $0) } }
        withUnsafeMutableBytes(of: &v.mask) { dst in withUnsafeBytes(of: bits) { dst.copyMemory(from: $0) } }
        v.plen = UInt32(a.length)
        v.v4_at = UInt32(a.length / 8)
        return v
    }

    /// An IPv6 prefix's key in its trie (struct nc_geo6_key): length, then the address in network
    /// order.
    static func lpmKey(_ p: ClassPrefix) -> [UInt8] {
        bytes(of: UInt32(p.length)) + withUnsafeBytes(of: p.address.bigEndian) { Array($0) }
    }

    /// A node's nodes-map value (up, until health says otherwise).
    static func nodeValue(_ n: NodeConfig) -> nc_node {
        var v = nc_node()
        v.up = 1
        v.weight = UInt16(GeoTable.spillWeight(n))
        withUnsafeMutableBytes(of: &v.v4) { b in for (k, x) in (n.ipv4 ?? []).enumerated() { b[k] = x } }
        withUnsafeMutableBytes(of: &v.v6) { b in for (k, x) in (n.ipv6 ?? []).enumerated() { b[k] = x } }
        return v
    }

    /// The geo maps' names and how many entries `geo` puts in each.
    public func geoMapSizes(_ geo: GeoTable) -> [(String, Int)] {
        [
            (NC_MAP_GEO4, geo.image.ipv4.count), (NC_MAP_GEO4_SPANS, Int(NC_GEO4_SPANS)),
            (NC_MAP_GEO6, geo.image.ipv6.count),
            (NC_MAP_CANDS, geo.image.classes.count * geo.rankings.count), (NC_MAP_NODES, geo.allNodes.count),
            (NC_MAP_POOLS, geo.pools.count), (NC_MAP_ALIASES, geo.image.aliases.count),
        ]
    }
}
