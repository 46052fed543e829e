import DNSWire
import Foundation
import NearcastTestSupport
import NearcastTransfer
import Testing

/// nearcastd as a secondary (issue 33) of real primaries, every transfer signed: of Knot, by AXFR
/// at its start and by IXFR after a change made with knotc's transaction, told by Knot's NOTIFY;
/// of NSD by AXFR; kept in the state directory across a restart with the primary gone; expired
/// (SERVFAIL) once the SOA's expire passes without a primary, and served again when one answers;
/// a transfer signed with a key the primary does not know serves nothing.
@Suite(.timeLimit(.minutes(3))) struct SecondaryZoneTests {
    static let keyName = ZoneTransferTests.keyName
    static let secret = ZoneTransferTests.secret
    static let reader = "44444444444444444444444444444444"

    /// nearcastd with `example.test.` a secondary of `primaries` (ports on 127.0.0.1), kept in
    /// `dir`'s state directory, transferred with the key (`secret`: its secret here), and
    /// transferred on to 127.0.0.1 with it.
    static func secondary(in dir: TemporaryDirectory, primaries: [Int], secret: String = secret) throws -> Daemon {
        let list = primaries.map { "\"127.0.0.1:\($0)\"" }.joined(separator: ", ")
        _ = try dir.write("read \(reader)\n", to: "tokens")
        _ = try dir.write(
            """
            listen: ["127.0.0.1:0"]
            state-dir: state
            zones:
              - origin: example.test.
                primaries: [\(list)]
                tsig: \(keyName)
                allow-transfer: ["127.0.0.1 key \(keyName)"]
            tsig:
              keys: [{ name: \(keyName), algorithm: hmac-sha256, secret: \(secret) }]
            api: { listen: "127.0.0.1:0", tokens: tokens }
            """, to: "c.yaml")
        return try Daemon(["--config", dir.file("c.yaml")])
    }

    /// Knot serving `file` at `port`, transferring it to 127.0.0.1 with the key, its changes
    /// journaled for IXFR, and telling nearcastd at `notify` of them; its process and control socket.
    static func knot(file: URL, port: Int, notify: Int, label: String) throws -> (ServerProcess, socket: String) {
        try knot(file: file, port: port, notify: [notify], label: label)
    }

    /// The same, telling each nearcastd at `notify` (a remote each: a remote's addresses are
    /// alternatives to Knot).
    /// `zoneOptions`: more of the zone's options (lines indented as its own).
    static func knot(file: URL, port: Int, notify: [Int], label: String, zoneOptions: String = "") throws -> (
        ServerProcess, socket: String
    ) {
        let dir = try TemporaryDirectory.url(label)
        let remotes = notify.enumerated().map {
            "  - id: nearcast\($0.offset)\n    address: 127.0.0.1@\($0.element)\n    key: \(keyName)\n"
        }.joined()
        let notified = notify.indices.map { "nearcast\($0)" }.joined(separator: ", ")
        let knot = try ReferenceServerDifferentialTests.startKnot(
            dir: dir, port: port, origin: "example.test", file: file,
            sections: ZoneTransferTests.knotKey + """

                remote:
                \(remotes)acl:
                  - id: signed
                    address: 127.0.0.1
                    key: \(keyName)
                    action: transfer
                """,
            zoneOptions: "    acl: [signed]\n    notify: [\(notified)]\n    journal-content: changes\n" + zoneOptions)
        let socket = dir.appendingPathComponent("knot.sock").path
        do {
            try knot.waitUntilReady {
                (try? TestSupport.run(try TestSupport.tool("knotc"), ["-s", socket, "zone-status", "example.test."]))?
                    .status == 0
            }
        } catch {
            knot.stop()
            throw error
        }
        return (knot, socket)
    }

    /// What `daemon` answers for `name`: its status line's rcode and the answer's data.
    static func answer(_ daemon: Daemon, _ name: String, _ type: String = "A") throws -> (String, [String]) {
        let out = try daemon.dig(["+norec", "+short", name, type])
        let status = try daemon.dig(["+norec", name, type]).stdout
        let rcode = status.range(of: "status: ").map { String(status[$0.upperBound...].prefix { $0 != "," }) } ?? "?"
        return (rcode, out.stdout.split(separator: "\n").map(String.init).sorted())
    }

    /// Knot as the primary: nearcastd, started first, answers SERVFAIL; Knot's NOTIFY has it take
    /// the zone by AXFR, every record of it; a change made with knotc reaches it by NOTIFY and an
    /// IXFR of that change alone. Restarted with Knot gone, it serves the zone from its state
    /// directory.
    @Test func ofKnotByAXFRThenIXFRToldByNotify() throws {
        let dir = try TemporaryDirectory("nearcast-secondary-knot")
        let (file, records) = try TransferInTests.zone(in: dir)
        let knotPort = try TestSupport.unusedPort()
        var daemon = try Self.secondary(in: dir, primaries: [knotPort])
        defer { daemon.process.stop() }
        #expect(try Self.answer(daemon, "www.example.test.").0 == "SERVFAIL")
        let (knot, socket) = try Self.knot(
            file: file, port: knotPort, notify: daemon.dnsPort, label: "nearcast-secondary-knot-primary")
        defer { knot.stop() }
        // Knot tells its secondaries at its start; knotc asks it again, should that one come first.
        _ = try TestSupport.run(try TestSupport.tool("knotc"), ["-s", socket, "zone-notify", "example.test."])
        try poll("the zone served", timeout: 20) {
            try Self.answer(daemon, "www.example.test.") == ("NOERROR", ["192.0.2.1", "192.0.2.2"])
        }
        // Every record Knot has, as nearcastd transfers it on.
        let port = UInt16(daemon.dnsPort)
        guard
            case .zone(let got, 2_026_112_201) = try TransferIn.fetch(
                TransferInTests.origin, from: TransferInTests.localhost, port: port, key: TransferInTests.key,
                serial: nil)
        else {
            Issue.record("not the zone at 2026112201")
            return
        }
        #expect(Set(got) == Set(records) && got.count == records.count)
        try ZoneTransferTests.changeWwwInKnot(socket: socket)
        try poll("the change served", timeout: 20) {
            try Self.answer(daemon, "www.example.test.") == ("NOERROR", ["192.0.2.31"])
        }
        #expect(daemon.log.contains("asked=IXFR") && daemon.log.contains("got=1 change"), "\(daemon.log)")

        // Restarted with its primary gone: served from the state directory at once.
        knot.stop()
        daemon.process.stop()
        daemon = try Self.secondary(in: dir, primaries: [knotPort])
        #expect(try Self.answer(daemon, "www.example.test.") == ("NOERROR", ["192.0.2.31"]))
    }

    /// NSD as the primary: the whole zone by AXFR. A secondary whose key's secret is not NSD's
    /// takes nothing and answers SERVFAIL, saying why in its log.
    @Test func ofNSDByAXFRAndNotWithAWrongKey() throws {
        let dir = try TemporaryDirectory("nearcast-secondary-nsd")
        let (file, _) = try TransferInTests.zone(in: dir)
        let (nsd, nsdPort) = try TransferInTests.nsdPrimary(file: file, dir: dir)
        defer { nsd.stop() }
        let daemon = try Self.secondary(in: dir, primaries: [nsdPort])
        defer { daemon.process.stop() }
        try poll("the zone served", timeout: 20) {
            try Self.answer(daemon, "host3999.example.test.") == ("NOERROR", ["198.51.15.249"])
        }
        let wrongDir = try TemporaryDirectory("nearcast-secondary-wrong-key")
        let wrong = try Self.secondary(
            in: wrongDir, primaries: [nsdPort], secret: "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=")
        defer { wrong.process.stop() }
        try wrong.waitUntilReady(timeout: 20) { wrong.log.contains("secondary zone not refreshed") }
        #expect(try Self.answer(wrong, "www.example.test.").0 == "SERVFAIL")
    }

    /// A primary that goes away: its zone (SOA expire 6 s, refresh and retry 2 s) is served until
    /// the expire passes, then answered SERVFAIL; back, it is refreshed and served again.
    @Test func aZoneExpiresWithoutItsPrimaryAndIsServedAgainWhenItIsBack() throws {
        let dir = try TemporaryDirectory("nearcast-secondary-expire")
        let text = try String(
            contentsOf: TestSupport.fixtures.appendingPathComponent("example.test.zone"), encoding: .utf8
        ).replacingOccurrences(of: "2026112201 3600 600 1209600 60", with: "2026112201 2 2 6 60")
        let file = URL(fileURLWithPath: try dir.write(text, to: "primary.zone"))
        let knotPort = try TestSupport.unusedPort()
        let daemon = try Self.secondary(in: dir, primaries: [knotPort])
        defer { daemon.process.stop() }
        var (knot, _) = try Self.knot(
            file: file, port: knotPort, notify: daemon.dnsPort, label: "nearcast-secondary-expire-primary")
        try poll("the zone served", timeout: 20) { try Self.answer(daemon, "www.example.test.").0 == "NOERROR" }
        knot.stop()
        let gone = Date()
        try poll("the zone expired", timeout: 20) { try Self.answer(daemon, "www.example.test.").0 == "SERVFAIL" }
        #expect(Date().timeIntervalSince(gone) > 3, "served until its expire, 6 s after its last refresh")
        #expect(daemon.log.contains("secondary zone expired"))
        // `nearcast zones` says so, and why.
        let zones = try daemon.cli(["zones"], token: Self.reader)
        #expect(zones.status == 0, "\(zones.stderr)")
        #expect(
            zones.stdout.contains("secondary of 127.0.0.1:\(knotPort) key \(Self.keyName): expired (answered SERVFAIL)")
                && zones.stdout.contains("last error: ") && zones.stdout.contains("XFR from 127.0.0.1:\(knotPort)"),
            "\(zones.stdout)")
        (knot, _) = try Self.knot(
            file: file, port: knotPort, notify: daemon.dnsPort, label: "nearcast-secondary-expire-back")
        defer { knot.stop() }
        try poll("the zone served again", timeout: 20) { try Self.answer(daemon, "www.example.test.").0 == "NOERROR" }
        let back = try daemon.cli(["zones"], token: Self.reader).stdout
        #expect(back.contains(": served; refreshed") && !back.contains("last error"), "\(back)")
    }

    /// A zone file put in the state directory by hand, with no record of a refresh: its expire
    /// runs from the file's modification time, not from never. Here that was an hour ago, the
    /// SOA's expire is 6 s, and no primary answers: SERVFAIL, and the log says it expired.
    @Test func aZoneFilePutThereByHandExpiresFromItsModificationTime() throws {
        let dir = try TemporaryDirectory("nearcast-secondary-by-hand")
        let text = try String(
            contentsOf: TestSupport.fixtures.appendingPathComponent("example.test.zone"), encoding: .utf8
        ).replacingOccurrences(of: "2026112201 3600 600 1209600 60", with: "2026112201 2 2 6 60")
        try FileManager.default.createDirectory(
            atPath: dir.file("state/secondary"), withIntermediateDirectories: true)
        let file = try dir.write(text, to: "state/secondary/example.test.zone")
        try FileManager.default.setAttributes(
            [.modificationDate: Date().addingTimeInterval(-3600)], ofItemAtPath: file)
        let daemon = try Self.secondary(in: dir, primaries: [try TestSupport.unusedPort()])
        defer { daemon.process.stop() }
        try poll("the zone expired", timeout: 15) { try Self.answer(daemon, "www.example.test.").0 == "SERVFAIL" }
        #expect(daemon.log.contains("secondary zone expired"), "\(daemon.log)")
    }
}
