import DNSWire
import Foundation
import NearcastBasics
import NearcastTestSupport
import Testing

@testable import NearcastDNSSEC

/// A key as a fleet's store keeps it: its private part opens only with the fleet's secret and
/// only at the store key it was sealed for; the secret's file is refused when others may read it.
@Suite(.timeLimit(.minutes(1))) struct SealedKeyTests {
    static let zone = try! DNSName("example.test.")
    static let at = "/nearcast/dnssec/example.test./013+12345"

    @Test func aSealedKeyOpensWithTheFleetsSecretAtItsOwnPlaceOnly() throws {
        var key = DNSSECKey.generate(zone: Self.zone, algorithm: .ecdsaP256SHA256, flags: DNSSECKey.zsk)
        key.timing = KeyTiming(publish: Date(timeIntervalSince1970: 1_800_000_000))
        let secret = FleetKeySecret.generate()
        let sealed = try SealedKey.seal(key, with: secret, at: Self.at)
        let kept = try #require(SealedKey(value: sealed.value))
        let opened = try kept.open(with: secret, at: Self.at, zone: Self.zone)
        #expect(opened.privateBytes == key.privateBytes && opened.flags == DNSSECKey.zsk)
        #expect(opened.timing == key.timing && opened.keyTag == key.keyTag)
        // Nothing of the private key is in the value.
        let base64 = Data(key.privateBytes).base64EncodedString()
        #expect(!String(decoding: sealed.value, as: UTF8.self).contains(base64))
        // Another fleet's secret, another place, a changed byte: none opens.
        #expect(kept.privateText(with: FleetKeySecret.generate(), at: Self.at) == nil)
        #expect(kept.privateText(with: secret, at: "/nearcast/dnssec/other.test./013+12345") == nil)
        var altered = kept
        var bytes = Array(Data(base64Encoded: altered.sealed)!)
        bytes[20] ^= 1
        altered.sealed = Data(bytes).base64EncodedString()
        #expect(altered.privateText(with: secret, at: Self.at) == nil)
        #expect(throws: DiagnosticsError.self) { try altered.open(with: secret, at: Self.at, zone: Self.zone) }
    }

    @Test func theSecretsFileMustBeTheOwnersAloneAndHoldThirtyTwoBytes() throws {
        let dir = try TemporaryDirectory("nearcast-fleet-secret")
        let good = FleetKeySecret.generate().text
        let path = try dir.write(good + "\n", to: "fleet.secret")
        chmod(path, 0o644)
        let open = #expect(throws: DiagnosticsError.self) { try FleetKeySecret.load(path: path) }
        #expect(open?.description.contains("chmod 600") == true, "\(String(describing: open))")
        chmod(path, 0o600)
        #expect(try FleetKeySecret.load(path: path).text == good)
        let short = try dir.write(Data(repeating: 7, count: 16).base64EncodedString(), to: "short.secret")
        chmod(short, 0o600)
        let refused = #expect(throws: DiagnosticsError.self) { try FleetKeySecret.load(path: short) }
        #expect(refused?.description.contains("32 bytes") == true)
        #expect(throws: DiagnosticsError.self) { try FleetKeySecret.load(path: dir.file("missing")) }
    }
}
