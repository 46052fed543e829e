import NearcastAPIModel
import NearcastAnswers
import NearcastTransfer
import Prometheus
import Synchronization

/// The daemon's Prometheus metrics (`GET /metrics`, swift-prometheus). The slow path counts its
/// replies as it sends them, once each, in plain atomic totals that `GET /v1/stats` reads too;
/// everything else is read when scraped, from a `MetricsSnapshot`.
public final class NearcastMetrics: Sendable {
    public let registry: PrometheusCollectorRegistry
    /// The slow path's answers by zone and by the node a geo answer put first.
    public let answers = AnswerCounts()
    /// Counters fed from monotonic totals read at scrape time: the last total each was brought to.
    private let fed = Mutex<[String: UInt64]>([:])
    private let reloads: [Bool: Counter]
    /// The nodes, pools and maps the last scrape showed: the series of those a reload removed since
    /// are dropped, not left at their last values.
    private let shown = Mutex<Shown>(Shown())
    private struct Shown {
        var nodes: Set<String> = []
        var pools: Set<String> = []
        var maps: Set<String> = []
        var zones: Set<String> = []
    }
    private let reloadSeconds: Gauge
    /// The slow path's replies: by transport and rcode at `transport * 16 + rcode` (0 UDP, 1 TCP),
    /// then the UDP replies rate limiting slipped (TC=1) and dropped. The metrics are fed from them
    /// when scraped.
    private let tallies: [Tally] = (0..<(2 * 16 + 2)).map { _ in Tally() }
    private static let slipped = 2 * 16
    private static let dropped = 2 * 16 + 1
    /// The slow path's replies by their question's type: the types of `qtypeNames`, then "other"
    /// (no question, or another type). What a zone's clients ask, and what XDP leaves to the slow path.
    private let byType: [Tally] = (0...NearcastMetrics.qtypeNames.count).map { _ in Tally() }
    static let qtypeNames: [(type: UInt16, name: String)] = [
        (1, "A"), (2, "NS"), (5, "CNAME"), (6, "SOA"), (12, "PTR"), (15, "MX"), (16, "TXT"), (28, "AAAA"),
        (33, "SRV"), (43, "DS"), (48, "DNSKEY"), (64, "SVCB"), (65, "HTTPS"), (255, "ANY"), (257, "CAA"),
    ]
    /// Each type's place in `byType` (the last, "other", for the types not named), by type: an
    /// array read per reply rather than a dictionary hashed per reply.
    private static let qtypeSlot: [Int] = {
        var slots = [Int](repeating: qtypeNames.count, count: Int(qtypeNames.map(\.type).max()!) + 1)
        for (i, t) in qtypeNames.enumerated() { slots[Int(t.type)] = i }
        return slots
    }()
    private final class Tally: Sendable {
        let value = Atomic<UInt64>(0)
    }
    static let rcodeNames = ["NOERROR", "FORMERR", "SERVFAIL", "NXDOMAIN", "NOTIMP", "REFUSED"]

    static func rcodeName(_ rcode: Int) -> String { rcode < rcodeNames.count ? rcodeNames[rcode] : "RCODE\(rcode)" }

    public init() {
        let registry = PrometheusCollectorRegistry()
        self.registry = registry
        reloads = [true: true, false: false].mapValues { ok in
            Self.counter(
                registry, "nearcast_reloads_total", labels: [("result", ok ? "done" : "refused")],
                help: "Reloads of the config and zone files.")
        }
        reloadSeconds = Self.gauge(
            registry, "nearcast_reload_seconds", help: "How long the last reload that went through took.")
    }

    private func tally(_ i: Int) -> UInt64 { tallies[i].value.load(ordering: .relaxed) }

    /// Counts one slow-path reply (its rcode is the low four bits of byte 3), its question's type,
    /// and its zone in `counts` (those of the responder that made it).
    public func countReply(_ reply: [UInt8], transport: Transport, counts: AnswerCounts.View? = nil) {
        guard reply.count >= 4 else { return }
        tallies[(transport == .udp ? 0 : 16) + Int(reply[3] & 0x0F)].value.add(1, ordering: .relaxed)
        // The question's name walked once, for its zone and its type (just past it).
        let end = AnswerCounts.questionNameEnd(reply)
        if let end { counts?.countAnswer(reply, nameEnd: end) }
        let type = end.flatMap { $0 + 2 < reply.count ? Int(reply[$0 + 1]) << 8 | Int(reply[$0 + 2]) : nil } ?? Int.max
        byType[type < Self.qtypeSlot.count ? Self.qtypeSlot[type] : Self.qtypeNames.count].value.add(
            1, ordering: .relaxed)
    }

    /// Counts a reply over the response rate limit: slipped (sent as TC=1) or dropped.
    public func countLimited(slipped: Bool) {
        tallies[slipped ? Self.slipped : Self.dropped].value.add(1, ordering: .relaxed)
    }

    /// The slow path's replies since the start, by rcode over both transports (those sent at
    /// least once, as the metrics name them; NOERROR and NXDOMAIN always), and the replies rate
    /// limiting slipped and dropped (`rrl_slipped`, `rrl_dropped`, as XDP's counters name its own).
    public func slowPathTotals() -> [StatsReport.Counter] {
        var out: [StatsReport.Counter] = []
        for rcode in 0..<16 {
            let n = tally(rcode) + tally(16 + rcode)
            guard n > 0 || rcode == 0 || rcode == 3 else { continue }
            out.append(.init(name: Self.rcodeName(rcode), value: n))
        }
        out.append(.init(name: "rrl_slipped", value: tally(Self.slipped)))
        out.append(.init(name: "rrl_dropped", value: tally(Self.dropped)))
        return out
    }

    /// Counts a zone transfer out of `form` (AXFR, IXFR, or the SOA alone), sent whole (`done`)
    /// or cut short by its connection.
    public func countTransferOut(_ form: TransferMessages.Form, done: Bool) {
        Self.counter(
            registry, "nearcast_transfers_out_total",
            labels: [("type", form == .upToDate ? "SOA" : form.rawValue), ("result", done ? "done" : "failed")],
            help: "Zone transfers out (AXFR, IXFR, or an IXFR answered with the SOA alone), by how they ended."
        ).increment()
    }

    /// Counts a reload.
    public func countReload(seconds: Double?) {
        reloads[seconds != nil]!.increment()
        if let seconds { reloadSeconds.set(seconds) }
    }

    /// The text exposition, with the scrape-time metrics taken from `snapshot`.
    public func render(_ snapshot: MetricsSnapshot) -> [UInt8] {
        let help = MetricHelp()
        dropGone(snapshot, help)
        Self.gauge(registry, "nearcast_uptime_seconds", help: help.uptime).set(snapshot.uptime)
        for (t, transport) in ["udp", "tcp"].enumerated() {
            for rcode in 0..<16 {
                feed(
                    "nearcast_slowpath_replies_total", [("transport", transport), ("rcode", Self.rcodeName(rcode))],
                    help.replies, to: tally(t * 16 + rcode))
            }
        }
        for (verdict, i) in [("slipped", Self.slipped), ("dropped", Self.dropped)] {
            feed("nearcast_rrl_responses_total", [("verdict", verdict)], help.limited, to: tally(i))
        }
        for (i, name) in (Self.qtypeNames.map(\.name) + ["other"]).enumerated() {
            feed(
                "nearcast_slowpath_queries_total", [("qtype", name)], help.byType,
                to: byType[i].value.load(ordering: .relaxed))
        }
        renderAnswers(snapshot, help)
        if let g = snapshot.geoCompileSeconds {
            Self.gauge(registry, "nearcast_geo_compile_seconds", help: help.compile).set(g)
        }
        for c in snapshot.xdp ?? [] {
            feed("nearcast_xdp_packets_total", [("reason", c.name)], help.xdp, to: c.value)
        }
        for n in snapshot.nodes {
            for s in Self.states {
                Self.gauge(
                    registry, "nearcast_node_state", labels: [("node", n.id), ("state", s)], help: help.nodeState
                )
                .set(to: n.state == s ? 1.0 : 0.0)
            }
            feed("nearcast_node_changes_total", [("node", n.id)], help.nodeChanges, to: UInt64(n.changes))
        }
        for p in snapshot.pools {
            Self.gauge(registry, "nearcast_pool_settled", labels: [("pool", p.id)], help: help.poolSettled).set(
                to: p.settled ? 1.0 : 0.0)
            Self.gauge(registry, "nearcast_pool_ttl_cap_seconds", labels: [("pool", p.id)], help: help.poolCap)
                .set(p.ttlCap.map(Double.init) ?? .infinity)
        }
        if let h = snapshot.health {
            feed("nearcast_health_map_writes_total", [], help.writes, to: UInt64(h.mapWrites))
            for (q, v) in [("0.5", h.p50Micros), ("0.99", h.p99Micros), ("1", h.maxMicros)] {
                Self.gauge(registry, "nearcast_health_write_seconds", labels: [("quantile", q)], help: help.writeTime)
                    .set(v / 1e6)
            }
        }
        for m in snapshot.maps {
            Self.gauge(registry, "nearcast_map_entries", labels: [("map", m.name)], help: help.mapEntries).set(
                Double(m.entries))
            if let b = m.bytes {
                Self.gauge(registry, "nearcast_map_bytes", labels: [("map", m.name)], help: help.mapBytes).set(
                    Double(b))
            }
        }
        if let st = snapshot.store {
            Self.gauge(registry, "nearcast_store_degraded", help: help.storeDegraded).set(
                to: st.degraded == nil ? 0.0 : 1.0)
            Self.gauge(registry, "nearcast_store_revision", help: help.storeRevision).set(Double(st.revision ?? 0))
        }
        return registry.emitToBuffer()
    }

    /// What the answers went to: XDP's by question type (the slow path's are counted with its
    /// replies), and both paths' by zone and by the node a geo answer put first.
    private func renderAnswers(_ snapshot: MetricsSnapshot, _ help: MetricHelp) {
        let (zones, nodes) = answers.totals()
        let slowByZone = Dictionary(zones.map { ($0.key.description, $0.value) }, uniquingKeysWith: +)
        let paths: [(String, [String: UInt64], [String: UInt64])] =
            [("slowpath", slowByZone, nodes)]
            + (snapshot.xdpAnswers.map { [("xdp", $0.byZone, $0.byNode)] } ?? [])
        for (path, byZone, byNode) in paths {
            for zone in snapshot.zones {
                feed(
                    "nearcast_zone_answers_total", [("zone", zone), ("path", path)], help.byZone, to: byZone[zone] ?? 0)
            }
            for node in snapshot.nodes {
                feed(
                    "nearcast_node_answers_total", [("node", node.id), ("path", path)], help.byNode,
                    to: byNode[node.id] ?? 0)
            }
        }
        if let xdp = snapshot.xdpAnswers {
            var other = xdp.byType.values.reduce(0, +)
            for (type, name) in Self.qtypeNames {
                let n = xdp.byType[type] ?? 0
                other -= n
                feed("nearcast_xdp_answers_total", [("qtype", name)], help.xdpByType, to: n)
            }
            feed("nearcast_xdp_answers_total", [("qtype", "other")], help.xdpByType, to: other)
        }
    }

    static let states = ["up", "degraded", "down", "drained"]

    /// Unregisters the series of nodes, pools and maps the last scrape showed and `snapshot` has
    /// not (a reload removed them); a node of that id added later starts its series anew.
    private func dropGone(_ snapshot: MetricsSnapshot, _ help: MetricHelp) {
        let now = Shown(
            nodes: Set(snapshot.nodes.map(\.id)), pools: Set(snapshot.pools.map(\.id)),
            maps: Set(snapshot.maps.map(\.name)), zones: Set(snapshot.zones))
        let gone = shown.withLock { last -> Shown in
            defer { last = now }
            return Shown(
                nodes: last.nodes.subtracting(now.nodes), pools: last.pools.subtracting(now.pools),
                maps: last.maps.subtracting(now.maps), zones: last.zones.subtracting(now.zones))
        }
        func drop(_ name: String, _ labels: [(String, String)], _ help: String) {
            registry.unregisterGauge(Self.gauge(registry, name, labels: labels, help: help))
        }
        func dropCounter(_ name: String, _ labels: [(String, String)], _ help: String) {
            registry.unregisterCounter(Self.counter(registry, name, labels: labels, help: help))
            fed.withLock { $0[Self.fedKey(name, labels)] = nil }
        }
        for id in gone.nodes {
            for s in Self.states { drop("nearcast_node_state", [("node", id), ("state", s)], help.nodeState) }
            dropCounter("nearcast_node_changes_total", [("node", id)], help.nodeChanges)
            for path in ["slowpath", "xdp"] {
                dropCounter("nearcast_node_answers_total", [("node", id), ("path", path)], help.byNode)
            }
        }
        for zone in gone.zones {
            for path in ["slowpath", "xdp"] {
                dropCounter("nearcast_zone_answers_total", [("zone", zone), ("path", path)], help.byZone)
            }
        }
        for id in gone.pools {
            drop("nearcast_pool_settled", [("pool", id)], help.poolSettled)
            drop("nearcast_pool_ttl_cap_seconds", [("pool", id)], help.poolCap)
        }
        for name in gone.maps {
            drop("nearcast_map_entries", [("map", name)], help.mapEntries)
            drop("nearcast_map_bytes", [("map", name)], help.mapBytes)
        }
    }

    /// Brings a counter up to `total` (a monotonic total read elsewhere: the XDP maps outlive the
    /// daemon, so the first scrape brings the whole total).
    private func feed(_ name: String, _ labels: [(String, String)], _ help: String, to total: UInt64) {
        let key = Self.fedKey(name, labels)
        let delta = fed.withLock { last -> UInt64 in
            let d = total >= last[key, default: 0] ? total - last[key, default: 0] : 0
            last[key] = total
            return d
        }
        let counter = Self.counter(registry, name, labels: labels, help: help)
        if delta > 0 { counter.increment(by: Int64(clamping: delta)) }
    }

    /// The key of a fed counter's last total: its name and labels.
    static func fedKey(_ name: String, _ labels: [(String, String)]) -> String {
        name + labels.map { "|\($0.0)=\($0.1)" }.joined()
    }

    /// A counter or gauge of `registry` by its full name (no namespace or unit split).
    static func counter(
        _ registry: PrometheusCollectorRegistry, _ name: String, labels: [(String, String)] = [], help: String
    ) -> Counter {
        registry.makeCounter(
            descriptor: MetricNameDescriptor(metricName: name, unitName: "", helpText: help), labels: labels)
    }

    static func gauge(
        _ registry: PrometheusCollectorRegistry, _ name: String, labels: [(String, String)] = [], help: String
    ) -> Gauge {
        registry.makeGauge(
            descriptor: MetricNameDescriptor(metricName: name, unitName: "", helpText: help), labels: labels)
    }

    struct MetricHelp {
        let uptime = "Seconds since the daemon started."
        let replies = "Replies sent by the slow path (user space), by transport and rcode."
        let byType = "Replies sent by the slow path, by the type their question asked (other: any type not named)."
        let limited = "Slow-path UDP replies over the response rate limit: sent as TC=1 (slipped) or dropped."
        let compile = "How long the geo compile served now took (at start or by a reload)."
        let xdp =
            "Packets the XDP program handled, by verdict reason (answered, passed to the slow path, limited, dropped)."
        let nodeState = "1 for the node's current health state, 0 for the others."
        let nodeChanges = "Changes of the node's health state."
        let poolSettled = "1 while the pool is settled (its names answer with their own TTL)."
        let poolCap = "The cap on the pool's names' TTLs (+Inf: none)."
        let writes = "Map writes made by health changes (a node's entry, a pool's TTL state)."
        let writeTime = "Time from a health decision to its map write, over the most recent changes."
        let mapEntries = "Entries written into each BPF map."
        let mapBytes = "Kernel memory each BPF map takes (memlock)."
        let storeDegraded = "1 while the fleet's store cannot be followed (what was last read is served)."
        let storeRevision = "The store's revision what is served was read at."
        let byZone =
            "Answers from the zone's data (NOERROR, NXDOMAIN), by the path that sent them (xdp: not its TC=1 replies)."
        let byNode = "Geo answers that put the node first, by the path that made them."
        let xdpByType = "Answers the XDP program sent, by the type their question asked (other: any type not named)."
    }
}

/// What `/metrics` reads at scrape time.
public struct MetricsSnapshot: Sendable {
    public var uptime: Double
    public var geoCompileSeconds: Double?
    public var xdp: [StatsReport.Counter]?
    public var nodes: [NodeStatus]
    public var pools: [PoolStatus]
    public var health: HealthWrites?
    public var maps: [(name: String, entries: Int, bytes: Int?)]
    /// The fleet's store, when this server follows one.
    public var store: StoreStatus?
    /// The zones served (their origins, lower-cased): the series of answers by zone are theirs.
    public var zones: [String]
    /// What XDP's answers went to (nil: no fast path).
    public var xdpAnswers: AnswerBreakdown?

    /// Answers by question type, by zone (its origin) and by the geo node they put first (its id).
    public struct AnswerBreakdown: Sendable {
        public var byType: [UInt16: UInt64]
        public var byZone: [String: UInt64]
        public var byNode: [String: UInt64]

        public init(byType: [UInt16: UInt64] = [:], byZone: [String: UInt64] = [:], byNode: [String: UInt64] = [:]) {
            self.byType = byType
            self.byZone = byZone
            self.byNode = byNode
        }
    }

    public init(
        uptime: Double, geoCompileSeconds: Double? = nil, xdp: [StatsReport.Counter]? = nil, nodes: [NodeStatus] = [],
        pools: [PoolStatus] = [],
        health: HealthWrites? = nil, maps: [(name: String, entries: Int, bytes: Int?)] = [], store: StoreStatus? = nil,
        zones: [String] = [], xdpAnswers: AnswerBreakdown? = nil
    ) {
        self.store = store
        self.zones = zones
        self.xdpAnswers = xdpAnswers
        self.uptime = uptime
        self.geoCompileSeconds = geoCompileSeconds
        self.xdp = xdp
        self.nodes = nodes
        self.pools = pools
        self.health = health
        self.maps = maps
    }
}
