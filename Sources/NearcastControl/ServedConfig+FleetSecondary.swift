import DNSWire
import NearcastConfiguration
import NearcastFleet
import NearcastTransfer
import NearcastZones

/// Secondary zones of a fleet (ARCHITECTURE §17): declared in the store, transferred by the one
/// server that holds `P transferrer` (`TransferDuty`), and carried to every server, that one
/// too, by the store. What a transfer brings is checked here as a single server's is, then
/// written into the store as an import (`SharedZones.writeTransferred`); it is served when the
/// store's watch brings it back, on every server alike.
extension ServedConfig {
    /// Writes into the store what a transfer of fleet secondary `origin` from `primary` brought,
    /// once it checks; returns the zone as served after it (the store's change waited for).
    func applyTransferToStore(
        _ shared: any SharedZones, _ origin: DNSName, _ outcome: TransferIn.Outcome, from primary: String
    ) async throws(ZoneEditError) -> Zone {
        let (source, served, zone) = try await transferred(origin, outcome, from: primary)
        // Nothing new: no write (an import of the same records would still make every server read it again).
        if let served, served.serial == zone.serial { return served }
        let text = ZoneText.render(zone)
        let revision: Int64
        let primaries = source.primaries.map(\.description)
        do {
            // Not cancelled with the refresh: the write's own change of the store (a read of it,
            // where the zone's file moves) restarts the refresh, and an import cut short would
            // leave the zone `importing` until the next transfer.
            revision = try await Task { try await shared.writeTransferred(origin, text: text, primaries: primaries) }
                .value
        } catch { throw .unavailable("the store cannot be written (\(error)): the transfer is not served") }
        if !(await shared.waitServed(revision, timeout: .seconds(60))) {
            logger.warning(
                "a transfer written to the store is not served here yet",
                metadata: ["zone": "\(origin)", "revision": "\(revision)"])
        }
        return zone
    }

    /// The zone a transfer of `origin` makes of the one served, checked as a single server's
    /// transfer is (built as a zone file, against the geo section), with its declaration and the
    /// zone served before it.
    func transferred(_ origin: DNSName, _ outcome: TransferIn.Outcome, from primary: String)
        async throws(ZoneEditError) -> (ZoneSource, Zone?, Zone)
    {
        await takeTurn()
        defer { endTurn() }
        guard let (source, served, _) = secondary(origin) else {
            throw .notFound("no secondary zone \(origin) is configured here")
        }
        let zone: Zone
        switch outcome {
        case .upToDate:
            guard let served else { throw .conflict("the primary says the zone is up to date, and none is served") }
            zone = served
        case .changes(let changesets):
            guard var z = served else { throw .conflict("changes (IXFR) for a zone not served") }
            for c in changesets {
                do { z = try z.applying(c, source: "IXFR from \(primary)") } catch { throw .zone(error) }
            }
            zone = z
        case .zone(let records, _):
            zone = try Self.build(origin, records, from: primary)
        }
        var next = zones
        if let i = running.zones.firstIndex(where: { $0.origin == origin }) {
            next[i] = zone
        } else {
            next.append(zone)
        }
        do { try running.geo.check(against: next) } catch { throw .zone(error) }
        return (source, served, zone)
    }

    /// Takes fleet secondary `origin`'s records out of the store: its expire passed without a
    /// refresh, and every server answers SERVFAIL until a transfer brings it again.
    func expireInStore(_ shared: any SharedZones, _ origin: DNSName) async {
        guard let source = secondary(origin)?.source else { return }
        let primaries = source.primaries.map(\.description)
        do {
            let revision = try await Task { try await shared.clearTransferred(origin, primaries: primaries) }.value
            _ = await shared.waitServed(revision, timeout: .seconds(60))
        } catch {
            logger.error("expired zone not taken out of the store", metadata: ["zone": "\(origin)", "why": "\(error)"])
        }
    }
}
