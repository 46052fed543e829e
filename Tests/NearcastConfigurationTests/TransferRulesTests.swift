import DNSWire
import NearcastBasics
import NearcastTransfer
import Testing

@testable import NearcastConfiguration

/// A zone's `allow-transfer`: rules of an address prefix, a key, or both; a rule that does not
/// read, or names a key the tsig section does not declare, names its file and line.
@Suite(.timeLimit(.minutes(1))) struct TransferRulesTests {
    static func parse(_ rules: String) throws(DiagnosticsError) -> NearcastConfig {
        try NearcastConfig.parse(
            yaml: """
                listen: ["127.0.0.1:53"]
                zones:
                  - origin: example.net.
                    file: z.zone
                    allow-transfer: \(rules)
                tsig: { keys: [{ name: xfr.example., algorithm: hmac-sha256, secret: c2VjcmV0c2VjcmV0c2VjcmV0 }] }
                """, fileName: "c.yaml", baseDirectory: "")
    }

    @Test func rulesNameAPrefixAKeyOrBoth() throws {
        let rules = try Self.parse(#"["192.0.2.0/24", "key xfr.example", "2001:db8::1 key xfr.example."]"#).zones[0]
            .allowTransfer
        let key = try DNSName("xfr.example.")
        #expect(rules.map(\.description) == ["192.0.2.0/24", "key xfr.example.", "2001:db8::1/128 key xfr.example."])
        #expect(rules[0].allows(address: [192, 0, 2, 9], signer: nil))
        #expect(!rules[0].allows(address: [192, 0, 3, 9], signer: nil))
        #expect(
            rules[1].allows(address: [203, 0, 113, 1], signer: key)
                && !rules[1].allows(address: [1, 2, 3, 4], signer: nil))
        let v6 = AddressPrefix("2001:db8::1")!.address
        #expect(rules[2].allows(address: v6, signer: key) && !rules[2].allows(address: v6, signer: nil))
        // None: nobody.
        #expect(try Self.parse("[]").zones[0].allowTransfer.isEmpty)
    }

    @Test func aRuleThatDoesNotReadNamesItsLine() {
        for (rules, says) in [
            (#"["192.0.2.300"]"#, "'192.0.2.300' is not an address"),
            (#"["192.0.2.0/24 xfr.example."]"#, "expected PREFIX, 'key NAME' or 'PREFIX key NAME'"),
            (#"["key"]"#, "expected PREFIX"),
            (
                #"["key other.example."]"#,
                "names key other.example. (allow-transfer, notify, primaries, tsig), which the tsig section does not"
            ),
        ] {
            do {
                _ = try Self.parse(rules)
                Issue.record("\(rules) was taken")
            } catch {
                #expect(error.description.contains("c.yaml:") && error.description.contains(says), "\(error)")
                #expect(error.diagnostics.allSatisfy { $0.line > 0 }, "\(error)")
            }
        }
    }

    /// A zone's `notify`: secondaries by address, port (53 unless given) and key.
    @Test func notifyTargetsNameAnAddressAPortAndAKey() throws {
        let config = try NearcastConfig.parse(
            yaml: """
                listen: ["127.0.0.1:53"]
                zones:
                  - origin: example.net.
                    file: z.zone
                    notify: ["192.0.2.53", "192.0.2.54:5353 key xfr.example.", "[2001:db8::53]:53", "2001:db8::54"]
                tsig: { keys: [{ name: xfr.example., algorithm: hmac-sha256, secret: c2VjcmV0c2VjcmV0c2VjcmV0 }] }
                """, fileName: "c.yaml", baseDirectory: "")
        #expect(
            config.zones[0].notify.map(\.description) == [
                "192.0.2.53:53", "192.0.2.54:5353 key xfr.example.", "[2001:db8::53]:53", "[2001:db8::54]:53",
            ])
        for (target, says) in [
            ("192.0.2.300", "is not an IPv4 or IPv6 address"), ("192.0.2.53:0", "the port is not a number"),
            ("192.0.2.53 xfr.example.", "expected ADDRESS[:PORT]"),
        ] {
            do {
                _ = try NearcastConfig.parse(
                    yaml:
                        "listen: [\"127.0.0.1:53\"]\nzones:\n  - { origin: example.net., file: z.zone, notify: [\"\(target)\"] }\n",
                    fileName: "c.yaml", baseDirectory: "")
                Issue.record("\(target) was taken")
            } catch {
                #expect(error.description.contains("c.yaml:3") && error.description.contains(says), "\(error)")
            }
        }
    }

    /// A secondary zone: its primaries (the zone's `tsig` the key of those that name none), kept
    /// in the state directory unless it names a file; without either, or with a key the tsig
    /// section does not declare, the config names the zone's line.
    @Test func aSecondaryZoneNamesItsPrimariesAndIsKeptInTheStateDirectory() throws {
        let config = try NearcastConfig.parse(
            yaml: """
                state-dir: /var/lib/nearcast
                zones:
                  - origin: example.net
                    primaries: ["192.0.2.1", "192.0.2.2:5353 key other.example."]
                    tsig: xfr.example.
                tsig:
                  keys:
                    - { name: xfr.example., algorithm: hmac-sha256, secret: c2VjcmV0c2VjcmV0c2VjcmV0 }
                    - { name: other.example., algorithm: hmac-sha256, secret: c2VjcmV0c2VjcmV0c2VjcmV0 }
                """, fileName: "c.yaml", baseDirectory: "/etc/nearcast")
        let zone = config.zones[0]
        #expect(zone.isSecondary)
        #expect(
            zone.primaries.map(\.description) == ["192.0.2.1:53 key xfr.example.", "192.0.2.2:5353 key other.example."])
        #expect(zone.path == "/var/lib/nearcast/secondary/example.net.zone")
        for (yaml, says) in [
            ("zones: [{ origin: example.net., primaries: [\"192.0.2.1\"] }]", "set state-dir"),
            ("zones: [{ origin: example.net. }]", "is missing 'file' (or 'primaries'"),
            (
                "state-dir: s\nzones: [{ origin: example.net., primaries: [\"192.0.2.1\"], tsig: nokey. }]",
                "names key nokey."
            ),
        ] {
            do {
                _ = try NearcastConfig.parse(yaml: yaml, fileName: "c.yaml", baseDirectory: "")
                Issue.record("\(yaml) was taken")
            } catch {
                #expect(error.description.contains("c.yaml:") && error.description.contains(says), "\(error)")
            }
        }
    }
}
