import DNSWire
import NearcastZones
import Testing

@testable import NearcastControl

/// A reload compares each zone read again with the one served (`ReloadedZones.compare`). A zone of
/// few changes is served as the zone served changed by them, and the zone read is let go; one
/// where much changed is served as read.
@Suite(.timeLimit(.minutes(1))) struct ReloadedZonesTests {
    static let origin = try! DNSName("example.test.")

    /// A zone of `names` names, the first `changed` of them with another address, at `serial`.
    static func zone(names: Int, changed: Int = 0, serial: Int = 1) throws -> Zone {
        var text = "$TTL 300\n@ SOA ns1 hostmaster \(serial) 3600 600 1209600 60\n@ NS ns1\nns1 A 192.0.2.53\n"
        for i in 0..<names { text += "n\(i) A 10.\(i < changed ? 1 : 0).\(i / 256 % 256).\(i % 256)\n" }
        text += "mx MX 10 n0\n"
        let records = try ZoneFileParser.parse(text: text, fileName: "z.zone", origin: origin)
        return try Zone.build(origin: origin, records: records, sourceName: "z.zone")
    }

    /// Whether `a` and `b` hold the same RRsets, octet for octet.
    static func same(_ a: Zone, _ b: Zone) -> Bool { a.differences(from: b).isEmpty && b.differences(from: a).isEmpty }

    @Test func aZoneOfFewChangesIsTheServedZoneChangedAndTheZoneReadIsLetGo() throws {
        let served = try Self.zone(names: 2000)
        let read = try Self.zone(names: 2000, changed: 10, serial: 2)
        let reloaded = ReloadedZones.compare(served: [served], loaded: [read])
        #expect(reloaded.rrsetsChanged == 11)  // ten addresses and the SOA
        #expect(reloaded.unused.count == 1 && Self.same(reloaded.unused[0], read))
        let zone = try #require(reloaded.zones.first)
        #expect(Self.same(zone, read) && zone.recordCount == read.recordCount)
        #expect(zone.existingNamesUnordered.count == read.existingNamesUnordered.count)
        // What the fast path is written from: the change from the zone served to the one served now.
        let change = try #require(reloaded.changes?.first)
        #expect(Self.same(change.before, served) && Self.same(change.after, read))
        #expect(change.owners.count == 11)
    }

    @Test func aZoneWhereMuchChangedIsServedAsRead() throws {
        let served = try Self.zone(names: 2000)
        let read = try Self.zone(names: 2000, changed: 1000, serial: 2)
        let reloaded = ReloadedZones.compare(served: [served], loaded: [read])
        #expect(reloaded.rrsetsChanged == 1001)
        #expect(reloaded.unused.isEmpty)
        #expect(Self.same(try #require(reloaded.zones.first), read))
    }

    @Test func aZoneTheSameInEveryRRsetIsTheOneServed() throws {
        let served = try Self.zone(names: 200)
        let reloaded = ReloadedZones.compare(served: [served], loaded: [try Self.zone(names: 200)])
        #expect(reloaded.rrsetsChanged == 0 && reloaded.unused.count == 1 && reloaded.changes?.isEmpty == true)
        #expect(Self.same(try #require(reloaded.zones.first), served))
    }
}
