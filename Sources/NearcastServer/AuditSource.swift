import NearcastAPIModel
import NearcastBasics

/// Where the audit entries that `GET /v1/audit` and the dashboard show come from: this server's
/// log, or in a fleet the store's lines of every server, with this server's log standing in while
/// the store is out of reach.
public struct AuditSource: Sendable {
    /// The last `count` entries, oldest first.
    public var last: @Sendable (Int) async throws -> [AuditEntry]
    /// A number that moves whenever an entry is added: read every second by the dashboard's feed.
    public var version: @Sendable () async -> Int64

    public init(
        last: @escaping @Sendable (Int) async throws -> [AuditEntry], version: @escaping @Sendable () async -> Int64
    ) {
        self.last = last
        self.version = version
    }

    /// This server's own log.
    public static func log(_ log: AuditLog) -> AuditSource {
        AuditSource(last: { count in try await onOwnThread { log.last(count) } }, version: { Int64(log.size) })
    }

    /// A fleet's audit lines (`lines`, which throws while the store is out of reach; each entry
    /// names its server) and the store's revision of the last one the server heard of, with this
    /// server's `log` standing in while the store cannot be read.
    public static func fleet(
        _ lines: @escaping @Sendable (Int) async throws -> [AuditEntry],
        revision: @escaping @Sendable () async -> Int64, log: AuditLog
    ) -> AuditSource {
        AuditSource(
            last: { count in
                do { return try await lines(count) } catch { return try await onOwnThread { log.last(count) } }
            },
            // Both only grow: their sum moves when either does.
            version: { await revision() &+ Int64(log.size) })
    }
}
