import NearcastConfiguration
import NearcastZones

/// Secondary zones transferred whole and waiting to be served for the first time, served together
/// in one switch (`SecondaryServing.serveFirst`): the first to wait opens the batch,
/// which closes a moment later (as long as the last batch's switch took, at least a window); those
/// transferred meanwhile join it, and each learns its own outcome. A catalog's thousands of
/// members, transferred at once, cost tens of switches of every zone served, not thousands. A
/// value `ServedConfig` owns.
struct FirstServeBatch {
    /// The zones waiting, in the order they came.
    private var waiting: [(source: ZoneSource, zone: Zone)] = []
    /// The outcome of those served (or refused), until each asks for its own.
    private var outcomes: [ZoneSource: Result<Void, ZoneEditError>] = [:]
    /// When the batch waiting closes.
    private var due: ContinuousClock.Instant?
    /// What the last batch's switch took (at most a second).
    private var lastSwitch: Duration = .zero

    /// Adds `source`'s zone to the batch (opening one `window` or the last switch's time from now
    /// when none is waiting), and says when the batch closes.
    mutating func join(_ source: ZoneSource, _ zone: Zone, window: Duration) -> ContinuousClock.Instant {
        if waiting.isEmpty { due = .now + max(window, lastSwitch) }
        waiting.append((source, zone))
        return due ?? .now
    }

    /// Whether `source` waits in the batch still (no switch has served it yet).
    func isWaiting(_ source: ZoneSource) -> Bool { waiting.contains { $0.source == source } }

    /// The batch waiting, taken to be served: the next to wait opens a new one.
    mutating func take() -> [(source: ZoneSource, zone: Zone)] {
        defer {
            waiting = []
            due = nil
        }
        return waiting
    }

    /// Notes `source`'s outcome, for it to take (`outcome(of:)`).
    mutating func settle(_ source: ZoneSource, _ outcome: Result<Void, ZoneEditError>) { outcomes[source] = outcome }

    /// `source`'s outcome, taken: nil when no switch settled it.
    mutating func outcome(of source: ZoneSource) -> Result<Void, ZoneEditError>? {
        outcomes.removeValue(forKey: source)
    }

    /// Notes what a batch's switch took, which the next batch waits at least.
    mutating func noteSwitch(took: Duration) { lastSwitch = min(took, .seconds(1)) }
}
