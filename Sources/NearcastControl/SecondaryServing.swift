import DNSWire
import Foundation
import Logging
import NearcastBasics
import NearcastConfiguration
import NearcastFleet
import NearcastTSIG
import NearcastTransfer
import NearcastZones

#if canImport(Glibc)
import Glibc
#endif

/// Secondary zones served (ARCHITECTURE §17): what their transfers in bring (`SecondaryZones`
/// fetches them), checked and served through the path every change takes (`ServedConfig.commit`:
/// journaled, the fast path written what it reaches, the file written back), each on a turn of
/// its own; the zones that cannot be served now (`ServedConfig.unavailable`: SERVFAIL); and, in a
/// fleet (`shared`), written into the store instead (SecondaryServing+Fleet.swift), whence every
/// server serves them. Catalogs followed change the secondaries configured
/// (SecondaryServing+Catalog.swift).
package struct SecondaryServing: TransferredZones {
    let served: ServedConfig
    /// A fleet's store, when the zones are shared.
    let shared: (any SharedZones)?
    let logger: Logger

    package init(served: ServedConfig, shared: (any SharedZones)?, logger: Logger) {
        self.served = served
        self.shared = shared
        self.logger = logger
    }

    package func secondary(_ origin: DNSName) async -> (source: ZoneSource, zone: Zone?, keys: TSIGKeyring)? {
        await served.secondary(origin)
    }

    package func secondarySources() async -> [ZoneSource] { await served.secondarySources }

    package func applyTransfer(_ origin: DNSName, _ outcome: TransferIn.Outcome, from primary: String)
        async throws(ZoneEditError) -> Zone
    {
        // A fleet's secondary: the store carries it to every server.
        if let shared { return try await applyTransferToStore(shared, origin, outcome, from: primary) }
        // A zone not served yet, transferred whole: served with the others that come meanwhile.
        if case .zone(let records, _) = outcome, let state = await served.secondary(origin), state.zone == nil {
            let source = state.source
            let built = try Self.build(origin, records, from: primary)
            try Self.checkCatalog(source, built)
            try await serveFirst(source, built)
            return built
        }
        let logger = self.logger
        return try await served.withTurn { (s) throws(ZoneEditError) -> Zone in
            let started = ContinuousClock.now
            guard let (source, served, _) = s.secondary(origin) else {
                throw .notFound("no secondary zone \(origin) is configured here")
            }
            let index = s.running.zones.firstIndex { $0.origin == origin }
            switch outcome {
            case .upToDate:
                guard let served else {
                    throw .conflict("the primary says the zone is up to date, and none is served")
                }
                return served
            case .changes(let changesets):
                guard let served, let i = index else { throw .conflict("changes (IXFR) for a zone not served") }
                // Every change checked before any is served: a transfer that fails keeps the zone whole.
                var zone = served
                var steps: [(Zone, ZoneChangeset)] = []
                for c in changesets {
                    do throws(DiagnosticsError) {
                        zone = try zone.applying(c, source: "IXFR from \(primary)")
                    } catch { throw .zone(error) }
                    steps.append((zone, c))
                }
                try s.checkGeo(replacing: i, with: zone)
                try Self.checkCatalog(source, zone)
                for (changed, changeset) in steps { try await s.commit(i, changed, changeset, started: started) }
                await Self.followCatalog(s, source, before: served, after: zone, logger: logger)
                return zone
            case .zone(let records, let serial):
                let built = try Self.build(origin, records, from: primary)
                try Self.checkCatalog(source, built)
                guard let served, let i = index else {
                    throw .conflict(
                        "the zone stopped being served during its transfer: transferred again at its next refresh")
                }
                // The whole zone, served as the difference from the zone served.
                let changed: Zone
                let changeset: ZoneChangeset
                do throws(DiagnosticsError) {
                    (changed, changeset) = try served.replacing(
                        built.differences(from: served), serial: serial, source: "AXFR from \(primary)")
                } catch { throw .zone(error) }
                guard !changeset.removed.isEmpty || !changeset.added.isEmpty else { return served }
                try s.checkGeo(replacing: i, with: changed)
                try await s.commit(i, changed, changeset, started: started)
                await Self.followCatalog(s, source, before: served, after: changed, logger: logger)
                return changed
            }
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
    /// switch took) are served together, in one switch (`FirstServeBatch`): a catalog's thousands
    /// of members, transferred at once, cost tens of switches of every zone served, not thousands.
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
        let due = await served.joinFirstServe(source, zone, window: Self.firstServeWindow)
        try? await Task.sleep(until: due)
        let logger = self.logger
        try await served.withTurn { (s) throws(ZoneEditError) in
            if s.firstServes.isWaiting(source) { await Self.serveWaitingFirst(s, logger: logger) }
            guard let outcome = s.firstServes.outcome(of: source) else {
                throw .conflict("zone \(source.origin) was not served")
            }
            try outcome.get()
        }
    }

    /// How long the first zone to wait for its first serve waits for others to join it.
    static let firstServeWindow: Duration = .milliseconds(20)

    /// Serves every zone waiting for its first serve (`firstServes`) that is still configured and
    /// not served, in one switch; each one's outcome is settled in the batch. One that does not
    /// pass the geo section's check with the others is refused alone.
    static func serveWaitingFirst(_ s: isolated ServedConfig, logger: Logger) async {
        let started = ContinuousClock.now
        defer { s.firstServes.noteSwitch(took: ContinuousClock.now - started) }
        let waiting = s.firstServes.take()
        var next = s.running
        var nextZones = s.zones
        var served: [ZoneSource] = []
        var servedOrigins: Set<DNSName> = []
        let waitingToBeServed = Dictionary(s.unavailable.map { ($0.origin, $0) }, uniquingKeysWith: { a, _ in a })
        var dropped: [ZoneSource] = []
        var candidates: [(source: ZoneSource, zone: Zone)] = []
        for (source, zone) in waiting {
            guard waitingToBeServed[source.origin] == source else {
                s.firstServes.settle(
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
                    s.firstServes.settle(source, .failure(.zone(error)))
                    continue
                }
            }
            next.zones.append(source)
            nextZones.append(zone)
            served.append(source)
            servedOrigins.insert(source.origin)
            s.files.noteWhole(ZoneJournal.path(forZoneFile: source.path), false)
        }
        if !dropped.isEmpty { await removeFormerMembers(dropped, keeping: s.running.zones + s.unavailable, logger) }
        guard !served.isEmpty else { return }
        let wasUnavailable = s.unavailable
        s.unavailable.removeAll { servedOrigins.contains($0.origin) }
        do { _ = try await s.switchTo(next, nextZones, started: started) } catch {
            s.unavailable = wasUnavailable
            for source in served { s.firstServes.settle(source, .failure(.failed("\(error)"))) }
            return
        }
        for source in served {
            s.files.note(source.path, FileStamp(source.path))
            s.firstServes.settle(source, .success(()))
        }
        for (source, zone) in waiting where servedOrigins.contains(source.origin) && source.catalog != nil {
            await followCatalog(s, source, before: nil, after: zone, logger: logger)
        }
    }

    package func expireSecondary(_ origin: DNSName) async {
        if let shared { return await expireInStore(shared, origin) }
        let logger = self.logger
        await served.withTurn { s in
            guard let i = s.running.zones.firstIndex(where: { $0.origin == origin && $0.isSecondary }) else { return }
            var next = s.running
            let source = next.zones.remove(at: i)
            var nextZones = s.zones
            nextZones.remove(at: i)
            s.unavailable.append(source)
            do { _ = try await s.switchTo(next, nextZones, started: .now) } catch {
                // Still served: the fast path could not be written without it. Tried again at its next wake.
                s.unavailable.removeAll { $0.origin == origin }
                logger.error("expired zone still served", metadata: ["zone": "\(origin)", "why": "\(error)"])
            }
        }
    }
}
