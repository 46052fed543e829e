import EtcdClient
import Foundation
import Logging
import NearcastGeo
import NearcastHealth
import NearcastStore
import ServiceLifecycle

/// A fleet server's part in judging nodes from many vantage points (ARCHITECTURE §13). Under a
/// lease of its own it announces itself (`P servers/NAME`) and publishes its own view of every
/// node it checks (`P health/NAME/NODE`: up, degraded or down, as its checks say); it watches the other
/// servers' views and hands them to the health monitor, which weighs them with its own. A server
/// that dies stops renewing its lease, and etcd deletes its views with it. A server cut off from
/// the store forgets its peers' views and judges alone until it is back, then publishes again
/// under a new lease and reads the others' views afresh.
package actor FleetHealth: Service {
    let connection: FleetStoreConnection
    let monitor: HealthMonitor
    let name: String
    let logger: Logger
    /// Seconds a dead server's views outlive it.
    let leaseTTL: Int
    var lease: Int64?
    /// The views as last published under `lease`.
    var published: [String: HealthState] = [:]
    var publishing = false
    var publishAgain = false
    /// Whether the peers' views are followed now (false: this server judges alone).
    package private(set) var following = false
    /// The last failure logged (each different one is logged once).
    var logged: String?

    package init(
        connection: FleetStoreConnection, monitor: HealthMonitor, name: String, leaseTTL: Int = 10,
        logger: Logger
    ) {
        self.connection = connection
        self.monitor = monitor
        self.name = name
        self.leaseTTL = leaseTTL
        self.logger = logger
    }

    nonisolated var views: String { connection.layout.health }

    /// Publishes and follows until the group shuts down (or the task is cancelled), then takes
    /// this server's views out of the store at once (the lease revoked) rather than when they expire.
    package func run() async {
        await monitor.onOwnViewChange { [weak self] in
            guard let self else { return }
            Task { await self.publish() }
        }
        await cancelWhenGracefulShutdown { await self.keepPublishing() }
        if let lease { try? await connection.etcd.revoke(lease) }
        lease = nil
    }

    /// Sessions one after the other (a lost one retried, backing off to 5 s) until cancelled.
    func keepPublishing() async {
        var pause = Duration.milliseconds(200)
        while !Task.isCancelled {
            do {
                try await session()
            } catch is CancellationError {
                return
            } catch {
                if Task.isCancelled { return }
                await lost("\(error)")
                try? await Task.sleep(for: pause)
                pause = min(pause * 2, .seconds(5))
                continue
            }
            pause = .milliseconds(200)
        }
    }

    /// One life under one lease: announce, publish every view, read the peers' views, then renew
    /// the lease and follow the peers until either fails.
    func session() async throws {
        let lease = try await connection.etcd.grantLease(ttl: leaseTTL)
        self.lease = lease
        published = [:]
        // The name is this server's alone: another live server holding it (or this server's
        // previous run, until its lease ends) would mix their views.
        let me = Array((connection.layout.servers + name).utf8)
        let announcement = try JSONEncoder().encode(ServerAnnouncement(started: Date().timeIntervalSince1970))
        let claimed = try await connection.etcd.txn(
            [.modRevision(me, equals: 0)], success: [.put(me, Array(announcement), lease: lease)])
        guard claimed.succeeded else {
            try? await connection.etcd.revoke(lease)
            throw FleetHealthError(
                description:
                    "another live server is named \(name) (or this server's previous run, until its lease of \(leaseTTL) s ends): give each server its own name (store: server:)"
            )
        }
        try await publishNow()
        let (revision, kvs) = try await connection.etcd.range(prefix: Array(views.utf8))
        let peers = PeerViews(kvs.compactMap { change($0, deleted: false) })
        await monitor.replacePeerViews(peers, reason: "the fleet's views read")
        if !following {
            logger.notice("judging nodes with the fleet's observers", metadata: ["peers": "\(peers.servers)"])
        }
        following = true
        logged = nil
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await self.renew(lease) }
            group.addTask { try await self.follow(from: revision + 1) }
            try await group.next()
            group.cancelAll()
        }
        // Neither ends but by an error; if one did end, this life under this lease is over all the same.
        throw FleetHealthError(description: "the watch of the fleet's views ended")
    }

    /// Renews the lease a third of its life before it ends, publishing anything a failed put left.
    func renew(_ lease: Int64) async throws {
        while !Task.isCancelled {
            try await Task.sleep(for: .seconds(Double(leaseTTL) / 3))
            guard try await connection.etcd.keepAlive(lease) > 0 else {
                throw FleetHealthError(description: "the lease expired")
            }
            try await publishNow()
        }
    }

    /// The other servers' views as they change.
    func follow(from revision: Int64) async throws {
        for try await batch in connection.etcd.watch(prefix: Array(views.utf8), from: revision) {
            let changes = batch.events.compactMap { change($0.kv, deleted: $0.kind != .put) }
            if !changes.isEmpty { await monitor.setPeerViews(changes) }
        }
    }

    /// A peer's view as its key says (nil: this server's own, or not a view).
    nonisolated func change(_ kv: KeyValue, deleted: Bool) -> PeerViews.Change? {
        guard let (server, node) = split(kv.keyString), server != name else { return nil }
        return PeerViews.Change(
            server: server, node: node,
            view: deleted ? nil : HealthState(rawValue: String(decoding: kv.value, as: UTF8.self)))
    }

    /// Cut off: the peers' views are forgotten (this server judges alone until it is back), and
    /// the lease given back if etcd can still be told (else it expires).
    func lost(_ why: String) async {
        let given = lease
        lease = nil
        published = [:]
        if logged != why {
            logger.warning("fleet's health views out of reach: judging nodes alone", metadata: ["error": "\(why)"])
            logged = why
        }
        if following {
            following = false
            await monitor.replacePeerViews(PeerViews(), reason: "the fleet's views out of reach")
        }
        if let given { try? await connection.etcd.revoke(given) }
    }

    /// Publishes what changed since the last publish (the failures are left to `renew`).
    func publish() async { try? await publishNow() }

    /// Puts every own view that differs from the published one, under the lease. One publish at a
    /// time: a call that comes meanwhile makes the running one look again.
    func publishNow() async throws {
        guard let lease else { return }
        if publishing {
            publishAgain = true
            return
        }
        publishing = true
        defer { publishing = false }
        repeat {
            publishAgain = false
            let now = await monitor.ownViews()
            let changed = now.filter { published[$0.key] != $0.value }
            let gone = published.keys.filter { now[$0] == nil }
            var ops: [EtcdOperation] =
                changed.sorted { $0.key < $1.key }.map {
                    .put(Array((views + name + "/" + $0.key).utf8), Array($0.value.rawValue.utf8), lease: lease)
                }
            ops += gone.sorted().map { .delete(Array((views + name + "/" + $0).utf8)) }
            for start in stride(from: 0, to: ops.count, by: 100) {
                _ = try await connection.etcd.txn([], success: Array(ops[start..<min(start + 100, ops.count)]))
            }
            for (node, view) in changed { published[node] = view }
            for node in gone { published[node] = nil }
        } while publishAgain
    }

    /// `P health/SERVER/NODE` as (SERVER, NODE).
    nonisolated func split(_ key: String) -> (String, String)? {
        guard key.hasPrefix(views) else { return nil }
        let rest = key.dropFirst(views.count).split(separator: "/", maxSplits: 1)
        guard rest.count == 2 else { return nil }
        return (String(rest[0]), String(rest[1]))
    }
}

/// A live server's entry under `P servers/`.
struct ServerAnnouncement: Codable {
    var started: Double
}

struct FleetHealthError: Error, CustomStringConvertible {
    var description: String
}
