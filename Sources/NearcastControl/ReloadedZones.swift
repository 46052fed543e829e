import Foundation
import NearcastAnswers
import NearcastZones

/// What a reload changes of the zones served (Sources/NearcastControl/README.md, "A reload is a
/// difference"): each zone read again is compared with the one served, so that a reload of a
/// large zone where a few records changed writes the fast path what those records reach, as the
/// same changes through the API would, instead of a whole image and generation.
struct ReloadedZones {
    /// The zones to serve: those read, except that a zone whose every RRset is as served is the
    /// one served (nothing of it changes, and the copy just read is let go), and one with a few
    /// RRsets changed is the one served with those changed.
    var zones: [Zone]
    /// The changes of the zones that changed; nil when the reload changes which zones are served
    /// (added, removed, or another order), which only a whole image says.
    var changes: [AnswerImage.Change]?
    /// RRsets added, changed or removed in the zones compared (nil when `changes` is).
    var rrsetsChanged: Int?
    /// The zones read that are not served (each the same as the one served, or changed into it):
    /// to be let go off the reload's path (`Retired`), for freeing a large zone takes a second.
    var unused: [Zone] = []

    /// The most RRsets a reload changes in the zone served rather than serve the zone read: each
    /// costs a change's lookups and checks, on the reload's path, where serving the zone read
    /// costs nothing more.
    static let fewChanges = 10_000

    /// Compares `loaded` (read for a reload) with `served`. Blocking: a lookup per name of each
    /// zone, so it belongs on a thread of its own with the reading.
    static func compare(served: [Zone], loaded: [Zone]) -> ReloadedZones {
        guard served.map(\.origin) == loaded.map(\.origin) else { return ReloadedZones(zones: loaded) }
        var zones: [Zone] = []
        var changes: [AnswerImage.Change] = []
        var count = 0
        var unused: [Zone] = []
        for (old, new) in zip(served, loaded) {
            let differences = new.differences(from: old, parts: ProcessInfo.processInfo.activeProcessorCount)
            count += differences.count
            let sameFiles = old.fromSeveralFiles == new.fromSeveralFiles
            if differences.isEmpty && sameFiles {
                zones.append(old)
                unused.append(new)
                continue
            }
            // A few changes are applied to the zone served, as the same changes through the API
            // are, and the copy just read is let go: that copy was made by the reload's own
            // threads, in malloc arenas no answering thread allocates from, where the zone served
            // shares its arenas with them (freeing it made the record changes of the next
            // second wait). A zone with many changes is served as read.
            let owners = Set(differences.map(\.name))
            if sameFiles, differences.count <= Self.fewChanges,
                let changed = try? old.changing(differences, source: "reload")
            {
                zones.append(changed)
                unused.append(new)
                changes.append(AnswerImage.Change(before: old, after: changed, owners: owners))
            } else {
                zones.append(new)
                changes.append(AnswerImage.Change(before: old, after: new, owners: owners))
            }
        }
        return ReloadedZones(zones: zones, changes: changes, rrsetsChanged: count, unused: unused)
    }
}
