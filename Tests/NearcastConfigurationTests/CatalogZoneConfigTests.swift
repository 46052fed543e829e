import DNSWire
import Foundation
import NearcastBasics
import NearcastTestSupport
import NearcastZones
import Testing

@testable import NearcastConfiguration

/// Catalog zones (RFC 9432) in the config: a catalog made here lists the zones offered by
/// transfer and is written anew, at a higher serial, only when that list changes; a catalog
/// followed here adds the zones it lists as secondaries of its primaries, kept in the state
/// directory, the config's own entries first; what cannot be read names its file and line.
@Suite(.timeLimit(.minutes(1))) struct CatalogZoneConfigTests {
    static let zoneText = """
        @ 60 IN SOA ns hostmaster 1 60 60 600 60
        @ 60 IN NS ns
        ns 60 IN A 192.0.2.53
        """

    /// A config in `dir` with the entries `zones` (YAML list items) and state-dir `state`.
    static func config(_ dir: TemporaryDirectory, _ zones: String) throws(DiagnosticsError) -> NearcastConfig {
        try NearcastConfig.parse(
            yaml: """
                listen: ["127.0.0.1:53"]
                state-dir: state
                zones:
                \(zones)
                """, fileName: "c.yaml", baseDirectory: dir.path)
    }

    static func offered(_ origin: String) -> String {
        "  - { origin: \(origin), file: \(origin)zone, allow-transfer: [\"127.0.0.1\"] }"
    }

    @Test func aCatalogMadeHereListsTheZonesOfferedAndRaisesItsSerialOnlyWhenTheyChange() throws {
        let dir = try TemporaryDirectory("nearcast-catalog-config")
        for origin in ["a.test.", "b.test.", "c.test."] { _ = try dir.write(Self.zoneText, to: "\(origin)zone") }
        let catalog = "  - { origin: catalog.test., catalog: produce }"
        // c.test. is not offered by transfer: not listed.
        let own = "  - { origin: c.test., file: c.test.zone }"
        let config = try Self.config(dir, [Self.offered("a.test."), own, catalog].joined(separator: "\n"))
        let path = dir.file("state/catalog/catalog.test.zone")
        #expect(config.zones.last?.path == path)

        _ = try config.withCatalogs(now: 1_800_000_000)
        var zone = try Zone.load(path: path, origin: try DNSName("catalog.test."))
        #expect(try CatalogZone.members(of: zone).get() == [try DNSName("a.test.")])
        #expect(zone.serial == 1_800_000_000)
        // The same list later: the file and its serial stay.
        _ = try config.withCatalogs(now: 1_800_000_100)
        #expect(try Zone.load(path: path, origin: zone.origin).serial == 1_800_000_000)

        // b.test. offered too: listed, at the time now; a clock behind the serial adds one.
        let more = try Self.config(
            dir, [Self.offered("a.test."), Self.offered("b.test."), own, catalog].joined(separator: "\n"))
        _ = try more.withCatalogs(now: 1_700_000_000)
        zone = try Zone.load(path: path, origin: zone.origin)
        #expect(zone.serial == 1_800_000_001)
        #expect(Set(try CatalogZone.members(of: zone).get()) == [try DNSName("a.test."), try DNSName("b.test.")])
        // Each member under the label every server gives it (16 hex digits, as Knot's).
        let label = CatalogZone.uniqueLabel(of: try DNSName("A.TEST."))
        let lower = CatalogZone.uniqueLabel(of: try DNSName("a.test."))
        #expect(label.count == 16 && label == lower)
        #expect(zone.rrset(try DNSName("\(label).zones.catalog.test."), .ptr) != nil)
    }

    @Test func aCatalogFollowedHereAddsTheZonesItListsAsSecondariesOfItsPrimaries() throws {
        let dir = try TemporaryDirectory("nearcast-catalog-follow")
        _ = try dir.write(Self.zoneText, to: "x.test.zone")
        let catalog = """
              - origin: cat.test.
                catalog: consume
                primaries: ["192.0.2.1:5353"]
            """
        let config = try Self.config(
            dir, [catalog, "  - { origin: x.test., file: x.test.zone }"].joined(separator: "\n"))
        // Not transferred yet: nothing listed.
        #expect(try config.withCatalogs().config.zones.count == 2)

        let members = ["x.test.", "y.test.", "z.test."].map { try! DNSName($0) }
        let records = try CatalogZone.records(origin: try DNSName("cat.test."), members: members, serial: 7)
        try FileManager.default.createDirectory(atPath: dir.file("state/secondary"), withIntermediateDirectories: true)
        _ = try dir.write(
            ZoneText.render(origin: try DNSName("cat.test."), records: records), to: "state/secondary/cat.test.zone")
        let (served, notes) = try config.withCatalogs()
        // x.test. is the config's own: served as it says, and noted.
        #expect(served.zones.map(\.origin.description) == ["cat.test.", "x.test.", "y.test.", "z.test."])
        #expect(notes == ["zone x.test., listed in catalog cat.test., is served as \(served.zones[1].declaredAt) says"])
        let y = served.zones[2]
        let catalogName = try DNSName("cat.test.")
        #expect(y.isSecondary && y.memberOf == catalogName)
        #expect(y.primaries.map(\.description) == ["192.0.2.1:5353"])
        #expect(y.path == dir.file("state/secondary/y.test.zone"))
        // Not transferred yet: not served (SERVFAIL), as any secondary.
        #expect(served.servable().unavailable.map(\.origin) == [y.origin, served.zones[3].origin])

        // A catalog of another version is not read: the config is refused, naming its file.
        _ = try dir.write(
            "@ 0 IN SOA invalid. invalid. 1 3600 600 2147483646 0\n@ 0 IN NS invalid.\nversion 0 IN TXT \"1\"\n",
            to: "state/secondary/cat.test.zone")
        let refused = #expect(throws: DiagnosticsError.self) { try config.withCatalogs() }
        #expect(refused?.diagnostics.first?.file == dir.file("state/secondary/cat.test.zone"))
        #expect(refused?.diagnostics.first?.message.contains("version \"2\"") == true)
    }

    @Test func aCatalogEntryThatCannotBeServedNamesItsLine() {
        for (entry, says) in [
            ("{ origin: c.test., file: c.zone, catalog: both }", "'produce' (a catalog made here) or 'consume'"),
            ("{ origin: c.test., catalog: produce, primaries: [\"192.0.2.1\"] }", "it is one or the other"),
            ("{ origin: c.test., catalog: consume, file: c.zone }", "has no primaries to follow it from"),
        ] {
            let error = #expect(throws: DiagnosticsError.self) {
                try NearcastConfig.parse(
                    yaml: "listen: [\"127.0.0.1:53\"]\nstate-dir: /tmp/s\nzones:\n  - \(entry)\n", fileName: "c.yaml",
                    baseDirectory: "")
            }
            #expect(error?.diagnostics.map(\.line) == [4], "\(entry): \(error?.diagnostics ?? [])")
            #expect(error?.diagnostics.first?.message.contains(says) == true, "\(error?.diagnostics ?? [])")
        }
        // Followed with no state directory: its members would have nowhere to be kept.
        let error = #expect(throws: DiagnosticsError.self) {
            try NearcastConfig.parse(
                yaml:
                    "listen: [\"127.0.0.1:53\"]\nzones:\n  - { origin: c.test., catalog: consume, primaries: [\"192.0.2.1\"], file: c.zone }\n",
                fileName: "c.yaml", baseDirectory: "")
        }
        #expect(error?.diagnostics.first?.message.contains("set state-dir, where its member zones are kept") == true)
    }

    @Test func theMembersOfACatalogAreReadAsRFC9432Says() throws {
        let origin = try DNSName("cat.test.")
        let text = """
            @ 0 IN SOA invalid. invalid. 1 3600 600 2147483646 0
            @ 0 IN NS invalid.
            version 0 IN TXT "2"
            one.zones 0 IN PTR Example.COM.
            two.zones 0 IN PTR example.net.
            two.zones 0 IN PTR example.org.
            three.zones 0 IN PTR example.com.
            group.one.zones 0 IN TXT "g"
            """
        let records = try ZoneFileParser.parse(text: text, fileName: "cat", origin: origin)
        let zone = try Zone.build(origin: origin, records: records, sourceName: "cat")
        // "two" has two PTR: broken, not listed; example.com. listed twice is one member.
        #expect(try CatalogZone.members(of: zone).get() == [try DNSName("example.com.")])
    }
}
