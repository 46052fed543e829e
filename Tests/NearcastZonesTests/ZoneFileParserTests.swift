import DNSWire
import Foundation
import NearcastTestSupport
import Testing

@testable import NearcastBasics
@testable import NearcastZones

@Suite(.timeLimit(.minutes(1))) struct ZoneFileParserTests {
    static let origin = try! DNSName("example.test.")

    static func parse(_ text: String, file: String = "z.zone") throws(DiagnosticsError) -> [ResourceRecord] {
        try ZoneFileParser.parse(text: text, fileName: file, origin: origin).map(\.record)
    }

    static func errors(_ text: String) -> [String] {
        do {
            _ = try parse(text)
            return []
        } catch { return error.diagnostics.map(\.description) }
    }

    @Test func readsEverySyntaxFeature() throws {
        let rrs = try Self.parse(
            ##"""
            $TTL 1h
            @   IN  SOA ns1 hostmaster.example.test. ( 1 ; serial
                        2h 30m 1w
                        60 )   ; a comment after parentheses
                NS  ns1          ; blank owner: the previous owner (@)
            ns1 300 IN A 192.0.2.1
            ns1 IN 300 AAAA 2001:db8::1     ; class and TTL in the other order
            txt TXT "a; not a comment" "quote\" and \\ and \065\066" plain
            $ORIGIN sub.example.test.
            x   A   192.0.2.2
            y.example.test. CNAME x
            raw TYPE65280 \# 3 abcdef
            hexa A \# 4 c0000203
            caa CAA 0 issue "ca.example.net"
            srv SRV 1 2 53 x
            mx MX 10 x.sub.example.test.
            ptr PTR @
            """##)
        #expect(rrs.count == 13)
        let soa = rrs[0]
        #expect(soa.ttl == 3600)
        guard case .soa(let s) = soa.rdata else {
            Issue.record("not SOA")
            return
        }
        #expect(s.refresh == 7200 && s.retry == 1800 && s.expire == 604800 && s.minimum == 60)
        #expect(s.mname.description == "ns1.example.test.")
        #expect(rrs[1].name.description == "example.test." && rrs[1].type == .ns)
        #expect(rrs[2].ttl == 300 && rrs[3].ttl == 300 && rrs[3].type == .aaaa)
        #expect(
            rrs[4].rdata
                == .txt([Array("a; not a comment".utf8), Array("quote\" and \\ and AB".utf8), Array("plain".utf8)]))
        #expect(rrs[5].name.description == "x.sub.example.test.")
        let xsub = try DNSName("x.sub.example.test.")
        #expect(rrs[6].name.description == "y.example.test." && rrs[6].rdata == .cname(xsub))
        #expect(rrs[7].type == RRType(65280) && rrs[7].rdata == .unknown([0xAB, 0xCD, 0xEF]))
        #expect(rrs[8].rdata == .a(IPv4Address(192, 0, 2, 3)))
        #expect(rrs[9].rdata == .caa(flags: 0, tag: Array("issue".utf8), value: Array("ca.example.net".utf8)))
        let sub = try DNSName("sub.example.test.")
        #expect(rrs[12].rdata == .ptr(sub))
        #expect(rrs.allSatisfy { $0.rrClass == .in })
    }

    @Test func includeReadsRelativeToTheIncludingFileAndRestoresOrigin() throws {
        let dir = try TemporaryDirectory.url("nearcast-include")
        try "inc A 192.0.2.9\n".write(to: dir.appendingPathComponent("part.zone"), atomically: true, encoding: .utf8)
        try "$TTL 60\n$INCLUDE part.zone other.test.\nafter A 192.0.2.8\n".write(
            to: dir.appendingPathComponent("main.zone"), atomically: true, encoding: .utf8)
        // $TTL does not carry into the included file (RFC 1035 §5.1 scopes it to the file), so the
        // included file's record has no TTL there: it must say where.
        #expect(throws: DiagnosticsError.self) {
            try ZoneFileParser.parse(path: dir.appendingPathComponent("main.zone").path, origin: Self.origin)
        }
        try "$TTL 30\ninc A 192.0.2.9\n".write(
            to: dir.appendingPathComponent("part.zone"), atomically: true, encoding: .utf8)
        let rrs = try ZoneFileParser.parse(path: dir.appendingPathComponent("main.zone").path, origin: Self.origin)
        #expect(rrs.map(\.record.name.description) == ["inc.other.test.", "after.example.test."])
        #expect(rrs[0].file.hasSuffix("part.zone") && rrs[0].line == 2)
        #expect(rrs[1].line == 3 && rrs[1].record.ttl == 60)
    }

    /// An owner written again on the next line is one name for both records (a name's records,
    /// one per line, share their owner), unless `$ORIGIN` changed between them.
    @Test func anOwnerRepeatedIsTheSameNameUnlessTheOriginChanged() throws {
        let rrs = try Self.parse(
            "$TTL 60\nx A 192.0.2.1\nx AAAA 2001:db8::1\n$ORIGIN sub.example.test.\nx A 192.0.2.2\n")
        #expect(rrs.map(\.name.description) == ["x.example.test.", "x.example.test.", "x.sub.example.test."])
    }

    /// Types and classes are read from the token's bytes, in any case (RFC 1035 §5.1 leaves case
    /// to the reader; BIND, NSD and Knot take both); a token that is neither is the next field.
    @Test func typeAndClassMnemonicsInAnyCase() throws {
        let rrs = try Self.parse(
            """
            $TTL 60
            a in aaaa 2001:db8::1
            b In Mx 10 a
            c class1 60 Cname a
            d nsec3param 1 0 0 -
            e type65280 \\# 1 ab
            f sshFP 1 1 0123456789abcdef
            """)
        #expect(rrs.map(\.type) == [.aaaa, .mx, .cname, RRType(51), RRType(65280), RRType(44)])
        #expect(Self.errors("$TTL 60\na AAAAA 2001:db8::1\n").first?.contains("unknown type 'AAAAA'") == true)
        #expect(Self.errors("$TTL 60\na any A 192.0.2.1\n").first?.contains("class ANY is not served") == true)
        #expect(Self.errors("$TTL 60\na hs A 192.0.2.1\n").first?.contains("class HS is not served") == true)
        #expect(Self.errors("$TTL 60\na CLASS3 A 192.0.2.1\n").first?.contains("class CH is not served") == true)
    }

    @Test(arguments: [
        ("a A 192.0.2.1\n", "z.zone:1: record for a.example.test. has no TTL and no $TTL came before it"),
        ("$TTL 60\na A 192.0.2.300\n", "z.zone:2: A record for a.example.test.: '192.0.2.300' is not an IPv4 address"),
        ("$TTL 60\na AAAA 1::2::3\n", "z.zone:2: AAAA record for a.example.test.: '1::2::3' is not an IPv6 address"),
        ("$TTL 60\na FOO x\n", "z.zone:2: unknown type 'FOO'"),
        ("$TTL 60\na CH A 192.0.2.1\n", "z.zone:2: class CH is not served (only IN)"),
        (
            "$TTL 60\na MX 70000 b\n",
            "z.zone:2: MX record for a.example.test.: preference '70000' is not a number 0-65535"
        ),
        (
            "$TTL 60\na MX 10\n",
            "z.zone:2: MX record for a.example.test.: expected preference and exchange, got 1 field"
        ),
        (
            "$TTL 60\na SOA a b 1 2 3 4\n",
            "z.zone:2: SOA record for a.example.test.: expected mname rname serial refresh retry expire minimum, got 6 fields"
        ),
        ("$TTL 60\na TXT \"unterminated\n", "z.zone:2: quoted string is not closed on its line"),
        ("$TTL 60\na A ( 192.0.2.1\n", "z.zone:2: '(' is never closed"),
        ("$TTL 60\na A 192.0.2.1 )\n", "z.zone:2: ')' without a matching '('"),
        ("$TTL 60\n$GENERATE 1-2 a$ A 1.2.3.$\n", "z.zone:2: unsupported directive $GENERATE"),
        ("$TTL 60\n  A 192.0.2.1\n", "z.zone:2: record has no owner name"),
        (
            "$TTL 60\na TYPE65280 \\# 2 ab\n",
            "z.zone:2: TYPE65280 record for a.example.test.: \\# says 2 bytes but 1 are given"
        ),
        ("$TTL 60\na A \\# 3 abcdef\n", "z.zone:2: A record for a.example.test.: \\# data is not valid A RDATA"),
        ("$TTL 60\na TYPE65280 \\# 1 +f\n", "z.zone:2: TYPE65280 record for a.example.test.: \\# data '+f' is not hex"),
        (
            "$TTL 60\na TYPE260 1 2\n",
            "z.zone:2: TYPE260 record for a.example.test.: type TYPE260 must be written in the generic form"
        ),
        ("$TTL 60\n" + String(repeating: "a", count: 64) + " A 192.0.2.1\n", "z.zone:2: owner 'aaaa"),
        ("$TTL 99999999999\n", "z.zone:1: $TTL takes one TTL"),
        (
            "$TTL 60\na CAA 0 is-sue \"x\"\n",
            "z.zone:2: CAA record for a.example.test.: tag 'is-sue' must be 1-255 letters and digits"
        ),
        ("$TTL 60\na AXFR 1\n", "z.zone:2: AXFR is a meta type and cannot be stored in a zone"),
        ("$TTL 60\n$INCLUDE missing.zone\n", "z.zone:2: $INCLUDE file 'missing.zone' does not exist"),
    ])
    func reportsFileLineAndReason(text: String, expected: String) {
        let errs = Self.errors(text)
        #expect(errs.contains { $0.hasPrefix(expected) }, "\(errs)")
    }

    @Test func reportsEveryErrorNotOnlyTheFirst() {
        let errs = Self.errors("$TTL 60\na A 1.2.3\nb A 192.0.2.1\nc AAAA zz\n")
        #expect(errs.count == 2)
        #expect(errs[0].hasPrefix("z.zone:2:") && errs[1].hasPrefix("z.zone:4:"))
    }
}

/// A large file is read in parts on every core (`ZoneFileParser.parseInParts`): the records and
/// the errors must be one reading's, or the file is read whole.
@Suite(.timeLimit(.minutes(1))) struct ZoneFileInPartsTests {
    static let origin = try! DNSName("example.test.")

    /// A zone of `names` names with every kind of entry: a multi-line SOA, blank owners, quoted
    /// strings with escapes and semicolons, comments, TTLs and classes in either order.
    static func text(names: Int, head: String = "$ORIGIN example.test.\n$TTL 300\n", broken: Set<Int> = [])
        -> String
    {
        var t = head + "@ SOA ns1 hostmaster ( 1 ; serial\n 3600 600\n 1209600 60 )\n NS ns1\nns1 A 192.0.2.53\n"
        for i in 0..<names {
            t += broken.contains(i) ? "n\(i) A 10.0.\(i)\n" : "n\(i) A 10.0.\(i / 256 % 256).\(i % 256)\n"
            if i % 3 == 0 { t += " 60 IN AAAA 2001:db8::\(String(i, radix: 16))\n" }
            if i % 7 == 0 { t += "n\(i) TXT \"a; \\\"b\\\" (c)\" plain\\ word ; comment\n; a line of comment\n\n" }
        }
        return t
    }

    /// One reading's records, or its errors.
    static func whole(_ text: String) -> Result<[SourcedRecord], DiagnosticsError> {
        Result { () throws(DiagnosticsError) in
            try ZoneFileParser.parse(text: text, fileName: "big.zone", origin: origin)
        }
    }

    static func inParts(_ text: String, _ parts: Int) -> ([[SourcedRecord]], [Diagnostic])? {
        ZoneFileParser.parseInParts(Array(text.utf8), fileName: "big.zone", origin: origin, parts: parts)
    }

    @Test(arguments: [2, 3, 7])
    func aFileReadInPartsHasTheRecordsOfOneReading(parts: Int) throws {
        let text = Self.text(names: 3000)
        let read = try #require(Self.inParts(text, parts))
        #expect(read.1.isEmpty)
        #expect(Array(read.0.joined()) == (try Self.whole(text).get()))
        #expect(read.0.count == parts)
        // A, AAAA at every third, TXT at every seventh, and SOA, NS and ns1's A.
        let count = read.0.reduce(0) { $0 + $1.count }
        #expect(count == 3000 + 1000 + 429 + 3)
    }

    @Test func aFileReadInPartsReportsTheErrorsOfOneReadingInItsOrder() throws {
        let text = Self.text(names: 3000, broken: [5, 1500, 2999]) + "tail A 192.0.2.1 )\n"
        guard case .failure(let expected) = Self.whole(text) else {
            Issue.record("the text has errors")
            return
        }
        let read = try #require(Self.inParts(text, 3))
        #expect(read.1.map(\.description) == expected.diagnostics.map(\.description))
        #expect(read.1.count == 4)
    }

    /// Where a part would not read as the whole file does, the file is read whole (nil).
    @Test(arguments: [
        // No $TTL before the records: a part would need the last TTL before it.
        "$ORIGIN example.test.\n",
        // A $TTL or an $ORIGIN later in the file: the parts after it begin otherwise.
        "$TTL 300\nearly A 192.0.2.1\n",
    ])
    func partsThatCannotReadAsOneAreNotRead(head: String) {
        var text = Self.text(names: head.hasPrefix("$TTL") ? 200 : 2000, head: head)
        if head.hasPrefix("$TTL") { text += "$TTL 60\nlate A 192.0.2.2\n" + Self.text(names: 2000, head: "") }
        #expect(Self.inParts(text, 2) == nil)
    }

    @Test func aPartThatWouldBeginInsideParenthesesMakesTheFileReadWhole() throws {
        // Parentheses over the middle of the file, each line of them beginning with a word.
        let lines = (0..<4000).map { "\"line \($0)\"" }.joined(separator: "\n")
        let text = "$TTL 60\n@ SOA ns1 h 1 2 3 4 5\n NS ns1\nns1 A 192.0.2.1\nbig TXT (\n" + lines + "\n)\n"
        #expect(Self.inParts(text, 2) == nil)
        #expect(try Self.whole(text).get().last?.record.type == .txt)
    }

    @Test func anIncludeInALaterPartIsReadWhereItStands() throws {
        let dir = try TemporaryDirectory.url("nearcast-parts")
        try "$TTL 30\ninc A 192.0.2.9\n".write(
            to: dir.appendingPathComponent("part.zone"), atomically: true, encoding: .utf8)
        let main = dir.appendingPathComponent("big.zone").path
        let text = Self.text(names: 2000) + "$INCLUDE part.zone other.test.\nafter A 192.0.2.8\n"
        let read = try #require(
            ZoneFileParser.parseInParts(Array(text.utf8), fileName: main, origin: Self.origin, parts: 2))
        let whole = try ZoneFileParser.parse(text: text, fileName: main, origin: Self.origin)
        #expect(Array(read.0.joined()) == whole)
        #expect(read.0.last!.suffix(2).map(\.record.name.description) == ["inc.other.test.", "after.example.test."])
    }
}

@Suite(.timeLimit(.minutes(1))) struct ZoneCheckTests {
    /// The problems of a zone of `body` under a good apex, its names gathered in `parts` shares.
    static func build(_ body: String, parts: Int = 1) -> [String] {
        let text = "$TTL 300\n@ SOA ns1 h 1 2 3 4 60\n@ NS ns1\nns1 A 192.0.2.1\n" + body
        do {
            let rrs = try ZoneFileParser.parse(text: text, fileName: "z.zone", origin: ZoneFileParserTests.origin)
            _ = try Zone.build(origin: ZoneFileParserTests.origin, records: rrs, sourceName: "z.zone", parts: parts)
            return []
        } catch { return error.diagnostics.map(\.description) }
    }

    @Test func aGoodZoneBuilds() { #expect(Self.build("www A 192.0.2.2\n") == []) }

    @Test(arguments: [
        ("www.other.test. A 192.0.2.2\n", "z.zone:5: www.other.test. is outside the zone example.test."),
        (
            "www CNAME ns1\nwww A 192.0.2.2\n",
            "z.zone:5: www.example.test. has a CNAME and other data (A); a CNAME must be alone"
        ),
        ("www CNAME ns1\nwww CNAME ns2\n", "z.zone:5: www.example.test. has 2 CNAME records; at most one is allowed"),
        ("d DNAME a.test.\nd DNAME b.test.\n", "z.zone:5: d.example.test. has 2 DNAME records; at most one is allowed"),
        ("d DNAME a.test.\nd CNAME ns1\n", "z.zone:6: d.example.test. has a CNAME and other data (DNAME)"),
        (
            "d DNAME a.test.\nx.y.d TXT hi\n",
            "z.zone:6: x.y.d.example.test. TXT is below the DNAME at d.example.test. and would never be served"
        ),
        (
            "@ DNAME a.test.\nwww A 192.0.2.2\n",
            "z.zone:6: www.example.test. A is below the DNAME at example.test. and would never be served"
        ),
        (
            "www 60 A 192.0.2.2\nwww 120 A 192.0.2.3\n",
            "z.zone:6: TTL 120 differs from TTL 60 of the same RRset www.example.test. A at z.zone:5"
        ),
        (
            "sub NS ns.sub\n",
            "z.zone:5: delegation sub.example.test. names server ns.sub.example.test. inside the delegated zone but has no glue"
        ),
        (
            "sub NS ns.other.test.\nwww.sub TXT hi\n",
            "z.zone:6: www.sub.example.test. TXT is below the delegation sub.example.test."
        ),
        (
            "sub NS ns.other.test.\nsub MX 1 x\n",
            "z.zone:6: sub.example.test. MX: only NS, DS, glue, NSEC and RRSIG may be at the delegation point"
        ),
        ("x SOA ns1 h 1 2 3 4 5\n", "z.zone:5: SOA record at x.example.test., which is not the zone apex"),
        ("@ SOA ns1 h 2 2 3 4 60\n", "z.zone:2: zone example.test. has 2 SOA records; it needs exactly one"),
        ("@ CNAME www\n", "z.zone:5: example.test. has a CNAME and other data (NS, SOA)"),
    ])
    func rejectsBrokenZones(body: String, expected: String) {
        // One share, and three: a large zone's names are gathered on several threads.
        for parts in [1, 3] {
            let errs = Self.build(body, parts: parts)
            #expect(errs.contains { $0.hasPrefix(expected) }, "\(parts) shares: \(errs)")
        }
    }

    /// A large zone is built on several threads, each gathering the names of its share of the
    /// trie's root: the zone must be the one a single thread builds, counts of what lies below
    /// each name and empty non-terminals included, whichever share a name's ancestors fall in.
    @Test func aZoneBuiltOnSeveralThreadsIsTheZoneOneThreadBuilds() throws {
        var text = "$TTL 300\n@ SOA ns1 h 1 2 3 4 60\n@ NS ns1\nns1 A 192.0.2.1\n"
        for i in 0..<300 {
            text += "h\(i) A 192.0.2.\(i % 250)\nh\(i) MX 10 mail\(i % 7)\n"
            text += "a.b\(i % 40).deep TXT \"\(i)\"\nx\(i).b\(i % 40).deep AAAA 2001:db8::\(i)\n"
            if i % 50 == 0 { text += "d\(i) NS ns.d\(i)\nns.d\(i) A 192.0.2.9\nc\(i) CNAME h\(i)\n" }
        }
        text += "h7 TXT again\n"  // an owner listed a second time, apart from its first records
        let rrs = try ZoneFileParser.parse(text: text, fileName: "z.zone", origin: ZoneFileParserTests.origin)
        let one = try Zone.build(origin: ZoneFileParserTests.origin, records: rrs, sourceName: "z.zone", parts: 1)
        for parts in [2, 3, 8] {
            let many = try Zone.build(
                origin: ZoneFileParserTests.origin, records: rrs, sourceName: "z.zone", parts: parts)
            #expect(many.tree == one.tree, "\(parts) shares")
            #expect(many.referrers == one.referrers && many.cuts == one.cuts && many.servers == one.servers)
            #expect(many.recordCount == one.recordCount)
            // Read in file parts too (an owner's records cut in two at the first cut).
            let cuts = [0, 4, rrs.count / 3, rrs.count * 2 / 3, rrs.count]
            let fileParts = zip(cuts, cuts.dropFirst()).map { Array(rrs[$0..<$1]) }
            let fromParts = try Zone.build(
                origin: ZoneFileParserTests.origin, parts: fileParts, sourceName: "z.zone", shares: parts)
            #expect(fromParts.tree == one.tree && fromParts.referrers == one.referrers, "\(parts) shares, parts")
            #expect(fromParts.recordCount == one.recordCount)
        }
        #expect(one.tree[try DNSName("deep.example.test.")]?.ownersBelow == 340)  // 40 a.bN and 300 xN.bN
        #expect(one.tree[try DNSName("b3.deep.example.test.")]?.sets == [])  // an empty non-terminal
        #expect(one.rrset(try DNSName("h7.example.test."), .txt) != nil)
    }

    /// A file read in parts is built from its parts as they are (`Zone.build(origin:parts:)`):
    /// the zone, and the messages naming records by file and line, are those of the parts joined,
    /// an owner's records cut in two by a part's end included.
    @Test(arguments: [[1], [5, 6], [3, 9, 9, 14]])
    func aZoneBuiltFromPartsIsTheZoneOfThemJoined(cuts: [Int]) throws {
        func parts(_ rrs: [SourcedRecord]) -> [[SourcedRecord]] {
            zip([0] + cuts, cuts + [rrs.count]).map { Array(rrs[$0..<$1]) }
        }
        let good =
            "$TTL 300\n@ SOA ns1 h 1 2 3 4 60\n@ NS ns1\nns1 A 192.0.2.1\n"
            + "a A 192.0.2.2\na AAAA 2001:db8::2\na MX 10 b\nb A 192.0.2.3\nc CNAME a\n"
            + "d.e A 192.0.2.4\nd.e TXT x\nf NS ns.f\nns.f A 192.0.2.5\ng A 192.0.2.6\na TXT y\n"
        let rrs = try ZoneFileParser.parse(text: good, fileName: "z.zone", origin: ZoneFileParserTests.origin)
        let one = try Zone.build(origin: ZoneFileParserTests.origin, records: rrs, sourceName: "z.zone")
        let fromParts = try Zone.build(origin: ZoneFileParserTests.origin, parts: parts(rrs), sourceName: "z.zone")
        #expect(fromParts.tree == one.tree && fromParts.referrers == one.referrers && fromParts.cuts == one.cuts)
        #expect(fromParts.recordCount == one.recordCount)

        let bad = good + "out.example.net. A 192.0.2.7\na 60 AAAA 2001:db8::3\n"
        let badRRs = try ZoneFileParser.parse(text: bad, fileName: "z.zone", origin: ZoneFileParserTests.origin)
        func messages(_ build: () throws(DiagnosticsError) -> Zone) -> [String] {
            do {
                _ = try build()
                return []
            } catch { return error.diagnostics.map(\.description) }
        }
        let expected = messages { () throws(DiagnosticsError) in
            try Zone.build(origin: ZoneFileParserTests.origin, records: badRRs, sourceName: "z.zone")
        }
        #expect(expected.count == 2)
        #expect(
            messages { () throws(DiagnosticsError) in
                try Zone.build(origin: ZoneFileParserTests.origin, parts: parts(badRRs), sourceName: "z.zone")
            } == expected)
    }

    @Test func missingSOAAndNSAreNamed() throws {
        let rrs = try ZoneFileParser.parse(
            text: "$TTL 60\nwww A 192.0.2.1\n", fileName: "z.zone", origin: ZoneFileParserTests.origin)
        #expect(throws: DiagnosticsError.self) {
            try Zone.build(origin: ZoneFileParserTests.origin, records: rrs, sourceName: "z.zone")
        }
        do { _ = try Zone.build(origin: ZoneFileParserTests.origin, records: rrs, sourceName: "z.zone") } catch {
            #expect(
                error.diagnostics.map(\.description) == [
                    "z.zone: zone example.test. has no SOA record at its apex",
                    "z.zone: zone example.test. has no NS records at its apex",
                ])
        }
    }

    @Test func duplicateRecordsAreMergedNotRejected() throws {
        #expect(Self.build("www A 192.0.2.2\nwww A 192.0.2.2\n") == [])
    }
}
