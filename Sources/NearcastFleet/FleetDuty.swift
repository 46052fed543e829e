import EtcdClient
import Foundation
import Logging
import NearcastStore
import ServiceLifecycle

/// A duty one server of a fleet holds at a time (ARCHITECTURE §13, §17, §18): the one that holds
/// its key (`P transferrer`: the fleet's secondary zones are transferred by it; `P signer`: the
/// fleet's key rollovers are driven by it), put there under a lease of its own by a transaction
/// on the key's absence (as `servers/NAME` is claimed). The others watch the key and try again
/// when it goes: when its holder stops (the lease revoked) or dies (the lease expires, within
/// `leaseTTL`). A holder cut off from the store gives the duty up as soon as a renewal fails,
/// before its lease can have ended (renewed every third of it), so two servers do not hold it
/// at once; were they to, what each writes is conditioned on what it read, and one of them stops.
package actor FleetDuty: Service {
    let connection: FleetStoreConnection
    let name: String
    /// The duty's store key.
    nonisolated let key: [UInt8]
    /// What the duty is, as the log says it ("the fleet's transfer duty").
    let duty: String
    let leaseTTL: Int
    let logger: Logger
    /// Told whether this server holds the duty, and which server does (nil: not known), when it
    /// takes it, gives it up, or finds another holding it.
    let onChange: @Sendable (_ held: Bool, _ holder: String?) async -> Void
    var lease: Int64?
    /// The last failure logged (each different one is logged once).
    var logged: String?

    package init(
        connection: FleetStoreConnection, key: String, duty: String, name: String, leaseTTL: Int = 10, logger: Logger,
        onChange: @escaping @Sendable (_ held: Bool, _ holder: String?) async -> Void
    ) {
        self.connection = connection
        self.key = Array(key.utf8)
        self.duty = duty
        self.name = name
        self.leaseTTL = leaseTTL
        self.logger = logger
        self.onChange = onChange
    }

    /// Takes the duty whenever it is free, until the group shuts down; then gives it up at once
    /// (the lease revoked), so another server takes it without waiting for the lease to end.
    package func run() async {
        await cancelWhenGracefulShutdown { await self.keepTrying() }
        await onChange(false, nil)
        if let lease { try? await connection.etcd.revoke(lease) }
        lease = nil
    }

    /// Claims one after the other (a failure retried, backing off to 5 s) until cancelled.
    func keepTrying() async {
        var pause = Duration.milliseconds(200)
        while !Task.isCancelled {
            do {
                try await claim()
                pause = .milliseconds(200)
            } catch {
                await onChange(false, nil)
                if Task.isCancelled { return }
                if let given = lease { try? await connection.etcd.revoke(given) }
                lease = nil
                if logged != "\(error)" {
                    logger.warning("\(duty): store out of reach", metadata: ["error": "\(error)"])
                    logged = "\(error)"
                }
                try? await Task.sleep(for: pause)
                pause = min(pause * 2, .seconds(5))
            }
        }
    }

    /// One try: the key claimed under a new lease and held (renewed) until that fails; or, held
    /// by another, watched until it goes.
    func claim() async throws {
        let lease = try await connection.etcd.grantLease(ttl: leaseTTL)
        self.lease = lease
        let claimed = try await connection.etcd.txn(
            [.modRevision(key, equals: 0)], success: [.put(key, Array(name.utf8), lease: lease)])
        logged = nil
        guard claimed.succeeded else {
            try? await connection.etcd.revoke(lease)
            self.lease = nil
            let (_, holder) = try await connection.etcd.get(key)
            await onChange(false, holder.map { String(decoding: $0.value, as: UTF8.self) })
            try await waitUntilFree(from: claimed.revision + 1)
            return
        }
        await onChange(true, name)
        while !Task.isCancelled {
            try await Task.sleep(for: .seconds(Double(leaseTTL) / 3))
            guard try await connection.etcd.keepAlive(lease) > 0 else {
                throw FleetDutyError(description: "the lease expired")
            }
        }
    }

    /// Returns once the key is deleted (its holder's lease revoked or ended).
    func waitUntilFree(from revision: Int64) async throws {
        for try await batch in connection.etcd.watch(prefix: key, from: revision) {
            if batch.events.contains(where: { $0.kv.key == key && $0.kind != .put }) { return }
        }
        throw FleetDutyError(description: "the watch of \(String(decoding: key, as: UTF8.self)) ended")
    }
}

struct FleetDutyError: Error, CustomStringConvertible {
    var description: String
}
