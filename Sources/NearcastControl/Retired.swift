import Foundation
import NearcastBasics
import NearcastZones

/// Lets go of what a switch replaced (an old compile, an old responder, old zones) on a thread of
/// its own, a moment later. Freeing a GeoLite2-wide compile takes tens of milliseconds; released
/// where the switch happens, or by whichever reader dropped the last reference (a health change,
/// an API call), that time would be theirs. A reader that took the old compile just before the
/// switch holds it for microseconds: a second later this thread holds the last reference.
///
/// The thread runs only when a core is otherwise idle, and lets zones go a piece at a time
/// (`ZonePieces`, docs/ARCHITECTURE.md §15): freed at once at the daemon's priority, a zone of a
/// million names made the record changes of the next second wait for the CPU and the malloc arenas.
enum Retired {
    static let holdFor: Duration = .seconds(1)
    /// Names a piece, and the pause after each piece: a piece of 4,096 names is freed in about a
    /// millisecond, so the frees take about a third of a core while they last.
    static let pieceSize = 4_096
    static let pause: Duration = .milliseconds(2)
    static let paceFor: Duration = .seconds(30)

    static func release(_ values: (any Sendable)?..., zones: [Zone] = [], thenGiveBackMemory: Bool = false) {
        let held = Held(values.compactMap { $0 }, zones)
        guard !held.values.isEmpty || !held.zones.isEmpty else { return }
        Thread.detachNewThread {
            // Named: a Linux thread takes the name of the one that starts it (the config's),
            // and profiles then showed this one's frees as the config's own work.
            Thread.current.name = "nc-retired"
            ThreadPriority.onlyWhenIdle()
            Thread.sleep(forTimeInterval: holdFor.seconds)
            var pieces = held.zones.map { $0.pieces(of: pieceSize) }
            // Let go here, not when the closure ends: the memory is given back only once freed.
            // What the zones shared with nothing else now lives in their pieces alone.
            held.values = []
            held.zones = []
            // While the cores are busy the pieces wait; after `paceFor` they go without pauses,
            // at the daemon's priority, so that what a stream of reloads replaced cannot pile up.
            let paced = ContinuousClock.now + paceFor
            var pacing = true
            for i in pieces.indices {
                while pieces[i].letOneGo() {
                    if pacing && ContinuousClock.now >= paced {
                        ThreadPriority.normal()
                        pacing = false
                    }
                    if pacing { Thread.sleep(forTimeInterval: pause.seconds) }
                }
            }
            // At the daemon's priority: glibc's trim holds each arena's lock while it walks it.
            ThreadPriority.normal()
            if thenGiveBackMemory { FreedMemory.giveBack() }
        }
    }

    /// What `release` holds: set and emptied by one thread after the other, never at once.
    private final class Held: @unchecked Sendable {
        var values: [any Sendable]
        var zones: [Zone]
        init(_ values: [any Sendable], _ zones: [Zone]) { (self.values, self.zones) = (values, zones) }
    }
}
