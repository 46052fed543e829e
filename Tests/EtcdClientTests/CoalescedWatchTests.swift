import NearcastTestSupport
import Testing

@testable import EtcdClient

/// A watch's batches taken together: what arrived while the consumer was busy comes in one
/// step, in order; the watch's end and its error come after the last batch.
@Suite(.timeLimit(.minutes(1))) struct CoalescedWatchTests {
    static func batch(_ revision: Int64) -> WatchBatch {
        WatchBatch(
            revision: revision,
            events: [
                WatchEvent(
                    kind: .put,
                    kv: KeyValue(
                        key: Array("k\(revision)".utf8), value: [1], createRevision: revision,
                        modRevision: revision))
            ])
    }

    @Test func batchesThatArrivedMeanwhileComeTogetherInOrder() async throws {
        let (stream, feed) = AsyncThrowingStream<WatchBatch, any Error>.makeStream()
        let watch = CoalescedWatch(stream)
        defer { watch.cancel() }
        for r: Int64 in 1...3 { feed.yield(Self.batch(r)) }
        // The reader task takes them in; what the consumer gets is all that arrived.
        var got: [Int64] = []
        while got.count < 3 { got += try #require(try await watch.next()).map(\.revision) }
        #expect(got == [1, 2, 3])
        feed.yield(Self.batch(4))
        #expect(try await watch.next()?.map(\.revision) == [4], "one batch alone when the consumer keeps up")
        feed.finish()
        #expect(try await watch.next() == nil)
    }

    @Test func theWatchsErrorComesAfterItsLastBatch() async throws {
        let (stream, feed) = AsyncThrowingStream<WatchBatch, any Error>.makeStream()
        let watch = CoalescedWatch(stream)
        defer { watch.cancel() }
        feed.yield(Self.batch(7))
        feed.finish(throwing: EtcdError.compacted(9))
        var got: [Int64] = []
        await #expect(throws: EtcdError.self) {
            while let b = try await watch.next() { got += b.map(\.revision) }
        }
        #expect(got == [7])
    }

    @Test func aConsumerWaitingIsWokenByTheNextBatchAndByCancellation() async throws {
        let (stream, feed) = AsyncThrowingStream<WatchBatch, any Error>.makeStream()
        let watch = CoalescedWatch(stream)
        defer { watch.cancel() }
        let waiting = Task { try await watch.next()?.map(\.revision) }
        try await eventually("the consumer waits") { watch.consumerWaits }
        feed.yield(Self.batch(1))
        #expect(try await waiting.value == [1])
        let cancelled = Task { try await watch.next() }
        cancelled.cancel()
        await #expect(throws: CancellationError.self) { _ = try await cancelled.value }
    }
}
