import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A thread of its own (`OwnThread`) that runs jobs one at a time, in the order given. It ends once
/// its owner is gone and the jobs given before have run.
public final class WorkerThread: Sendable {
    private final class Queue: Sendable {
        let jobs = Mutex<[(@Sendable () -> Void)?]>([])
        let waiting = DispatchSemaphore(value: 0)

        func add(_ job: (@Sendable () -> Void)?) {
            jobs.withLock { $0.append(job) }
            waiting.signal()
        }
    }
    private let queue = Queue()

    /// `nice`: the thread's nice value (Linux's is per thread), 0 for the daemon's own priority.
    public init(name: String, nice: Int32 = 0) {
        let queue = queue
        OwnThread.start(name: name, nice: nice) {
            while true {
                queue.waiting.wait()
                guard let job = queue.jobs.withLock({ $0.removeFirst() }) else { return }
                job()
            }
        }
    }

    deinit { queue.add(nil) }

    /// Runs `body` on the thread, without waiting for it.
    public func submit(_ body: @escaping @Sendable () -> Void) { queue.add(body) }

    /// Runs `body` on the thread and blocks the calling thread (one of the daemon's own, never the
    /// cooperative pool's) until it has returned or thrown.
    public func runAndWait<T: Sendable, E: Error>(_ body: @escaping @Sendable () throws(E) -> T) throws(E) -> T {
        let done = DispatchSemaphore(value: 0)
        let result = Mutex<Result<T, E>?>(nil)
        queue.add {
            let r = Result { () throws(E) -> T in try body() }
            result.withLock { $0 = r }
            done.signal()
        }
        done.wait()
        return try result.withLock { $0! }.get()
    }

    /// Runs `body` on the thread and returns what it returned or threw.
    public func run<T: Sendable, E: Error>(_ body: @escaping @Sendable () throws(E) -> T) async throws(E) -> T {
        let result: Result<T, E> = await withCheckedContinuation { continuation in
            queue.add { continuation.resume(returning: Result { () throws(E) -> T in try body() }) }
        }
        return try result.get()
    }
}

/// An actor's executor on a thread of its own (`WorkerThread`): an actor that does blocking work
/// in its methods (files written and synced, an audit line appended) runs it there, off Swift's
/// cooperative pool, whose few threads the daemon's health changes and API calls share
/// (ARCHITECTURE §8). Give the actor `nonisolated var unownedExecutor` from `asUnownedSerialExecutor()`.
public final class ThreadExecutor: SerialExecutor {
    private let thread: WorkerThread

    public init(name: String) { thread = WorkerThread(name: name) }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedSerialExecutor()
        thread.submit { job.runSynchronously(on: executor) }
    }

    public func asUnownedSerialExecutor() -> UnownedSerialExecutor { UnownedSerialExecutor(ordinary: self) }
}

/// Runs blocking `body` on a thread of its own, away from NIO's event loops and Swift's
/// cooperative pool, named `name` (top, perf and /proc show it). `background`: the thread
/// yields the CPU to everything else the daemon does (nice 10), for work that takes seconds of
/// CPU and holds no lock that others wait for (ARCHITECTURE §11).
public func onOwnThread<T: Sendable>(
    name: String = "nc-blocking", background: Bool = false, _ body: @escaping @Sendable () throws -> T
) async throws -> T {
    try await withCheckedThrowingContinuation { (c: CheckedContinuation<T, any Error>) in
        OwnThread.start(name: name, nice: background ? 10 : 0) { c.resume(with: Result { try body() }) }
    }
}
