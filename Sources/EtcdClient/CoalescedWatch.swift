import Synchronization

/// A watch whose batches are taken together: `next()` returns every batch that arrived since the
/// last call. A consumer slower than the changes (a server that reloads its geo section for each
/// node that registers) then catches up in one step, not in one step per change, while a
/// consumer that keeps up sees each batch alone. The watch is read on a task of its own, which
/// the end of the watch stops, or `cancel()`, which its consumer calls when it is done with it
/// (the task holds the value until then). One consumer at a time.
public final class CoalescedWatch: Sendable {
    private struct State {
        var batches: [WatchBatch] = []
        /// How the watch ended: nil while it runs; `.success` for an end without error.
        var end: Result<Void, any Error>?
        /// The consumer waiting for a batch or the end.
        var waiter: CheckedContinuation<Void, Never>?
    }

    private let state: Mutex<State>
    private let reader: Mutex<Task<Void, Never>?>

    public init(_ watch: AsyncThrowingStream<WatchBatch, any Error>) {
        state = Mutex(State())
        reader = Mutex(nil)
        let task = Task { [self] in
            do {
                for try await batch in watch { arrived { $0.batches.append(batch) } }
                arrived { $0.end = .success(()) }
            } catch {
                arrived { $0.end = .failure(error) }
            }
        }
        reader.withLock { $0 = task }
    }

    /// Whether the consumer is waiting in `next()` for a batch or the end now.
    public var consumerWaits: Bool { state.withLock { $0.waiter != nil } }

    /// Stops reading the watch.
    public func cancel() {
        reader.withLock { $0?.cancel() }
    }

    /// Changes the state as `change` says and wakes the consumer.
    private func arrived(_ change: (inout State) -> Void) {
        let waiter = state.withLock { s in
            change(&s)
            defer { s.waiter = nil }
            return s.waiter
        }
        waiter?.resume()
    }

    /// The batches that arrived since the last call, oldest first (waiting for one when there is
    /// none); nil once the watch ended without error; its error once it ended with one.
    public func next() async throws -> [WatchBatch]? {
        while true {
            try Task.checkCancellation()
            let (batches, end) = state.withLock { s in
                defer { s.batches = [] }
                return (s.batches, s.end)
            }
            if !batches.isEmpty { return batches }
            switch end {
            case .success: return nil
            case .failure(let error): throw error
            case nil: break
            }
            await withTaskCancellationHandler {
                await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                    let ready = state.withLock { s in
                        guard s.batches.isEmpty, s.end == nil, !Task.isCancelled else { return true }
                        s.waiter = c
                        return false
                    }
                    if ready { c.resume() }
                }
            } onCancel: {
                let waiter = state.withLock { s in
                    defer { s.waiter = nil }
                    return s.waiter
                }
                waiter?.resume()
            }
        }
    }
}
