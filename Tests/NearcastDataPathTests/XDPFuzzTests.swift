import Testing
import XDPFuzz

/// The XDP program fuzzed (issue 19), the short run of `make fuzz-xdp`: generated and mutated
/// frames through the real program, each verdict checked against the slow path (XDPFuzzer): a
/// passed frame unchanged, an answer well formed and the slow path's reply byte for byte, a drop
/// only where the slow path would not answer either.
@Suite(.serialized, .timeLimit(.minutes(3))) struct XDPFuzzTests {
    @Test func oneHundredThousandFramesAndNoFailure() throws {
        var fuzzer = XDPFuzzer(target: try FuzzTarget.fixture(), seed: 19)
        let report = try fuzzer.run(frames: 100_000)
        #expect(report.failures == 0, "\(report.examples.joined(separator: "\n"))")
        #expect(report.answered > 5_000 && report.passed > 50_000 && report.dropped > 1_000, "every verdict is seen")
    }
}
