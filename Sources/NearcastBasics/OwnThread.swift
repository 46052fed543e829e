import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The one way the daemon makes a thread (docs/ARCHITECTURE.md §8, "Threads"): named (`nc-…`, as
/// top, perf and /proc show it), at a nice value, running a body once. What must know that the
/// body has returned joins it (blocking: from a thread of the daemon's own) or awaits it (from a
/// task). Made and started at once (`start(name:nice:_:)`), or made first and started once its
/// owner is whole (`init`, then `start(_:)`: a body that uses its owner). `WorkerThread` (jobs in
/// order), `onOwnThread` (one blocking call, awaited) and `ParallelWork` (a slice per core) are
/// made of it; a loop that blocks in poll(2) on its own sockets (a UDP listener, NOTIFY, the
/// host's addresses) is one itself.
public final class OwnThread: Sendable {
    /// Whether the body has returned, and who waits for that.
    private final class End: Sendable {
        struct State {
            var started = false
            var done = false
            var waiting: [CheckedContinuation<Void, Never>] = []
        }
        let state = Mutex(State())
        /// Signalled once the body has returned; each `join` passes the signal on.
        let joined = DispatchSemaphore(value: 0)

        func mark() {
            let waiting = state.withLock { s in
                s.done = true
                defer { s.waiting = [] }
                return s.waiting
            }
            joined.signal()
            for w in waiting { w.resume() }
        }
    }
    private let end = End()
    private let name: String
    private let nice: Int32

    /// A thread to be named `name` (at most 15 bytes show), to run at nice value `nice` (Linux's is
    /// per thread; 0: the daemon's own priority); `start` starts it.
    public init(name: String, nice: Int32 = 0) { (self.name, self.nice) = (name, nice) }

    /// Starts a thread named `name` at nice value `nice` that runs `body`.
    @discardableResult
    public static func start(name: String, nice: Int32 = 0, _ body: @escaping @Sendable () -> Void) -> OwnThread {
        let thread = OwnThread(name: name, nice: nice)
        thread.start(body)
        return thread
    }

    /// Starts the thread, running `body`; once only.
    public func start(_ body: @escaping @Sendable () -> Void) {
        let first = end.state.withLock { s in
            defer { s.started = true }
            return !s.started
        }
        precondition(first, "thread \(name) started twice")
        let (end, name, nice) = (end, name, nice)
        let thread = Thread {
            // Named and niced from inside: both apply to the calling thread on Linux (a thread
            // otherwise takes the name of the one that started it).
            Thread.current.name = name
            if nice != 0 { _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, nice) }
            body()
            end.mark()
        }
        thread.start()
    }

    /// Whether the body has returned.
    public var hasEnded: Bool { end.state.withLock { $0.done } }

    /// Blocks the calling thread (one of the daemon's own, never the cooperative pool's or an
    /// event loop's) until the body has returned; the thread must have been started.
    public func join() {
        end.joined.wait()
        end.joined.signal()
    }

    /// Suspends until the body has returned; the thread must have been started.
    public func ended() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let done = end.state.withLock { s in
                if !s.done { s.waiting.append(c) }
                return s.done
            }
            if done { c.resume() }
        }
    }
}
