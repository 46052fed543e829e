import DNSWire
import MaxMindDB
import NearcastZones
import Synchronization

/// Everything a geo name is answered from (ARCHITECTURE §2): the compiled image (classes and prefixes),
/// the geo names, the nodes' addresses and health. Both paths answer from the same table: the
/// slow path reads it here; the fast path will read the maps written from it.
public struct GeoTable: Sendable {
    /// What a geo name answers with.
    public struct Name: Sendable {
        public var config: GeoNameConfig
        /// Index of its ranking (pool + policy + fallback) in the image's candidate lists.
        public var ranking: Int
        /// Index of its pool in `pools` (whose TTL state it answers with).
        public var pool: Int
    }

    /// A question: the name (DNSName compares and hashes without regard to case, so a query's
    /// name is looked up as it came, with nothing lower-cased per query) and the type.
    struct Key: Hashable {
        var name: DNSName
        var type: UInt16
    }

    /// Which compile this is: each `build` gives a new one. Copies share it (health is not part of
    /// it), so the fast path rewrites its geo maps only for a new compile.
    public let serial: UInt64
    public let image: GeoImage
    /// The rankings the image's candidate lists come from, in its order.
    public let rankings: [GeoPool]
    /// The pools, in the order names refer to them (`Name.pool`) and the pools map holds them.
    public let pools: [PoolConfig]
    let names: [Key: Name]
    /// Owner names that have a geo name (of any type), and the same in lower-cased wire form
    /// (what the reply cache holds).
    let owners: Set<DNSName>
    let ownersWire: Set<[UInt8]>
    let nodes: [String: NodeConfig]
    /// The names a discovery (SRV) name's records point at, `NODE.TARGETS`, and their node: each
    /// answers the node's address (GeoNameConfig.targets).
    let targets: [DNSName: DiscoveryTarget]
    /// The owners and targets and every ancestor of one: the names that exist because of geo names.
    public let existingNames: Set<DNSName>
    /// The daemon's health board, shared by every copy of this table (the responders of all event
    /// loops) and by the compiles before and after it, so a health change reaches them all at once
    /// and no reload carries health from one compile to the next.
    public var board: HealthBoard
    /// What the board says of a node or pool it does not hold: the config's cold start.
    let coldStart: ColdStart

    /// The cold start of a compile's nodes and pools: the nodes configured to start down, and each
    /// pool's TTL cap (a pool with a member that starts down starts unsettled).
    struct ColdStart: Sendable {
        var down: Set<String>
        var ttlCaps: [String: UInt32]

        init(_ config: GeoConfig) {
            let down = Set(config.nodes.filter { !$0.initiallyUp }.map(\.id))
            self.down = down
            ttlCaps = Dictionary(
                config.pools.map { p in (p.id, p.ttlCap(settled: !p.members.contains(where: down.contains))) },
                uniquingKeysWith: { a, _ in a })
        }
    }

    /// Health as this compile's answers follow it at one moment: the board's word on each node and
    /// pool, the cold start for those it does not hold.
    public struct Health: Sendable {
        public let board: HealthBoard.Snapshot
        let coldStart: ColdStart

        /// Whether answers may name `node`.
        public func isServing(_ node: String) -> Bool { board.nodes[node]?.isServing ?? !coldStart.down.contains(node) }

        /// The cap on the TTL of the names of `pool` (UInt32.max: none).
        public func ttlCap(_ pool: String) -> UInt32 { board.ttlCaps[pool] ?? coldStart.ttlCaps[pool] ?? .max }
    }

    /// The board's reader for this compile: small, and it holds nothing of the compile's image.
    public struct HealthView: Sendable {
        let board: HealthBoard
        let coldStart: ColdStart

        /// Health now.
        public func now() -> Health { Health(board: board.snapshot, coldStart: coldStart) }
    }

    /// The board's reader for this compile.
    public var healthView: HealthView { HealthView(board: board, coldStart: coldStart) }

    /// Health now.
    public var health: Health { healthView.now() }

    /// The nodes that are not answered with now. Setting it gives this copy a board of its own on
    /// which these nodes are down and the others up (tests, and tables without a daemon).
    public var unhealthy: Set<String> {
        get {
            let h = health
            return Set(nodes.keys.filter { !h.isServing($0) })
        }
        set {
            board = HealthBoard(
                HealthBoard.Snapshot(
                    nodes: Dictionary(
                        uniqueKeysWithValues: nodes.keys.map { ($0, newValue.contains($0) ? .down : .up) }),
                    ttlCaps: board.snapshot.ttlCaps))
        }
    }

    /// Compiles `config`'s geo names against `database`: one ranking per distinct pool, policy
    /// and fallback. `board`: the daemon's health board, which answers follow (a new one, empty, by
    /// default: every node and pool in its cold start). `progress` as for GeoCompiler.compile.
    public static func build(
        _ config: GeoConfig, database: MaxMindDatabase, board: HealthBoard = HealthBoard(),
        progress: ((Int) -> Void)? = nil
    ) throws -> GeoTable {
        let nodes = Dictionary(config.nodes.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
        let pools = Dictionary(config.pools.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
        let poolIndex = Dictionary(
            config.pools.enumerated().map { ($0.element.id, $0.offset) }, uniquingKeysWith: { a, _ in a })
        var rankings: [GeoPool] = []
        var names: [Key: Name] = [:]
        for g in config.names {
            let members = pools[g.pool]?.members.compactMap { nodes[$0]?.geoNode } ?? []
            let ranking = GeoPool(
                id: "\(g.pool)#\(rankings.count)", nodes: members, policy: g.policy, fallback: g.fallback)
            let index: Int
            if let same = rankings.firstIndex(where: {
                $0.nodes == ranking.nodes && $0.policy == ranking.policy && $0.fallback == ranking.fallback
            }) {
                index = same
            } else {
                index = rankings.count
                rankings.append(ranking)
            }
            names[Key(name: g.name, type: g.type.rawValue)] = Name(
                config: g, ranking: index, pool: poolIndex[g.pool] ?? 0)
        }
        let image = try GeoCompiler.compile(database: database, pools: rankings, progress: progress)
        let owners = Set(names.keys.map(\.name))
        let targets = config.discoveryTargets
        return GeoTable(
            serial: nextSerial.add(1, ordering: .relaxed).newValue, image: image, rankings: rankings,
            pools: config.pools, names: names, owners: owners,
            ownersWire: Set(owners.map { $0.lowercased().wire }), nodes: nodes, targets: targets,
            existingNames: withAncestors(Array(owners) + Array(targets.keys)),
            board: board, coldStart: ColdStart(config))
    }

    /// Every geo name, in no particular order.
    public var allNames: [Name] { Array(names.values) }

    /// Every node, by id.
    public var allNodes: [NodeConfig] { nodes.values.sorted { $0.id < $1.id } }

    /// The node of this id.
    public func node(_ id: String) -> NodeConfig? { nodes[id] }

    /// The geo name for a question, if it is one.
    public func name(_ qname: DNSName, _ type: RRType) -> Name? {
        names[Key(name: qname, type: type.rawValue)]
    }

    /// The node a discovery target name stands for, and the TTL of its addresses, if `qname` is one.
    public func target(_ qname: DNSName) -> (node: NodeConfig, ttl: UInt32)? {
        targets[qname].flatMap { t in nodes[t.node].map { ($0, t.ttl) } }
    }

    /// Every discovery target name.
    public var targetNames: [DNSName] { Array(targets.keys) }

    /// The names answered here rather than by a zone's data, with the types they answer: each
    /// geo name's owner its types, each discovery target the types of its node's addresses (a
    /// signed zone's chain holds them: ZoneSigner.online).
    public var onlineTypes: [DNSName: Set<RRType>] {
        var out: [DNSName: Set<RRType>] = [:]
        for key in names.keys { out[key.name, default: []].insert(RRType(rawValue: key.type)) }
        for (name, t) in targets {
            guard let node = nodes[t.node] else { continue }
            if node.ipv4 != nil { out[name, default: []].insert(.a) }
            if node.ipv6 != nil { out[name, default: []].insert(.aaaa) }
        }
        return out
    }

    /// Whether `qname` has a geo name of some type (so other types there are NODATA, not NXDOMAIN).
    public func isOwner(_ qname: DNSName) -> Bool { owners.contains(qname) }

    /// Whether `qname` exists because of geo names: it owns one or is a discovery target, or is an
    /// ancestor of such a name (an empty non-terminal: NODATA, not NXDOMAIN, RFC 8020).
    public func exists(_ qname: DNSName) -> Bool { existingNames.contains(qname) }

    /// `names` and every ancestor of one.
    static func withAncestors(_ names: some Sequence<DNSName>) -> Set<DNSName> {
        var out: Set<DNSName> = []
        for name in names {
            var n = name
            while out.insert(n).inserted && !n.isRoot { n = n.parent }
        }
        return out
    }

    /// The same for a name already in lower-cased wire form.
    public func isOwner(lowercasedWire name: [UInt8]) -> Bool { ownersWire.contains(name) }

    /// What a geo name answers a client: the addresses in rank order, the TTL, and the ECS scope.
    public struct Answer: Equatable, Sendable {
        public enum Outcome: Equatable, Sendable {
            case answered
            case nodata
            case servfail
        }
        public var outcome: Outcome
        public var addresses: [[UInt8]]
        public var ttl: UInt32
        /// The class the client's address fell in, and the prefix length matched (nil: no prefix
        /// covers it, the unknown-location class).
        public var locationClass: Int
        public var prefixLength: Int?
        /// The ranked candidates of the class, before health.
        public var candidates: [String]
        /// The nodes answered, in the addresses' order.
        public var chosen: [String] = []
    }

    /// The answer of `name` for a client at `address` (4 or 16 bytes: the ECS address when the
    /// query had one with a non-zero source prefix, else the query's source address), with
    /// `health` (default: the board now).
    public func answer(_ name: Name, client address: [UInt8], health: Health? = nil) -> Answer {
        let match = image.match(address)
        let c = match.locationClass
        let candidates = image.classes[c][name.ranking]
        // A discovery (SRV) name answers nodes with any address; A and AAAA those with one of theirs.
        func addressOf(_ id: String) -> [UInt8]? {
            switch name.config.type {
            case .a: nodes[id]?.ipv4
            case .aaaa: nodes[id]?.ipv6
            default: nodes[id].flatMap { $0.ipv4 ?? $0.ipv6 }
            }
        }
        let health = health ?? self.health
        let order = Self.spillOrder(
            candidates, isUp: health.isServing, weight: { nodes[$0].map(Self.spillWeight) ?? 1 },
            seed: match.seed)
        // The top `answers` candidates, less those without an address of the type (as XDP does).
        var chosen = order.prefix(name.config.answers).filter { addressOf($0) != nil }
        var outcome = Answer.Outcome.answered
        if chosen.isEmpty {
            switch name.config.allDown {
            case .failOpen: chosen = candidates.prefix(name.config.answers).filter { addressOf($0) != nil }
            case .nodata: outcome = .nodata
            case .servfail: outcome = .servfail
            }
        }
        return Answer(
            outcome: outcome, addresses: chosen.compactMap(addressOf),
            ttl: min(name.config.ttl, health.ttlCap(pools[name.pool].id)), locationClass: c, prefixLength: match.length,
            candidates: candidates, chosen: chosen)
    }

    /// The distinct RRsets the A and AAAA geo names answer with `health` (default: the board
    /// now), whatever the client: for each location class, the top nodes that are up, and when
    /// the top candidate is down each spill-over pick (every prefix's seed gives one of them).
    /// Each at the name's own TTL: the variants a signed zone signs ahead (OnlineSignatures).
    public func answerVariants(health: Health? = nil) -> [RRSet] {
        let health = health ?? self.health
        // The node lists answered, per ranking, count of answers and type: names share them.
        struct Shape: Hashable {
            var ranking: Int
            var answers: Int
            var type: UInt16
            var failOpen: Bool
        }
        var lists: [Shape: Set<[String]>] = [:]
        var out: [RRSet] = []
        for n in names.values where n.config.type == .a || n.config.type == .aaaa {
            let v6 = n.config.type == .aaaa
            func address(_ id: String) -> [UInt8]? { v6 ? nodes[id]?.ipv6 : nodes[id]?.ipv4 }
            let shape = Shape(
                ranking: n.ranking, answers: n.config.answers, type: n.config.type.rawValue,
                failOpen: n.config.allDown == .failOpen)
            if lists[shape] == nil {
                var found: Set<[String]> = []
                for c in image.classes.indices {
                    let candidates = image.classes[c][n.ranking]
                    let healthy = candidates.filter(health.isServing)
                    var orders: [[String]] = [healthy]
                    if let top = candidates.first, !health.isServing(top), !healthy.isEmpty {
                        orders = healthy.prefix(3).map { pick in [pick] + healthy.filter { $0 != pick } }
                    }
                    for order in orders {
                        var chosen = order.prefix(n.config.answers).filter { address($0) != nil }
                        if chosen.isEmpty && shape.failOpen {
                            chosen = candidates.prefix(n.config.answers).filter { address($0) != nil }
                        }
                        if !chosen.isEmpty { found.insert(chosen) }
                    }
                }
                lists[shape] = found
            }
            for chosen in lists[shape] ?? [] {
                let rdatas = chosen.compactMap(address).compactMap { try? RData(type: n.config.type, bytes: $0) }
                out.append(RRSet(name: n.config.name, type: n.config.type, ttl: n.config.ttl, rdatas: rdatas))
            }
        }
        return out
    }

    /// The healthy candidates in answer order (NC_SPILL in nearcast_abi.h): in rank order when the
    /// top one is up; when it is down, first one of the next `spill` healthy candidates, picked by
    /// `seed` in proportion to their weight, then the others in rank order. Its clients so spread
    /// over the next candidates by capacity instead of all going to the next nearest.
    static func spillOrder(
        _ candidates: [String], isUp: (String) -> Bool, weight: (String) -> UInt32, seed: UInt32, spill: Int = 3
    ) -> [String] {
        let healthy = candidates.enumerated().filter { isUp($0.element) }
        guard let first = healthy.first, first.offset > 0 else { return healthy.map(\.element) }
        let pool = healthy.prefix(spill)
        let total = pool.reduce(UInt32(0)) { $0 + weight($1.element) }
        var r = seed % total
        var pick = pool.first!.element
        for (_, id) in pool {
            if r < weight(id) {
                pick = id
                break
            }
            r -= weight(id)
        }
        return [pick] + healthy.map(\.element).filter { $0 != pick }
    }

    /// A node's weight as spill-over counts it (and the nodes map holds it): x 100, 1...65535.
    public static func spillWeight(_ n: NodeConfig) -> UInt32 { UInt32(max(1, min(65535, (n.weight * 100).rounded()))) }
}

/// The serial of the last compile (GeoTable.serial).
private let nextSerial = Atomic<UInt64>(0)
