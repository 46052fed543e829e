import DNSWire
import Foundation
import NearcastTestSupport
import Testing

/// A fleet's secondary zone (issue 33): declared in the store by `nearcast store import`,
/// transferred from a real Knot by the one server that holds the fleet's transfer duty, and
/// carried by the store to every server, which serve the primary's serial. When that server
/// stops, another takes the duty and the zone goes on following its primary.
@Suite(.timeLimit(.minutes(3))) struct FleetSecondaryTests {
    static let keyName = ZoneTransferTests.keyName
    static let keys =
        "tsig:\n  keys: [{ name: \(keyName), algorithm: hmac-sha256, secret: \(ZoneTransferTests.secret) }]"

    /// The SOA serial `daemon` answers for example.test. (nil: none).
    static func serial(_ daemon: Daemon) throws -> String? {
        try daemon.dig(["+norec", "+short", "example.test.", "SOA"]).stdout.split(separator: " ").dropFirst(2).first
            .map(String.init)
    }

    /// The SOA serial Knot serves at `port`.
    static func knotSerial(port: Int) throws -> String? {
        try TestSupport.run(
            try TestSupport.tool("dig"), ["@127.0.0.1", "-p", "\(port)", "+norec", "+short", "example.test.", "SOA"]
        ).stdout.split(separator: " ").dropFirst(2).first.map(String.init)
    }

    @Test func oneServerTransfersAndTheStoreCarriesItToEvery() async throws {
        try await TestSupport.blocking { try Self.oneServerTransfersBody() }
    }

    static func oneServerTransfersBody() throws {
        let fleet = try FleetTests.Fleet()
        defer { fleet.finish() }
        let dir = try TemporaryDirectory("nearcast-fleet-secondary")
        let (file, _) = try TransferInTests.zone(in: dir)
        let knotPort = try TestSupport.unusedPort()
        try fleet.seed(
            """
            zones:
              - { origin: example.test., primaries: ["127.0.0.1:\(knotPort)"], tsig: \(keyName) }
            \(keys)
            """)
        var servers = [try fleet.startServer(0, extra: keys), try fleet.startServer(1, extra: keys)]
        defer { for s in servers { s.stop() } }
        // Declared, and not transferred yet: SERVFAIL everywhere.
        for s in servers { #expect(try SecondaryZoneTests.answer(s, "www.example.test.").0 == "SERVFAIL") }

        let (knot, socket) = try SecondaryZoneTests.knot(
            file: file, port: knotPort, notify: servers.map(\.dnsPort), label: "nearcast-fleet-secondary-knot")
        defer { knot.stop() }
        for s in servers {
            try poll("the zone served by every server\n\(s.log)", timeout: 30) {
                try SecondaryZoneTests.answer(s, "www.example.test.") == ("NOERROR", ["192.0.2.1", "192.0.2.2"])
            }
        }
        // The AXFR, written in tens of transactions, was one read of the store for each server: the
        // keys of an import under way are not read for until it ends.
        for s in servers { #expect(s.log.components(separatedBy: "by=store@").count - 1 == 1, "\(s.log)") }
        // One server transferred it; the other took it from the store.
        let holders = servers.indices.filter { servers[$0].log.contains("now transfers the fleet's secondary zones") }
        #expect(holders.count == 1, "\(servers.map(\.log))")
        guard holders.count == 1 else { return }
        let holder = holders[0]
        let other = 1 - holder
        #expect(servers[holder].log.contains("secondary zone refreshed"))
        #expect(!servers[other].log.contains("secondary zone refreshed"), "\(servers[other].log)")

        // A change at the primary: told by NOTIFY, taken by IXFR, served everywhere at Knot's serial.
        try ZoneTransferTests.changeWwwInKnot(socket: socket)
        for s in servers {
            try poll("the change served by every server", timeout: 30) {
                try SecondaryZoneTests.answer(s, "www.example.test.") == ("NOERROR", ["192.0.2.31"])
            }
        }
        #expect(servers[holder].log.contains("asked=IXFR"), "\(servers[holder].log)")
        // Written as the RRsets it changed, and served as a change: no server read the zone again.
        for s in servers { #expect(s.log.contains("zone changed from the store"), "\(s.log)") }
        let knotSerial = try Self.knotSerial(port: knotPort)
        #expect(knotSerial != nil && knotSerial != "2026112201")
        for s in servers { #expect(try Self.serial(s) == knotSerial) }

        // A change of more RRsets than one transaction holds (150 names): written as an import of
        // those alone, and served by every server as one change when it ends, not a read of the store.
        let knotc = try TestSupport.tool("knotc")
        let bulk =
            [["zone-begin", "example.test."]]
            + (0..<150).map { ["zone-set", "example.test.", "bulk\($0)", "300", "A", "198.51.100.\($0 % 250)"] }
            + [["zone-commit", "example.test."]]
        for command in bulk {
            let out = try TestSupport.run(knotc, ["-s", socket] + command)
            #expect(out.status == 0, "\(command): \(out.stdout)\(out.stderr)")
        }
        for s in servers {
            try poll("the bulk change served by every server", timeout: 30) {
                try SecondaryZoneTests.answer(s, "bulk149.example.test.") == ("NOERROR", ["198.51.100.149"])
            }
            #expect(s.log.contains("rrsets=151"), "150 names and the SOA in one change:\n\(s.log)")
            #expect(s.log.components(separatedBy: "by=store@").count - 1 == 1, "\(s.log)")
        }
        // Every server says which one transfers it.
        for s in servers {
            let zones = try fleet.api(["zones"], via: s)
            #expect(zones.stdout.contains("transferred by s\(holder)"), "\(zones.stdout)\(zones.stderr)")
        }
        // Not changed through the API: its primary would undo it.
        let refused = try fleet.api(
            ["record", "set", "example.test.", "www", "A", "192.0.2.99"], via: servers[other])
        #expect(refused.status != 0 && refused.stderr.contains("secondary"), "\(refused.stdout)\(refused.stderr)")

        // The holder stops: the other takes the duty and follows the primary from then on.
        servers[holder].stop()
        try servers[other].waitUntilReady(timeout: 30) {
            servers[other].log.contains("now transfers the fleet's secondary zones")
        }
        for command in [
            ["zone-begin", "example.test."], ["zone-unset", "example.test.", "www", "A"],
            ["zone-set", "example.test.", "www", "300", "A", "192.0.2.32"], ["zone-commit", "example.test."],
        ] {
            let out = try TestSupport.run(knotc, ["-s", socket] + command)
            #expect(out.status == 0, "\(command): \(out.stdout)\(out.stderr)")
        }
        try poll("the change served by the server left", timeout: 30) {
            try SecondaryZoneTests.answer(servers[other], "www.example.test.") == ("NOERROR", ["192.0.2.32"])
        }
        // Restarted, the first holder serves what the store holds now, without transferring.
        servers[holder] = try fleet.startServer(holder, extra: keys)
        try poll("the restarted server serves the store's copy", timeout: 30) {
            try SecondaryZoneTests.answer(servers[holder], "www.example.test.") == ("NOERROR", ["192.0.2.32"])
        }
        #expect(!servers[holder].log.contains("secondary zone refreshed"), "\(servers[holder].log)")
    }

    @Test func expiresAtEveryServerWithoutItsPrimaryAndComesBackWithIt() async throws {
        try await TestSupport.blocking { try Self.expiresBody() }
    }

    /// The primary goes away: the zone is served until its SOA's expire (6 s), then the server
    /// that transfers it takes its records out of the store and every server answers SERVFAIL;
    /// the primary back, its NOTIFY brings the zone back to every server.
    static func expiresBody() throws {
        let fleet = try FleetTests.Fleet()
        defer { fleet.finish() }
        let dir = try TemporaryDirectory("nearcast-fleet-secondary-expire")
        let text = try String(
            contentsOf: TestSupport.fixtures.appendingPathComponent("example.test.zone"), encoding: .utf8
        ).replacingOccurrences(of: "2026112201 3600 600 1209600 60", with: "2026112201 2 2 6 60")
        let file = URL(fileURLWithPath: try dir.write(text, to: "primary.zone"))
        let knotPort = try TestSupport.unusedPort()
        try fleet.seed(
            """
            zones:
              - { origin: example.test., primaries: ["127.0.0.1:\(knotPort)"], tsig: \(keyName) }
            \(keys)
            """)
        let servers = [try fleet.startServer(0, extra: keys), try fleet.startServer(1, extra: keys)]
        defer { for s in servers { s.stop() } }
        var (knot, _) = try SecondaryZoneTests.knot(
            file: file, port: knotPort, notify: servers.map(\.dnsPort), label: "nearcast-fleet-expire-primary")
        for s in servers {
            try poll("the zone served", timeout: 30) {
                try SecondaryZoneTests.answer(s, "www.example.test.").0 == "NOERROR"
            }
        }
        knot.stop()
        let gone = Date()
        for s in servers {
            try poll("the zone expired everywhere", timeout: 30) {
                try SecondaryZoneTests.answer(s, "www.example.test.").0 == "SERVFAIL"
            }
        }
        #expect(Date().timeIntervalSince(gone) > 3, "served until its expire, 6 s after its last refresh")
        #expect(servers.filter { $0.log.contains("secondary zone expired") }.count == 1)
        (knot, _) = try SecondaryZoneTests.knot(
            file: file, port: knotPort, notify: servers.map(\.dnsPort), label: "nearcast-fleet-expire-back")
        defer { knot.stop() }
        for s in servers {
            try poll("the zone served again", timeout: 30) {
                try SecondaryZoneTests.answer(s, "www.example.test.") == ("NOERROR", ["192.0.2.1", "192.0.2.2"])
            }
        }
    }
}
