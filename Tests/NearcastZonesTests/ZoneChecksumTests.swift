import DNSWire
import Testing

@testable import NearcastZones

/// A zone's checksum, which servers of a fleet are compared by (`nearcast status`) and an import
/// is checked by: a function of the records alone.
@Suite(.timeLimit(.minutes(1))) struct ZoneChecksumTests {
    static let origin = try! DNSName("example.net.")
    static let text = """
        $TTL 300
        @ IN SOA ns1 hostmaster 7 3600 900 604800 60
        @ IN NS ns1
        ns1 IN A 192.0.2.53
        www IN A 192.0.2.1
        www IN A 192.0.2.2
        www IN AAAA 2001:db8::1
        mail IN MX 10 mx.example.org.
        txt IN TXT "one" "two"
        """

    @Test func theSameRecordsInAnotherOrderAndCaseGiveTheSameChecksum() throws {
        let zone = try Zone.parsed(Self.text, origin: Self.origin)
        let shuffled = """
            $TTL 300
            TXT IN TXT "one" "two"
            WWW IN AAAA 2001:db8::1
            www IN A 192.0.2.2
            Www IN A 192.0.2.1
            mail IN MX 10 mx.example.org.
            ns1 IN A 192.0.2.53
            @ IN NS ns1
            @ IN SOA ns1 hostmaster 7 3600 900 604800 60
            """
        #expect(try Zone.parsed(shuffled, origin: Self.origin).checksum == zone.checksum)
        #expect(zone.checksum.count == 16)
        // Written out and read back, as a zone file written back is.
        #expect(try Zone.parsed(ZoneText.render(zone), origin: Self.origin).checksum == zone.checksum)
    }

    @Test func theSerialDoesNotCountAndAnyOtherDifferenceDoes() throws {
        let zone = try Zone.parsed(Self.text, origin: Self.origin)
        let serial = Self.text.replacingOccurrences(of: "hostmaster 7 ", with: "hostmaster 2026112701 ")
        #expect(try Zone.parsed(serial, origin: Self.origin).checksum == zone.checksum, "a fleet derives the serial")
        for (was, now) in [
            ("192.0.2.2", "192.0.2.3"), ("www IN AAAA", "www 301 IN AAAA"), ("\"two\"", "\"two\" \"three\""),
            ("hostmaster 7 3600", "hostmaster 7 7200"), ("mail IN MX 10", "mail IN MX 20"),
        ] {
            let changed = Self.text.replacingOccurrences(of: was, with: now)
            #expect(try Zone.parsed(changed, origin: Self.origin).checksum != zone.checksum, "\(was) -> \(now)")
        }
        let fewer = Self.text.replacingOccurrences(of: "www IN A 192.0.2.2\n", with: "")
        #expect(try Zone.parsed(fewer, origin: Self.origin).checksum != zone.checksum, "a record removed")
    }
}
