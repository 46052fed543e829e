import NearcastBasics
import Testing

/// What one part of the daemon hands on once it has started (its port), as those waiting for it
/// see it: the value, the error that kept it from starting, or their own cancellation.
@Suite(.timeLimit(.minutes(1))) struct HandoffTests {
    struct CouldNotBind: Error {}

    @Test func waitersGetTheValueOnceAndLaterCallsChangeNothing() async throws {
        let port = Handoff<Int>()
        let first = Task { try await port.value }
        let second = Task { try await port.value }
        #expect(!port.isHanded)
        port.hand(.success(8053))
        port.hand(.success(1))
        #expect(try await first.value == 8053)
        #expect(try await second.value == 8053)
        #expect(try await port.value == 8053, "a late waiter gets it at once")
    }

    @Test func aFailureIsHandedOnToEveryWaiter() async throws {
        let port = Handoff<Int>()
        let waiting = Task { try await port.value }
        port.hand(.failure(CouldNotBind()))
        await #expect(throws: CouldNotBind.self) { try await waiting.value }
        await #expect(throws: CouldNotBind.self) { try await port.value }
    }

    @Test func aCancelledWaiterStopsWaitingAndTheOthersStillGetTheValue() async throws {
        let port = Handoff<Int>()
        let cancelled = Task { try await port.value }
        let other = Task { try await port.value }
        cancelled.cancel()
        await #expect(throws: CancellationError.self) { try await cancelled.value }
        port.hand(.success(53))
        #expect(try await other.value == 53)
    }
}
