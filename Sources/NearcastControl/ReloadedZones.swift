import Foundation
import NearcastAnswers
import NearcastZones

/// What a reload changes of the zones served (docs/ARCHITECTURE.md §15, "A reload is a
/// difference"): each zone read again is compared with the one served, so that a reload of a
/// large zone where a few records changed writes the fast path what those records reach, as the
/// same changes through the API would, instead of a whole image and generation.
struct ReloadedZones {
    /// The zones to serve: those read, except that a zone whose every RRset is as served is the
    /// one served (nothing of it changes, and the copy just read is let go).
    var zones: [Zone]
    /// The changes of the zones that changed; nil when the reload changes which zones are served
    /// (added, removed, or another order), which only a whole image says.
    var changes: [AnswerImage.Change]?
    /// RRsets added, changed or removed in the zones compared (nil when `changes` is).
    var rrsetsChanged: Int?
    /// The zones read that are not served (each the same as the one served): to be let go off
    /// the reload's path (`Retired`), for freeing a large zone takes a second.
    var unused: [Zone] = []

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
            if differences.isEmpty && old.fromSeveralFiles == new.fromSeveralFiles {
                zones.append(old)
                unused.append(new)
            } else {
                zones.append(new)
                changes.append(AnswerImage.Change(before: old, after: new, owners: Set(differences.map(\.name))))
            }
        }
        return ReloadedZones(zones: zones, changes: changes, rrsetsChanged: count, unused: unused)
    }
}
