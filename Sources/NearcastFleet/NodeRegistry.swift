import Foundation
import Logging
import NearcastAPIModel
import NearcastBasics
import NearcastHealth
import NearcastServer
import NearcastStore

/// What registrations need of a fleet's store (StoreFollower in a server; a fake in unit tests).
package protocol SharedNodes: Sendable {
    /// The geo section as the store holds it, with the revision it was last changed at (0: none).
    func geoText() async throws -> (text: String?, modRevision: Int64)
    /// The node's registration as the store holds it, with its revision; nil when there is none.
    func registration(_ id: String) async throws -> (json: String, modRevision: Int64)?
    /// Writes `r`, with `audit`, if the geo section is still at `ifGeoAt` and the node's key at
    /// `ifNodeAt` (0: absent); the store's new revision, or nil when another change came first.
    func putRegistration(_ r: NodeRegistration, ifGeoAt: Int64, ifNodeAt: Int64, audit: AuditLog.Entry)
        async throws -> Int64?
    /// Deletes the node's registration, with `audit`, if it is still at `ifAt`.
    func deleteRegistration(_ id: String, ifAt: Int64, audit: AuditLog.Entry) async throws -> Int64?
    /// Waits until what is served comes from `revision` or later; false after `timeout`.
    func waitServed(_ revision: Int64, timeout: Duration) async -> Bool
}

/// Nodes joining and leaving a fleet by themselves (ARCHITECTURE §13): a registration is checked
/// as the geo section checks a node and against the pools it joins, written in one transaction
/// conditioned on the geo section and the node's key as they were read, with its audit line;
/// every server then serves it through the store's watch, as a reload (compiled in, checked like
/// a declared node). This one waits until it serves the change before it answers.
package struct NodeRegistry: Sendable {
    let store: any SharedNodes
    let monitor: HealthMonitor
    let logger: Logger

    package init(store: any SharedNodes, monitor: HealthMonitor, logger: Logger) {
        self.store = store
        self.monitor = monitor
        self.logger = logger
    }

    /// Registers the node `json` describes (or registers it again, changed), by `who`; the
    /// node's status once this server serves it.
    package func register(_ json: String, by who: String) async throws(RegistrationError) -> NodeStatus? {
        let geo: (text: String?, modRevision: Int64)
        let current: (json: String, modRevision: Int64)?
        let r: NodeRegistration
        do {
            geo = try await store.geoText()
            guard geo.text != nil else {
                throw RegistrationError.conflict("the fleet's store has no geo section: a node has no pool to join")
            }
            r = try NodeRegistration.parse(json, joining: geo.text, fileName: "registration")
            current = try await store.registration(r.id)
        } catch let e as DiagnosticsError {
            throw .invalid("the registration is not valid, nothing was changed:\n\(e.description)")
        } catch let e as RegistrationError {
            throw e
        } catch {
            throw .unavailable("the store cannot be read (\(error)): nothing was changed")
        }
        let entry = AuditLog.entry(
            who: who, action: current == nil ? "register" : "register again", target: r.id,
            detail: "pools \(r.pools.joined(separator: ", "))",
            before: AuditLog.digest(Array((current?.json ?? "").utf8)),
            after: AuditLog.digest(Array(r.json.utf8)))
        let revision: Int64?
        do {
            revision = try await store.putRegistration(
                r, ifGeoAt: geo.modRevision, ifNodeAt: current?.modRevision ?? 0, audit: entry)
        } catch {
            throw .unavailable("the store cannot be written (\(error)): nothing was changed")
        }
        guard let revision else {
            throw .conflict(
                "the geo section or node \(r.id)'s registration changed in the store while this registration was checked (read at revisions \(geo.modRevision) and \(current?.modRevision ?? 0)): nothing was changed; retry"
            )
        }
        await served(revision, "node registered", r.id, who)
        return await monitor.status(of: r.id)
    }

    /// Ends node `id`'s registration, by `who`: it is no longer answered or checked.
    package func deregister(_ id: String, by who: String) async throws(RegistrationError) {
        let current: (json: String, modRevision: Int64)?
        do { current = try await store.registration(id) } catch {
            throw .unavailable("the store cannot be read (\(error)): nothing was changed")
        }
        guard let current else { throw .notFound("node \(id) is not registered") }
        let entry = AuditLog.entry(
            who: who, action: "deregister", target: id, detail: "", before: AuditLog.digest(Array(current.json.utf8)),
            after: AuditLog.digest([]))
        let revision: Int64?
        do { revision = try await store.deleteRegistration(id, ifAt: current.modRevision, audit: entry) } catch {
            throw .unavailable("the store cannot be written (\(error)): nothing was changed")
        }
        guard let revision else {
            throw .conflict("node \(id)'s registration changed in the store meanwhile: nothing was changed; retry")
        }
        await served(revision, "node deregistered", id, who)
    }

    func served(_ revision: Int64, _ what: Logger.Message, _ id: String, _ who: String) async {
        if !(await store.waitServed(revision, timeout: .seconds(5))) {
            logger.warning(
                "a change written to the store is not served here yet", metadata: ["revision": "\(revision)"])
        }
        logger.notice(what, metadata: ["node": "\(id)", "by": "\(who)", "revision": "\(revision)"])
    }
}

extension NodeRegistry: RegistrationDesk {}
