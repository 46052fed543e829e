import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Work split over threads (`OwnThread`, named as the caller's) of the caller's priority: the bulk
/// of a whole answer image (seconds at 1M names, docs/ARCHITECTURE.md §11) on every core rather
/// than one. The threads take the nice value of the calling thread (Linux's is per thread), so
/// work that a writer runs yielding to the daemon's other threads stays so on every core.
public enum ParallelWork {
    /// `transform` of `items` cut into at most `parts` slices in order (fewer when slices would be
    /// smaller than `smallest` items), each on a thread of its own, the first on the caller's;
    /// the results in the slices' order. Blocks the caller until all are done.
    public static func map<T: Sendable, R: Sendable>(
        _ items: [T], parts: Int, smallest: Int = 1024, _ transform: @escaping @Sendable (ArraySlice<T>) -> R
    ) -> [R] {
        let count = max(1, min(parts, items.count / max(1, smallest)))
        guard count > 1 else { return [transform(items[...])] }
        let size = (items.count + count - 1) / count
        let slices = stride(from: 0, to: items.count, by: size).map { items[$0..<min($0 + size, items.count)] }
        let results = Results<R>(slices.count)
        let nice = getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0)
        let name = Thread.current.name.map { $0.isEmpty ? "nc-parallel" : $0 } ?? "nc-parallel"
        let threads = slices.enumerated().dropFirst().map { i, slice in
            OwnThread.start(name: name, nice: nice) { results.set(i, transform(slice)) }
        }
        results.set(0, transform(slices[0]))
        for thread in threads { thread.join() }
        return results.all
    }

    /// Memory the threads of one `map` write, each only at the places its own slice names
    /// (slices do not overlap, and `map` returns only once every thread is done): no two threads
    /// write one place, and nothing is read before all are written, so it is shared unlocked.
    public struct Disjoint<Base>: @unchecked Sendable {
        public let base: Base
        public init(_ base: Base) { self.base = base }
    }

    /// The slices' results, each set once by its own thread before the caller reads them all.
    private final class Results<R: Sendable>: Sendable {
        private let values: Mutex<[R?]>
        init(_ count: Int) { values = Mutex(Array(repeating: nil, count: count)) }
        func set(_ i: Int, _ r: R) { values.withLock { $0[i] = r } }
        var all: [R] { values.withLock { $0.map { $0! } } }
    }
}
