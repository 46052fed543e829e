import DNSWire
import NearcastAnswers
import Synchronization

/// Where the listeners hand the NOTIFY they accepted (`Responder.acceptedNotify`): the secondary
/// zones' refresher, once the daemon has started it (`deliver(to:)`). Made with the listeners,
/// which start before the zones' refresher; a NOTIFY accepted before then is not kept (the
/// refresher transfers every zone at its start).
public final class NotifyInbox: Sendable {
    private let handler = Mutex<(@Sendable (DNSName) -> Void)?>(nil)

    public init() {}

    /// From now on, each zone a NOTIFY was accepted for is given to `handler`.
    public func deliver(to handler: @escaping @Sendable (DNSName) -> Void) { self.handler.withLock { $0 = handler } }

    /// After `reply` was made for `query`: a NOTIFY it accepts is handed on.
    func received(_ query: [UInt8], reply: [UInt8]) {
        guard let zone = Responder.acceptedNotify(query, reply: reply) else { return }
        handler.withLock { $0 }?(zone)
    }
}
