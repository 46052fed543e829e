import NearcastAnswers
import Synchronization

/// The responder the slow path answers from, replaced whole by a reload: a query is answered by
/// the old responder or the new one, never a mix. Each generation has a number, so a handler's
/// reply cache (built from one responder) is dropped when the generation changes.
public final class ResponderSource: Sendable {
    private let box: Mutex<(generation: Int, responder: Responder)>

    public init(_ responder: Responder) { box = .init((0, responder)) }

    /// The responder now, and its generation.
    public var current: (generation: Int, responder: Responder) { box.withLock { $0 } }

    /// Replaces the responder; queries read after this get the new one. Returns the old one, for
    /// the caller to let go where its release costs nothing (a geo table's is tens of ms).
    @discardableResult
    public func replace(with responder: Responder) -> Responder {
        box.withLock { current in
            let old = current.responder
            current = (current.generation + 1, responder)
            return old
        }
    }
}
