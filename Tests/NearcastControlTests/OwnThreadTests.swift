import Foundation
import NearcastBasics
import NearcastTestSupport
import Synchronization
import Testing

/// The daemon's one way to make a thread, as its parts rely on it: the thread carries its name and
/// nice value (top and perf show them), and whoever waits for its end, by joining or awaiting, is
/// let go only once the body has returned, however many wait and whenever they come.
@Suite(.timeLimit(.minutes(1))) struct OwnThreadTests {
    /// The name and nice value the kernel has for the calling thread.
    static func threadNameAndNice() -> (String, Int32) {
        let comm = (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? ""
        return (comm.trimmingCharacters(in: .newlines), getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0))
    }

    @Test func itRunsNamedAndNicedAndIsJoinedAndAwaitedOnceItEnds() async throws {
        let seen = Mutex<(String, Int32)?>(nil)
        let release = Mutex(false)
        let thread = OwnThread.start(name: "nc-test-own", nice: 5) {
            seen.withLock { $0 = Self.threadNameAndNice() }
            while !release.withLock({ $0 }) { usleep(1000) }
        }
        try await eventually("the body runs") { seen.withLock { $0 } != nil }
        let (name, nice) = try #require(seen.withLock { $0 })
        #expect(name == "nc-test-own" && nice == 5)
        #expect(!thread.hasEnded, "the body has not returned")
        // Two waiters before the end, one blocking a thread of its own, one suspended.
        let joiner = OwnThread.start(name: "nc-test-joiner") { thread.join() }
        let awaited = Task { await thread.ended() }
        release.withLock { $0 = true }
        await joiner.ended()
        await awaited.value
        #expect(thread.hasEnded)
        // And waiters after it are let go at once.
        thread.join()
        await thread.ended()
    }

    @Test func aThreadMadeFirstRunsWhatItsOwnerGivesItOnceStarted() async throws {
        let ran = Mutex(0)
        let thread = OwnThread(name: "nc-test-later")
        #expect(!thread.hasEnded)
        thread.start { ran.withLock { $0 += 1 } }
        await thread.ended()
        #expect(ran.withLock { $0 } == 1)
    }
}
