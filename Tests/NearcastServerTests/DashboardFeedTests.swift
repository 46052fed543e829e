import NIOCore
import NearcastAPIModel
import Synchronization
import Testing

@testable import NearcastServer

/// The dashboard's live events (`GET /v1/events`) as the feed sends them.
@Suite(.timeLimit(.minutes(2))) struct DashboardFeedTests {
    /// The next event named `name` whose data contains `text`, or nil once the stream ends.
    static func next(_ name: String, containing text: String, on iterator: inout AsyncStream<ByteBuffer>.AsyncIterator)
        async -> String?
    {
        while let frame = await iterator.next() {
            let event = String(buffer: frame)
            if event.hasPrefix("event: \(name)\n") && event.contains(text) { return event }
        }
        return nil
    }

    /// Ends the feed's streams (and so every wait on them) after a minute, whatever happens: a
    /// busy machine may run the feed late, never make a test hang.
    static func closeWithinAMinute(_ feed: DashboardFeed) -> Task<Void, any Error> {
        Task {
            try await Task.sleep(for: .seconds(60))
            await feed.close()
        }
    }

    /// A node's change reaches the open streams when the monitor reports it, not at the next
    /// sample: here the next sample is an hour away, so the change can only come by the push.
    @Test func aHealthChangeReachesThePagesAtOnceNotAtTheNextSample() async throws {
        let state = Mutex("up")
        let listener = Mutex<(@Sendable () -> Void)?>(nil)
        let desks = APIDesks(
            daemon: IdleDaemonDesk(),
            health: ReadNodesDesk(
                read: { [NodeStatus(id: "n1", state: state.withLock { $0 })] },
                listening: { f in listener.withLock { $0 = f } }))
        let feed = DashboardFeed(desks: desks, interval: .seconds(3600))
        let stream = await feed.subscribe()
        var events = stream.makeAsyncIterator()
        let closer = Self.closeWithinAMinute(feed)
        defer { closer.cancel() }
        await feed.start()
        let first = await Self.next("nodes", containing: #""state":"up""#, on: &events)
        #expect(first != nil, "the first sample's nodes")

        state.withLock { $0 = "down" }
        let notify = try #require(listener.withLock { $0 }, "the feed listens for health changes")
        notify()
        let changed = await Self.next("nodes", containing: #""state":"down""#, on: &events)
        #expect(changed != nil, "the change reached the stream before the next sample (an hour away)")
        await feed.close()
    }

    /// With no page open the feed keeps its history and reads nothing else: the nodes (the JSON
    /// of each), the pools and the audit entries (a read of the log, or of the store, after each
    /// record change) are read when a page opens, and sent to it then.
    @Test func withNoPageOpenTheNodesAndTheAuditAreNotRead() async throws {
        let reads = Mutex((nodes: 0, audit: 0))
        let entry = AuditEntry(
            time: "2026-11-27T00:00:00.000Z", who: "ops", action: "record", target: "example.net.",
            detail: "add www", before: "", after: "", outcome: "ok")
        let desks = APIDesks(
            daemon: IdleDaemonDesk(),
            health: ReadNodesDesk(read: {
                reads.withLock { $0.nodes += 1 }
                return [NodeStatus(id: "n1", state: "up")]
            }),
            audit: AuditSource(
                last: { _ in
                    reads.withLock { $0.audit += 1 }
                    return [entry]
                }, version: { 7 }))
        let feed = DashboardFeed(desks: desks, interval: .seconds(3600))
        await feed.sample()
        await feed.healthChanged()
        #expect(reads.withLock { $0.nodes } == 0, "no page open: the nodes are not read")
        #expect(reads.withLock { $0.audit } == 0, "no page open: the audit log is not read")

        let stream = await feed.subscribe()
        var events = stream.makeAsyncIterator()
        let closer = Self.closeWithinAMinute(feed)
        defer { closer.cancel() }
        #expect(await Self.next("nodes", containing: #""state":"up""#, on: &events) != nil, "read when the page opened")
        #expect(await Self.next("audit", containing: "add www", on: &events) != nil, "read when the page opened")
        #expect(reads.withLock { $0.audit } == 1)
        await feed.close()
    }
}
