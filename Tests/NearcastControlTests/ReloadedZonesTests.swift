import DNSWire
import NearcastAnswers
import NearcastTestSupport
import NearcastTransfer
import NearcastZones
import Testing

@testable import NearcastControl

/// A reload compares each zone read with the zone served: a few changed RRsets are applied to the
/// zone served and the copy read is let go (it was made in the reload's own malloc arenas, where
/// freeing the zone served took the answering threads' arenas); a zone mostly changed is served
/// as read. Either way, what is served is what the file says.
@Suite(.timeLimit(.minutes(1))) struct ReloadedZonesTests {
    static let origin = try! DNSName("example.test.")

    static func zone(_ names: Int, changing: Set<Int> = [], serial: Int = 1) throws -> Zone {
        var text = "$TTL 300\n@ SOA ns1 hostmaster \(serial) 3600 600 86400 60\n@ NS ns1\nns1 A 192.0.2.1\n"
        for k in 0..<names {
            text += "n\(k) A 192.0.2.\(changing.contains(k) ? 200 : k % 200 + 1)\n"
        }
        let records = try ZoneFileParser.parse(text: text, fileName: "z.zone", origin: origin)
        return try Zone.build(origin: origin, records: records, sourceName: "z.zone")
    }

    @Test func aFewChangesAreAppliedToTheZoneServedAndTheCopyReadIsLetGo() throws {
        let served = try Self.zone(100)
        let read = try Self.zone(100, changing: [3, 7], serial: 2)
        let r = ReloadedZones.compare(served: [served], loaded: [read])
        #expect(r.rrsetsChanged == 3)  // the SOA, n3 and n7
        #expect(Set(r.zones[0].records) == Set(read.records) && r.zones[0].serial == 2)
        #expect(r.unused.count == 1 && Set(r.unused[0].records) == Set(read.records), "the copy read, let go")
        let owners = try ["example.test.", "n3.example.test.", "n7.example.test."].map { try DNSName($0) }
        #expect(r.changes?.map(\.owners) == [Set(owners)])
        #expect(
            r.zones[0].rrset(try DNSName("n3.example.test."), .a) == read.rrset(try DNSName("n3.example.test."), .a))
    }

    @Test func aZoneMostlyChangedIsServedAsRead() throws {
        // More RRsets than a reload changes in the zone served (ReloadedZones.fewChanges).
        let names = ReloadedZones.fewChanges * 11 / 10
        let served = try Self.zone(names)
        let read = try Self.zone(names, changing: Set(0..<names), serial: 2)
        let r = ReloadedZones.compare(served: [served], loaded: [read])
        #expect(Set(r.zones[0].records) == Set(read.records))
        #expect(r.unused.isEmpty && r.changes?.count == 1)
    }

    @Test func anUnchangedZoneStaysTheOneServed() throws {
        let r = ReloadedZones.compare(served: [try Self.zone(10)], loaded: [try Self.zone(10)])
        #expect(r.rrsetsChanged == 0 && r.unused.count == 1 && r.changes?.isEmpty == true)
    }

    /// A reload's changes go into the zones' IXFR histories; a change of geo names alone (a new
    /// compile: the zone before and after the same) leaves them as they were.
    @Test func aReloadAddsItsChangeToTheHistoryAndAGeoCompileAloneNothing() throws {
        let served = try Self.zone(100)
        var history = ZoneHistory()
        history.append(ZoneChangeset(serialBefore: 0, serialAfter: 1, removed: [], added: []))
        let read = try Self.zone(100, changing: [3], serial: 2)
        let reloaded = ReloadedZones.compare(served: [served], loaded: [read])
        let after = ZoneReloads.histories([Self.origin: history], after: reloaded)
        #expect(after[Self.origin]?.changesets.map(\.serialAfter) == [1, 2])
        let n3 = try DNSName("n3.example.test.")
        #expect(after[Self.origin]?.changesets.last?.added.contains { $0.name == n3 } == true)

        let geoOnly = ReloadedZones(
            zones: [served], changes: [AnswerImage.Change(before: served, after: served, owners: [n3])],
            rrsetsChanged: 0)
        #expect(ZoneReloads.histories([Self.origin: history], after: geoOnly)[Self.origin]?.changesets.count == 1)
    }
}
