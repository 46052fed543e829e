import DNSWire
import Foundation
import NearcastTestSupport
import Testing

@testable import NearcastBasics
@testable import NearcastZones

/// Types served as they are, in presentation format (issue 17): each reads from the form other
/// servers' zone files use, is written back in that form, and means the same bytes to another
/// reader of zone files (ldns-read-zone) as to nearcast.
@Suite(.timeLimit(.minutes(1))) struct RDataLayoutTests {
    static let origin = try! DNSName("example.test.")
    static let zone = #"""
        $ORIGIN example.test.
        $TTL 300
        @       SOA   ns1 hostmaster 1 3600 600 1209600 60
        @       NS    ns1
        ns1     A     192.0.2.53
        host    HINFO "PC-Intel-700mhz" "Linux \"Debian\""
        host    RP    admin.example.test. txt
        host    AFSDB 1 afs.example.net.
        sip     NAPTR 100 10 "S" "SIP+D2U" "" _sip._udp
        enum    NAPTR 10 100 "u" "E2U+sip" "!^.*$!sip:info@example.test!" .
        @       DS    60485 5 1 2BB183AF5F22588179A53B0A98631FAD1A292118
        @       CDS   60485 5 1 2BB183AF5F22588179A53B0A 98631FAD1A292118
        host    SSHFP 4 2 123456789abcdef67890123456789abcdef67890123456789abcdef123456789
        @       DNSKEY 257 3 8 AwEAAag/ ZGVhZGJlZWY=
        @       CDNSKEY 256 3 8 AwEAAag=
        @       NSEC3PARAM 1 0 10 D2A4E1
        nosalt  NSEC3PARAM 1 0 0 -
        _443._tcp TLSA 3 1 1 0C72AC70B745AC19998811B131D662C9AC69DBDBE7CB23E5B514B56664C5D3D6
        mail    SMIMEA 3 1 1 0C72AC70B745AC19998811B131D662C9
        key     OPENPGPKEY mQENBFVHm5sBCACxwSVSdo4SnZgLd8x3kOSVr/8=
        @       ZONEMD 2018031500 1 1 FEBE3D4CE2EC2FFA4BA99D46CD69D6D29711E55217057BEE7EB1A7B641A47BA7FED2DD5B97AE499FAFA4F22C6BD647DE
        @       SPF   "v=spf1 -all" "second"
        _ftp._tcp URI 10 1 "ftp://ftp1.example.test/public"
        redirect DNAME other.example.
        host    CERT  PGP 0 0 mQENBFVHm5sBCACxwSVSdo4SnZgLd8x3kOSVr/8=
        host    RRSIG A 8 3 300 20261224000000 20261124000000 60485 example.test. aGVsbG8gd29ybGQ=
        host    NSEC  mail.example.test. A HINFO RRSIG NSEC TYPE1234
        2vptu5timamqttgl4luu9kg21e0aor3s NSEC3 1 1 12 AABBCCDD 2VPTU5TIMAMQTTGL4LUU9KG21E0AOR3S A RRSIG
        @       CSYNC 66 3 A NS AAAA
        host    LOC   52 22 23.000 N 4 53 32.000 E -2.00m 0.00m 10000m 10m
        gw      LOC   42 21 54 N 71 06 18 W -24m 30m
        pole    LOC   90 S 180 W 10.5m
        svc     SVCB  1 svc1.example.net. alpn="h2,h3" port=8443 ipv4hint=192.0.2.1,192.0.2.2 mandatory=alpn,port
        @       HTTPS 1 . alpn=h3 no-default-alpn ech=AEX+DQ== ipv6hint=2001:db8::1
        alias   HTTPS 0 svc.example.test.
        doh     SVCB  1 doh.example.net. alpn=h2 dohpath=/dns-query{?dns}
        key     SVCB  1 . key65333=hello key667="ab\,c"
        """#

    static func records(_ text: String, file: String = "z.zone") throws -> [ResourceRecord] {
        try ZoneFileParser.parse(text: text, fileName: file, origin: origin).map(\.record)
    }

    /// (owner, type) -> RDATA bytes of every record (one per pair in these zones).
    static func bytes(_ rrs: [ResourceRecord]) throws -> [String: [UInt8]] {
        var out: [String: [UInt8]] = [:]
        for r in rrs where r.type != .soa && r.type != .ns && r.type != .a {
            var w = WireWriter()
            try w.record(r)
            out["\(r.name.lowercased()) \(r.type)", default: []] += w.bytes
        }
        return out
    }

    @Test func everyTypeReadsAndIsWrittenBackTheSame() throws {
        let rrs = try Self.records(Self.zone)
        #expect(rrs.count == 35)
        let text = ZoneText.render(origin: Self.origin, records: rrs)
        #expect(!text.contains("\\#"), "every type in its own form: \(text)")
        #expect(text.contains("HINFO \"PC-Intel-700mhz\" \"Linux \\\"Debian\\\"\""), "\(text)")
        #expect(text.contains("DNAME other.example."))
        #expect(text.contains("NSEC3PARAM 1 0 0 -") && text.contains("URI 10 1 \"ftp://ftp1.example.test/public\""))
        #expect(text.contains("NAPTR 100 10 \"S\" \"SIP+D2U\" \"\" _sip._udp.example.test."), "\(text)")
        #expect(text.contains("RRSIG A 8 3 300 20261224000000 20261124000000 60485 example.test."), "\(text)")
        #expect(text.contains("NSEC mail.example.test. A HINFO RRSIG NSEC TYPE1234"), "\(text)")
        #expect(text.contains("NSEC3 1 1 12 AABBCCDD 2VPTU5TIMAMQTTGL4LUU9KG21E0AOR3S A RRSIG"), "\(text)")
        #expect(text.contains("CERT PGP 0 0 ") && text.contains("CSYNC 66 3 A NS AAAA"), "\(text)")
        #expect(text.contains("LOC 52 22 23.000 N 4 53 32.000 E -2m 0m 10000m 10m"), "\(text)")
        #expect(text.contains("LOC 42 21 54.000 N 71 6 18.000 W -24m 30m 10000m 10m"), "\(text)")
        #expect(
            text.contains(
                "SVCB 1 svc1.example.net. mandatory=alpn,port alpn=h2,h3 port=8443 ipv4hint=192.0.2.1,192.0.2.2"),
            "SvcParams sorted by key: \(text)")
        #expect(text.contains("HTTPS 1 . alpn=h3 no-default-alpn ech=AEX+DQ== ipv6hint=2001:db8::1"), "\(text)")
        #expect(text.contains("SVCB 1 . key667=ab,c key65333=hello"), "\(text)")
        let back = try Self.records(text, file: "rendered")
        #expect(Set(back) == Set(rrs) && back.count == rrs.count, "\(text)")
    }

    /// ldns reads the same zone file to the same RDATA: its canonical output, read by nearcast,
    /// gives the same wire bytes for every record.
    @Test func anotherReaderOfZoneFilesReadsTheSameBytes() throws {
        let dir = try TemporaryDirectory.url("nearcast-rdata")
        let file = dir.appendingPathComponent("z.zone")
        try Self.zone.write(to: file, atomically: true, encoding: .utf8)
        let ldns = try TestSupport.run(try TestSupport.tool("ldns-read-zone"), [file.path])
        #expect(ldns.status == 0, "\(ldns.stderr)")
        let theirs = try Self.bytes(try Self.records(ldns.stdout, file: "ldns"))
        let ours = try Self.bytes(try Self.records(Self.zone))
        #expect(theirs.count == ours.count, "\(ldns.stdout)")
        for (key, value) in ours { #expect(theirs[key] == value, "\(key): ldns read \(ldns.stdout)") }
    }

    /// RFC 3597 on types with a layout: the generic form is the same record, and must fit the fields.
    @Test func theGenericFormOfAKnownTypeIsThatType() throws {
        let generic = try Self.records("$TTL 60\na TLSA \\# 4 01020304\n")
        let plain = try Self.records("$TTL 60\na TLSA 1 2 3 04\n")
        #expect(generic == plain)
        #expect(ZoneText.line(generic[0]).hasSuffix("TLSA 1 2 3 04"))
        #expect(throws: DiagnosticsError.self) { try Self.records("$TTL 60\na TLSA \\# 3 010203\n") }
    }

    @Test(arguments: [
        ("$TTL 60\na SSHFP 1 2 XYZ\n", "SSHFP: fingerprint must be hexadecimal digits"),
        ("$TTL 60\na NAPTR 1 2 \"a\" \"b\" \"c\" . extra\n", "NAPTR: 1 field too many"),
        ("$TTL 60\na URI 10\n", "URI: weight is missing"),
        ("$TTL 60\na DS 70000 5 1 AB\n", "DS: key tag '70000' is not a number 0-65535"),
        ("$TTL 60\na DNSKEY 257 3 8 !!!\n", "DNSKEY: public key is not base64"),
        ("$TTL 60\na RRSIG A 8 3 300 20261340000000 20261124000000 1 a. AA==\n", "RRSIG: expiration '20261340000000'"),
        ("$TTL 60\na NSEC b. A BOGUS\n", "NSEC: 'BOGUS' in the type bitmap is not a type"),
        ("$TTL 60\na LOC 91 N 0 E 0m\n", "LOC: degrees '91' out of 0-90"),
        ("$TTL 60\na SVCB 1 . port=1 port=2\n", "SVCB: port appears twice"),
        ("$TTL 60\na HTTPS 1 . mandatory=port\n", "HTTPS: mandatory names port, which is not given"),
        ("$TTL 60\na HTTPS 1 . no-default-alpn=x\n", "HTTPS: no-default-alpn takes no value"),
        ("$TTL 60\na HTTPS 1 . colour=red\n", "HTTPS: 'colour' is not a SvcParam key"),
        ("$TTL 60\na NSEC3 1 0 1 - ZZZ A\n", "NSEC3: next hashed owner 'ZZZ' is not base32hex"),
    ])
    func badFieldsSayWhichAndWhy(text: String, expected: String) {
        do {
            _ = try Self.records(text)
            Issue.record("accepted: \(text)")
        } catch {
            let messages = (error as? DiagnosticsError)?.diagnostics.map(\.description) ?? ["\(error)"]
            #expect(messages.contains { $0.contains("z.zone:2:") && $0.contains(expected) }, "\(messages)")
        }
    }
}
