import DNSWire
import Foundation
import Logging
import NearcastBasics
import NearcastConfiguration
import NearcastZones

#if canImport(Glibc)
import Glibc
#endif

/// Catalogs followed here (RFC 9432, ARCHITECTURE §17): a transfer of one is checked as a catalog
/// before it is served, and one that changes the zones listed adds the new members as secondary
/// zones (`NearcastConfig.members`, as a reload does through `withCatalogs`) and removes those no
/// longer listed, with their files. The refresher (`SecondaryZones`) follows the secondaries
/// configured after each transfer of a catalog.
extension SecondaryServing {
    /// A catalog followed here must read as one: a transfer that would make it unreadable (a
    /// version this server does not read) is refused, and the members stay as they are.
    static func checkCatalog(_ source: ZoneSource, _ zone: Zone) throws(ZoneEditError) {
        guard source.catalog == .consume, case .failure(let problem) = CatalogZone.members(of: zone) else { return }
        throw .zone(DiagnosticsError([Diagnostic(file: source.path, line: 0, message: problem.description)]))
    }

    /// After a transfer of `source` is served (the turn still held): when it is a catalog
    /// followed here and the zones it lists changed, those it no longer lists stop being served
    /// (their files deleted) and those it newly lists are configured as secondaries, not served
    /// until their first transfer. The config's file is not read again: the catalog changes its
    /// members, not whatever else an operator is editing.
    static func followCatalog(
        _ s: isolated ServedConfig, _ source: ZoneSource, before: Zone?, after: Zone, logger: Logger
    )
        async
    {
        guard source.catalog == .consume else { return }
        let was = before.flatMap { try? CatalogZone.members(of: $0).get() } ?? []
        let listed = (try? CatalogZone.members(of: after).get()) ?? []
        guard Set(was) != Set(listed) else { return }
        let keep = Set(listed)
        var everyZone = s.running
        everyZone.zones += s.unavailable
        let (added, notes) = everyZone.members(of: source, listing: listed)
        for note in notes { logger.notice("catalog", metadata: ["note": "\(note)"]) }
        let removed = everyZone.zones.filter { $0.memberOf == source.origin && !keep.contains($0.origin) }
        guard !added.isEmpty || !removed.isEmpty else { return }
        logger.notice(
            "catalog changed its zones",
            metadata: [
                "catalog": "\(source.origin)", "zones": "\(listed.count)", "added": "\(added.count)",
                "removed": "\(removed.count)",
            ])
        var next = s.running
        var nextZones = s.zones
        for gone in removed {
            guard let i = next.zones.firstIndex(of: gone) else { continue }
            next.zones.remove(at: i)
            nextZones.remove(at: i)
        }
        let wasUnavailable = s.unavailable
        s.unavailable.removeAll { removed.contains($0) }
        s.unavailable += added
        do { _ = try await s.switchTo(next, nextZones, started: .now) } catch {
            s.unavailable = wasUnavailable
            logger.error(
                "catalog's change of its zones not served: a reload (or restart) serves its members as it lists them",
                metadata: ["catalog": "\(source.origin)", "why": "\(error)"])
            return
        }
        s.files.restamp(s.running.zones.map(\.path))
        await removeFormerMembers(removed, keeping: s.running.zones + s.unavailable, logger)
    }

    /// Deletes the files of the catalogs' members of `was` that are no longer served (not in
    /// `keeping`: the catalog stopped listing them, or is no longer followed): the zone, its
    /// journal and its refresh record, so that a zone listed again later is transferred anew.
    static func removeFormerMembers(_ was: [ZoneSource], keeping: [ZoneSource], _ logger: Logger) async {
        let kept = Set(keeping.map(\.path))
        let gone = was.filter { !kept.contains($0.path) }
        guard !gone.isEmpty else { return }
        for source in gone {
            logger.notice(
                "zone no longer listed in its catalog: removed",
                metadata: ["zone": "\(source.origin)", "catalog": "\(source.memberOf.map { "\($0)" } ?? "-")"])
        }
        let paths = gone.map(\.path)
        _ = try? await onOwnThread(name: "nc-zonefile") {
            for path in paths {
                for file in [path, ZoneJournal.path(forZoneFile: path), SecondaryRefreshRecord.path(forZoneFile: path)]
                {
                    unlink(file)
                }
            }
        }
    }
}
