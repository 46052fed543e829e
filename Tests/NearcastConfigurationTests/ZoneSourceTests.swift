import DNSWire
import Testing

@testable import NearcastBasics
@testable import NearcastConfiguration

/// A zone named on nearcastd's command line (`--zone ORIGIN=PATH`), as the config would name it.
@Suite(.timeLimit(.minutes(1))) struct ZoneSourceTests {
    @Test func anOriginWithOrWithoutItsDotNamesTheSameZone() throws {
        let relative = try ZoneSource(commandLine: "example.net=zones/example.net.zone")
        let absolute = try ZoneSource(commandLine: "example.net.=zones/example.net.zone")
        #expect(relative == absolute)
        #expect(relative.origin == (try DNSName("example.net.")))
        #expect(relative.path == "zones/example.net.zone")
        #expect(relative.declaredAt == "--zone")
    }

    @Test func aPathMayHoldAnEqualsSign() throws {
        #expect(try ZoneSource(commandLine: "example.net=a=b.zone").path == "a=b.zone")
    }

    @Test func whatIsNotOriginEqualsPathIsRefusedSayingWhy() {
        #expect(throws: DiagnosticsError.self) { try ZoneSource(commandLine: "example.net") }
        do {
            _ = try ZoneSource(commandLine: "bad..name=f.zone")
            Issue.record("an empty label was taken")
        } catch {
            #expect(error.description.contains("--zone") && error.description.contains("bad..name"), "\(error)")
        }
    }
}
