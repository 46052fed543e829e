import DNSWire
import NearcastBasics
import NearcastConfiguration
import NearcastFleet
import NearcastStore
import NearcastTransfer
import NearcastZones

/// Secondary zones of a fleet (ARCHITECTURE §17): declared in the store, transferred by the one
/// server that holds `P transferrer` (`FleetDuty`), and carried to every server, that one
/// too, by the store. What a transfer brings is checked here as a single server's is, then
/// written into the store: an IXFR as the RRsets it changed (`SharedZones.writeTransferredChange`),
/// an AXFR as an import (`writeTransferred`); it is served when the store's watch brings it back,
/// on every server alike.
extension SecondaryServing {
    /// Writes into the store what a transfer of fleet secondary `origin` from `primary` brought,
    /// once it checks; returns the zone as served after it (the store's change waited for).
    func applyTransferToStore(
        _ shared: any SharedZones, _ origin: DNSName, _ outcome: TransferIn.Outcome, from primary: String
    ) async throws(ZoneEditError) -> Zone {
        let (source, served, zone) = try await transferred(origin, outcome, from: primary)
        // Nothing new: no write (an import of the same records would still make every server read it again).
        if let served, served.serial == zone.serial { return served }
        let primaries = source.primaries.map(\.description)
        // An IXFR: the RRsets it touched (in one transaction when they fit one), when the store
        // holds the zone the changes were applied to.
        if case .changes(let changesets) = outcome, let served,
            let revision = await writeChange(shared, zone, changesets, from: served.serial, primaries: primaries)
        {
            await waitServed(shared, origin, revision)
            return zone
        }
        let revision: Int64
        do {
            // Not cancelled with the refresh (the duty given up, the daemon stopping): an import
            // cut short would leave the zone `importing` until the next transfer.
            revision = try await uncancellable { try await shared.writeTransferred(zone, primaries: primaries) }
        } catch { throw .unavailable("the store cannot be written (\(error)): the transfer is not served") }
        await waitServed(shared, origin, revision)
        return zone
    }

    /// Writes the RRsets `changesets` touched of `zone` (as they are in it after them) into the
    /// store (in one transaction, or as an import of them when they do not fit one); the
    /// revision, or nil when it was not written (the store holds another serial, or a failure,
    /// logged: the whole zone is written then).
    func writeChange(
        _ shared: any SharedZones, _ zone: Zone, _ changesets: [ZoneChangeset], from before: UInt32,
        primaries: [String]
    ) async -> Int64? {
        var touched: [RRsetName] = []
        var seen = Set<RRsetName>()
        for c in changesets {
            for r in c.removed + c.added where seen.insert(RRsetName(owner: r.name, type: r.type)).inserted {
                touched.append(RRsetName(owner: r.name, type: r.type))
            }
        }
        let sets = touched.map { k in
            (owner: k.owner, type: k.type, value: zone.rrset(k.owner, k.type).map(StoredZone.value) ?? [])
        }
        do {
            // Not cancelled with the refresh, as `writeTransferred` (below) is not.
            return try await uncancellable {
                try await shared.writeTransferredChange(
                    zone.origin, sets, serial: zone.serial, from: before, primaries: primaries)
            }
        } catch {
            logger.warning(
                "an IXFR's changes not written to the store as a change: writing the zone",
                metadata: ["zone": "\(zone.origin)", "why": "\(error)"])
            return nil
        }
    }

    /// Waits until the store's change at `revision` is served here (logged when it is not, after a minute).
    func waitServed(_ shared: any SharedZones, _ origin: DNSName, _ revision: Int64) async {
        if !(await shared.waitServed(revision, timeout: .seconds(60))) {
            logger.warning(
                "a transfer written to the store is not served here yet",
                metadata: ["zone": "\(origin)", "revision": "\(revision)"])
        }
    }

    /// The zone a transfer of `origin` makes of the one served, checked as a single server's
    /// transfer is (built as a zone file, against the geo section), with its declaration and the
    /// zone served before it.
    func transferred(_ origin: DNSName, _ outcome: TransferIn.Outcome, from primary: String)
        async throws(ZoneEditError) -> (ZoneSource, Zone?, Zone)
    {
        try await served.withTurn { (s) throws(ZoneEditError) -> (ZoneSource, Zone?, Zone) in
            guard let (source, served, _) = s.secondary(origin) else {
                throw .notFound("no secondary zone \(origin) is configured here")
            }
            let zone: Zone
            switch outcome {
            case .upToDate:
                guard let served else {
                    throw .conflict("the primary says the zone is up to date, and none is served")
                }
                zone = served
            case .changes(let changesets):
                guard var z = served else { throw .conflict("changes (IXFR) for a zone not served") }
                for c in changesets {
                    do throws(DiagnosticsError) {
                        z = try z.applying(c, source: "IXFR from \(primary)")
                    } catch { throw .zone(error) }
                }
                zone = z
            case .zone(let records, _):
                zone = try Self.build(origin, records, from: primary)
            }
            var next = s.zones
            if let i = s.running.zones.firstIndex(where: { $0.origin == origin }) {
                next[i] = zone
            } else {
                next.append(zone)
            }
            do throws(DiagnosticsError) { try s.running.geo.check(against: next) } catch { throw .zone(error) }
            return (source, served, zone)
        }
    }

    /// Takes fleet secondary `origin`'s records out of the store: its expire passed without a
    /// refresh, and every server answers SERVFAIL until a transfer brings it again.
    func expireInStore(_ shared: any SharedZones, _ origin: DNSName) async {
        guard let source = await served.secondary(origin)?.source else { return }
        let primaries = source.primaries.map(\.description)
        do {
            let revision = try await uncancellable { try await shared.clearTransferred(origin, primaries: primaries) }
            _ = await shared.waitServed(revision, timeout: .seconds(60))
        } catch {
            logger.error("expired zone not taken out of the store", metadata: ["zone": "\(origin)", "why": "\(error)"])
        }
    }
}

/// An RRset's owner and type.
private struct RRsetName: Hashable {
    var owner: DNSName
    var type: RRType
}
