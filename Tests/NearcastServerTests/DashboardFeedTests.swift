import NIOCore
import NearcastAPIModel
import Synchronization
import Testing

@testable import NearcastServer

/// The dashboard's live events (`GET /v1/events`) as the feed sends them.
@Suite(.timeLimit(.minutes(1))) struct DashboardFeedTests {
    /// The next event named `name` on `stream`, or nil after `seconds`.
    static func next(
        _ name: String, on iterator: inout AsyncStream<ByteBuffer>.AsyncIterator, within seconds: Double
    ) async -> String? {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while ContinuousClock.now < deadline {
            // The stream only ends when the feed closes (the test's deferred close ends a wait).
            guard let frame = await iterator.next() else { return nil }
            let text = String(buffer: frame)
            if text.hasPrefix("event: \(name)\n") { return text }
        }
        return nil
    }

    /// A node's change reaches the open streams when the monitor reports it, not at the next
    /// sample: here the next sample is an hour away.
    @Test func aHealthChangeReachesThePagesAtOnceNotAtTheNextSample() async throws {
        let state = Mutex("up")
        let listener = Mutex<(@Sendable () -> Void)?>(nil)
        let sources = ManagementAPI.Sources(
            stats: { StatsReport(uptime: 0, xdp: nil) },
            nodes: { [NodeStatus(id: "n1", state: state.withLock { $0 })] },
            onHealthChange: { f in listener.withLock { $0 = f } })
        let feed = DashboardFeed(sources: sources, interval: .seconds(3600))
        let stream = await feed.subscribe()
        var events = stream.makeAsyncIterator()
        await feed.start()
        let first = await Self.next("nodes", on: &events, within: 10)
        #expect(first?.contains(#""state":"up""#) == true, "\(first ?? "no nodes event")")

        state.withLock { $0 = "down" }
        let notify = try #require(listener.withLock { $0 }, "the feed listens for health changes")
        // A closer that ends the stream if no event comes, so the wait below cannot hang.
        let guardTask = Task {
            try await Task.sleep(for: .seconds(10))
            await feed.close()
        }
        notify()
        let changed = await Self.next("nodes", on: &events, within: 10)
        guardTask.cancel()
        #expect(changed?.contains(#""state":"down""#) == true, "\(changed ?? "no nodes event after the change")")
        await feed.close()
    }
}
