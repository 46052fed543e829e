import DNSWire
import Foundation
import NearcastBasics
import NearcastConfiguration
import NearcastZones

#if canImport(Glibc)
import Glibc
#endif

/// Catalogs followed here (RFC 9432, ARCHITECTURE §17): a transfer of one is checked as a catalog
/// before it is served, and one that changes the zones listed has the config reloaded, which
/// adds the new members as secondary zones (`NearcastConfig.withCatalogs`) and removes those no
/// longer listed, with their files.
extension ServedConfig {
    /// A catalog followed here must read as one: a transfer that would make it unreadable (a
    /// version this server does not read) is refused, and the members stay as they are.
    static func checkCatalog(_ source: ZoneSource, _ zone: Zone) throws(ZoneEditError) {
        guard source.catalog == .consume, case .failure(let problem) = CatalogZone.members(of: zone) else { return }
        throw .zone(DiagnosticsError([Diagnostic(file: source.path, line: 0, message: problem.description)]))
    }

    /// After a transfer of `source`: when it is a catalog followed here and the zones it lists
    /// changed, a reload (once this change's turn is over) serves the new list.
    func followCatalog(_ source: ZoneSource, before: Zone?, after: Zone) {
        guard source.catalog == .consume else { return }
        let was = before.flatMap { try? CatalogZone.members(of: $0).get() } ?? []
        let now = (try? CatalogZone.members(of: after).get()) ?? []
        guard Set(was) != Set(now) else { return }
        logger.notice(
            "catalog changed its zones: reloading",
            metadata: [
                "catalog": "\(source.origin)", "zones": "\(now.count)",
                "added": "\(Set(now).subtracting(was).count)", "removed": "\(Set(was).subtracting(now).count)",
            ])
        Task { _ = try? await self.reload(by: "catalog \(source.origin)") }
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
