import CLibBPF

#if canImport(Glibc)
import Glibc
#endif

/// Waiting out the BPF programs that may still read what is about to be reused.
///
/// A program runs inside an RCU read-side critical section (XDP in softirq or NAPI context), so
/// after an RCU grace period no run that began before it is still going. A writer that switched
/// programs away from some map entries waits one grace period before it rewrites them.
public enum BPFGracePeriod {
    /// Returns once every BPF program run that began before the call has ended.
    public static func wait() throws(BPFError) {
        if bpfkit_membarrier_global() == 0 { return }
        let err = errno
        // membarrier refuses MEMBARRIER_CMD_GLOBAL on nohz_full kernels. A program run takes
        // microseconds and cannot sleep; a pause a thousand times longer than the longest is the
        // fallback there.
        guard err == EINVAL else { throw BPFError("membarrier", "global (RCU grace period)", errno: err) }
        usleep(50_000)
    }
}
