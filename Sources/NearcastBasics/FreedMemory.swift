import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Memory the process freed, given back to the system.
///
/// glibc keeps freed memory in its arenas for reuse and returns only what lies at the top of a
/// heap, so one large transient (a zone file written back, a zone replaced by a reload) can
/// leave the resident size raised for good although nothing holds it (docs/ARCHITECTURE.md §15:
/// memory stays put under a stream of changes). glibc's `malloc_trim(0)` gives back every whole
/// free page of every arena; it walks the arenas' free lists, so it is called after such a
/// transient, not after each small change. Looked up at run time: Swift's Glibc module does not
/// export <malloc.h>, and a C library without it (musl) simply keeps its memory.
public enum FreedMemory {
    public static func giveBack() {
        _ = trim?(0)
        trimOwnHeapTop()
    }

    /// Gives back the free top of the calling thread's heap. `malloc_trim` gives back free
    /// blocks inside every heap but the top of the main heap alone, and the top of another heap
    /// goes back only when a large block freed there leaves more than the trim threshold free:
    /// below the 16 MiB of `trimHeapsAsTheyGo`, a transient of a few MiB on a thread of its own (a
    /// zone file written back, its journal trimmed) stayed resident for good: +5 MiB after
    /// 10,000 changes to a zone of 10k names. So a block of the threshold's size is taken from the
    /// top and freed: the top is then over the threshold, and glibc trims the heap down to what
    /// it holds (of the block's pages, only those of glibc's headers at its ends are written; and
    /// `mallopt` is not called while other threads allocate, which glibc does not allow). Called on the thread that had the
    /// transient, right after it.
    private static func trimOwnHeapTop() {
        // (malloc and free looked up, not called by name: the compiler drops a block allocated
        // and freed unused.)
        guard let allocate, let release, thresholdSet.load(ordering: .acquiring) else { return }
        release(allocate(Int(Self.threshold)))
    }

    /// Whether `trimHeapsAsTheyGo` set the threshold (not left to the operator's tunables).
    private static let thresholdSet = Atomic(false)
    private static let threshold: Int32 = 16 << 20

    /// Makes glibc give back the free top of every heap as it goes, once more than 16 MiB is free
    /// there, and gives the daemon's threads arenas of their own, for its whole run. Called once,
    /// at the start.
    ///
    /// By default glibc raises its trim threshold with each large block freed, up to 64 MiB, and
    /// `malloc_trim` gives back the top of the main heap alone: the top of another thread's
    /// heap stayed resident. After a zone file of 1M names was written back (hundreds of MiB held
    /// for a second on a thread of its own), 36 MiB stayed with XDP on (docs/ARCHITECTURE.md
    /// §15). The mmap threshold is fixed at the most the dynamic one reaches (32 MiB), so large
    /// arrays stay in the heaps as before. Not lower than 16 MiB: at 1 MiB, glibc gave back and
    /// took again the top of a heap as a write-back's buffers came and went, each time taking the
    /// process's memory map lock, which every page fault of the other threads waits for: record
    /// changes made while a 1M-name zone was written back waited up to 95 ms (p99 2.6 ms, 48 of
    /// 17,600 over 5 ms); at 16 MiB, 27 ms at the write-back's end (p99 2.1 ms, 27 over 5 ms),
    /// and the memory after 2,000 changes as at 1 MiB. Not when the environment sets glibc's malloc tunables
    /// (`MALLOC_TRIM_THRESHOLD_`, `MALLOC_MMAP_THRESHOLD_`, `GLIBC_TUNABLES`): the operator's
    /// choice stands.
    public static func trimHeapsAsTheyGo() {
        let tunables = ["MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TOP_PAD_", "GLIBC_TUNABLES"]
        guard tunables.allSatisfy({ getenv($0) == nil }), let mallopt else { return }
        _ = mallopt(Self.trimThreshold, Self.threshold)
        thresholdSet.store(true, ordering: .releasing)
        _ = mallopt(Self.mmapThreshold, 32 << 20)
        // Arenas enough for every thread of the daemon's own (glibc's default is 8 a core): on two
        // cores the 16 were shared, and the frees of a reload's zone copy (`Retired`) landed in
        // the management API's arena, whose next allocations consolidated them. At 1M names with
        // XDP, the record changes of the second after a reload: p99 1.5-5.5 ms against 3.2-7.0
        // over three alternated pairs, and the daemon's own memory after them +3-4 MiB against
        // +14-20 (Sources/NearcastControl/README.md, "Letting a zone go").
        _ = mallopt(Self.arenaMax, 64)
    }

    /// <malloc.h>'s M_TRIM_THRESHOLD, M_MMAP_THRESHOLD and M_ARENA_MAX.
    private static let trimThreshold: Int32 = -1
    private static let mmapThreshold: Int32 = -3
    private static let arenaMax: Int32 = -8

    private typealias Trim = @convention(c) (Int) -> Int32
    private typealias Option = @convention(c) (Int32, Int32) -> Int32

    private typealias Allocate = @convention(c) (Int) -> UnsafeMutableRawPointer?
    private typealias Release = @convention(c) (UnsafeMutableRawPointer?) -> Void

    private static let mallopt = function("mallopt", as: Option.self)
    private static let allocate = function("malloc", as: Allocate.self)
    private static let release = function("free", as: Release.self)
    private static let trim = function("malloc_trim", as: Trim.self)

    /// The C library's function `name`, when it has one (<malloc.h> is not in Swift's Glibc module).
    private static func function<F>(_ name: String, as type: F.Type) -> F? {
        #if canImport(Glibc)
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), name) else { return nil }
        return unsafeBitCast(symbol, to: type)
        #else
        return nil
        #endif
    }
}
