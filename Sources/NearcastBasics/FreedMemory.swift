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
    }

    private typealias Trim = @convention(c) (Int) -> Int32

    private static let trim: Trim? = {
        #if canImport(Glibc)
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "malloc_trim") else { return nil }
        return unsafeBitCast(symbol, to: Trim.self)
        #else
        return nil
        #endif
    }()
}
