import Foundation
import NIOCore
import NearcastAPIModel
import NearcastBasics

/// The live figures the dashboard's pages follow (`GET /v1/events`, server-sent events): one
/// sampler for all of them, once a second, however many pages are open. Each page gets, as
/// events: `history` (the samples of the last hour) when it connects, `sample` each second,
/// `nodes`, `pools` and `audit` (the audit log's last entries) when they connect and whenever they
/// change: nodes and pools as soon as the health monitor reports a change, the rest at the next
/// sample. The owner of the history and of the open streams.
///
/// The history is kept whether or not a page is open; nodes, pools and the audit entries are read
/// only while one is (a page that opens has them read at once). Read with no one to send them to,
/// they cost each second a thread and a read of the audit log (in a fleet, a range of the store)
/// after every record change, and the JSON of every node.
actor DashboardFeed {
    /// Samples kept: an hour at one a second.
    static let historyLength = 3600

    private let desks: APIDesks
    private let interval: Duration
    private var history: [DashboardSample] = []
    private var nodes: String?
    private var pools: String?
    private var audit: String?
    /// The audit source's version when it was last read: it is read again only when that moves.
    private var auditVersion: Int64 = -1
    /// Audit entries each page is sent.
    static let auditEntries = 10
    private var subscribers: [Int: AsyncStream<ByteBuffer>.Continuation] = [:]
    private var nextID = 0
    private var closed = false
    private var sampler: Task<Void, Never>?

    init(desks: APIDesks, interval: Duration = .seconds(1)) {
        self.desks = desks
        self.interval = interval
    }

    /// A look at the nodes and pools under way for a health change, and whether another change
    /// came meanwhile (it may have missed it: one more look follows). Changes that come faster than
    /// the looks are folded together.
    private var healthPending = false
    private var healthAgain = false

    /// Starts sampling (until `close`), and listens for health changes.
    func start() {
        guard sampler == nil, !closed else { return }
        desks.health?.onChange { [weak self] in Task { await self?.healthChanged() } }
        let interval = interval
        sampler = Task { [weak self] in
            while !Task.isCancelled {
                await self?.sample()
                try? await Task.sleep(for: interval)
            }
        }
    }

    /// A page's stream of events, starting with what it needs to draw at once.
    func subscribe() async -> AsyncStream<ByteBuffer> {
        // A page that cannot keep up loses old frames, never holds the server's memory.
        let (stream, continuation) = AsyncStream.makeStream(of: ByteBuffer.self, bufferingPolicy: .bufferingNewest(256))
        guard !closed else {
            continuation.finish()
            return stream
        }
        let id = nextID
        nextID += 1
        let first = subscribers.isEmpty
        subscribers[id] = continuation
        continuation.onTermination = { [weak self] _ in Task { await self?.unsubscribe(id) } }
        continuation.yield(Self.frame("history", Self.json(history)))
        if first {
            // Nothing was followed while no page was open: read now, sent as they come.
            await followed()
        } else {
            if let nodes { continuation.yield(Self.frame("nodes", nodes)) }
            if let pools { continuation.yield(Self.frame("pools", pools)) }
            if let audit { continuation.yield(Self.frame("audit", audit)) }
        }
        return stream
    }

    /// Ends every stream and the sampling: the server's graceful shutdown waits for open responses.
    func close() {
        closed = true
        sampler?.cancel()
        for c in subscribers.values { c.finish() }
        subscribers = [:]
    }

    private func unsubscribe(_ id: Int) {
        subscribers[id] = nil
        // No longer followed: what a page opened later is sent is read anew then.
        if subscribers.isEmpty { (nodes, pools, audit, auditVersion) = (nil, nil, nil, -1) }
    }

    /// A node's state or a pool's TTL changed: the pages hear of it now, not at the next sample.
    func healthChanged() async {
        guard !closed, !subscribers.isEmpty else { return }
        guard !healthPending else {
            healthAgain = true
            return
        }
        healthPending = true
        repeat {
            healthAgain = false
            await sampleHealth()
        } while healthAgain && !closed
        healthPending = false
    }

    /// Reads the figures once and sends what changed.
    func sample() async {
        let stats = try? desks.daemon.stats()
        func byName(_ c: [StatsReport.Counter]?) -> [String: UInt64]? {
            c.map { Dictionary($0.map { ($0.name, $0.value) }, uniquingKeysWith: { a, _ in a }) }
        }
        let sample = DashboardSample(uptime: stats?.uptime ?? 0, xdp: byName(stats?.xdp), slow: byName(stats?.slowPath))
        history.append(sample)
        if history.count > Self.historyLength { history.removeFirst(history.count - Self.historyLength) }
        broadcast("sample", Self.json(sample))
        await followed()
    }

    /// Reads the nodes, the pools and the audit entries while a page is open, and sends what changed.
    private func followed() async {
        guard !subscribers.isEmpty else { return }
        await sampleHealth()
        // The source's version (a stat of the log; in a fleet, also the store's revision of its
        // last audit line) says whether an entry was added: only then are the entries read.
        if let source = desks.audit, case let version = await source.version(), version != auditVersion,
            let entries = try? await source.last(Self.auditEntries)
        {
            auditVersion = version
            audit = Self.json(entries)
            broadcast("audit", audit!)
        }
    }

    /// Reads the nodes and the pools, and sends those that changed.
    private func sampleHealth() async {
        guard let health = desks.health else { return }
        let nodesNow = Self.json(await health.nodes())
        if nodesNow != nodes {
            nodes = nodesNow
            broadcast("nodes", nodesNow)
        }
        let poolsNow = Self.json(await health.pools())
        if poolsNow != pools {
            pools = poolsNow
            broadcast("pools", poolsNow)
        }
    }

    private func broadcast(_ event: String, _ data: String) {
        guard !subscribers.isEmpty else { return }
        let frame = Self.frame(event, data)
        for c in subscribers.values { c.yield(frame) }
    }

    /// One server-sent event (its data is one line of JSON).
    static func frame(_ event: String, _ data: String) -> ByteBuffer {
        ByteBuffer(string: "event: \(event)\ndata: \(data)\n\n")
    }

    static func json(_ value: some Encodable) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return (try? encoder.encode(value)).map { String(decoding: $0, as: UTF8.self) } ?? "null"
    }
}
