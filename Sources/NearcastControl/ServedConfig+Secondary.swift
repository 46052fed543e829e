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
        if secondaryPlaces == nil {
            var places: [DNSName: (served: Bool, index: Int)] = [:]
            for (i, z) in unavailable.enumerated() { places[z.origin] = (false, i) }
            for (i, z) in running.zones.enumerated() where z.isSecondary { places[z.origin] = (true, i) }
            secondaryPlaces = places
        }
        guard let place = secondaryPlaces?[origin] else { return nil }
        return place.served
            ? (running.zones[place.index], zones[place.index], running.tsigKeys)
            : (unavailable[place.index], nil, running.tsigKeys)
    }

    /// The secondary zones configured, served or not.
    var secondarySources: [ZoneSource] { running.zones.filter(\.isSecondary) + unavailable }

    package func applyTransfer(_ origin: DNSName, _ outcome: TransferIn.Outcome, from primary: String)
        async throws(ZoneEditError) -> Zone
    {
        // A fleet's secondary: the store carries it to every server.
        if let shared { return try await applyTransferToStore(shared, origin, outcome, from: primary) }
        // A zone not served yet, transferred whole: served with the others that come meanwhile.
        if case .zone(let records, _) = outcome, let state = secondary(origin), state.zone == nil {
            let source = state.source
            let built = try Self.build(origin, records, from: primary)
            try Self.checkCatalog(source, built)
            try await serveFirst(source, built)
            return built
        }
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
            await followCatalog(source, before: served, after: zone)
            return zone
        case .zone(let records, let serial):
            let built = try Self.build(origin, records, from: primary)
            try Self.checkCatalog(source, built)
            guard let served, let i = index else {
                throw .conflict(
                    "the zone stopped being served during its transfer: transferred again at its next refresh")
            }
            let name = "AXFR from \(primary)"
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
            await followCatalog(source, before: served, after: changed)
            return changed
        }
    }

    /// Zone `origin` as an AXFR from `primary` brought it, built and checked as a zone file is.
    static func build(_ origin: DNSName, _ records: [ResourceRecord], from primary: String) throws(ZoneEditError)
        -> Zone
    {
        let name = "AXFR from \(primary)"
        let sourced = records.enumerated().map { SourcedRecord($0.element, file: name, line: $0.offset + 1) }
        do { return try Zone.build(origin: origin, records: sourced, sourceName: name) } catch { throw .zone(error) }
    }

    /// Serves secondary zone `source` for the first time (or again after it expired), as
    /// transferred whole: written to its file first (a journal of an older copy removed: it must
    /// not be replayed onto this one), off the turn, then served beside the others. The zones
    /// transferred within a moment of each other (`firstServeWindow`, or as long as the last such
    /// switch took) are served together, in one switch: a catalog's thousands of members,
    /// transferred at once, cost tens of switches of every zone served, not thousands.
    func serveFirst(_ source: ZoneSource, _ zone: Zone) async throws(ZoneEditError) {
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
        // The first to wait opens a batch that closes a moment later (as long as the last batch's
        // switch took, at least `firstServeWindow`); those transferred meanwhile join it.
        let due = firstServes.join(source, zone, window: Self.firstServeWindow)
        try? await Task.sleep(until: due)
        await takeTurn()
        defer { endTurn() }
        if firstServes.isWaiting(source) { await serveWaitingFirst() }
        guard let outcome = firstServes.outcome(of: source) else {
            throw .conflict("zone \(source.origin) was not served")
        }
        try outcome.get()
    }

    /// How long the first zone to wait for its first serve waits for others to join it.
    static let firstServeWindow: Duration = .milliseconds(20)

    /// Serves every zone waiting for its first serve (`firstServes`) that is still configured and
    /// not served, in one switch; each one's outcome is settled in the batch. One that does not
    /// pass the geo section's check with the others is refused alone.
    func serveWaitingFirst() async {
        let started = ContinuousClock.now
        defer { firstServes.noteSwitch(took: ContinuousClock.now - started) }
        let waiting = firstServes.take()
        var next = running
        var nextZones = zones
        var served: [ZoneSource] = []
        var servedOrigins: Set<DNSName> = []
        let waitingToBeServed = Dictionary(unavailable.map { ($0.origin, $0) }, uniquingKeysWith: { a, _ in a })
        var dropped: [ZoneSource] = []
        var candidates: [(source: ZoneSource, zone: Zone)] = []
        for (source, zone) in waiting {
            guard waitingToBeServed[source.origin] == source else {
                firstServes.settle(
                    source, .failure(.conflict("zone \(source.origin) is no longer a secondary waiting to be served")))
                // Its catalog stopped listing it during the transfer: the file just written goes too.
                if source.memberOf != nil { dropped.append(source) }
                continue
            }
            candidates.append((source, zone))
        }
        // The geo section checked against all of them at once; only when that fails, one by one.
        let allPass = (try? next.geo.check(against: nextZones + candidates.map(\.zone))) != nil
        for (source, zone) in candidates {
            if !allPass {
                do { try next.geo.check(against: nextZones + [zone]) } catch {
                    firstServes.settle(source, .failure(.zone(error)))
                    continue
                }
            }
            next.zones.append(source)
            nextZones.append(zone)
            served.append(source)
            servedOrigins.insert(source.origin)
            files.noteWhole(ZoneJournal.path(forZoneFile: source.path), false)
        }
        if !dropped.isEmpty { await removeFormerMembers(dropped) }
        guard !served.isEmpty else { return }
        let wasUnavailable = unavailable
        unavailable.removeAll { servedOrigins.contains($0.origin) }
        do { _ = try await switchTo(next, nextZones, started: started) } catch {
            unavailable = wasUnavailable
            for source in served { firstServes.settle(source, .failure(.failed("\(error)"))) }
            return
        }
        for source in served {
            files.note(source.path, FileStamp(source.path))
            firstServes.settle(source, .success(()))
        }
        for (source, zone) in waiting where servedOrigins.contains(source.origin) && source.catalog != nil {
            await followCatalog(source, before: nil, after: zone)
        }
    }

    package func expireSecondary(_ origin: DNSName) async {
        if let shared { return await expireInStore(shared, origin) }
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
