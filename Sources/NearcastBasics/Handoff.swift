import Synchronization

/// A value one task hands to others, once: a part of the daemon that has started hands on what it
/// made (the port it bound), and the parts that need it wait for it. A part that could not start
/// hands on its error instead. Waiting can be cancelled.
public final class Handoff<Value: Sendable>: Sendable {
    private struct State {
        var result: Result<Value, any Error>?
        var waiters: [UInt64: CheckedContinuation<Value, any Error>] = [:]
        var nextWaiter: UInt64 = 0
    }
    private let state = Mutex(State())

    public init() {}

    /// Hands on `result`, and wakes whoever waits for it; every later call does nothing.
    public func hand(_ result: Result<Value, any Error>) {
        let waiters = state.withLock { s -> [CheckedContinuation<Value, any Error>] in
            guard s.result == nil else { return [] }
            s.result = result
            defer { s.waiters = [:] }
            return Array(s.waiters.values)
        }
        for w in waiters { w.resume(with: result) }
    }

    /// Whether something was handed on yet.
    public var isHanded: Bool { state.withLock { $0.result != nil } }

    /// What was handed on, once it is: the value, or the error handed on; CancellationError when
    /// the waiting task is cancelled first.
    public var value: Value {
        get async throws {
            let id = state.withLock { s in
                s.nextWaiter += 1
                return s.nextWaiter
            }
            return try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { (c: CheckedContinuation<Value, any Error>) in
                    let now = state.withLock { s -> Result<Value, any Error>? in
                        if let r = s.result { return r }
                        // Cancelled before this waiter was listed: the handler below found nothing.
                        if Task.isCancelled { return .failure(CancellationError()) }
                        s.waiters[id] = c
                        return nil
                    }
                    if let now { c.resume(with: now) }
                }
            } onCancel: {
                state.withLock { $0.waiters.removeValue(forKey: id) }?.resume(throwing: CancellationError())
            }
        }
    }
}
