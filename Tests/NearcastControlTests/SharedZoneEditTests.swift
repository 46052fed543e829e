import DNSWire
import Foundation
import Logging
import NearcastAnswers
import NearcastConfiguration
import NearcastGeo
import NearcastServer
import NearcastTestSupport
import NearcastZones
import Testing

@testable import NearcastControl

/// A record change on a server that follows a fleet's store goes to the store, conditioned on the
/// revision the zone was read at (issue 18). Here the store is a stand-in that loses the first
/// race, so the refusal is seen every time; the real store's transactions are in EtcdClientTests
/// and FleetTests.
@Suite(.timeLimit(.minutes(1))) struct SharedZoneEditTests {
    /// A store holding one zone; `raceOnce` makes its first conditional write find the zone changed.
    actor Store: SharedZones {
        var text: String
        var revision: Int64 = 7
        var raceOnce: Bool
        var audit: [AuditLog.Entry] = []

        init(text: String, raceOnce: Bool) {
            self.text = text
            self.raceOnce = raceOnce
        }

        func zoneText(_ origin: DNSName) async throws -> (text: String, modRevision: Int64)? { (text, revision) }

        func replaceZone(_ origin: DNSName, text: String, ifAt: Int64, audit entry: AuditLog.Entry) async throws
            -> Int64?
        {
            if raceOnce {  // another server's change came first
                raceOnce = false
                revision += 1
                return nil
            }
            guard ifAt == revision else { return nil }
            self.text = text
            revision += 1
            audit.append(entry)
            return revision
        }

        func waitServed(_ revision: Int64, timeout: Duration) async -> Bool { true }
    }

    @Test func aChangeThatLostARaceIsRefusedAndTheNextOneIsWritten() async throws {
        let path = TestSupport.fixtures.appendingPathComponent("example.test.zone").path
        let origin = try DNSName("example.test.")
        let config = try NearcastConfig.parse(
            yaml: "zones: [{ origin: example.test., file: \(path) }]", fileName: "c.yaml", baseDirectory: "")
        let zones = try config.loadZones()
        let store = Store(text: try String(contentsOfFile: path, encoding: .utf8), raceOnce: true)
        let served = ServedConfig(
            running: config, zones: zones, load: { config }, live: LiveGeo(board: HealthBoard()),
            responders: ResponderSource(Responder(authority: Authority(zones: zones))), writer: nil, shared: store,
            logger: Logger(label: "test"))
        let add = ZoneEditor.Edit.add(RecordInput(name: "new", type: "A", data: "192.0.2.9"))
        await #expect {
            _ = try await served.edit("example.test.", add, by: "write tokens:1")
        } throws: { error in
            guard case .conflict(let why) = error as? ZoneEditError else { return false }
            return why.contains("changed in the store while this change was made")
                && why.contains("read at revision 7, another change made it revision 8")
        }
        let (untouched, noAudit) = (await store.text, await store.audit.isEmpty)
        #expect(noAudit && !untouched.contains("192.0.2.9"), "nothing was written")

        let change = try await served.edit("example.test.", add, by: "write tokens:1")
        #expect(change.changed == 1)
        let written = await store.text
        let records = try ZoneFileParser.parse(text: written, fileName: "store", origin: origin).map(\.record)
        #expect(records.contains { $0.name == (try! DNSName("new.example.test.")) && $0.type == .a })
        let audit = await store.audit
        #expect(audit.count == 1 && audit[0].who == "write tokens:1" && audit[0].detail == "add new A 192.0.2.9")
        // The file the server was started from is not touched: the store holds the zone.
        #expect(!(try String(contentsOfFile: path, encoding: .utf8)).contains("192.0.2.9"))
    }
}
