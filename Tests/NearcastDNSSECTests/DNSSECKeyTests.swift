import Crypto
import DNSWire
import Foundation
import NearcastTestSupport
import Testing

@testable import NearcastDNSSEC

/// Signing keys as BIND and ldns keep them: a key ldns-keygen made reads back with its DNSKEY, tag
/// and DS as ldns computes them; a key nearcast made is one ldns signs a zone with, and the zone
/// verifies; the state directory keeps them private.
@Suite(.timeLimit(.minutes(1))) struct DNSSECKeyTests {
    static let zone = try! DNSName("example.test.")

    /// ldns-keygen's key files in `dir`: the base path.
    static func ldnsKey(_ algorithm: String, in dir: TemporaryDirectory) throws -> String {
        let out = try TestSupport.run(
            "/bin/sh",
            ["-c", "cd '\(dir.path)' && '\(try TestSupport.tool("ldns-keygen"))' -k -a \(algorithm) example.test"])
        let base = try #require(out.stdout.split(separator: "\n").first, "\(out.stderr)")
        return dir.file(String(base))
    }

    /// What ldns-key2ds prints for a `.key` file: the DS record's fields after the type.
    static func ldnsDS(_ keyFile: String) throws -> [String] {
        let out = try TestSupport.run(try TestSupport.tool("ldns-key2ds"), ["-n", "-2", keyFile])
        let fields = out.stdout.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" }).map(String.init)
        return Array(fields.drop { $0 != "DS" }.dropFirst()).map { $0.uppercased() }
    }

    @Test(arguments: ["ECDSAP256SHA256", "ED25519"]) func aKeyLdnsMadeReadsBackAsLdnsSeesIt(_ algorithm: String) throws
    {
        let dir = try TemporaryDirectory("nearcast-dnssec-key")
        let base = try Self.ldnsKey(algorithm, in: dir)
        let key = try DNSSECKeyFile.read(privateFile: base + ".private", zone: Self.zone)
        #expect(key.flags == 257 && key.algorithm.description == algorithm)
        let publicText = try String(contentsOfFile: base + ".key", encoding: .utf8)
        #expect(publicText.contains(Data(key.publicKey).base64EncodedString()), "\(publicText)")
        #expect(base.hasSuffix(String(format: "+%05d", Int(key.keyTag))), "the tag in ldns's file name")
        let ds = key.dsText.split(separator: " ").map(String.init)
        #expect(Array(ds.suffix(4)) == (try Self.ldnsDS(base + ".key")), "\(key.dsText)")
    }

    /// ldns and BIND write a P-256 scalar as a number, without leading zero bytes: a key whose
    /// scalar begins with one (one in 256 that ldns-keygen makes) has a 31-byte PrivateKey, and
    /// reads back as the same key, its DNSKEY and tag unchanged.
    @Test func aP256KeyWrittenWithoutItsLeadingZeroReadsBack() throws {
        var key = DNSSECKey.generate(zone: Self.zone, algorithm: .ecdsaP256SHA256)
        while key.privateBytes.first != 0 { key = DNSSECKey.generate(zone: Self.zone, algorithm: .ecdsaP256SHA256) }
        let full = DNSSECKeyFile.privateText(key)
        let short = full.replacingOccurrences(
            of: Data(key.privateBytes).base64EncodedString(),
            with: Data(key.privateBytes.dropFirst()).base64EncodedString())
        #expect(short != full)
        let read = try DNSSECKeyFile.parse(
            privateText: short, file: "K.private", publicText: nil, publicFile: "K.key", zone: Self.zone)
        #expect(read.publicKey == key.publicKey && read.keyTag == key.keyTag)
    }

    /// Our own key: its files are what ldns reads (ldns-key2ds gives our DS; ldns-signzone signs
    /// the fixture with it, and ldns-verify-zone checks every signature against our DNSKEY).
    @Test(arguments: DNSSECKey.Algorithm.allCases) func ldnsSignsWithAKeyNearcastMade(_ algorithm: DNSSECKey.Algorithm)
        throws
    {
        let dir = try TemporaryDirectory("nearcast-dnssec-own")
        let store = DNSSECKeyStore(stateDirectory: dir.file("state"))
        let key = DNSSECKey.generate(zone: Self.zone, algorithm: algorithm)
        let (privateFile, publicFile) = try store.add(key)
        #expect(Array(key.dsText.split(separator: " ").suffix(4).map(String.init)) == (try Self.ldnsDS(publicFile)))
        var st = stat()
        #expect(stat(privateFile, &st) == 0 && st.st_mode & 0o777 == 0o600, "the private key is its owner's alone")
        #expect(stat(store.directory(of: Self.zone), &st) == 0 && st.st_mode & 0o777 == 0o700)

        let source = try dir.write(
            try String(contentsOf: TestSupport.fixtures.appendingPathComponent("example.test.zone"), encoding: .utf8),
            to: "example.test.zone")
        let sign = try TestSupport.run(
            try TestSupport.tool("ldns-signzone"),
            ["-f", dir.file("signed.zone"), "-o", "example.test.", source, String(privateFile.dropLast(8))])
        #expect(sign.status == 0, "\(sign.stderr)")
        let verify = try TestSupport.run(try TestSupport.tool("ldns-verify-zone"), [dir.file("signed.zone")])
        #expect(verify.status == 0, "\(verify.stdout)\(verify.stderr)")
        #expect(
            try String(contentsOfFile: dir.file("signed.zone"), encoding: .utf8).contains(
                " \(key.keyTag) example.test."))

        // Read back from the state directory: the same key.
        let kept = try store.keys(of: Self.zone)
        #expect(kept.map(\.dnskeyRData) == [key.dnskeyRData] && kept[0].privateBytes == key.privateBytes)
        #expect(throws: (any Error).self) { try store.add(key) }
    }

    /// A signature made with the key verifies with its public key, and not over other data.
    @Test(arguments: DNSSECKey.Algorithm.allCases) func itsSignaturesVerify(_ algorithm: DNSSECKey.Algorithm) throws {
        let key = DNSSECKey.generate(zone: Self.zone, algorithm: algorithm, flags: DNSSECKey.zsk)
        let data = Array("the RRset's canonical form".utf8)
        let signature = try key.sign(data)
        #expect(signature.count == 64)
        switch algorithm {
        case .ecdsaP256SHA256:
            let pub = try P256.Signing.PublicKey(rawRepresentation: key.publicKey)
            let sig = try P256.Signing.ECDSASignature(rawRepresentation: signature)
            #expect(pub.isValidSignature(sig, for: data) && !pub.isValidSignature(sig, for: data + [0]))
        case .ed25519:
            let pub = try Curve25519.Signing.PublicKey(rawRepresentation: key.publicKey)
            #expect(pub.isValidSignature(signature, for: data) && !pub.isValidSignature(signature, for: data + [0]))
        }
    }

    /// A private file that is not a key's names the file and the line.
    @Test func aBadKeyFileSaysWhereAndWhy() throws {
        let dir = try TemporaryDirectory("nearcast-dnssec-bad")
        let file = try dir.write(
            "Private-key-format: v1.3\nAlgorithm: 8 (RSASHA256)\nModulus: AAAA\n",
            to: "Kexample.test.+008+00001.private")
        #expect {
            try DNSSECKeyFile.read(privateFile: file, zone: Self.zone)
        } throws: { "\($0)".contains("\(file):2:") && "\($0)".contains("not one nearcast signs with") }
    }
}
