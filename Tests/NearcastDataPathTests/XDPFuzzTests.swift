import DNSWire
import Foundation
import NearcastTestSupport
import Testing
import XDPFuzz

/// The XDP program fuzzed (issue 19), the short run of `make fuzz-xdp`: generated and mutated
/// frames through the real program, each verdict checked against the slow path (XDPFuzzer): a
/// passed frame unchanged, an answer well formed and the slow path's reply byte for byte, a drop
/// only where the slow path would not answer either.
@Suite(.serialized, .timeLimit(.minutes(3))) struct XDPFuzzTests {
    @Test func oneHundredThousandFramesAndNoFailure() async throws {
        try await TestSupport.blocking { try Self.oneHundredThousandFramesAndNoFailureBody() }
    }

    static func oneHundredThousandFramesAndNoFailureBody() throws {
        var fuzzer = XDPFuzzer(target: try FuzzTarget.fixture(), seed: 19)
        let report = try fuzzer.run(frames: 100_000)
        #expect(report.failures == 0, "\(report.examples.joined(separator: "\n"))")
        #expect(report.answered > 5_000 && report.passed > 50_000 && report.dropped > 1_000, "every verdict is seen")
    }

    /// The fixture signed ahead (ldns, NSEC) fuzzed alone: questions with and without DO, of
    /// every size a client may offer, get the slow path's reply from XDP, signatures and all,
    /// or pass.
    @Test func aSignedZoneFuzzedAndNoFailure() async throws {
        try await TestSupport.blocking { try Self.aSignedZoneFuzzedAndNoFailureBody() }
    }

    static func aSignedZoneFuzzedAndNoFailureBody() throws {
        let dir = try TemporaryDirectory.url("nearcast-fuzz-signed")
        defer { try? FileManager.default.removeItem(at: dir) }
        let signed = try SignedFixture.make(in: dir, nsec3: false)
        let target = try FuzzTarget.zone(path: signed.zoneFile.path, origin: DNSName(SignedFixture.origin))
        var fuzzer = XDPFuzzer(target: target, seed: 34)
        let report = try fuzzer.run(frames: 50_000)
        #expect(report.failures == 0, "\(report.examples.joined(separator: "\n"))")
        #expect(report.answeredSigned > 50 && report.passed > 10_000, "\(report)")
    }

    /// The slow path's parsers, the short run of `make fuzz-parsers`: mutated DNS messages and
    /// master files never crash, and what parses survives a round trip.
    @Test func theParsersSurviveMutatedInputsAndRoundTrips() async throws {
        try await TestSupport.blocking { try Self.theParsersSurviveMutatedInputsAndRoundTripsBody() }
    }

    static func theParsersSurviveMutatedInputsAndRoundTripsBody() throws {
        var fuzzer = try ParserFuzzer(target: try FuzzTarget.fixture(), seed: 19)
        let wire = fuzzer.wire(iterations: 50_000)
        #expect(wire.failures == 0 && wire.passed > 1_000, "\(wire.examples.joined(separator: "\n"))")
        let zone = fuzzer.zone(iterations: 2_000)
        #expect(zone.failures == 0 && zone.passed > 200, "\(zone.examples.joined(separator: "\n"))")
    }
}
