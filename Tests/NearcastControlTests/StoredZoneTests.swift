import DNSWire
import EtcdClient
import NearcastBasics
import NearcastConfiguration
import NearcastStore
import NearcastTestSupport
import NearcastZones
import Testing

/// A zone as store layout 2 keeps it: a key per RRset, whose values one after another are the
/// zone's master file, and a serial every server derives alike from the keys' revisions.
@Suite(.timeLimit(.minutes(1))) struct StoredZoneTests {
    static let layout = StoreLayout(prefix: "/nc/")
    static let origin = try! DNSName("example.net.")
    static let text = """
        $TTL 300
        @ IN SOA ns1 hostmaster 2026112701 3600 900 604800 60
        @ IN NS ns1
        ns1 IN A 192.0.2.53
        www IN A 192.0.2.1
        www IN A 192.0.2.2
        www IN AAAA 2001:db8::1
        a.www IN TXT "below www"
        a\\032b IN TXT "an owner with a space"
        x IN TYPE65280 \\# 2 abcd
        """

    static func zone(_ text: String = text) throws -> Zone {
        let records = try ZoneFileParser.parse(text: text, fileName: "z.zone", origin: origin)
        return try Zone.build(origin: origin, records: records, sourceName: "z.zone")
    }

    /// The zone's keys as etcd would hold them, the meta written at `metaRevision` and the RRsets
    /// at the revisions after it.
    static func stored(_ zone: Zone, serialBase: UInt32, metaRevision: Int64 = 10) -> [KeyValue] {
        var kvs = StoredZone.entries(of: zone, layout).enumerated().map { i, e in
            KeyValue(key: Array(e.key.utf8), value: e.value, createRevision: 2, modRevision: 2 + Int64(i))
        }
        let meta = StoredZone.Meta(serialBase: serialBase, state: .ready, checksum: zone.checksum)
        kvs.append(
            KeyValue(
                key: Array(StoredZone.metaKey(layout, origin).utf8), value: meta.json, createRevision: 1,
                modRevision: metaRevision))
        return kvs
    }

    @Test func aZoneReadFromItsKeysIsTheZoneWithTheSerialOfItsImport() throws {
        let zone = try Self.zone()
        let read = StoredZone.Read(
            origin: Self.origin, kvs: Self.stored(zone, serialBase: 2_026_112_701), layout: Self.layout)
        #expect(read.isReady)
        #expect(read.serial == 2_026_112_701, "no change since the import: the imported serial")
        let back = try Self.zone(try read.text())
        #expect(back.checksum == zone.checksum)
        #expect(back.serial == 2_026_112_701)
        #expect(back.recordCount == zone.recordCount)
    }

    @Test func everyWriteAfterTheImportRaisesTheSerialARemovalToo() throws {
        let zone = try Self.zone()
        var kvs = Self.stored(zone, serialBase: 4_294_967_290)
        // www's AAAA changed at revision 14, and the TXT below it removed (a tombstone) at 17.
        let aaaa = StoredZone.rrsetKey(Self.layout, Self.origin, try DNSName("www.example.net."), .aaaa)
        let txt = StoredZone.rrsetKey(Self.layout, Self.origin, try DNSName("a.www.example.net."), .txt)
        for i in kvs.indices {
            if kvs[i].keyString == aaaa {
                kvs[i].value = Array("www.example.net. 300 IN AAAA 2001:db8::2\n".utf8)
                kvs[i].modRevision = 14
            } else if kvs[i].keyString == txt {
                kvs[i].value = []
                kvs[i].modRevision = 17
            }
        }
        let read = StoredZone.Read(origin: Self.origin, kvs: kvs, layout: Self.layout)
        #expect(read.serial == 4_294_967_290 &+ 7, "seven revisions after the import, modulo 2^32")
        let back = try Self.zone(try read.text())
        #expect(back.serial == 1)
        #expect(back.rrset(try DNSName("a.www.example.net."), .txt) == nil, "a tombstone is no RRset")
        #expect(back.rrset(try DNSName("www.example.net."), .aaaa)?.rdatas.count == 1)
        #expect(back.checksum != zone.checksum)
    }

    @Test func aKeyNamesItsOwnerAndTypeAndAnOwnersPrefixHoldsOnlyItsOwn() throws {
        let zone = try Self.zone()
        let entries = StoredZone.entries(of: zone, Self.layout)
        #expect(entries.count == 8, "a key per RRset: SOA, NS, ns1 A, www A, www AAAA, a.www TXT, a b TXT, x")
        for e in entries {
            let (owner, type) = try #require(StoredZone.rrset(ofKey: e.key, Self.layout, Self.origin), "\(e.key)")
            #expect(StoredZone.rrsetKey(Self.layout, Self.origin, owner, type) == e.key)
            #expect(StoredZone.origin(ofKey: e.key, Self.layout) == Self.origin)
        }
        let www = StoredZone.ownerPrefix(Self.layout, Self.origin, try DNSName("WWW.example.net."))
        #expect(entries.filter { $0.key.hasPrefix(www) }.count == 2, "www's A and AAAA, not a.www's TXT")
        let spaced = StoredZone.ownerPrefix(Self.layout, Self.origin, try DNSName("a\\032b.example.net."))
        #expect(entries.filter { $0.key.hasPrefix(spaced) }.count == 1)
        #expect(StoredZone.rrset(ofKey: StoredZone.metaKey(Self.layout, Self.origin), Self.layout, Self.origin) == nil)
    }

    @Test func aZoneWithoutItsSOAIsRefusedWithWhy() throws {
        let zone = try Self.zone()
        let kvs = Self.stored(zone, serialBase: 1).filter { !$0.keyString.hasSuffix(" SOA") }
        let read = StoredZone.Read(origin: Self.origin, kvs: kvs, layout: Self.layout)
        #expect(throws: DiagnosticsError.self) { try read.text() }
    }

    /// A fleet's secondary declared by `store import` (its meta: primaries, no records yet).
    static func declared(_ state: StoredZone.Meta.State = .ready, revision: Int64 = 10) -> KeyValue {
        let meta = StoredZone.Meta(serialBase: 0, state: state, rrsets: 0, primaries: ["192.0.2.1:53 key xfr.example."])
        return KeyValue(
            key: Array(StoredZone.metaKey(layout, origin).utf8), value: meta.json, createRevision: 1,
            modRevision: revision)
    }

    @Test func aSecondaryDeclaredWithoutRecordsIsListedWithItsPrimariesAndNotServed() throws {
        let files = try FleetFiles([Self.declared()], layout: Self.layout)
        #expect(files.secondaries == [Self.origin: ["192.0.2.1:53 key xfr.example."]])
        #expect(files.zones.isEmpty && files.unready.isEmpty)
        // While a transfer is written in (an import under way), it stays declared.
        let importing = try FleetFiles([Self.declared(.importing)], layout: Self.layout)
        #expect(importing.secondaries[Self.origin] != nil && importing.importing == [Self.origin])
    }

    @Test func aServersSnapshotConfiguresTheSecondaryWithItsOwnKeys() throws {
        let dir = try TemporaryDirectory("nearcast-stored-secondary")
        let snapshot = StoreSnapshot(directory: dir.path + "/store")
        try snapshot.write(try FleetFiles([Self.declared()], layout: Self.layout), revision: 10)
        let local = try NearcastConfig.parse(
            yaml: """
                tsig:
                  keys: [{ name: xfr.example., algorithm: hmac-sha256, secret: \(Self.secret) }]
                """, fileName: "server.yaml", baseDirectory: dir.path)
        let config = try snapshot.config(over: local)
        #expect(config.zones.map(\.origin) == [Self.origin])
        #expect(config.zones.first?.primaries.map(\.description) == ["192.0.2.1:53 key xfr.example."])
        // Not transferred yet: configured, not served.
        #expect(config.servable().unavailable.map(\.origin) == [Self.origin])
        // A server whose config lacks the key is told which key, and where the zone came from.
        do {
            _ = try snapshot.config(over: try NearcastConfig.parse(yaml: "{}", fileName: "s.yaml", baseDirectory: ""))
            Issue.record("a secondary naming a key the server does not have was configured")
        } catch {
            #expect(
                error.diagnostics.contains { $0.message.contains("xfr.example.") && $0.file == snapshot.configPath })
        }
    }

    static let secret = "6Nd4hW6X0W8cGSUhv3kYVZ4UpmjtwcIs4hGJgkZ61ZE="
}
