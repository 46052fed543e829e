import BPFKit
import Foundation
import Glibc
import NearcastAnswers
import NearcastGeo
import Synchronization

#if canImport(Glibc)
#endif

/// The one writer of the fast path's generations (ARCHITECTURE §11). Each write (the answer image
/// built from a responder, the geo maps of a new compile filled, the switch, the grace period)
/// runs on a thread of its own, one at a time, in the order asked: seconds of blocking work for a
/// whole GeoLite2-City never hold Swift's cooperative pool or a NIO event loop, and the caller
/// awaits the result. Health changes do not queue here: they are single map writes
/// (`FastPath.writeNodeHealth`, `writePoolTTLCap`) that go in while a write is under way.
public final class GenerationWriter: Sendable {
    public let fastPath: FastPath
    private let thread = WorkerThread(name: "nearcast-writer")

    public init(_ fastPath: FastPath) { self.fastPath = fastPath }

    /// Makes the fast path answer what `responder` answers (its answer image) and `geo`'s names,
    /// as a new generation switched in with one write.
    public func write(responder: Responder, geo: GeoTable?) async throws(BPFError) -> FastPath.TableWrite {
        let fastPath = fastPath
        let written = try await thread.run { () throws(BPFError) -> FastPath.TableWrite in
            let image = AnswerImage.build(responder: responder, maxSections: FastPath.sectionsCapacity)
            return try fastPath.write(image, geo: geo)
        }
        // The maps it replaced are emptied after, in the background: the caller does not wait, a
        // next write does.
        thread.submit { fastPath.drainRetired() }
        return written
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

    init(name: String) {
        let queue = queue
        let thread = Thread {
            while true {
                queue.waiting.wait()
                guard let job = queue.jobs.withLock({ $0.removeFirst() }) else { return }
                job()
            }
        }
        thread.name = name
        thread.start()
    }

    deinit { queue.add(nil) }

    /// Runs `body` on the thread, without waiting for it.
    func submit(_ body: @escaping @Sendable () -> Void) { queue.add(body) }

    /// Runs `body` on the thread and returns what it returned or threw.
    func run<T: Sendable, E: Error>(_ body: @escaping @Sendable () throws(E) -> T) async throws(E) -> T {
        let result: Result<T, E> = await withCheckedContinuation { continuation in
            queue.add { continuation.resume(returning: Result { () throws(E) -> T in try body() }) }
        }
        return try result.get()
    }
}
