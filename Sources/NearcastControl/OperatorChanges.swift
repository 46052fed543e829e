import Foundation
import Logging
import NearcastAPIModel
import NearcastBasics
import NearcastFleet
import NearcastHealth
import NearcastServer

/// Operators' overrides (drain, force-up, force-down) made durable (issue 6): each is validated,
/// written to the audit log and to the state directory's `overrides.json` (atomically, synced)
/// before it is applied and acknowledged, and the overrides still running are applied again when
/// the daemon starts. Without a state directory they last until a restart, as the log says.
///
/// Its methods write and sync files: it runs on a thread of its own (ThreadExecutor), not on the
/// cooperative pool that health changes and API calls share. Between reading the kept overrides
/// and replacing them a change does not await, so two changes at once never lose one.
package actor OperatorChanges: OverridesFromStore {
    private nonisolated let executor = ThreadExecutor(name: "nc-overrides")
    package nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    let monitor: HealthMonitor
    let audit: AuditLog?
    let storePath: String?
    /// A fleet's store, when overrides are shared: each is written there first, and the store's
    /// overrides are applied here as they come (`applyShared`).
    let shared: (any SharedOverrides)?
    var kept: [String: KeptOverride] = [:]
    let logger: Logger

    /// Why a change was not made; nothing changed.
    struct Refused: Error, CustomStringConvertible {
        var description: String
    }

    /// `storePath`: the kept overrides' file (nil: not kept); `audit`: the audit log, if any.
    package init(
        monitor: HealthMonitor, storePath: String?, audit: AuditLog?, shared: (any SharedOverrides)? = nil,
        logger: Logger
    ) {
        self.shared = shared
        self.monitor = monitor
        self.storePath = storePath
        self.audit = audit
        self.logger = logger
    }

    /// Applies the overrides kept from before a restart that have not run out.
    package func restore() async throws {
        guard let path = storePath, let data = FileManager.default.contents(atPath: path) else { return }
        let list: [KeptOverride]
        do { list = try JSONDecoder().decode([KeptOverride].self, from: data) } catch {
            throw Refused(
                description: "\(path) cannot be read (\(error)); move it away to start without the kept overrides")
        }
        let now = Date().timeIntervalSince1970
        for k in list where (k.until ?? .infinity) > now {
            guard let kind = HealthOverride.Kind(rawValue: k.kind), await monitor.state(of: k.node) != nil else {
                logger.warning(
                    "a kept override names no node of this config: dropped",
                    metadata: ["node": "\(k.node)", "kind": "\(k.kind)"])
                continue
            }
            kept[k.node] = k
            await monitor.setOverride(k.node, HealthOverride(kind, until: k.until.map { .now + .seconds($0 - now) }))
            logger.notice(
                "override restored",
                metadata: [
                    "node": "\(k.node)", "kind": "\(k.kind)",
                    "until": "\(k.until.map { "\(Date(timeIntervalSince1970: $0))" } ?? "undrained")",
                ])
        }
    }

    /// Sets (kind nil: takes back) `node`'s override for `seconds` (nil: until taken back), by
    /// `who`. Returns the node's status, nil for an unknown node.
    package func setOverride(_ node: String, kind: String?, seconds: Double?, who: String) async throws -> NodeStatus? {
        guard await monitor.state(of: node) != nil else { return nil }
        let o = kind.flatMap(HealthOverride.Kind.init(rawValue:))
        let before = await monitor.status(of: node)
        if let shared {
            // Fleet-wide: into the store first (every server applies it from there); a change
            // the store did not take is not made here either.
            let wall = Date().timeIntervalSince1970
            let entry = AuditLog.entry(
                who: who, action: kind ?? "undrain", target: node,
                detail: (kind ?? "no override") + (seconds.map { " for \($0) s" } ?? ""), before: "", after: "")
            do {
                try await shared.putOverride(
                    node, o.map { KeptOverride(node: node, kind: $0.rawValue, until: seconds.map { wall + $0 }) },
                    audit: entry)
            } catch {
                throw Refused(description: "the store cannot be written (\(error)): nothing was changed")
            }
        }
        // From here to `kept = next`, no await: another change cannot come between.
        let now = Date().timeIntervalSince1970
        var next = kept.filter { ($0.value.until ?? .infinity) > now }
        next[node] = o.map { KeptOverride(node: node, kind: $0.rawValue, until: seconds.map { now + $0 }) }
        if let audit {
            let detail =
                "\(before?.state ?? "?")\(before?.override.map { " (\($0))" } ?? "") -> " + (kind ?? "no override")
                + (seconds.map { " for \($0) s" } ?? "")
            do {
                try audit.record(
                    AuditLog.entry(
                        who: who, action: kind ?? "undrain", target: node, detail: detail, before: Self.digest(kept),
                        after: Self.digest(next)))
            } catch {
                throw Refused(description: "the audit log cannot be written (\(error)): nothing was changed")
            }
        }
        if let storePath {
            do { try DurableFile.replace(storePath, with: Self.encode(next)) } catch {
                try? audit?.record(
                    AuditLog.entry(
                        who: who, action: kind ?? "undrain", target: node, detail: "not kept: \(error)",
                        before: Self.digest(kept),
                        after: Self.digest(kept), outcome: "failed"))
                throw Refused(description: "the override cannot be kept (\(error)): nothing was changed")
            }
        }
        kept = next
        await monitor.setOverride(node, o.map { HealthOverride($0, until: seconds.map { .now + .seconds($0) }) })
        return await monitor.status(of: node)
    }

    /// An override of the fleet's store, as the store holds it now (nil: none), applied here
    /// unless it is already (this server's own change coming back) or has run out.
    package func applyShared(_ node: String, _ override: KeptOverride?) async {
        let now = Date().timeIntervalSince1970
        let live = override.flatMap { ($0.until ?? .infinity) > now ? $0 : nil }
        guard kept[node] != live, await monitor.state(of: node) != nil else { return }
        var next = kept
        next[node] = live
        if let storePath { try? DurableFile.replace(storePath, with: Self.encode(next)) }
        kept = next
        let kind = live.flatMap { HealthOverride.Kind(rawValue: $0.kind) }
        await monitor.setOverride(
            node, kind.map { HealthOverride($0, until: live?.until.map { .now + .seconds($0 - now) }) })
        logger.notice(
            "override from the store", metadata: ["node": "\(node)", "kind": "\(live?.kind ?? "none")"])
    }

    /// A reload left only `nodes`: overrides of the others are no longer kept (the monitor has
    /// already forgotten them), so a node of that id added later starts without one.
    func keepOnly(nodes: Set<String>) {
        let next = kept.filter { nodes.contains($0.key) }
        guard next.count != kept.count else { return }
        if let storePath {
            do { try DurableFile.replace(storePath, with: Self.encode(next)) } catch {
                logger.error("kept overrides not updated after a reload", metadata: ["error": "\(error)"])
                return
            }
        }
        logger.notice(
            "overrides of removed nodes dropped",
            metadata: ["nodes": "\(kept.keys.filter { !nodes.contains($0) }.sorted())"])
        kept = next
    }

    static func encode(_ kept: [String: KeptOverride]) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
        return Array((try? encoder.encode(kept.values.sorted { $0.node < $1.node })) ?? Data("[]".utf8))
    }

    static func digest(_ kept: [String: KeptOverride]) -> String { AuditLog.digest(encode(kept)) }
}
