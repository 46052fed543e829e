import DNSWire
import Testing

@testable import NearcastControl

/// The signatures' refresh walks a zone once for everything due, and signs it a batch a round
/// from what the walk found: the next rounds take the rest in order without walking again, until
/// it is gone or the keys that sign are other keys.
@Suite(.timeLimit(.minutes(1))) struct SignatureBacklogTests {
    @Test func aWalkIsSignedABatchARoundInOrderUntilTheKeysChange() throws {
        let origin = try DNSName("example.test.")
        let names = try (0..<12).map { try DNSName("n\($0).example.test.") }
        var backlogs = SignatureBacklogs()
        let found = ZoneSigning.Due(names: names, inUse: [7], largestTTL: 300)

        let first = backlogs.walked(origin, found, signers: [7], batch: 5)
        #expect(first.due.names == Array(names[0..<5]) && first.more)
        let secondTaken = backlogs.next(origin, signers: [7], batch: 5)
        let second = try #require(secondTaken)
        #expect(second.due.names == Array(names[5..<10]) && second.more)
        #expect(second.due.inUse == [7] && second.due.largestTTL == 300)
        let thirdTaken = backlogs.next(origin, signers: [7], batch: 5)
        let third = try #require(thirdTaken)
        #expect(third.due.names == Array(names[10..<12]) && !third.more)
        let fourth = backlogs.next(origin, signers: [7], batch: 5)
        #expect(fourth == nil, "the backlog is gone: walk again")

        _ = backlogs.walked(origin, found, signers: [7], batch: 5)
        let other = backlogs.next(origin, signers: [8], batch: 5)
        #expect(other == nil, "other signers: walk again")
    }
}
