import ArgumentParser
import CNearcastABI
import DNSWire
import Foundation
import NearcastAnswers
import NearcastBasics
import NearcastZones

/// `make bench-image`: a zone file loaded, then its answer image made ROUNDS times in one process,
/// each timed. The CPU of a start of the fast path, without the verifier, the maps and the rest of
/// the daemon beside it: on a shared host, whole starts vary by a tenth and more from one to the
/// next, where the fastest of a few rounds here moves by a few hundredths.
@main
struct ImageBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "imagebench", abstract: "Times a zone's load and its answer image, in one process.")

    @Argument(help: "The zone file (e.g. one of tools/scale-zone.py).") var zoneFile: String
    @Argument(help: "The zone's origin.") var origin: String
    @Option(help: "How many times the image is made.") var rounds = 5

    func run() throws {
        let origin: DNSName
        do { origin = try DNSName(self.origin) } catch { throw ValidationError("origin \(self.origin): \(error)") }
        let began = ContinuousClock.now
        let zone: Zone
        do {
            zone = try Zone.build(
                origin: origin, parts: try ZoneFileParser.parseInParts(path: zoneFile, origin: origin),
                sourceName: zoneFile)
        } catch { throw ValidationError(error.description) }
        print("load: \((ContinuousClock.now - began).seconds) s, \(zone.nameCount) names")
        let responder = Responder(authority: Authority(zones: [zone]))
        var times: [Double] = []
        for _ in 0..<rounds {
            let t = ContinuousClock.now
            let image = AnswerImage.build(
                responder: responder, maxSections: Int(NC_SECTIONS_MAX),
                parts: ProcessInfo.processInfo.activeProcessorCount)
            times.append((ContinuousClock.now - t).seconds)
            print("image: \(times.last!) s, \(image.names.count) records")
        }
        let sorted = times.sorted()
        print("image, fastest / median of \(rounds): \(sorted[0]) / \(sorted[sorted.count / 2]) s")
    }
}
