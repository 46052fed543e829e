import DNSWire
import Foundation
import Logging
import NearcastBasics
import NearcastZones
import ServiceLifecycle

/// Signatures made anew before they end (docs/ARCHITECTURE.md §18, "Signatures refreshed"):
/// each signed zone's names whose earliest signature has less than half of `signature-validity`
/// left are signed again, soonest first, a batch at a time, each batch one change of the zone:
/// its serial goes up (journaled, as any change is), so secondaries take the new signatures by
/// IXFR. A zone signed whole at once has every signature end together; the batches spread
/// their renewal over minutes, so no change waits behind a zone re-signed whole.
extension ServedConfig {
    /// The most names one refresh signs again in a zone: about a second of signing on two cores.
    static let refreshBatch = 5_000

    /// One round of the refresh at `now`; whether a zone had more names due than a batch (the
    /// caller comes back soon rather than at its interval).
    package func refreshSignatures(now: Date = Date()) async -> Bool {
        let half = running.signatureValidity / 2
        let threshold = UInt32(clamping: Int(now.timeIntervalSince1970) + half)
        var more = false
        for (origin, signed) in signing.signedCopies {
            guard
                let due = try? await onOwnThread(
                    name: "nc-signing", background: true,
                    {
                        ZoneSigning.due(in: signed, before: threshold, limit: Self.refreshBatch)
                    }), !due.names.isEmpty
            else { continue }
            more = more || due.more
            await takeTurn()
            defer { endTurn() }
            guard let i = zones.firstIndex(where: { $0.origin == origin }), signing.signs(origin) else { continue }
            let started = ContinuousClock.now
            do {
                if shared == nil {
                    // A change of the serial alone, which re-signs the names due.
                    let zone = zones[i]
                    let (changed, changeset) = try zone.replacing(
                        [], serial: zone.serial &+ 1, source: "signature refresh \(origin)")
                    try await commit(i, changed, changeset, started: started, resign: Set(due.names))
                } else {
                    // A fleet's serial is the store's: the signatures are made anew under it.
                    let zone = zones[i]
                    _ = try await switchTo(
                        running, zones, started: started, oneChange: true,
                        zoneChanges: [.init(before: zone, after: zone, owners: [])],
                        resign: [origin: Set(due.names)])
                }
                logger.info(
                    "signatures refreshed",
                    metadata: [
                        "zone": "\(origin)", "names": "\(due.names.count)", "more-due": "\(due.more)",
                        "serial": "\(zones[i].serial)", "ms": "\((ContinuousClock.now - started).seconds * 1000)",
                    ])
            } catch {
                logger.error("signatures not refreshed", metadata: ["zone": "\(origin)", "why": "\(error)"])
            }
        }
        return more
    }

    /// How long the refresh waits between rounds: a twentieth of the validity, at most an hour.
    var refreshInterval: Duration { .seconds(min(running.signatureValidity / 20, 3600)) }
}

/// Runs the signatures' refresh (`ServedConfig.refreshSignatures`) until the daemon's group
/// shuts down: a round every `refreshInterval`, or every two seconds while zones have more
/// names due than a round signs.
package struct SignatureRefresh: Service {
    let served: ServedConfig

    package init(served: ServedConfig) { self.served = served }

    package func run() async {
        while true {
            let more = await served.refreshSignatures()
            let wait = more ? .seconds(2) : await served.refreshInterval
            guard (try? await cancelWhenGracefulShutdown({ try await Task.sleep(for: wait) })) != nil else { return }
        }
    }
}
