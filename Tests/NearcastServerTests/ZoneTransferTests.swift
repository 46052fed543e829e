import DNSWire
import Foundation
import NearcastTSIG
import NearcastTestSupport
import NearcastTransfer
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Zone transfers out (issue 33): nearcastd as the primary of real secondaries. A zone of a few
/// thousand names takes many messages, each signed; kdig checks every signature, Knot and NSD
/// take the zone as secondaries with the same key, and a change made through the API reaches
/// Knot by IXFR. Only the rules a zone's `allow-transfer` lists are let in.
@Suite(.timeLimit(.minutes(3))) struct ZoneTransferTests {
    static let keyName = "xfr.example.test."
    static let secret = "6Nd4hW6X0W8cGSUhv3kYVZ4UpmjtwcIs4hGJgkZ61ZE="
    static var kdigKey: [String] { ["-y", "hmac-sha256:\(keyName):\(secret)"] }
    static let writer = "33333333333333333333333333333333"
    /// Generated names beside the fixture's: enough for a transfer of many messages.
    static let generated = 4000

    /// The fixture zone with `generated` names added (an A at each, a TXT at every tenth).
    static func zoneText() throws -> String {
        var text = try String(
            contentsOf: TestSupport.fixtures.appendingPathComponent("example.test.zone"), encoding: .utf8)
        for i in 0..<generated {
            text += "host\(i) A 198.51.\(i / 250).\(i % 250)\n"
            if i % 10 == 0 { text += "host\(i) TXT \"node \(i)\"\n" }
        }
        return text
    }

    /// nearcastd serving the zone, transferred to 127.0.0.1 with the key, or to 127.0.0.2 without;
    /// NOTIFY sent to `notify` (ports on 127.0.0.1), signed with the key.
    static func start(in dir: TemporaryDirectory, notify: [Int] = [], extra: String = "") throws -> Daemon {
        let targets = notify.map { "\"127.0.0.1:\($0) key \(keyName)\"" }.joined(separator: ", ")
        _ = try dir.write(try zoneText(), to: "z.zone")
        _ = try dir.write("write \(writer)\n", to: "tokens")
        _ = try dir.write(
            """
            listen: ["127.0.0.1:0"]
            zones:
              - origin: example.test.
                file: z.zone
                allow-transfer: ["127.0.0.1 key \(keyName)", "127.0.0.2"]
                notify: [\(targets)]
            tsig:
              keys: [{ name: \(keyName), algorithm: hmac-sha256, secret: \(secret) }]
            api: { listen: "127.0.0.1:0", tokens: tokens }
            \(extra)
            """, to: "c.yaml")
        return try Daemon(["--config", dir.file("c.yaml")])
    }

    /// kdig asking `daemon` for a transfer; `args` after the server.
    static func kdig(_ daemon: Daemon, _ args: [String]) throws -> TestSupport.Output {
        try TestSupport.run(try TestSupport.tool("kdig"), ["@127.0.0.1", "-p", "\(daemon.dnsPort)"] + args)
    }

    /// Knot's statement of the zones' key.
    static let knotKey = "key:\n  - id: \(keyName)\n    algorithm: hmac-sha256\n    secret: \(secret)"

    /// Knot serving `file` as a primary: transfers to 127.0.0.1 signed with the key or not, its
    /// journal kept for IXFR; its process, port and control socket, once it answers knotc.
    static func knotPrimary(file: URL, label: String) throws -> (ServerProcess, port: Int, socket: String) {
        let dir = try TemporaryDirectory.url(label)
        let port = try TestSupport.unusedPort()
        let knot = try ReferenceServerDifferentialTests.startKnot(
            dir: dir, port: port, origin: "example.test", file: file,
            sections: knotKey + """

                acl:
                  - id: signed
                    address: 127.0.0.1
                    key: \(keyName)
                    action: transfer
                  - id: unsigned
                    address: 127.0.0.1
                    action: transfer
                """,
            zoneOptions: "    acl: [signed, unsigned]\n    journal-content: changes")
        let socket = dir.appendingPathComponent("knot.sock").path
        let knotc = try TestSupport.tool("knotc")
        do {
            try knot.waitUntilReady {
                (try? TestSupport.run(knotc, ["-s", socket, "zone-status", "example.test."]))?.status == 0
            }
        } catch {
            knot.stop()
            throw error
        }
        return (knot, port, socket)
    }

    /// The change the API tests make (www's addresses replaced by 192.0.2.31), made in the Knot at
    /// `socket` by knotc's transaction: serial 2026112201 to 2026112202, as nearcast makes it.
    static func changeWwwInKnot(socket: String) throws {
        let knotc = try TestSupport.tool("knotc")
        for command in [
            ["zone-begin", "example.test."], ["zone-unset", "example.test.", "www", "A"],
            ["zone-set", "example.test.", "www", "300", "A", "192.0.2.31"], ["zone-commit", "example.test."],
        ] {
            let out = try TestSupport.run(knotc, ["-s", socket] + command)
            #expect(out.status == 0, "\(command): \(out.stdout)\(out.stderr)")
        }
    }

    /// The records of kdig's output, TSIG records and comments left out, sorted.
    static func records(_ output: String) -> [String] {
        output.split(separator: "\n").map {
            $0.split(whereSeparator: { $0 == " " || $0 == "\t" }).joined(separator: " ")
        }
        .filter { !$0.isEmpty && !$0.hasPrefix(";") && !$0.contains(" TSIG ") }.sorted()
    }

    /// An AXFR signed with the zone's key carries every record of the zone, SOA first and last,
    /// in many messages, each signed (kdig verifies them all); Knot, serving the same file and
    /// asked the same, sends the same records.
    @Test func axfrCarriesTheZoneAsKnotDoesEveryMessageSigned() throws {
        let dir = try TemporaryDirectory("nearcast-axfr")
        let daemon = try Self.start(in: dir)
        defer { daemon.stop() }
        let out = try Self.kdig(daemon, Self.kdigKey + ["example.test.", "AXFR"])
        #expect(out.status == 0, "\(out.stderr)")
        #expect(!out.stdout.contains(";; ERROR") && !out.stdout.contains(";; WARNING"), "\(out.stdout)\(out.stderr)")
        let summary = try #require(out.stdout.split(separator: "\n").first { $0.hasPrefix(";; Received") })
        let messages = try #require(Int(summary.split(separator: "(")[1].split(separator: " ")[0]))
        #expect(messages > 3, "\(summary)")
        // Every message signed: one TSIG record per message.
        #expect(out.stdout.components(separatedBy: "\tTSIG\t").count - 1 == messages, "\(summary)")
        let lines = out.stdout.split(separator: "\n").filter {
            !$0.hasPrefix(";") && !$0.isEmpty && !$0.contains("TSIG")
        }
        #expect(lines.first?.contains("\tSOA\t") == true && lines.last?.contains("\tSOA\t") == true)

        let (knot, port, _) = try Self.knotPrimary(
            file: URL(fileURLWithPath: dir.file("z.zone")), label: "nearcast-axfr-knot")
        defer { knot.stop() }
        let kdig = try TestSupport.tool("kdig")
        var theirs = ""
        try knot.waitUntilReady {
            let o = try? TestSupport.run(kdig, ["@127.0.0.1", "-p", "\(port)", "example.test.", "AXFR"])
            theirs = o?.status == 0 ? o!.stdout : ""
            return theirs.contains(";; Received")
        }
        let ours = Self.records(out.stdout)
        #expect(ours.count == Self.records(theirs).count)
        #expect(ours == Self.records(theirs))
    }

    /// Who may transfer: unsigned from 127.0.0.1 (whose rule asks for the key) and anything from
    /// 127.0.0.3 are REFUSED, a wrong secret is BADSIG, a name that is not a zone's apex is
    /// NOTAUTH; 127.0.0.2 (allowed without a key) gets the zone.
    @Test func onlyTheRulesOfTheZoneAreLetIn() throws {
        let dir = try TemporaryDirectory("nearcast-axfr-acl")
        let daemon = try Self.start(in: dir)
        defer { daemon.stop() }
        let unsigned = try Self.kdig(daemon, ["example.test.", "AXFR"])
        #expect(unsigned.stdout.contains("REFUSED") || unsigned.stderr.contains("REFUSED"), "\(unsigned.stdout)")
        let other = try Self.kdig(daemon, ["-b", "127.0.0.3", "example.test.", "AXFR"])
        #expect(other.stdout.contains("REFUSED") || other.stderr.contains("REFUSED"), "\(other.stdout)")
        let wrong = try Self.kdig(
            daemon, ["-y", "hmac-sha256:\(Self.keyName):c2VjcmV0c2VjcmV0c2VjcmV0", "example.test.", "AXFR"])
        #expect(wrong.stdout.contains("BADSIG") || wrong.stderr.contains("BADSIG"), "\(wrong.stdout)")
        let notApex = try Self.kdig(daemon, Self.kdigKey + ["www.example.test.", "AXFR"])
        #expect(notApex.stdout.contains("NOTAUTH") || notApex.stderr.contains("NOTAUTH"), "\(notApex.stdout)")
        // More transfers one after another than may run at once: each gives its slot back.
        for _ in 0...TransferSlots().limit {
            let second = try Self.kdig(daemon, ["-b", "127.0.0.2", "example.test.", "AXFR"])
            #expect(second.status == 0 && Self.records(second.stdout).count > Self.generated, "\(second.stderr)")
        }
    }

    /// A query sent on the connection right behind an AXFR is answered after the transfer's last
    /// message, never in the middle of it (RFC 5936 §4.1.2: the messages of a transfer go
    /// together).
    @Test func aQueryBehindATransferIsAnsweredAfterIt() throws {
        let dir = try TemporaryDirectory("nearcast-axfr-pipelined")
        let daemon = try Self.start(in: dir)
        defer { daemon.stop() }
        let fd = try #require(RawClient.tcpConnect(port: daemon.dnsPort, timeout: 10))
        defer { close(fd) }
        let axfr = TransferInTests.key.sign(
            query: RawClient.query("example.test.", .axfr, id: 7), now: UInt64(Date().timeIntervalSince1970))
        let a = RawClient.query("www.example.test.", .a, id: 8)
        let both =
            [UInt8(axfr.count >> 8), UInt8(axfr.count & 0xFF)] + axfr + [UInt8(a.count >> 8), UInt8(a.count & 0xFF)] + a
        #expect(RawClient.tcpSend(fd, both))
        var ids: [UInt16] = []
        var soas = 0
        while soas < 2 || ids.last == 7 {
            let m = try DNSMessage(wire: try #require(RawClient.tcpReadMessage(fd)))
            ids.append(m.header.id)
            soas += m.header.id == 7 ? m.answers.filter { $0.type == .soa }.count : 0
            if ids.count > 100 { break }
        }
        #expect(ids.count > 3 && ids.dropLast().allSatisfy { $0 == 7 } && ids.last == 8, "\(ids)")
    }

    /// A change through the API is an IXFR (RFC 1995): from the serial before it, the new SOA,
    /// the old SOA and the record removed, the new SOA and the record added, the new SOA again;
    /// from the serial served, the SOA alone; from a serial the history does not reach, the
    /// whole zone.
    @Test func ixfrSendsTheChangesMadeThroughTheAPI() throws {
        let dir = try TemporaryDirectory("nearcast-ixfr")
        let daemon = try Self.start(in: dir)
        defer { daemon.stop() }
        let set = try daemon.cli(["record", "set", "example.test.", "www", "A", "192.0.2.31"], token: Self.writer)
        #expect(set.status == 0, "\(set.stderr)")
        let ixfr = try Self.kdig(daemon, Self.kdigKey + ["example.test.", "IXFR=2026112201"])
        #expect(ixfr.status == 0, "\(ixfr.stderr)")
        let lines = ixfr.stdout.split(separator: "\n").filter {
            !$0.hasPrefix(";") && !$0.isEmpty && !$0.contains("TSIG")
        }
        .map { $0.split(whereSeparator: { $0 == " " || $0 == "\t" }).joined(separator: " ") }
        let soa = "example.test. 300 IN SOA ns1.example.test. hostmaster.example.test."
        #expect(
            lines == [
                "\(soa) 2026112202 3600 600 1209600 60", "\(soa) 2026112201 3600 600 1209600 60",
                "www.example.test. 300 IN A 192.0.2.1", "www.example.test. 300 IN A 192.0.2.2",
                "\(soa) 2026112202 3600 600 1209600 60", "www.example.test. 300 IN A 192.0.2.31",
                "\(soa) 2026112202 3600 600 1209600 60",
            ], "\(ixfr.stdout)")
        let upToDate = try Self.kdig(daemon, Self.kdigKey + ["example.test.", "IXFR=2026112202"])
        #expect(Self.records(upToDate.stdout) == ["\(soa) 2026112202 3600 600 1209600 60"], "\(upToDate.stdout)")
        let older = try Self.kdig(daemon, Self.kdigKey + ["example.test.", "IXFR=2026112101"])
        #expect(Self.records(older.stdout).count > Self.generated, "\(older.stdout.prefix(500))")

        // Knot, serving the same file, given the same change (knotc's transaction), sends the same IXFR.
        let (knot, port, socket) = try Self.knotPrimary(
            file: URL(fileURLWithPath: dir.file("z.zone")), label: "nearcast-ixfr-knot")
        defer { knot.stop() }
        try Self.changeWwwInKnot(socket: socket)
        let kdig = try TestSupport.tool("kdig")
        let theirs = try TestSupport.run(kdig, ["@127.0.0.1", "-p", "\(port)", "example.test.", "IXFR=2026112201"])
        #expect(Self.sections(theirs.stdout) == Self.sections(ixfr.stdout), "\(theirs.stdout)")
    }

    /// A restart keeps the history its zone's journal holds (the changes since the last
    /// write-back): an IXFR from before a change made before the restart is still that change.
    @Test func aRestartKeepsTheJournaledHistory() throws {
        let dir = try TemporaryDirectory("nearcast-ixfr-restart")
        var daemon = try Self.start(in: dir, extra: "zonefile-sync: 3600")
        let set = try daemon.cli(["record", "set", "example.test.", "www", "A", "192.0.2.31"], token: Self.writer)
        #expect(set.status == 0, "\(set.stderr)")
        #expect(daemon.stop() == 0)
        daemon = try Self.start(in: dir, extra: "zonefile-sync: 3600")
        defer { daemon.stop() }
        let ixfr = try Self.kdig(daemon, Self.kdigKey + ["example.test.", "IXFR=2026112201"])
        let sections = Self.sections(ixfr.stdout)
        #expect(sections.count == 4, "\(ixfr.stdout.prefix(2000))")
        #expect(sections.last?.count == 1)
        #expect(sections.dropFirst(2).first?.contains("www.example.test. 300 IN A 192.0.2.31") == true)
    }

    /// An IXFR's records cut at each SOA (the sequences of RFC 1995 §4), each sorted: two servers
    /// may send a change's records in another order.
    static func sections(_ output: String) -> [[String]] {
        var out: [[String]] = []
        for line in output.split(separator: "\n") where !line.hasPrefix(";") && !line.isEmpty && !line.contains("TSIG")
        {
            let record = line.split(whereSeparator: { $0 == " " || $0 == "\t" }).joined(separator: " ")
            if record.contains(" IN SOA ") || out.isEmpty { out.append([]) }
            out[out.count - 1].append(record)
        }
        return out.map { $0.sorted() }
    }

    /// NSD and Knot, secondaries of nearcastd with the key, take the zone by AXFR and answer from
    /// it; a change through the API reaches both by NOTIFY (their SOA refresh is an hour away),
    /// and each takes it by IXFR.
    @Test func knotAndNSDAreSecondariesOfNearcastToldOfChangesByNotify() throws {
        let dir = try TemporaryDirectory("nearcast-secondaries")
        let (nsdPort, knotPort) = (try TestSupport.unusedPort(), try TestSupport.unusedPort())
        let daemon = try Self.start(in: dir, notify: [nsdPort, knotPort])
        defer { daemon.stop() }
        let dig = try TestSupport.tool("dig")
        func answers(_ port: Int, _ name: String) -> String {
            (try? TestSupport.run(dig, ["@127.0.0.1", "-p", "\(port)", name, "A", "+short", "+tries=1", "+time=1"]))?
                .stdout ?? ""
        }

        let nsdDir = try TemporaryDirectory.url("nearcast-nsd-secondary")
        let conf = try ReferenceServerDifferentialTests.nsdConfig(
            dir: nsdDir, port: nsdPort, origin: "example.test",
            file: nsdDir.appendingPathComponent("secondary.zone"),
            sections: "key:\n  name: \(Self.keyName)\n  algorithm: hmac-sha256\n  secret: \"\(Self.secret)\"",
            zoneOptions: """
                  request-xfr: 127.0.0.1@\(daemon.dnsPort) \(Self.keyName)
                  allow-notify: 127.0.0.1 \(Self.keyName)
                """)
        let nsd = try ServerProcess(try TestSupport.tool("nsd"), ["-d", "-c", conf.path])
        defer { nsd.stop() }
        try nsd.waitUntilReady(timeout: 30) { answers(nsdPort, "host3999.example.test.").contains("198.51.15.249") }
        #expect(answers(nsdPort, "www.example.test.").contains("192.0.2.1"))

        let knotDir = try TemporaryDirectory.url("nearcast-knot-secondary")
        let knot = try ReferenceServerDifferentialTests.startKnot(
            dir: knotDir, port: knotPort, origin: "example.test",
            file: knotDir.appendingPathComponent("secondary.zone"),
            sections: Self.knotKey + """

                remote:
                  - id: primary
                    address: 127.0.0.1@\(daemon.dnsPort)
                    key: \(Self.keyName)
                acl:
                  - id: notify
                    address: 127.0.0.1
                    key: \(Self.keyName)
                    action: notify
                """,
            zoneOptions: "    master: primary\n    acl: notify")
        defer { knot.stop() }
        try knot.waitUntilReady(timeout: 30) { answers(knotPort, "host3999.example.test.").contains("198.51.15.249") }

        let set = try daemon.cli(["record", "set", "example.test.", "www", "A", "192.0.2.31"], token: Self.writer)
        #expect(set.status == 0, "\(set.stderr)")
        try knot.waitUntilReady(timeout: 30) { answers(knotPort, "www.example.test.") == "192.0.2.31\n" }
        try nsd.waitUntilReady(timeout: 30) { answers(nsdPort, "www.example.test.") == "192.0.2.31\n" }
        try daemon.waitUntilReady(timeout: 10) {
            daemon.log.components(separatedBy: "NOTIFY answered").count - 1 >= 2
                && daemon.log.components(separatedBy: "type=IXFR").count - 1 >= 2
        }
    }
}
