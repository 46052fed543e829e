import DNSWire
import MaxMindDB
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
    /// Which nodes are down or drained, and each pool's TTL cap, shared by every copy of this table
    /// (the responders of all event loops), so health changes reach them all at once.
    public private(set) var board = HealthBoard()

    /// The nodes that are down or drained. Setting it gives this copy a board of its own.
    public var unhealthy: Set<String> {
        get { board.down }
        set { board = HealthBoard(newValue, ttlCaps: board.ttlCaps) }
    }

    /// The cold start's TTL caps: a pool with a member that starts down starts unsettled.
    static func coldStartCaps(_ pools: [PoolConfig], down: Set<String>) -> [String: UInt32] {
        Dictionary(
            pools.map { p in (p.id, p.ttlCap(settled: !p.members.contains(where: down.contains))) },
            uniquingKeysWith: { a, _ in a })
    }

    /// Compiles `config`'s geo names against `database`: one ranking per distinct pool, policy
    /// and fallback. `progress` as for GeoCompiler.compile.
    public static func build(_ config: GeoConfig, database: MaxMindDatabase, progress: ((Int) -> Void)? = nil) throws
        -> GeoTable
    {
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
        let down = Set(config.nodes.filter { !$0.initiallyUp }.map(\.id))  // the cold start
        return GeoTable(
            serial: nextSerial.add(1, ordering: .relaxed).newValue, image: image, rankings: rankings,
            pools: config.pools, names: names, owners: owners,
            ownersWire: Set(owners.map { $0.lowercased().wire }), nodes: nodes,
            board: HealthBoard(down, ttlCaps: coldStartCaps(config.pools, down: down)))
    }

    /// Every geo name, in no particular order.
    public var allNames: [Name] { Array(names.values) }

    /// Every node, by id.
    public var allNodes: [NodeConfig] { nodes.values.sorted { $0.id < $1.id } }

    /// Whether a node of this id is in the table.
    public func hasNode(_ id: String) -> Bool { nodes[id] != nil }

    /// The geo name for a question, if it is one.
    public func name(_ qname: DNSName, _ type: RRType) -> Name? {
        names[Key(name: qname, type: type.rawValue)]
    }

    /// Whether `qname` has a geo name of some type (so other types there are NODATA, not NXDOMAIN).
    public func isOwner(_ qname: DNSName) -> Bool { owners.contains(qname) }

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
    }

    /// The answer of `name` for a client at `address` (4 or 16 bytes: the ECS address when the
    /// query had one with a non-zero source prefix, else the query's source address).
    public func answer(_ name: Name, client address: [UInt8]) -> Answer {
        let (c, prefix) = image.lookup(address)
        let candidates = image.classes[c][name.ranking]
        let wantV4 = name.config.type == .a
        func addressOf(_ id: String) -> [UInt8]? { wantV4 ? nodes[id]?.ipv4 : nodes[id]?.ipv6 }
        let (down, caps) = board.snapshot
        let order = Self.spillOrder(
            candidates, isUp: { !down.contains($0) }, weight: { nodes[$0].map(Self.spillWeight) ?? 1 },
            seed: prefix?.seed ?? 0)
        var chosen = order.prefix(name.config.answers).compactMap(addressOf)
        var outcome = Answer.Outcome.answered
        if chosen.isEmpty {
            switch name.config.allDown {
            case .failOpen: chosen = candidates.prefix(name.config.answers).compactMap(addressOf)
            case .nodata: outcome = .nodata
            case .servfail: outcome = .servfail
            }
        }
        return Answer(
            outcome: outcome, addresses: chosen, ttl: min(name.config.ttl, caps[pools[name.pool].id] ?? .max),
            locationClass: c, prefixLength: prefix?.length,
            candidates: candidates)
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

/// The nodes that are down or drained and each pool's TTL cap (pool id -> cap; none: no cap), read
/// by every responder and written by the health monitor.
public final class HealthBoard: Sendable {
    private let state: Mutex<(down: Set<String>, ttlCaps: [String: UInt32])>

    public init(_ down: Set<String> = [], ttlCaps: [String: UInt32] = [:]) { state = Mutex((down, ttlCaps)) }

    /// The nodes down now.
    public var down: Set<String> { state.withLock { $0.down } }

    /// The pools' TTL caps now.
    public var ttlCaps: [String: UInt32] { state.withLock { $0.ttlCaps } }

    /// Both, read at once.
    public var snapshot: (down: Set<String>, ttlCaps: [String: UInt32]) { state.withLock { $0 } }

    /// Marks `node` up or down.
    public func set(_ node: String, up: Bool) {
        _ = state.withLock { up ? $0.down.remove(node) : $0.down.insert(node).memberAfterInsert }
    }

    /// Sets `pool`'s TTL cap.
    public func setTTLCap(_ pool: String, _ cap: UInt32) {
        state.withLock { $0.ttlCaps[pool] = cap }
    }
}
