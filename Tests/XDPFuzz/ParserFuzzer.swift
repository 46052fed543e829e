import DNSWire
import Foundation
import NearcastAnswers
import NearcastTestSupport
import NearcastZones

/// The slow path's parsers fuzzed (issue 19): the DNS wire parser with mutated replies and queries
/// of every type the test zone holds, the zone parser with mutated master files. Neither may crash
/// (a trap ends the run); whatever parses must survive a round trip: serialized (or rendered) and
/// parsed again, it is the same message (the same records).
public struct ParserFuzzer {
    var rng: SplitMix
    let messages: [[UInt8]]
    let zoneText: String
    let origin: DNSName

    public init(target: FuzzTarget, seed: UInt64) throws {
        rng = SplitMix(seed: seed)
        origin = try DNSName("example.test.")
        zoneText = try String(
            contentsOf: TestSupport.fixtures.appendingPathComponent("example.test.zone"), encoding: .utf8)
        // The slow path's replies to the differential queries: every record type of the zone.
        messages = Fixtures.differentialQueries.prefix(2000).compactMap { name, type, edns in
            let q = RawClient.query(name, type, edns: edns)
            return target.responder.respond(to: q, transport: .tcp)
        }
    }

    /// `iterations` mutated messages through `DNSMessage(wire:)`.
    public mutating func wire(iterations: Int) -> FuzzReport {
        var report = FuzzReport()
        let start = ContinuousClock.now
        for _ in 0..<iterations {
            report.frames += 1
            var b = messages.randomElement(using: &rng)!
            if Int.random(in: 0..<10, using: &rng) == 0 {
                b = (0..<Int.random(in: 0...200, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            } else {
                b = rng.mutate(b, edits: Int.random(in: 1...6, using: &rng))
            }
            guard let m = try? DNSMessage(wire: b) else {
                report.dropped += 1
                continue
            }
            report.passed += 1
            guard let again = try? m.serialize(), (try? DNSMessage(wire: again)) == m else {
                fail(&report, "round trip", b)
                continue
            }
        }
        report.seconds = (ContinuousClock.now - start).seconds
        return report
    }

    /// `iterations` mutated master files through `ZoneFileParser`.
    public mutating func zone(iterations: Int) -> FuzzReport {
        var report = FuzzReport()
        let start = ContinuousClock.now
        let base = Array(zoneText.utf8)
        for _ in 0..<iterations {
            report.frames += 1
            let bytes = rng.mutate(base, edits: Int.random(in: 1...8, using: &rng))
            let text = String(decoding: bytes, as: UTF8.self)
            guard let records = try? ZoneFileParser.parse(text: text, fileName: "fuzz.zone", origin: origin) else {
                report.dropped += 1
                continue
            }
            report.passed += 1
            let rendered = ZoneText.render(origin: origin, records: records.map(\.record))
            let again: [SourcedRecord]
            do { again = try ZoneFileParser.parse(text: rendered, fileName: "rendered.zone", origin: origin) } catch {
                fail(&report, "rendered, not parsed again (\(error))", bytes)
                continue
            }
            // The same records, in whatever order the writer puts them.
            let before = records.map { "\($0.record)" }.sorted()
            let after = again.map { "\($0.record)" }.sorted()
            if before != after {
                let i =
                    zip(before, after).enumerated().first { $0.element.0 != $0.element.1 }?.offset
                    ?? min(before.count, after.count)
                let was = i < before.count ? before[i] : "-"
                let now = i < after.count ? after[i] : "-"
                fail(&report, "round trip changed \(was) into \(now)", bytes)
            }
        }
        report.seconds = (ContinuousClock.now - start).seconds
        return report
    }

    func fail(_ report: inout FuzzReport, _ what: String, _ input: [UInt8]) {
        report.failures += 1
        if report.examples.count < 20 {
            report.examples.append("\(what): \(input.map { String(format: "%02x", $0) }.joined())")
        }
    }
}
