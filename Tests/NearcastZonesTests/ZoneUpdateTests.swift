import DNSWire
import Testing

@testable import NearcastZones

/// A dynamic update's rules (RFC 2136) on a zone: prerequisites checked first (§3.2), the update
/// section prescanned (§3.4.1), then applied (§3.4.2) as one change with one serial. A refused
/// update changes nothing; one that changes nothing keeps the serial.
@Suite(.timeLimit(.minutes(1))) struct ZoneUpdateTests {
    static let origin = try! DNSName("example.test.")
    static let zone = try! Zone.parsed(
        """
        @    300 IN SOA ns hostmaster 100 3600 600 1209600 300
        @    300 IN NS  ns
        ns   300 IN A   192.0.2.53
        www  300 IN A   192.0.2.1
        www  300 IN A   192.0.2.2
        web  300 IN CNAME www
        """, origin: origin)

    /// A record of the update's wire form: `class` IN with data, or ANY/NONE (no data when `data` is nil).
    static func rr(_ name: String, _ type: RRType, _ cls: RRClass = .in, ttl: UInt32 = 0, _ data: RData? = nil) throws
        -> ResourceRecord
    {
        ResourceRecord(
            name: try DNSName(name), type: type, rrClass: cls, ttl: ttl, rdata: data ?? .unknown([]))
    }

    static func a(_ last: UInt8) -> RData { .a(IPv4Address(192, 0, 2, last)) }

    static func refusal(_ update: ZoneUpdate) -> RCode? {
        do {
            _ = try update.apply(to: zone)
            return nil
        } catch { return error.rcode }
    }

    @Test func prerequisitesAreCheckedAsTheRFCSays() throws {
        func pre(_ records: ResourceRecord...) -> ZoneUpdate { ZoneUpdate(prerequisites: records, updates: []) }
        // Name in use / not in use (class ANY / NONE, type ANY).
        #expect(Self.refusal(pre(try Self.rr("www.example.test.", .any, .any))) == nil)
        #expect(Self.refusal(pre(try Self.rr("nope.example.test.", .any, .any))) == .nxDomain)
        #expect(Self.refusal(pre(try Self.rr("nope.example.test.", .any, .none))) == nil)
        #expect(Self.refusal(pre(try Self.rr("www.example.test.", .any, .none))) == .yxDomain)
        // RRset exists / does not (value-independent).
        #expect(Self.refusal(pre(try Self.rr("www.example.test.", .a, .any))) == nil)
        #expect(Self.refusal(pre(try Self.rr("www.example.test.", .aaaa, .any))) == .nxRRSet)
        #expect(Self.refusal(pre(try Self.rr("www.example.test.", .aaaa, .none))) == nil)
        #expect(Self.refusal(pre(try Self.rr("www.example.test.", .a, .none))) == .yxRRSet)
        // Value-dependent: the whole RRset, in any order; a part of it is not it.
        let both = pre(
            try Self.rr("www.example.test.", .a, .in, Self.a(2)), try Self.rr("www.example.test.", .a, .in, Self.a(1)))
        #expect(Self.refusal(both) == nil)
        #expect(Self.refusal(pre(try Self.rr("www.example.test.", .a, .in, Self.a(1)))) == .nxRRSet)
        // Malformed: a TTL, data with class ANY, a name outside the zone.
        #expect(Self.refusal(pre(try Self.rr("www.example.test.", .a, .any, ttl: 60))) == .formErr)
        #expect(Self.refusal(pre(try Self.rr("www.example.test.", .a, .any, Self.a(1)))) == .formErr)
        #expect(Self.refusal(pre(try Self.rr("www.other.test.", .a, .any))) == .notZone)
    }

    @Test func anAdditionIsOneChangeWithTheNextSerial() throws {
        let update = ZoneUpdate(
            prerequisites: [try Self.rr("new.example.test.", .any, .none)],
            updates: [
                try Self.rr("new.example.test.", .a, .in, ttl: 60, Self.a(9)),
                try Self.rr("new.example.test.", .txt, .in, ttl: 60, .txt([Array("v".utf8)])),
            ])
        let out = try update.apply(to: Self.zone)
        #expect(out.serial == 101)
        #expect(out.sets.map(\.type) == [.a, .txt])
        #expect(out.sets[0].set?.rdatas == [Self.a(9)] && out.sets[0].set?.ttl == 60)

        // Applied to the zone, it is one changeset of one serial.
        let (changed, changeset) = try Self.zone.replacing(
            out.sets.map { ($0.name, $0.type, $0.set) }, serial: out.serial, source: "update")
        #expect(changed.serial == 101 && changeset.added.count == 3 && changeset.removed.count == 1)
    }

    @Test func whatChangesNothingKeepsTheSerial() throws {
        // A record already there; a CNAME beside other data; data beside a CNAME; an older SOA.
        let update = ZoneUpdate(
            prerequisites: [],
            updates: [
                try Self.rr("www.example.test.", .a, .in, ttl: 300, Self.a(1)),
                try Self.rr("www.example.test.", .cname, .in, ttl: 300, .cname(try DNSName("ns.example.test."))),
                try Self.rr("web.example.test.", .a, .in, ttl: 300, Self.a(7)),
                try Self.rr(
                    "example.test.", .soa, .in, ttl: 300,
                    .soa(
                        .init(
                            mname: Self.origin, rname: Self.origin, serial: 99, refresh: 1, retry: 1, expire: 1,
                            minimum: 1))),
            ])
        let out = try update.apply(to: Self.zone)
        #expect(out.sets.isEmpty && out.serial == 100)
    }

    @Test func deletionsOfOneRecordAnRRsetAndAName() throws {
        let update = ZoneUpdate(
            prerequisites: [],
            updates: [
                try Self.rr("www.example.test.", .a, .none, Self.a(1)),  // one record
                try Self.rr("web.example.test.", .any, .any),  // every RRset at a name
                try Self.rr("example.test.", .any, .any),  // the apex's SOA and NS stay
                try Self.rr("example.test.", .ns, .none, .ns(try DNSName("ns.example.test."))),  // the last NS stays
            ])
        let out = try update.apply(to: Self.zone)
        #expect(out.serial == 101)
        let www = try #require(out.sets.first { $0.type == .a })
        #expect(www.set?.rdatas == [Self.a(2)])
        #expect(out.sets.contains { $0.type == .cname && $0.set == nil })
        #expect(!out.sets.contains { $0.name == Self.origin }, "the apex's SOA and last NS stay")
    }

    @Test func aNewerSOAGivesTheSerial() throws {
        let soa = RData.soa(
            .init(
                mname: try DNSName("ns.example.test."), rname: try DNSName("hostmaster.example.test."), serial: 500,
                refresh: 3600, retry: 600, expire: 1_209_600, minimum: 300))
        let out = try ZoneUpdate(prerequisites: [], updates: [try Self.rr("example.test.", .soa, .in, ttl: 300, soa)])
            .apply(to: Self.zone)
        #expect(out.serial == 500)
    }

    @Test func aMalformedUpdateSectionIsRefusedWhole() throws {
        let add = try Self.rr("new.example.test.", .a, .in, ttl: 60, Self.a(9))
        func refused(_ bad: ResourceRecord) -> RCode? {
            Self.refusal(ZoneUpdate(prerequisites: [], updates: [add, bad]))
        }
        #expect(refused(try Self.rr("www.other.test.", .a, .in, ttl: 60, Self.a(1))) == .notZone)
        #expect(refused(try Self.rr("www.example.test.", .a, .any, ttl: 60)) == .formErr)
        #expect(refused(try Self.rr("www.example.test.", .a, .any, Self.a(1))) == .formErr)
        #expect(refused(try Self.rr("www.example.test.", .axfr, .any)) == .formErr)
        #expect(refused(try Self.rr("www.example.test.", .any, .in, ttl: 60, Self.a(1))) == .formErr)
        #expect(refused(try Self.rr("www.example.test.", .a, RRClass(3), ttl: 60, Self.a(1))) == .formErr)
        // A failed prerequisite refuses the whole message, the valid addition too.
        let failing = ZoneUpdate(prerequisites: [try Self.rr("www.example.test.", .any, .none)], updates: [add])
        #expect(Self.refusal(failing) == .yxDomain)
    }
}
