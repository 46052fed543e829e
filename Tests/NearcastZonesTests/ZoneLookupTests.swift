import DNSWire
import Testing

@testable import NearcastZones

/// Lookups the answer image makes of every name, in their fast forms: each says what `lookup`
/// answers wherever it gives an answer.
@Suite(.timeLimit(.minutes(1))) struct ZoneLookupTests {
    static let origin = try! DNSName("example.test.")
    /// Leaves, an empty non-terminal, a wildcard, a delegation with glue, a DNAME, a CNAME.
    static let text = """
        $TTL 300
        @          SOA   ns1 hostmaster 1 3600 600 86400 60
        @          NS    ns1
        ns1        A     192.0.2.1
        www        A     192.0.2.2
        a.b.c      TXT   "deep"
        *.wild     TXT   "any"
        x.wild     A     192.0.2.9
        sub        NS    ns.sub
        ns.sub     A     192.0.2.53
        d          DNAME elsewhere.test.
        alias      CNAME www
        """

    static func zone(_ text: String, origin: DNSName = origin) throws -> Zone {
        try Zone.parsed(text, origin: origin)
    }

    /// Whether `zone` answers `name` with its NXDOMAIN alone, as the slow path's lookup says.
    static func isPlainNXDOMAIN(_ zone: Zone, _ name: DNSName) -> Bool {
        let a = zone.lookup(name, .a)
        return a.rcode == .nxDomain && a.authoritative && a.answer.isEmpty && a.additional.isEmpty
            && a.authority == [zone.negativeSOA]
    }

    @Test func aNameWithNothingBelowItSaysWhatALookupBelowItAnswers() throws {
        let apexDNAME = try Self.zone(
            "$TTL 300\n@ SOA ns1.other.test. h 1 3600 600 86400 60\n@ NS ns1.other.test.\n@ DNAME other.test.\n",
            origin: try DNSName("moved.test."))
        var said: [DNSName: Bool] = [:]
        for zone in [try Self.zone(Self.text), apexDNAME] {
            for name in zone.existingNamesUnordered + [try DNSName("nope.example.test.")] {
                let probe = try name.prepending(Array("nc--nx-probe".utf8))
                guard let fast = zone.answersNXDOMAIN(below: name) else {
                    #expect(!zone.exists(name) || zone.tree[name]!.ownersBelow > 0, "\(name)")
                    continue
                }
                #expect(fast == Self.isPlainNXDOMAIN(zone, probe), "\(name)")
                said[name] = fast
            }
        }
        // Leaves answer NXDOMAIN below them; a name below a delegation and the DNAMEs (the
        // apex's too) do not; names with names below them are left to the lookup.
        let expected: [(String, Bool?)] = [
            ("www.example.test.", true), ("a.b.c.example.test.", true), ("x.wild.example.test.", true),
            ("ns.sub.example.test.", false), ("d.example.test.", false), ("moved.test.", false),
            ("example.test.", nil), ("wild.example.test.", nil), ("sub.example.test.", nil), ("c.example.test.", nil),
        ]
        for (name, answer) in expected { #expect(said[try DNSName(name)] == answer, "\(name)") }
    }

    /// The names walked in parts of the trie's order are every name that exists, in that order,
    /// each with what a lookup of it finds.
    @Test func theNamesWalkedInPartsAreTheNamesWithWhatTheirLookupsFind() throws {
        let zone = try Self.zone(Self.text)
        let n = zone.nameCount
        var walked: [DNSName] = []
        for k in 0..<3 {
            zone.forEachName(from: n * k / 3, to: n * (k + 1) / 3) { name, node in
                walked.append(name)
                let looked = zone.node(at: name)!
                #expect(node.sets == looked.sets && node.asTheyAre == looked.asTheyAre, "\(name)")
                #expect(node.answersNXDOMAINBelow == looked.answersNXDOMAINBelow, "\(name)")
                #expect(node.answersNODATA(.mx) == looked.answersNODATA(.mx), "\(name)")
            }
        }
        #expect(walked == zone.existingNamesUnordered && n > 10)
    }

    /// Whether `zone` answers `name` and `type` with its NODATA alone, as the slow path's lookup says.
    static func isPlainNODATA(_ zone: Zone, _ name: DNSName, _ type: RRType) -> Bool {
        let a = zone.lookup(name, type)
        return a.rcode == .noError && a.authoritative && a.answer.isEmpty && a.additional.isEmpty
            && a.authority == [zone.negativeSOA]
    }

    @Test func aNamesNodeSaysWhatATypeItLacksIsAnswered() throws {
        var said: [String: Bool] = [:]
        let zone = try Self.zone(Self.text)
        for name in zone.existingNamesUnordered + [try DNSName("nope.example.test.")] {
            for type in [RRType(65534), .a, .txt, .ds, .any, .mx] {
                guard let fast = zone.answersNODATA(name, type) else { continue }
                #expect(fast == Self.isPlainNODATA(zone, name, type), "\(name) \(type)")
                said["\(name) \(type)"] = fast
            }
        }
        // A name's own types, a CNAME's owner, ANY and names that do not exist are the lookup's.
        let expected: [(String, Bool?)] = [
            ("www.example.test. MX", true), ("c.example.test. TXT", true), ("example.test. TXT", true),
            ("d.example.test. TXT", true), ("sub.example.test. DS", true), ("sub.example.test. TXT", false),
            ("ns.sub.example.test. TXT", false), ("www.example.test. A", nil), ("alias.example.test. MX", nil),
            ("www.example.test. ANY", nil), ("nope.example.test. MX", nil),
        ]
        for (key, answer) in expected { #expect(said[key] == answer, "\(key)") }
    }
}
