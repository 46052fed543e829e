import DNSWire
import Foundation
import NearcastTSIG
import NearcastTestSupport
import Testing

@testable import NearcastBasics
@testable import NearcastConfiguration

/// TSIG keys in the config: BIND's `key` statements in key files, and keys given in the YAML.
@Suite(.timeLimit(.minutes(1))) struct TSIGKeysTests {
    static let secret = "6Nd4hW6X0W8cGSUhv3kYVZ4UpmjtwcIs4hGJgkZ61ZE="

    /// The syntax tsig-keygen prints, with every kind of comment, several keys to a file.
    @Test func bindKeyStatementsAreRead() throws {
        let text = """
            # made by tsig-keygen
            key "xfr.example." {
                algorithm hmac-sha256;  // the default
                secret "\(Self.secret)";
            };
            /* an old client's key,
               kept for now */
            key notify.example { algorithm HMAC-SHA1; secret "c2VjcmV0c2VjcmV0"; };
            """
        let keys = try TSIGKeyFile.parse(text, fileName: "keys.conf")
        #expect(keys.map(\.name) == [try DNSName("xfr.example."), try DNSName("notify.example.")])
        #expect(keys.map(\.algorithm) == [.hmacSHA256, .hmacSHA1])
        #expect(keys[0].secret == Array(try #require(Data(base64Encoded: Self.secret))))
        #expect(keys.map(\.source) == ["keys.conf:2", "keys.conf:8"])
        // What keygen prints reads back as the same key.
        let made = TSIGKey.generate(name: try DNSName("new.example."), algorithm: .hmacSHA512)
        #expect(made.secret.count == 64)
        let read = try TSIGKeyFile.parse(TSIGKeyFile.text(for: made), fileName: "k")
        #expect(read.map { [$0.name.description, $0.algorithm.rawValue] } == [["new.example.", "hmac-sha512"]])
        #expect(read.map(\.secret) == [made.secret])
    }

    @Test func everyBadKeyIsReportedWithItsLine() {
        let text = """
            key "a." {
                algorithm hmac-md5;
                secret "\(Self.secret)";
            };
            key "b." {
                algorithm hmac-sha256;
                secret "not base64!";
            };
            key "c." {
                algorithm hmac-sha256;
            };
            """
        do {
            _ = try TSIGKeyFile.parse(text, fileName: "keys.conf")
            Issue.record("bad keys must be refused")
        } catch {
            #expect(
                error.diagnostics.map(\.description) == [
                    "keys.conf:2: key a.: algorithm 'hmac-md5' is not supported (supported: hmac-sha1, hmac-sha256, hmac-sha384, hmac-sha512)",
                    "keys.conf:7: key b.: the secret is not base64",
                    "keys.conf:9: key c. has no secret",
                ])
        }
        for (text, message) in [
            ("options { };", "keys.conf:1: expected a key statement"),
            (
                "key \"a.\" {\n algorithm hmac-sha256;\n secret \"\(Self.secret)\";\n",
                "keys.conf:1: key a. is not closed"
            ),
            ("key \"a.\" { algorithm hmac-sha256 };", "keys.conf:1: expected 'algorithm VALUE;'"),
        ] {
            #expect(throws: DiagnosticsError.self) { try TSIGKeyFile.parse(text, fileName: "keys.conf") }
            do { _ = try TSIGKeyFile.parse(text, fileName: "keys.conf") } catch {
                #expect(error.description.hasPrefix(message), "\(error)")
            }
        }
    }

    /// Keys come from the YAML and from key files relative to the config; a name declared twice,
    /// a bad inline key and a missing file are each refused with where they are.
    @Test func theTSIGSectionJoinsInlineKeysAndKeyFiles() throws {
        let dir = try TemporaryDirectory.url("nearcast-keys")
        try "key \"xfr.example.\" { algorithm hmac-sha256; secret \"\(Self.secret)\"; };\n".write(
            to: dir.appendingPathComponent("keys.conf"), atomically: true, encoding: .utf8)
        let good = """
            tsig:
              key-files: [keys.conf]
              keys:
                - { name: update.example, algorithm: hmac-sha512, secret: c2VjcmV0c2VjcmV0 }
            """
        let cfg = try NearcastConfig.parse(yaml: good, fileName: "c.yaml", baseDirectory: dir.path)
        #expect(cfg.tsigKeys.key(named: try DNSName("XFR.example."))?.algorithm == .hmacSHA256)
        #expect(cfg.tsigKeys.key(named: try DNSName("update.example."))?.source == "c.yaml:4")

        let bad = """
            tsig:
              key-files: [keys.conf, missing.conf]
              keys:
                - { name: xfr.example., algorithm: hmac-sha256, secret: c2VjcmV0c2VjcmV0 }
                - { name: other.example., algorithm: hmac-sha256 }
            """
        do {
            _ = try NearcastConfig.parse(yaml: bad, fileName: "c.yaml", baseDirectory: dir.path)
            Issue.record("a bad tsig section must be refused")
        } catch {
            let d = error.diagnostics.map(\.description)
            #expect(d.contains("c.yaml:5: each tsig key is { name: NAME, algorithm: hmac-sha256, secret: BASE64 }"))
            #expect(d.contains("\(dir.path)/missing.conf: TSIG key file does not exist"))
            #expect(
                d.contains("c.yaml:4: TSIG key xfr.example. is declared twice (first at \(dir.path)/keys.conf:1)"),
                "\(d)")
        }
    }
}
