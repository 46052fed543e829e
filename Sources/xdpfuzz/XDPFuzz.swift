import ArgumentParser
import DNSWire
import Foundation
import XDPFuzz

/// `make fuzz-xdp`, `make fuzz-parsers`: the XDP program against the slow path (XDPFuzzer), the
/// slow path's wire and zone parsers (ParserFuzzer). Exits 1 on any failure, printing the first
/// ones with their inputs; a crash ends the run.
@main
struct XDPFuzzCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "xdpfuzz",
        abstract: "Fuzz the XDP program against the slow path (root), or the slow path's parsers.")

    enum Mode: String, ExpressibleByArgument, CaseIterable { case xdp, wire, zone }

    @Argument(help: "What to fuzz: xdp (frames through the program), wire (DNS messages), zone (master files).")
    var mode: Mode = .xdp
    @Option(help: "Frames (or inputs) to run.") var frames = 10_000_000
    @Option(help: "The seed (a run is replayed by its seed).") var seed: UInt64 = 1
    @Option(help: "The compiled XDP program.") var object = ".build/bpf/nearcast.bpf.o"
    @Option(help: "Replay one frame (hex, as a failure prints it): the verdict, XDP's reply and the slow path's.")
    var replay: String?
    @Option(help: "A zone's master file to serve instead of the test fixture (xdp), with --origin.")
    var zone: String?
    @Option(help: "The origin of --zone.") var origin: String?

    func validate() throws {
        if (zone == nil) != (origin == nil) { throw ValidationError("--zone and --origin go together") }
        if zone != nil && mode != .xdp { throw ValidationError("--zone is for xdp") }
    }

    func run() throws {
        let target =
            if let zone, let origin {
                try FuzzTarget.zone(path: zone, origin: DNSName(origin), objectPath: object)
            } else {
                try FuzzTarget.fixture(objectPath: object)
            }
        if let replay {
            print(try XDPFuzzer(target: target, seed: seed).replay(replay))
            return
        }
        let report: FuzzReport
        switch mode {
        case .xdp:
            var fuzzer = XDPFuzzer(target: target, seed: seed)
            report = try fuzzer.run(frames: frames) { r in
                if r.frames % 1_000_000 == 0 {
                    print(String(format: "%d frames, %.0f/s, %d failures", r.frames, r.framesPerSecond, r.failures))
                }
            }
            print(
                String(
                    format:
                        "xdpfuzz xdp: %d frames (seed %llu) in %.1f s, %.0f frames/s: %d answered, %d passed, %d dropped, %d too short to run; %d failures",
                    report.frames, seed, report.seconds, report.framesPerSecond, report.answered, report.passed,
                    report.dropped, report.refused, report.failures))
        case .wire, .zone:
            var fuzzer = try ParserFuzzer(target: target, seed: seed)
            report = mode == .wire ? fuzzer.wire(iterations: frames) : fuzzer.zone(iterations: frames)
            print(
                String(
                    format: "xdpfuzz %@: %d inputs (seed %llu) in %.1f s, %.0f/s: %d parsed, %d refused; %d failures",
                    mode.rawValue, report.frames, seed, report.seconds, report.framesPerSecond, report.passed,
                    report.dropped, report.failures))
        }
        for e in report.examples { print("  " + e) }
        if report.failures > 0 { throw ExitCode(1) }
    }
}
