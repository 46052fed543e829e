import DNSWire
import Logging
import NearcastFleet
import NearcastZones

/// What a fleet's store brings (`StoreMirror`), served here through the owners of each change:
/// its snapshot reloaded, keys read again and RRsets changed as `ServedConfig`'s other changes
/// are, the snapshot's move noted.
package struct FleetServing: ServedFromStore {
    let served: ServedConfig
    let reloads: ZoneReloads
    let edits: ZoneEdits
    let logger: Logger

    package init(served: ServedConfig, reloads: ZoneReloads, edits: ZoneEdits, logger: Logger) {
        self.served = served
        self.reloads = reloads
        self.edits = edits
        self.logger = logger
    }

    package func reloadFromStore(by: String, zonesUnchanged: Bool) async throws {
        _ = try await reloads.reload(by: by, zonesUnchanged: zonesUnchanged)
    }

    /// The keys the store brought read as a reload reads them (a zone's first keys sign it;
    /// other keys are a rollover's step, taken by the refresh's round the reload asks for).
    package func keysFromStore(_ zones: Set<DNSName>) async {
        do { _ = try await reloads.reload(by: "store keys", zonesUnchanged: true) } catch {
            logger.error("the keys from the store are not served", metadata: ["why": "\(error)"])
        }
    }

    package func zoneFilesMoved(from: String, to: String) async { await served.zoneFilesMoved(from: from, to: to) }

    package func applyFromStore(
        _ origin: DNSName, _ sets: [(name: DNSName, type: RRType, set: RRSet?)], serial: UInt32, revision: Int64
    ) async throws {
        try await edits.applyFromStore(origin, sets, serial: serial, revision: revision)
    }
}
