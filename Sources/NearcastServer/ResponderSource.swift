import NIOConcurrencyHelpers
import NearcastCore

/// The responder the slow path answers from, replaced whole by a reload: a query is answered by
/// the old responder or the new one, never a mix. Each generation has a number, so a handler's
/// reply cache (built from one responder) is dropped when the generation changes.
public final class ResponderSource: Sendable {
    private let box: NIOLockedValueBox<(generation: Int, responder: Responder)>

    public init(_ responder: Responder) { box = .init((0, responder)) }

    /// The responder now, and its generation.
    public var current: (generation: Int, responder: Responder) { box.withLockedValue { $0 } }

    /// Replaces the responder; queries read after this get the new one.
    public func replace(with responder: Responder) {
        box.withLockedValue { $0 = ($0.generation + 1, responder) }
    }
}
