import DNSWire
import Foundation
import NearcastTSIG
import NearcastTestSupport
import NearcastTransfer
import NearcastZones
import Testing

/// Zone transfers in (issue 33): `TransferIn` as a secondary asks Knot, NSD and nearcastd for a
/// zone, signed with the zone's key, every reply checked against it: the whole zone by AXFR, a
/// change by IXFR, the SOA alone when nothing changed, and a refusal for a wrong key.
@Suite(.timeLimit(.minutes(2))) struct TransferInTests {
    static let origin = try! DNSName("example.test.")
    static var key: TSIGKey {
        TSIGKey(
            name: try! DNSName(ZoneTransferTests.keyName), algorithm: .hmacSHA256,
            secret: Array(Data(base64Encoded: ZoneTransferTests.secret)!))
    }
    static let localhost: [UInt8] = [127, 0, 0, 1]

    /// The zone file the primaries serve (the transfer tests' zone of many messages), and its records.
    static func zone(in dir: TemporaryDirectory) throws -> (URL, [ResourceRecord]) {
        let path = try dir.write(try ZoneTransferTests.zoneText(), to: "z.zone")
        let records = try Zone.load(path: path, origin: origin).records
        return (URL(fileURLWithPath: path), records)
    }

    /// Knot as the primary: the whole zone; after a change made with knotc, that change alone
    /// (its old SOA, the records removed, its new SOA, the record added); nothing from the serial
    /// it serves; a transfer signed with a wrong secret fails, saying why.
    @Test func fromKnotAXFRThenIXFR() throws {
        let dir = try TemporaryDirectory("nearcast-xfr-in-knot")
        let (file, records) = try Self.zone(in: dir)
        let (knot, port, socket) = try ZoneTransferTests.knotPrimary(file: file, label: "nearcast-xfr-in-knot")
        defer { knot.stop() }
        var outcome: TransferIn.Outcome?
        try knot.waitUntilReady {
            outcome = try? TransferIn.fetch(
                Self.origin, from: Self.localhost, port: UInt16(port), key: Self.key, serial: nil)
            return outcome != nil
        }
        guard case .zone(let got, let serial) = outcome else {
            Issue.record("not a zone: \(String(describing: outcome))")
            return
        }
        #expect(serial == 2_026_112_201)
        #expect(Set(got) == Set(records) && got.count == records.count)

        try ZoneTransferTests.changeWwwInKnot(socket: socket)
        let change = try TransferIn.fetch(
            Self.origin, from: Self.localhost, port: UInt16(port), key: Self.key, serial: 2_026_112_201)
        guard case .changes(let changesets) = change, let c = changesets.first, changesets.count == 1 else {
            Issue.record("not one change: \(change)")
            return
        }
        #expect(c.serialBefore == 2_026_112_201 && c.serialAfter == 2_026_112_202)
        let www = try DNSName("www.example.test.")
        #expect(
            Set(c.removed.filter { $0.type == .a }.map(\.rdata)) == [
                .a(IPv4Address(192, 0, 2, 1)), .a(IPv4Address(192, 0, 2, 2)),
            ])
        #expect(
            c.added.filter { $0.type != .soa } == [
                ResourceRecord(name: www, type: .a, ttl: 300, rdata: .a(IPv4Address(192, 0, 2, 31)))
            ])
        #expect(c.removed.first?.type == .soa && c.added.first?.type == .soa)

        let upToDate = try TransferIn.fetch(
            Self.origin, from: Self.localhost, port: UInt16(port), key: Self.key, serial: 2_026_112_202)
        guard case .upToDate(2_026_112_202) = upToDate else {
            Issue.record("not up to date: \(upToDate)")
            return
        }
        var wrong = Self.key
        wrong.secret = Array("not the secret at all".utf8)
        #expect {
            try TransferIn.fetch(Self.origin, from: Self.localhost, port: UInt16(port), key: wrong, serial: nil)
        } throws: { error in
            "\(error)".contains("NOTAUTH") || "\(error)".contains("TSIG")
        }
    }

    /// NSD serving `file` from `dir`, transferring it to 127.0.0.1 signed with the key; its
    /// process and port.
    static func nsdPrimary(file: URL, dir: TemporaryDirectory) throws -> (ServerProcess, port: Int) {
        let port = try TestSupport.unusedPort()
        let conf = try ReferenceServerDifferentialTests.nsdConfig(
            dir: dir.url, port: port, origin: "example.test", file: file,
            sections:
                "key:\n  name: \(ZoneTransferTests.keyName)\n  algorithm: hmac-sha256\n  secret: \"\(ZoneTransferTests.secret)\"",
            zoneOptions: "  provide-xfr: 127.0.0.1 \(ZoneTransferTests.keyName)")
        return (try ServerProcess(try TestSupport.tool("nsd"), ["-d", "-c", conf.path]), port)
    }

    /// NSD as the primary: the whole zone, signed.
    @Test func fromNSDAXFR() throws {
        let dir = try TemporaryDirectory("nearcast-xfr-in-nsd")
        let (file, records) = try Self.zone(in: dir)
        let (nsd, port) = try Self.nsdPrimary(file: file, dir: dir)
        defer { nsd.stop() }
        var outcome: TransferIn.Outcome?
        try nsd.waitUntilReady {
            outcome = try? TransferIn.fetch(
                Self.origin, from: Self.localhost, port: UInt16(port), key: Self.key, serial: nil)
            return outcome != nil
        }
        guard case .zone(let got, _) = outcome else {
            Issue.record("not a zone: \(String(describing: outcome))")
            return
        }
        #expect(Set(got) == Set(records) && got.count == records.count)
    }

    /// nearcastd as the primary: the whole zone, then an API change by IXFR.
    @Test func fromNearcastAXFRThenIXFR() throws {
        let dir = try TemporaryDirectory("nearcast-xfr-in-nearcast")
        let (_, records) = try Self.zone(in: dir)
        let daemon = try ZoneTransferTests.start(in: dir)
        defer { daemon.stop() }
        let port = UInt16(daemon.dnsPort)
        guard
            case .zone(let got, _) = try TransferIn.fetch(
                Self.origin, from: Self.localhost, port: port, key: Self.key, serial: nil)
        else {
            Issue.record("not a zone")
            return
        }
        #expect(Set(got) == Set(records) && got.count == records.count)
        let set = try daemon.cli(
            ["record", "set", "example.test.", "www", "A", "192.0.2.31"], token: ZoneTransferTests.writer)
        #expect(set.status == 0, "\(set.stderr)")
        guard
            case .changes(let changesets) = try TransferIn.fetch(
                Self.origin, from: Self.localhost, port: port, key: Self.key, serial: 2_026_112_201),
            changesets.count == 1
        else {
            Issue.record("not one change")
            return
        }
        #expect(changesets[0].added.contains { $0.rdata == .a(IPv4Address(192, 0, 2, 31)) })
    }

    /// A primary that accepts the connection and never answers: the transfer fails as timed out,
    /// and not before the deadline it was given (a wait under a second once ended after 1 ms).
    @Test func aSilentPrimaryTimesOutAtTheDeadlineNotBefore() throws {
        let listener = try #require(RawClient.silentTCPListener())
        defer { close(listener.fd) }
        let start = ContinuousClock.now
        #expect {
            _ = try TransferIn.fetch(
                Self.origin, from: Self.localhost, port: UInt16(listener.port), key: nil, serial: nil,
                timeout: .milliseconds(700))
        } throws: { "\($0)".contains("timed out") }
        let took = ContinuousClock.now - start
        #expect(took >= .milliseconds(700) && took < .seconds(10), "\(took)")
    }
}
