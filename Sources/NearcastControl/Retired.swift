import Foundation
import NearcastBasics
import Synchronization

/// Lets go of what a switch replaced (an old compile, an old responder, old zones) on a thread of
/// its own, a moment later. Freeing a GeoLite2-wide compile takes tens of milliseconds; released
/// where the switch happens, or by whichever reader dropped the last reference (a health change,
/// an API call), that time would be theirs. A reader that took the old compile just before the
/// switch holds it for microseconds: a second later this thread holds the last reference.
///
/// The thread runs only when a core is otherwise idle (Sources/NearcastControl/README.md, "Letting a zone
/// go"): at the daemon's priority, freeing a zone of a million names made the record changes of
/// the next second wait for a core.
enum Retired {
    static let holdFor: Duration = .seconds(1)

    static func release(_ values: (any Sendable)?..., thenGiveBackMemory: Bool = false) {
        let values = values.compactMap { $0 }
        guard !values.isEmpty else { return }
        let held = Held(values)
        // Named: a Linux thread takes the name of the one that starts it (the config's), and
        // profiles then showed this one's frees as the config's own work.
        OwnThread.start(name: "nc-retired") {
            ThreadPriority.onlyWhenIdle()
            Thread.sleep(forTimeInterval: holdFor.seconds)
            // Let go here, not when the closure ends: the memory is given back only once freed.
            held.values.withLock { $0 = [] }
            // At the daemon's priority: glibc's trim holds each arena's lock while it walks it.
            ThreadPriority.normal()
            if thenGiveBackMemory { FreedMemory.giveBack() }
        }
    }

    /// What `release` holds until its thread lets it go.
    private final class Held: Sendable {
        let values: Mutex<[any Sendable]>
        init(_ values: [any Sendable]) { self.values = Mutex(values) }
    }
}
