import DNSWire
import Foundation
import NearcastBasics
import NearcastConfiguration
import NearcastTSIG
import NearcastTransfer
import NearcastZones

#if canImport(Glibc)
import Glibc
#endif

/// Secondary zones served (ARCHITECTURE §17): what their transfers in bring, served through the
/// path every change takes (checked, journaled, the fast path written what it reaches, the file
/// written back), and the zones that cannot be served now (`unavailable`: SERVFAIL).
extension ServedConfig: TransferredZones {
    package func secondary(_ origin: DNSName) -> (source: ZoneSource, zone: Zone?, keys: TSIGKeyring)? {
        if let i = running.zones.firstIndex(where: { $0.origin == origin && $0.isSecondary }) {
            return (running.zones[i], zones[i], running.tsigKeys)
        }
        if let s = unavailable.first(where: { $0.origin == origin }) { return (s, nil, running.tsigKeys) }
        return nil
    }

    /// The secondary zones configured, served or not.
    var secondarySources: [ZoneSource] { running.zones.filter(\.isSecondary) + unavailable }

    package func applyTransfer(_ origin: DNSName, _ outcome: TransferIn.Outcome, from primary: String)
        async throws(ZoneEditError) -> Zone
    {
        await takeTurn()
        defer { endTurn() }
        let started = ContinuousClock.now
        guard let (source, served, _) = secondary(origin) else {
            throw .notFound("no secondary zone \(origin) is configured here")
        }
        let index = running.zones.firstIndex { $0.origin == origin }
        switch outcome {
        case .upToDate:
            guard let served else { throw .conflict("the primary says the zone is up to date, and none is served") }
            return served
        case .changes(let changesets):
            guard let served, let i = index else { throw .conflict("changes (IXFR) for a zone not served") }
            // Every change checked before any is served: a transfer that fails keeps the zone whole.
            var zone = served
            var steps: [(Zone, ZoneChangeset)] = []
            for c in changesets {
                do { zone = try zone.applying(c, source: "IXFR from \(primary)") } catch { throw .zone(error) }
                steps.append((zone, c))
            }
            var next = zones
            next[i] = zone
            do { try running.geo.check(against: next) } catch { throw .zone(error) }
            try Self.checkCatalog(source, zone)
            for (changed, changeset) in steps { try await commit(i, changed, changeset, started: started) }
            followCatalog(source, before: served, after: zone)
            return zone
        case .zone(let records, let serial):
            let name = "AXFR from \(primary)"
            let sourced = records.enumerated().map { SourcedRecord($0.element, file: name, line: $0.offset + 1) }
            let built: Zone
            do { built = try Zone.build(origin: origin, records: sourced, sourceName: name) } catch {
                throw .zone(error)
            }
            try Self.checkCatalog(source, built)
            guard let served, let i = index else {
                try await serveFirst(source, built, started: started)
                followCatalog(source, before: nil, after: built)
                return built
            }
            // The whole zone, served as the difference from the zone served.
            let changed: Zone
            let changeset: ZoneChangeset
            do {
                (changed, changeset) = try served.replacing(
                    built.differences(from: served), serial: serial, source: name)
            } catch { throw .zone(error) }
            guard !changeset.removed.isEmpty || !changeset.added.isEmpty else { return served }
            var next = zones
            next[i] = changed
            do { try running.geo.check(against: next) } catch { throw .zone(error) }
            try await commit(i, changed, changeset, started: started)
            followCatalog(source, before: served, after: changed)
            return changed
        }
    }

    /// Serves secondary zone `source` for the first time (or again after it expired), as
    /// transferred whole: written to its file first (a journal of an older copy removed: it must
    /// not be replayed onto this one), then served beside the others.
    func serveFirst(_ source: ZoneSource, _ zone: Zone, started: ContinuousClock.Instant) async throws(ZoneEditError) {
        var next = running
        next.zones.append(source)
        var nextZones = zones
        nextZones.append(zone)
        do { try next.geo.check(against: nextZones) } catch { throw .zone(error) }
        let path = source.path
        do {
            try await onOwnThread(name: "nc-zonefile") {
                try FileManager.default.createDirectory(
                    atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
                let tmp = try DurableFile.prepare(path) { write throws(DurableFile.Failure) in
                    try ZoneText.write(zone, to: write)
                }
                unlink(ZoneJournal.path(forZoneFile: path))
                try DurableFile.commit(tmp, onto: path)
            }
        } catch {
            throw .failed("the zone's file \(path) cannot be written: \(error)")
        }
        let wasUnavailable = unavailable
        unavailable.removeAll { $0.origin == source.origin }
        journalsMadeWhole.remove(ZoneJournal.path(forZoneFile: path))
        do { _ = try await switchTo(next, nextZones, started: started) } catch {
            unavailable = wasUnavailable
            throw .failed("\(error)")
        }
        stampZoneFiles()
    }

    package func expireSecondary(_ origin: DNSName) async {
        await takeTurn()
        defer { endTurn() }
        guard let i = running.zones.firstIndex(where: { $0.origin == origin && $0.isSecondary }) else { return }
        var next = running
        let source = next.zones.remove(at: i)
        var nextZones = zones
        nextZones.remove(at: i)
        unavailable.append(source)
        do { _ = try await switchTo(next, nextZones, started: .now) } catch {
            // Still served: the fast path could not be written without it. Tried again at its next wake.
            unavailable.removeAll { $0.origin == origin }
            logger.error("expired zone still served", metadata: ["zone": "\(origin)", "why": "\(error)"])
        }
    }
}
