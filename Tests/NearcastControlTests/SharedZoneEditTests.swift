import DNSWire
import EtcdClient
import Foundation
import Logging
import NearcastAnswers
import NearcastConfiguration
import NearcastFleet
import NearcastGeo
import NearcastServer
import NearcastStore
import NearcastTestSupport
import NearcastZones
import Testing

@testable import NearcastControl

/// A record change on a server that follows a fleet's store goes to the store, the one RRset it
/// changes conditioned on what it was read as (issues 18, 31). Here the store is a stand-in that
/// loses the first race, so the refusal is seen every time; the real store's transactions are in
/// EtcdClientTests and FleetTests.
@Suite(.timeLimit(.minutes(1))) struct SharedZoneEditTests {
    /// A store holding one zone in layout 2 (its RRsets' values by key, each with its revision);
    /// `raceOnce` makes its first conditional write find the RRset changed.
    actor Store: SharedZones {
        static let layout = StoreLayout(prefix: "/nc/")
        var values: [String: (value: [UInt8], modRevision: Int64)] = [:]
        var revision: Int64 = 7
        var raceOnce: Bool
        var audit: [AuditLog.Entry] = []

        init(_ zone: Zone, raceOnce: Bool) {
            for e in StoredZone.entries(of: zone, Self.layout) { values[e.key] = (e.value, 5) }
            self.raceOnce = raceOnce
        }

        func owner(_ origin: DNSName, _ owner: DNSName) async throws -> StoredZone.Owner {
            let prefix = StoredZone.ownerPrefix(Self.layout, origin, owner)
            let kvs = values.filter { $0.key.hasPrefix(prefix) }.map {
                KeyValue(
                    key: Array($0.key.utf8), value: $0.value.value, createRevision: 1, modRevision: $0.value.modRevision
                )
            }
            let meta = KeyValue(
                key: Array(StoredZone.metaKey(Self.layout, origin).utf8),
                value: StoredZone.Meta(serialBase: 100, state: .ready).json, createRevision: 1, modRevision: 3)
            return StoredZone.Owner(
                origin: origin, owner: owner, revision: revision, kvs: kvs, meta: meta, layout: Self.layout)
        }

        func writeRRset(_ type: RRType, value: [UInt8], from read: StoredZone.Owner, audit entry: AuditLog.Entry)
            async throws -> Int64?
        {
            let key = StoredZone.rrsetKey(Self.layout, read.origin, read.owner, type)
            if raceOnce {  // another server's change to this RRset came first
                raceOnce = false
                revision += 1
                values[key] = (Array("\(read.owner) 60 IN \(type) 192.0.2.200\n".utf8), revision)
                return nil
            }
            guard values[key]?.modRevision == read.values[type]?.modRevision else { return nil }
            revision += 1
            values[key] = (value, revision)
            audit.append(entry)
            return revision
        }

        func waitServed(_ revision: Int64, timeout: Duration) async -> Bool { true }

        // (Transfers into the store are FleetSecondaryTests', against a real etcd.)
        func writeTransferred(_ zone: Zone, primaries: [String]) async throws -> Int64 {
            throw CancellationError()
        }

        func writeTransferredChange(
            _ origin: DNSName, _ sets: [(owner: DNSName, type: RRType, value: [UInt8])], serial: UInt32,
            from before: UInt32, primaries: [String]
        ) async throws -> Int64? { throw CancellationError() }

        func clearTransferred(_ origin: DNSName, primaries: [String]) async throws -> Int64 {
            throw CancellationError()
        }

        func value(_ key: String) -> String? { values[key].map { String(decoding: $0.value, as: UTF8.self) } }
    }

    @Test func aChangeThatLostARaceIsRefusedAndTheNextOneIsWritten() async throws {
        let path = TestSupport.fixtures.appendingPathComponent("example.test.zone").path
        let origin = try DNSName("example.test.")
        let config = try NearcastConfig.parse(
            yaml: "zones: [{ origin: example.test., file: \(path) }]", fileName: "c.yaml", baseDirectory: "")
        let zones = try config.loadZones()
        let store = Store(zones[0], raceOnce: true)
        let served = ServedConfig(
            serving: .init(config: config, zones: zones, unavailable: []), live: LiveGeo(board: HealthBoard()),
            responders: ResponderSource(Responder(authority: Authority(zones: zones))), writer: nil,
            logger: Logger(label: "test"))
        let edits = ZoneEdits(served: served, audit: nil, shared: store, logger: Logger(label: "test"))
        let add = ZoneEditor.Edit.add(RecordInput(name: "new", type: "A", data: "192.0.2.9"))
        await #expect {
            _ = try await edits.edit("example.test.", add, by: "write tokens:1")
        } throws: { error in
            guard case .conflict(let why) = error as? ZoneEditError else { return false }
            return why.contains("the A records at new.example.test. changed in the store while this change was made")
                && why.contains("read at revision 7, read again at revision 8")
        }
        let key = StoredZone.rrsetKey(Store.layout, origin, try DNSName("new.example.test."), .a)
        let (raced, noAudit) = (await store.value(key), await store.audit.isEmpty)
        #expect(noAudit && raced == "new.example.test. 60 IN A 192.0.2.200\n", "nothing was written")

        // Made again from the RRset as it is now: added to the other server's record.
        let change = try await edits.edit("example.test.", add, by: "write tokens:1")
        #expect(change.changed == 1)
        #expect(
            change.serial == 100 + (9 - 3),
            "the serial served once the write is: the base and the revisions since the import")
        let written = try #require(await store.value(key))
        let records = try ZoneFileParser.parse(text: written, fileName: "store", origin: origin)
        #expect(Set(records.map { ZoneText.rdata($0.record.rdata, type: .a) }) == ["192.0.2.200", "192.0.2.9"])
        let audit = await store.audit
        #expect(audit.count == 1 && audit[0].who == "write tokens:1" && audit[0].detail == "add new A 192.0.2.9")
        // The file the server was started from is not touched: the store holds the zone.
        #expect(!(try String(contentsOfFile: path, encoding: .utf8)).contains("192.0.2.9"))
    }
}
