import DNSWire
import NearcastAnswers

/// Where the listeners hand the NOTIFY they accepted (`Responder.acceptedNotify`): a queue the
/// secondary zones' refresher reads (`zones`), given it when it is made. Made with the listeners,
/// which start before the refresher; it keeps the latest `kept` zones notified and drops older
/// ones, so a flood of NOTIFY costs bounded memory (a zone dropped so is refreshed at its
/// refresh time, or by the next NOTIFY).
public final class NotifyInbox: Sendable {
    /// The zones notified, in the order their NOTIFY came.
    public let zones: AsyncStream<DNSName>
    private let queue: AsyncStream<DNSName>.Continuation
    static let kept = 1024

    public init() { (zones, queue) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(Self.kept)) }

    /// After `reply` was made for `query`: a NOTIFY it accepts is handed on.
    func received(_ query: [UInt8], reply: [UInt8]) {
        guard let zone = Responder.acceptedNotify(query, reply: reply) else { return }
        queue.yield(zone)
    }
}
