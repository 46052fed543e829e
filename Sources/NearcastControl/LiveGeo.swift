import Foundation
import Logging
import MaxMindDB
import NearcastAPIModel
import NearcastBasics
import NearcastGeo
import NearcastServer
import Synchronization
import TerminalUI

#if canImport(Glibc)
import Glibc
#endif

/// The geo data answered from now: the geo section, the table compiled from it and the database it
/// was compiled from, or nothing while the config has no geo names. A reload that changes any of
/// them replaces them whole (`switchTo`, issue 6), geo names added or all removed included.
/// Every compile answers by the one health board (`board`), which the health monitor writes and
/// which outlives them all: a switch carries no health from one compile to the next.
package final class LiveGeo: Sendable {
    /// One compile of a geo section.
    package struct Compiled: Sendable {
        package var config: GeoConfig
        package var table: GeoTable
        package var database: MaxMindDatabase
        package var compileSeconds: Double
        /// The database file as compiled: a new file at the same path is a change too.
        var databaseStamp: FileStamp?
    }

    private let state: Mutex<Compiled?>
    /// Each node's state and pool's TTL cap, for the daemon's life (ARCHITECTURE §6).
    package let board: HealthBoard

    package init(board: HealthBoard) {
        state = Mutex(nil)
        self.board = board
    }

    /// What is served now; nil: no geo names.
    package var current: Compiled? { state.withLock { $0 } }

    /// Compiles `config`'s geo names on a thread of its own (seconds of blocking work for a whole
    /// GeoLite2-City), with a progress bar on a terminal, to answer by the board.
    package func compile(_ config: GeoConfig) async throws -> Compiled {
        let started = ContinuousClock.now
        let board = board
        // In the background: a compile holds no lock a health change or a query waits for, and on
        // a busy node its seconds of CPU would otherwise delay them by whole time slices.
        var compiled = try await onOwnThread(name: "nc-compile", background: true) { () throws -> Compiled in
            guard let path = config.databasePath, let db = try config.openDatabase() else {
                throw DiagnosticsError([Diagnostic(file: "geo", line: 0, message: "geo names need a database")])
            }
            // Networks are about as many as search-tree nodes: the bar's estimate.
            let bar = TerminalProgress("geo compile: networks", expected: db.nodeCount)
            let table = try GeoTable.build(config, database: db, board: board, progress: bar.update)
            bar.finish(table.image.report.networks)
            return Compiled(
                config: config, table: table, database: db, compileSeconds: 0, databaseStamp: FileStamp(path))
        }
        compiled.compileSeconds = (ContinuousClock.now - started).seconds
        return compiled
    }

    /// Whether `config` compiles to what is served now (same geo section, same database file; or
    /// no geo names, as now).
    func isCurrent(_ config: GeoConfig) -> Bool {
        guard let c = current else { return config.names.isEmpty }
        return !config.names.isEmpty && c.config.isEquivalent(to: config)
            && c.databaseStamp == config.databasePath.flatMap(FileStamp.init)
    }

    /// Whether `config` differs from what is served only in what the health monitor alone uses
    /// (nodes' checks): the compile served now serves it too.
    func compilesLike(_ config: GeoConfig) -> Bool {
        guard let c = current, !config.names.isEmpty else { return false }
        return c.config.compilesLike(config) && c.databaseStamp == config.databasePath.flatMap(FileStamp.init)
    }

    /// Keeps the compile served now for `config`, which differs only in nodes' checks.
    func keepCompile(for config: GeoConfig) {
        state.withLock { c in c?.config = config }
    }

    /// Serves `next` from now on. Returns the compile served until now, released by the caller
    /// outside the lock (freeing a GeoLite2-wide compile takes tens of milliseconds, which a reader
    /// waiting for the lock would wait too).
    @discardableResult
    package func switchTo(_ next: Compiled?) -> Compiled? {
        state.withLock { c in
            let old = c
            c = next
            return old
        }
    }
}

extension LiveGeo.Compiled {
    /// Logs what a geo compile made.
    package func log(to logger: Logger) {
        let r = table.image.report
        logger.info(
            "geo compiled",
            metadata: [
                "names": "\(config.names.count)", "nodes": "\(config.nodes.count)", "networks": "\(r.networks)",
                "locations": "\(r.locations)", "classes": "\(r.classes)", "ipv4-prefixes": "\(r.ipv4After)",
                "ipv6-prefixes": "\(r.ipv6After)", "uncovered-prefixes": "\(r.uncoveredAfter)",
                "ipv4-aliases": "\(r.aliases)", "seconds": "\(compileSeconds)",
            ])
    }
}

/// The geo data served answers the API's explanations and the dashboard's map.
extension LiveGeo: GeoDesk {
    package func explain(name: String, type: String, client: String, ecs: String?) throws -> GeoExplanation {
        guard let c = current else {
            throw GeoExplainError(description: "no geo names are configured", notConfigured: true)
        }
        return try c.table.explain(name: name, type: type, client: client, ecs: ecs, database: c.database)
    }

    package func layout() -> [MapNode] {
        (current?.table.nodePlaces ?? []).map {
            MapNode(
                id: $0.id, latitude: $0.latitude, longitude: $0.longitude, country: $0.country, ipv4: $0.ipv4,
                ipv6: $0.ipv6, pools: $0.pools)
        }
    }
}
