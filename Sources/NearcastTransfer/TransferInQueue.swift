import Synchronization

/// How many transfers in run at once (BIND's `transfers-in`, 10 there too). A catalog of ten
/// thousand members asks for ten thousand zones at its first transfer; each transfer holds a
/// thread and a connection to a primary, and ten thousand at once held ten thousand threads and
/// were refused by primaries that limit their clients. Those over the limit wait their turn, in
/// the order they came.
public final class TransferInQueue: Sendable {
    public let limit: Int
    private let state = Mutex<(running: Int, waiting: [CheckedContinuation<Void, Never>])>((0, []))

    public init(limit: Int = 10) { self.limit = limit }

    /// Waits for a place, and takes it; give it back with `release`.
    public func take() async {
        await withCheckedContinuation { (place: CheckedContinuation<Void, Never>) in
            let now = state.withLock { s -> Bool in
                guard s.running < limit else {
                    s.waiting.append(place)
                    return false
                }
                s.running += 1
                return true
            }
            if now { place.resume() }
        }
    }

    /// Gives back a place `take` gave: to the first waiting, if any.
    public func release() {
        let next = state.withLock { s -> CheckedContinuation<Void, Never>? in
            guard s.waiting.isEmpty else { return s.waiting.removeFirst() }
            s.running = max(0, s.running - 1)
            return nil
        }
        next?.resume()
    }

    /// Transfers running now, and waiting.
    public var load: (running: Int, waiting: Int) { state.withLock { ($0.running, $0.waiting.count) } }
}
