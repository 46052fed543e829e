import DNSWire
import Foundation
import NearcastBasics
import NearcastTestSupport
import Testing

@testable import NearcastZones

/// Zones changed through the API: rendered back to text that reads the same, and every change
/// checked as a zone file is at start.
@Suite(.timeLimit(.minutes(1))) struct ZoneEditorTests {
    static let origin = try! DNSName("example.test.")
    static let extra = """
        caa      CAA   0 issue "ca.example; account=\\"x\\""
        bin      TXT   "a\\009b\\255\\"q\\\\"
        raw      TYPE65280 \\# 3 abcdef
        empty    TYPE65281 \\# 0
        ptr      PTR   host.other.test.
        """
    static let records = try! ZoneFileParser.parse(
        text: Fixtures.queryTableZone + "\n" + extra, fileName: "z.zone", origin: origin
    ).map(\.record)

    @Test func renderedZonesReadBackAsTheSameRecords() throws {
        let text = ZoneText.render(origin: Self.origin, records: Self.records)
        let back = try ZoneFileParser.parse(text: text, fileName: "rendered", origin: Self.origin).map(\.record)
        #expect(Set(back) == Set(Self.records) && back.count == Self.records.count, "\(text)")
        let lines = text.split(separator: "\n")
        #expect(lines[2].hasPrefix("$TTL ") && lines[3].contains(" SOA "), "a $TTL, then the SOA first")
    }

    /// A zone written back begins with a `$TTL`, so that a large one is read in parts on every
    /// core, as the same records read whole.
    @Test func aWrittenZoneIsReadInParts() throws {
        let text = Array(ZoneText.render(Self.zone).utf8)
        let (parts, errors) = try #require(
            ZoneFileParser.parseInParts(text, fileName: "rendered", origin: Self.origin, parts: 3))
        #expect(parts.count == 3 && errors.isEmpty)
        let whole = try ZoneFileParser.parse(
            text: String(decoding: text, as: UTF8.self), fileName: "rendered", origin: Self.origin)
        #expect(parts.joined().map(\.record) == whole.map(\.record))
    }

    @Test func aZoneIsWrittenInPiecesAsItRendersWhole() throws {
        var pieces: [[UInt8]] = []
        ZoneText.write(Self.zone, chunkSize: 100) { pieces.append($0) }
        let whole = Array(ZoneText.render(origin: Self.origin, records: Self.records).utf8)
        #expect(pieces.count > 5 && pieces.dropLast().allSatisfy { $0.count >= 100 && $0.count < 400 })
        #expect(pieces.flatMap { $0 } == whole, "the same text as the records rendered at once, in the same order")
        #expect(Array(ZoneText.render(Self.zone).utf8) == whole)
    }

    /// A write-back takes its owners in canonical order from their keys in one array
    /// (`ZoneText.CanonicalOrder`): the order of DNSName's `<` (RFC 4034 §6.1), letter case,
    /// escaped octets 0 and 1, and labels that begin others included.
    @Test func ownersAreWrittenInCanonicalOrder() throws {
        var names = try [
            "example.test.", "a.example.test.", "A.b.example.test.", "b.example.test.", "\\000.b.example.test.",
            "\\001.b.example.test.", "\\002.b.example.test.", "a\\000.example.test.", "a\\001.example.test.",
            "ab.example.test.", "aa.example.test.", "z.a.example.test.", "*.z.a.example.test.", "Z.example.test.",
            "y.example.test.", "\\255.example.test.", "yy.x.example.test.", "x.example.test.",
        ].map { try DNSName($0) }
        var rng = SplitMix(seed: 29)
        for _ in 0..<300 {
            let labels = (0..<Int.random(in: 1...4, using: &rng)).map { _ in
                String((0..<Int.random(in: 1...3, using: &rng)).map { _ in "aAbB0-".randomElement(using: &rng)! })
            }
            let name = try DNSName(labels.joined(separator: ".") + ".example.test.")
            if !names.contains(name) { names.append(name) }
        }
        names.shuffle(using: &rng)
        let order = ZoneText.CanonicalOrder(names)
        #expect(order.order.map { order.names[Int($0)] } == names.sorted())
    }

    @Test func aFailedPieceLeavesNoTemporaryFile() throws {
        let dir = try TemporaryDirectory("nearcast-write").path
        let path = dir + "/z.zone"
        #expect(throws: DurableFile.Failure.self) {
            _ = try DurableFile.prepare(path) {
                (write: ([UInt8]) throws(DurableFile.Failure) -> Void) throws(DurableFile.Failure) in
                try write(Array("first piece\n".utf8))
                errno = ENOSPC
                throw DurableFile.Failure("cannot write", path + ".tmp")
            }
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir).isEmpty)
        let tmp = try DurableFile.prepare(path) { write throws(DurableFile.Failure) in
            try ZoneText.write(Self.zone, chunkSize: 64, to: write)
        }
        try DurableFile.commit(tmp, onto: path)
        #expect(FileManager.default.contents(atPath: path) == Data(ZoneText.render(Self.zone).utf8))
    }

    static let zone = try! Zone.build(
        origin: origin, records: Self.records.map { SourcedRecord($0, file: "z.zone", line: 1) },
        sourceName: "z.zone")

    func apply(_ e: ZoneEditor.Edit) throws(ZoneEditError) -> (
        zone: Zone, change: RecordChange, changeset: ZoneChangeset
    ) {
        try ZoneEditor.apply(e, to: Self.zone, fileName: "z.zone")
    }

    @Test func addingARecordBumpsTheSerialAndTakesItsRRsetsTTL() throws {
        let r = try apply(.add(RecordInput(name: "www", type: "A", data: "192.0.2.3")))
        #expect(r.change.serial == 2_026_112_202 && r.change.changed == 1 && r.change.records == Self.records.count + 1)
        let www = try #require(r.zone.rrset(try DNSName("www.example.test."), .a))
        #expect(www.rdatas.count == 3 && www.ttl == 300)
        let n = try apply(.add(RecordInput(name: "new.example.test.", type: "txt", ttl: 60, data: "\"hello world\"")))
        #expect(n.zone.rrset(try DNSName("new.example.test."), .txt)?.ttl == 60)
        // A new TTL given for an RRset applies to all of it (one TTL per RRset).
        let t = try apply(.add(RecordInput(name: "www", type: "A", ttl: 30, data: "192.0.2.4")))
        #expect(t.zone.rrset(try DNSName("www.example.test."), .a)?.ttl == 30)
    }

    @Test func deletingTakesOneRecordOrTheRRset() throws {
        let one = try apply(.delete(name: "www", type: "A", data: "192.0.2.1"))
        let www = try DNSName("www.example.test.")
        #expect(one.change.changed == 1 && one.zone.rrset(www, .a)?.rdatas.count == 1)
        let all = try apply(.delete(name: "www.example.test.", type: "A", data: nil))
        #expect(all.change.changed == 2 && all.zone.rrset(www, .a) == nil)
        #expect(Self.zone.rrset(www, .a)?.rdatas.count == 2, "the zone changed is a new value; the old one stands")
    }

    /// A set replaces an RRset in one change: one serial, the old records removed and the new
    /// added in one journal block, so no query (and no replay) sees the name without its records.
    @Test func settingAnRRsetReplacesItInOneChange() throws {
        let www = try DNSName("www.example.test.")
        let r = try apply(.replace(name: "www", type: "A", RRSetInput(data: ["192.0.2.9", "192.0.2.8"])))
        #expect(r.change.serial == 2_026_112_202 && r.change.changed == 2)
        let set = try #require(r.zone.rrset(www, .a))
        #expect(
            set.ttl == 300 && set.rdatas.map { ZoneText.rdata($0, type: .a) } == ["192.0.2.9", "192.0.2.8"],
            "the RRset's TTL kept")
        #expect(
            r.changeset.removed.filter { $0.type == .a }.map(ZoneText.line).sorted() == [
                "www.example.test. 300 IN A 192.0.2.1", "www.example.test. 300 IN A 192.0.2.2",
            ])
        #expect(Set(try Self.zone.applying(r.changeset, source: "journal").records) == Set(r.zone.records))
        // A new name, with a TTL given; else the SOA's.
        let new = try apply(.replace(name: "new", type: "TXT", RRSetInput(ttl: 60, data: ["\"a\""])))
        #expect(new.zone.rrset(try DNSName("new.example.test."), .txt)?.ttl == 60 && new.change.changed == 1)
        // Refused, each naming why: nothing given, a record twice, the RRset already so, a CNAME beside data.
        func refused(_ e: ZoneEditor.Edit) -> String? {
            do {
                _ = try apply(e)
                return nil
            } catch { return "\(error)" }
        }
        #expect(refused(.replace(name: "www", type: "A", RRSetInput(data: [])))?.contains("no records given") == true)
        #expect(
            refused(.replace(name: "www", type: "A", RRSetInput(data: ["192.0.2.9", "192.0.2.9"])))?.contains(
                "'192.0.2.9' is given twice") == true)
        #expect(
            refused(.replace(name: "www", type: "A", RRSetInput(data: ["192.0.2.1", "192.0.2.2"])))?.contains(
                "already these") == true)
        #expect(refused(.replace(name: "www", type: "CNAME", RRSetInput(data: ["mail"]))) != nil)
        #expect(
            refused(.replace(name: "www", type: "NOPE", RRSetInput(data: ["x"])))?.contains("not a record type") == true
        )
    }

    @Test func aChangeIsJournaledAsTheRecordsItRemovesAndAdds() throws {
        let r = try apply(.add(RecordInput(name: "www", type: "A", ttl: 30, data: "192.0.2.4")))
        let c = r.changeset
        #expect(c.serialBefore == 2_026_112_201 && c.serialAfter == 2_026_112_202)
        // The TTL of the whole RRset changes: its records go out at 300 and come back at 30.
        #expect(
            c.removed.map(ZoneText.line).sorted() == [
                "example.test. 300 IN SOA ns1.example.test. hostmaster.example.test. 2026112201 3600 600 1209600 60",
                "www.example.test. 300 IN A 192.0.2.1", "www.example.test. 300 IN A 192.0.2.2",
            ])
        #expect(c.added.count == 4 && c.added.allSatisfy { $0.type == .soa || $0.ttl == 30 })
        let again = try Self.zone.applying(c, source: "journal")
        #expect(Set(again.records) == Set(r.zone.records), "the changeset replayed makes the same zone")
    }

    @Test func badChangesAreRefusedNamingWhatIsWrong() {
        func refused(_ e: ZoneEditor.Edit) -> String? {
            do {
                _ = try apply(e)
                return nil
            } catch { return "\(error)" }
        }
        #expect(
            refused(.add(RecordInput(name: "www", type: "A", data: "192.0.2.1")))?.hasSuffix("is already in the zone")
                == true)
        #expect(
            refused(.add(RecordInput(name: "www", type: "A", data: "300.1.1.1")))
                == "data: A record for www.example.test.: '300.1.1.1' is not an IPv4 address")
        #expect(
            refused(.add(RecordInput(name: "www", type: "BOGUS", data: "x"))) == "type: 'BOGUS' is not a record type")
        #expect(
            refused(.add(RecordInput(name: "www.other.test.", type: "A", data: "192.0.2.1")))
                == "name: www.other.test. is not inside the zone example.test.")
        #expect(refused(.add(RecordInput(name: "x", type: "TXT", data: "\"a\"\nx A 1.2.3.4"))) == "data: one line only")
        let cname = refused(.add(RecordInput(name: "www", type: "CNAME", data: "alias")))
        #expect(
            cname?.hasPrefix("the zone would not be valid, nothing was changed:") == true
                && cname?.contains("CNAME") == true, "\(cname ?? "")")
        #expect(refused(.delete(name: "nothere", type: "A", data: nil)) == "no A record at nothere.example.test.")
        #expect(refused(.delete(name: "@", type: "SOA", data: nil))?.contains("the zone would") == true)
    }
}
