import DNSWire
import Foundation
import Logging
import NearcastAnswers
import NearcastConfiguration
import NearcastGeo
import NearcastServer
import NearcastTestSupport
import NearcastTransfer
import NearcastZones
import Synchronization
import Testing

@testable import NearcastControl

/// What a secondary zone's transfers in do to the zone served (issue 33): each is checked as a
/// zone file is before anything of it is served, and one that does not check keeps the zone as
/// it was; a zone whose expire passed is answered SERVFAIL until a transfer brings it back.
@Suite(.timeLimit(.minutes(1))) struct SecondaryTransferTests {
    static let origin = try! DNSName("example.test.")
    static let primary = "127.0.0.1:53"

    /// The fixture zone as a secondary kept in `dir`, served, and its responders.
    static func served(in dir: TemporaryDirectory) throws -> (SecondaryServing, ResponderSource) {
        let text = try String(
            contentsOf: TestSupport.fixtures.appendingPathComponent("example.test.zone"), encoding: .utf8)
        _ = try dir.write(text, to: "z.zone")
        let yaml = "zones: [{ origin: example.test., primaries: [\"127.0.0.1\"], file: z.zone }]"
        let config = try NearcastConfig.parse(yaml: yaml, fileName: "c.yaml", baseDirectory: dir.path)
        let (servable, unavailable) = config.servable()
        #expect(servable.zones.count == 1 && unavailable.isEmpty, "a secondary's file that exists is served")
        let zones = try servable.loadZones()
        let responders = ResponderSource(
            Responder(serving: servable, zones: zones, geo: nil, cookies: nil, counts: nil))
        let served = ServedConfig(
            serving: .init(config: servable, zones: zones, unavailable: []), live: LiveGeo(board: HealthBoard()),
            responders: responders, writer: nil, writeBack: ZoneWriteBack(logger: Logger(label: "test")),
            logger: Logger(label: "test"))
        return (SecondaryServing(served: served, shared: nil, logger: Logger(label: "test")), responders)
    }

    /// The reply's rcode and answer records, as text, to `name` and `type` from `responders`.
    static func ask(_ responders: ResponderSource, _ name: String, _ type: RRType) throws -> (RCode, [String]) {
        let m = try responders.current.responder.ask(name, type)
        return (m.rcode, m.answers.map { ZoneText.line($0) })
    }

    static func record(_ text: String) throws -> ResourceRecord {
        let parsed = try ZoneFileParser.parse(text: "$ORIGIN example.test.\n" + text, fileName: "t", origin: origin)
        return parsed[0].record
    }

    static func soa(_ serial: UInt32) throws -> ResourceRecord {
        try record("@ 300 SOA ns1 hostmaster \(serial) 3600 600 1209600 60")
    }

    /// An IXFR that would put a CNAME beside www's addresses is refused as a zone file with that
    /// would be; so is a change made for another serial. The zone served, its serial and its
    /// journal stay as they were. A valid change is then served, and journaled.
    @Test func anIXFRThatBreaksACheckIsRefusedAndTheZoneStays() async throws {
        let dir = try TemporaryDirectory("nearcast-secondary-ixfr")
        let (served, responders) = try Self.served(in: dir)
        let cname = ZoneChangeset(
            serialBefore: 2_026_112_201, serialAfter: 2_026_112_202, removed: [try Self.soa(2_026_112_201)],
            added: [try Self.soa(2_026_112_202), try Self.record("www 300 CNAME mail")])
        await #expect {
            _ = try await served.applyTransfer(Self.origin, .changes([cname]), from: Self.primary)
        } throws: { "\($0)".contains("CNAME") && "\($0)".contains("IXFR from \(Self.primary)") }
        var other = cname
        other.serialBefore = 7
        await #expect(throws: ZoneEditError.self) {
            _ = try await served.applyTransfer(Self.origin, .changes([other]), from: Self.primary)
        }
        #expect(try Self.ask(responders, "www.example.test.", .a).1.count == 2)
        #expect(try Self.ask(responders, "example.test.", .soa).1.first?.contains("2026112201") == true)
        #expect(!FileManager.default.fileExists(atPath: ZoneJournal.path(forZoneFile: dir.file("z.zone"))))

        let change = ZoneChangeset(
            serialBefore: 2_026_112_201, serialAfter: 2_026_112_202,
            removed: [try Self.soa(2_026_112_201), try Self.record("www 300 A 192.0.2.1")],
            added: [try Self.soa(2_026_112_202)])
        let after = try await served.applyTransfer(Self.origin, .changes([change]), from: Self.primary)
        #expect(after.serial == 2_026_112_202)
        #expect(try Self.ask(responders, "www.example.test.", .a).1 == ["www.example.test. 300 IN A 192.0.2.2"])
        let journaled = try ZoneJournal.read(ZoneJournal.path(forZoneFile: dir.file("z.zone")), origin: Self.origin)
        #expect(journaled == [change])
    }

    /// An AXFR with a CNAME beside other data is refused whole; a valid one is served as its
    /// difference from the zone served.
    @Test func anAXFRThatBreaksACheckIsRefusedAndAValidOneIsServed() async throws {
        let dir = try TemporaryDirectory("nearcast-secondary-axfr")
        let (served, responders) = try Self.served(in: dir)
        let zone = try Zone.load(path: dir.file("z.zone"), origin: Self.origin)
        var records = zone.records.filter { $0.type != .soa }
        records.insert(try Self.soa(2_026_112_205), at: 0)
        let broken = records + [try Self.record("mail 300 CNAME www")]
        await #expect {
            _ = try await served.applyTransfer(Self.origin, .zone(broken, serial: 2_026_112_205), from: Self.primary)
        } throws: { "\($0)".contains("CNAME") }
        #expect(try Self.ask(responders, "mail.example.test.", .a).1 == ["mail.example.test. 300 IN A 192.0.2.25"])

        let valid = records.filter { !($0.name.description == "mail.example.test." && $0.type == .a) }
        let after = try await served.applyTransfer(Self.origin, .zone(valid, serial: 2_026_112_205), from: Self.primary)
        #expect(after.serial == 2_026_112_205)
        #expect(try Self.ask(responders, "mail.example.test.", .a).1.isEmpty)
        #expect(try Self.ask(responders, "mail.example.test.", .aaaa).1.count == 1)
    }

    /// Expired, the zone is answered SERVFAIL (EDE 14, not ready), and a NOTIFY from its primary
    /// is still accepted; an AXFR serves it again, written to its file, which a journal of the
    /// copy before does not follow.
    @Test func anExpiredZoneIsServfailUntilATransferServesItAgain() async throws {
        let dir = try TemporaryDirectory("nearcast-secondary-expire")
        let (served, responders) = try Self.served(in: dir)
        await served.expireSecondary(Self.origin)
        let reply = try #require(
            responders.current.responder.respond(
                to: RawClient.query("www.example.test.", .a, edns: EDNS()), transport: .udp))
        let m = try DNSMessage(wire: reply)
        #expect(m.rcode == .servFail)
        #expect(m.edns?.options.contains(.extendedError(.notReady)) == true)
        #expect(await served.secondary(Self.origin)?.zone == nil)

        let zone = try Zone.load(path: dir.file("z.zone"), origin: Self.origin)
        var records = zone.records.filter { $0.type != .soa }
        records.insert(try Self.soa(2_026_112_209), at: 0)
        let after = try await served.applyTransfer(
            Self.origin, .zone(records, serial: 2_026_112_209), from: Self.primary)
        #expect(after.serial == 2_026_112_209)
        #expect(try Self.ask(responders, "www.example.test.", .a).0 == .noError)
        #expect(try Zone.load(path: dir.file("z.zone"), origin: Self.origin).serial == 2_026_112_209)
    }

    /// A change through the API to a secondary zone is refused: its primary owns it.
    @Test func aSecondaryZoneIsNotChangedThroughTheAPI() async throws {
        let dir = try TemporaryDirectory("nearcast-secondary-edit")
        let (served, _) = try Self.served(in: dir)
        await #expect {
            _ = try await ZoneEdits(served: served.served, audit: nil, shared: nil, logger: Logger(label: "test")).edit(
                "example.test.", .add(RecordInput(name: "new", type: "A", data: "192.0.2.9")), by: "test")
        } throws: { "\($0)".contains("is a secondary") }
    }

    /// Forty secondaries never transferred (a catalog's members at its first transfer), their
    /// AXFRs arriving at once: each is served, answering its own records, and none is lost to
    /// another being served beside it in the same switch.
    @Test func secondariesTransferredAtOnceAreAllServed() async throws {
        let dir = try TemporaryDirectory("nearcast-secondary-many")
        let origins = (0..<40).map { try! DNSName("m\($0).test.") }
        let entries = origins.map { "  - { origin: \($0), primaries: [\"127.0.0.1\"] }" }.joined(separator: "\n")
        let config = try NearcastConfig.parse(
            yaml: "state-dir: state\nzones:\n\(entries)\n", fileName: "c.yaml", baseDirectory: dir.path)
        let (servable, unavailable) = config.servable()
        #expect(servable.zones.isEmpty && unavailable.count == 40)
        let responders = ResponderSource(
            Responder(serving: servable, zones: [], geo: nil, cookies: nil, counts: nil, unavailable: unavailable))
        let core = ServedConfig(
            serving: .init(config: servable, zones: [], unavailable: unavailable), live: LiveGeo(board: HealthBoard()),
            responders: responders, writer: nil, logger: Logger(label: "test"))
        let served = SecondaryServing(served: core, shared: nil, logger: Logger(label: "test"))
        #expect(try Self.ask(responders, "www.m7.test.", .a).0 == .servFail)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (i, origin) in origins.enumerated() {
                group.addTask {
                    let text =
                        "@ 60 SOA ns hostmaster 1 60 60 600 60\n@ 60 NS ns\nns 60 A 192.0.2.53\nwww 60 A 192.0.2.\(i + 1)"
                    let records = try ZoneFileParser.parse(text: text, fileName: "t", origin: origin).map(\.record)
                    _ = try await served.applyTransfer(origin, .zone(records, serial: 1), from: Self.primary)
                }
            }
            try await group.waitForAll()
        }
        for (i, origin) in origins.enumerated() {
            #expect(
                try Self.ask(responders, "www.\(origin)", .a) == (.noError, ["www.\(origin) 60 IN A 192.0.2.\(i + 1)"]))
            #expect(FileManager.default.fileExists(atPath: dir.file("state/secondary/m\(i).test.zone")))
        }
        let now = await core.now
        #expect(now.zones.count == 40 && now.unavailable.isEmpty, "every secondary served")
    }

    /// Transfers in wait their turn (`TransferInQueue`): no more than the limit run at once, those
    /// over it start in the order they came as places are given back, and none is lost.
    @Test func transfersInOverTheLimitWaitTheirTurnInOrder() async throws {
        let queue = TransferInQueue(limit: 2)
        await queue.take()
        await queue.take()
        #expect(queue.load == (2, 0))
        let started = StartOrder()
        var waiters: [Task<Void, Never>] = []
        for i in 0..<3 {
            waiters.append(
                Task {
                    await queue.take()
                    started.order.withLock { $0.append(i) }
                })
            // One after another, so that each is waiting before the next comes.
            try await eventually("waiter \(i) queued", timeout: 30) { queue.load.waiting == i + 1 }
        }
        #expect(started.order.withLock { $0 }.isEmpty)
        queue.release()
        await waiters[0].value
        #expect(queue.load == (2, 2))
        queue.release()
        queue.release()
        for w in waiters { await w.value }
        #expect(started.order.withLock { $0 } == [0, 1, 2])
        #expect(queue.load == (2, 0))
        queue.release()
        queue.release()
        #expect(queue.load == (0, 0))
    }

}

/// The order in which waiting transfers started.
final class StartOrder: Sendable {
    let order = Mutex<[Int]>([])
}
