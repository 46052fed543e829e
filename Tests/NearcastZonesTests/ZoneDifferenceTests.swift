import DNSWire
import NearcastBasics
import Testing

@testable import NearcastZones

/// What a reload finds changed: a zone read again compared with the one served, RRset by RRset.
@Suite(.timeLimit(.minutes(1))) struct ZoneDifferenceTests {
    static let origin = try! DNSName("example.test.")
    static let text = """
        $TTL 300
        @        SOA   ns1 hostmaster 1 3600 600 86400 60
        @        NS    ns1
        ns1      A     192.0.2.1
        www      A     192.0.2.2
        www      A     192.0.2.3
        alias    CNAME www
        @        MX    10 mail
        mail     A     192.0.2.25
        a.b.c    TXT   "deep"
        """

    static func zone(_ text: String) throws -> Zone { try Zone.parsed(text, origin: origin) }

    /// The names and types `edited` differs in from `text`, as "name type" (a removed RRset as
    /// "name type gone"); and `changing` the served zone by them makes the zone read again.
    static func differences(_ edited: String) throws -> Set<String> {
        let (old, new) = (try zone(text), try zone(edited))
        let differences = new.differences(from: old)
        func described(_ d: [(name: DNSName, type: RRType, set: RRSet?)]) -> [String] {
            d.map { "\($0.name) \($0.type) \(String(describing: $0.set))" }
        }
        #expect(described(new.differences(from: old, parts: 3)) == described(differences), "on three threads")
        let applied = try old.changing(differences, source: "reload")
        #expect(applied.differences(from: new).isEmpty && new.differences(from: applied).isEmpty)
        #expect(applied.recordCount == new.recordCount && applied.existingNames == new.existingNames)
        return Set(differences.map { "\($0.name) \($0.type)" + ($0.set == nil ? " gone" : "") })
    }

    @Test func theSameZoneReadAgainDiffersInNothing() throws {
        #expect(try Self.differences(Self.text).isEmpty)
        // Records in another order within the file, an RRset's records in the same order.
        let lines = Self.text.split(separator: "\n")
        let shuffled =
            ([lines[0], lines[1]] + lines[2...].filter { !$0.hasPrefix("www") }.reversed()
            + lines.filter {
                $0.hasPrefix("www")
            }).joined(separator: "\n")
        #expect(try Self.differences(shuffled).isEmpty)
    }

    @Test func eachChangedRRsetIsFoundWhateverChangedInIt() throws {
        func edit(_ from: String, _ to: String) throws -> Set<String> {
            #expect(Self.text.contains(from))
            return try Self.differences(Self.text.replacingOccurrences(of: from, with: to))
        }
        #expect(try edit("www      A     192.0.2.3", "www      A     192.0.2.4") == ["www.example.test. A"])
        #expect(try edit("mail     A     192.0.2.25", "mail 60 A 192.0.2.25") == ["mail.example.test. A"], "a TTL")
        // The order of an RRset's records is the order the slow path sends them in.
        #expect(
            try edit("www      A     192.0.2.2\nwww      A     192.0.2.3", "www A 192.0.2.3\nwww A 192.0.2.2")
                == ["www.example.test. A"])
        // Letter case is sent as the zone has it, though names compare equal without it.
        #expect(try edit("alias    CNAME www", "alias CNAME WWW") == ["alias.example.test. CNAME"])
        #expect(try edit("alias    CNAME www", "ALIAS CNAME www") == ["ALIAS.example.test. CNAME"])
        #expect(try edit("@        MX    10 mail", "@ MX 10 Mail") == ["example.test. MX"])
        #expect(try edit("hostmaster 1 ", "hostmaster 2 ") == ["example.test. SOA"])
        // A name gone with the empty non-terminals above it, and one added below a new one.
        #expect(
            try edit("a.b.c    TXT   \"deep\"", "x.y A 192.0.2.9") == [
                "a.b.c.example.test. TXT gone", "x.y.example.test. A",
            ])
        // A type gone from a name that keeps another.
        #expect(
            try edit("www      A     192.0.2.3", "www AAAA 2001:db8::3") == [
                "www.example.test. A", "www.example.test. AAAA",
            ])
        #expect(
            try edit("www      A     192.0.2.2\nwww      A     192.0.2.3", "www AAAA 2001:db8::3") == [
                "www.example.test. A gone", "www.example.test. AAAA",
            ])
    }
}
