import BPFKit
import Foundation
import NearcastAnswers
import NearcastGeo
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The one writer of the fast path's generations (ARCHITECTURE §11). Each write runs on threads of
/// its own, one write at a time, in the order asked, and the caller awaits the result: seconds of
/// blocking work for a whole GeoLite2-City never hold Swift's cooperative pool or a NIO event loop.
/// The bulk of a write (the answer image built from a responder, the geo maps of a new compile
/// filled, the new generation written beside the live one: `FastPath.prepare`) and the emptying
/// of the maps it replaced (`drainRetired`) run on a background thread, which yields the CPU to
/// everything else the daemon does; the switch (a few entries under the fast path's lock, then a
/// grace period: `FastPath.switchTo`) runs on a thread of ordinary priority, so that a health
/// change waiting for that lock never waits behind a thread that is made to yield. Health changes
/// do not queue here: they are single map writes (`FastPath.writeNodeHealth`, `writePoolTTLCap`)
/// that go in while a write is under way.
public final class GenerationWriter: Sendable {
    public let fastPath: FastPath
    private let writer = WorkerThread(name: "nc-writer")
    private let background = WorkerThread(name: "nc-writer-bulk", nice: 10)

    public init(_ fastPath: FastPath) { self.fastPath = fastPath }

    /// Makes the fast path answer what `responder` answers (its answer image) and `geo`'s names,
    /// as a new generation switched in with one write.
    public func write(responder: Responder, geo: GeoTable?) async throws(BPFError) -> FastPath.TableWrite {
        let (fastPath, background) = (fastPath, background)
        // One job on the writer's thread per write keeps writes one at a time and in order; it
        // hands the bulk to the background thread and waits for it there.
        let written = try await writer.run { () throws(BPFError) -> FastPath.TableWrite in
            let prepared = try background.runAndWait { () throws(BPFError) -> FastPath.Prepared in
                let image = AnswerImage.build(responder: responder, maxSections: FastPath.sectionsCapacity)
                return try fastPath.prepare(image, geo: geo)
            }
            return try fastPath.switchTo(prepared)
        }
        // The maps it replaced are emptied after, a slice at a time: the caller does not wait,
        // and a write asked for meanwhile goes before the next slice.
        background.submit(drainSlice)
        return written
    }

    /// One slice of the drain, then the next after whatever was asked meanwhile.
    private var drainSlice: @Sendable () -> Void {
        { [fastPath, background] in
            if fastPath.drainRetired() { background.submit(self.drainSlice) }
        }
    }
}

/// A thread of its own that runs jobs one at a time, in the order given. It ends once its owner is
/// gone and the jobs given before have run.
final class WorkerThread: Sendable {
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
    init(name: String, nice: Int32 = 0) {
        let queue = queue
        let thread = Thread {
            // Named and niced from inside: both apply to the calling thread (setpriority(2) with
            // `who` 0, on Linux), and the name shows in top, perf and /proc.
            Thread.current.name = name
            if nice != 0 { _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, nice) }
            while true {
                queue.waiting.wait()
                guard let job = queue.jobs.withLock({ $0.removeFirst() }) else { return }
                job()
            }
        }
        thread.start()
    }

    deinit { queue.add(nil) }

    /// Runs `body` on the thread, without waiting for it.
    func submit(_ body: @escaping @Sendable () -> Void) { queue.add(body) }

    /// Runs `body` on the thread and blocks the calling thread (one of the daemon's own, never the
    /// cooperative pool's) until it has returned or thrown.
    func runAndWait<T: Sendable, E: Error>(_ body: @escaping @Sendable () throws(E) -> T) throws(E) -> T {
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
    func run<T: Sendable, E: Error>(_ body: @escaping @Sendable () throws(E) -> T) async throws(E) -> T {
        let result: Result<T, E> = await withCheckedContinuation { continuation in
            queue.add { continuation.resume(returning: Result { () throws(E) -> T in try body() }) }
        }
        return try result.get()
    }
}
