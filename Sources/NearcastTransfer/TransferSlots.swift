import Synchronization

/// How many transfers out may run at once (BIND's `transfers-out`, 10 there too): each holds a
/// thread and the zone it began with, so a client allowed to transfer cannot open a thousand.
/// One per server, shared by its connections; a request over the limit is REFUSED, and the
/// secondary asks again at its retry interval.
public final class TransferSlots: Sendable {
    public let limit: Int
    private let used = Mutex(0)

    public init(limit: Int = 10) { self.limit = limit }

    /// Takes a slot; false when all are taken.
    public func take() -> Bool {
        used.withLock { n in
            guard n < limit else { return false }
            n += 1
            return true
        }
    }

    /// Gives back a slot `take` gave.
    public func release() { used.withLock { $0 = max(0, $0 - 1) } }

    /// Slots taken now.
    public var inUse: Int { used.withLock { $0 } }
}
