#if canImport(Glibc)
import Glibc
#endif

/// The calling thread's scheduling class (Linux's are per thread: sched_setscheduler(2) with pid
/// 0 is this thread alone). Where a class cannot be set, the thread keeps the one it has.
public enum ThreadPriority {
    /// Runs the calling thread only when a core would otherwise be idle (SCHED_IDLE): for work
    /// that nobody waits for, such as freeing what a switch replaced, whose frees took the CPU
    /// and the malloc arenas of the threads that answer (docs/ARCHITECTURE.md §15). Under a load
    /// that keeps every core busy it still runs, slowly (a weight of 3 against 1,024).
    public static func onlyWhenIdle() { set(policy: 5) }  // SCHED_IDLE: not in Swift's Glibc module

    /// Back to the daemon's own class (SCHED_OTHER).
    public static func normal() { set(policy: 0) }

    private static func set(policy: Int32) {
        #if canImport(Glibc)
        var param = sched_param()
        _ = sched_setscheduler(0, policy, &param)
        #endif
    }
}
