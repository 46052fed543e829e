import ArgumentParser
import Foundation
import XDPFuzz

/// `make fuzz-xdp`: generated and mutated frames through the real XDP program, each checked against
/// the slow path (XDPFuzzer). Exits 1 on any failure, printing the first ones with their frames.
@main
struct XDPFuzzCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "xdpfuzz", abstract: "Fuzz the XDP program against the slow path (root: BPF_PROG_TEST_RUN).")

    @Option(help: "Frames to run.") var frames = 10_000_000
    @Option(help: "The seed (a run is replayed by its seed).") var seed: UInt64 = 1
    @Option(help: "The compiled XDP program.") var object = ".build/bpf/nearcast.bpf.o"

    func run() throws {
        var fuzzer = XDPFuzzer(target: try FuzzTarget.fixture(objectPath: object), seed: seed)
        let report = try fuzzer.run(frames: frames) { r in
            if r.frames % 1_000_000 == 0 {
                print(String(format: "%d frames, %.0f frames/s, %d failures", r.frames, r.framesPerSecond, r.failures))
            }
        }
        print(
            String(
                format:
                    "xdpfuzz: %d frames (seed %llu) in %.1f s, %.0f frames/s: %d answered, %d passed, %d dropped, %d too short to run; %d failures",
                report.frames, seed, report.seconds, report.framesPerSecond, report.answered, report.passed,
                report.dropped, report.refused, report.failures))
        for e in report.examples { print("  " + e) }
        if report.failures > 0 { throw ExitCode(1) }
    }
}
