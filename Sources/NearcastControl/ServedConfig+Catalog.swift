import DNSWire
import Foundation
import NearcastBasics
import NearcastConfiguration
import NearcastZones

#if canImport(Glibc)
import Glibc
#endif

/// Catalogs followed here (RFC 9432, ARCHITECTURE §17): a transfer of one is checked as a catalog
/// before it is served, and one that changes the zones listed adds the new members as secondary
/// zones (`NearcastConfig.members`, as a reload does through `withCatalogs`) and removes those no
/// longer listed, with their files.
extension ServedConfig {
    /// A catalog followed here must read as one: a transfer that would make it unreadable (a
    /// version this server does not read) is refused, and the members stay as they are.
    static func checkCatalog(_ source: ZoneSource, _ zone: Zone) throws(ZoneEditError) {
        guard source.catalog == .consume, case .failure(let problem) = CatalogZone.members(of: zone) else { return }
        throw .zone(DiagnosticsError([Diagnostic(file: source.path, line: 0, message: problem.description)]))
    }

    /// After a transfer of `source` is served (the turn still held): when it is a catalog
    /// followed here and the zones it lists changed, those it no longer lists stop being served
    /// (their files deleted) and those it newly lists are configured as secondaries, not served
    /// until their first transfer, which starts at once. The config's file is not read again:
    /// the catalog changes its members, not whatever else an operator is editing.
    func followCatalog(_ source: ZoneSource, before: Zone?, after: Zone) async {
        guard source.catalog == .consume else { return }
        let was = before.flatMap { try? CatalogZone.members(of: $0).get() } ?? []
        let listed = (try? CatalogZone.members(of: after).get()) ?? []
        guard Set(was) != Set(listed) else { return }
        let keep = Set(listed)
        var everyZone = running
        everyZone.zones += unavailable
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
        var next = running
        var nextZones = zones
        for gone in removed {
            guard let i = next.zones.firstIndex(of: gone) else { continue }
            next.zones.remove(at: i)
            nextZones.remove(at: i)
        }
        let wasUnavailable = unavailable
        unavailable.removeAll { removed.contains($0) }
        unavailable += added
        do { _ = try await switchTo(next, nextZones, started: .now) } catch {
            unavailable = wasUnavailable
            logger.error(
                "catalog's change of its zones not served: a reload (or restart) serves its members as it lists them",
                metadata: ["catalog": "\(source.origin)", "why": "\(error)"])
            return
        }
        files.restamp(running.zones.map(\.path))
        await secondaries?.follow(secondarySources)
        await removeFormerMembers(removed)
    }

    /// Deletes the files of the catalogs' members of `was` that are no longer served (the
    /// catalog stopped listing them, or is no longer followed): the zone, its journal and its
    /// refresh record, so that a zone listed again later is transferred anew.
    func removeFormerMembers(_ was: [ZoneSource]) async {
        let kept = Set((running.zones + unavailable).map(\.path))
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
