import NearcastBasics
import Testing

@testable import NearcastConfiguration

/// The `cookies:` section: on by default, a shared secret in hex, and every mistake named with its
/// line.
@Suite(.timeLimit(.minutes(1))) struct CookieSettingsTests {
    static func parse(_ body: String) -> Result<NearcastConfig, DiagnosticsError> {
        Result { () throws(DiagnosticsError) -> NearcastConfig in
            try NearcastConfig.parse(yaml: "listen: [\"127.0.0.1:53\"]\n" + body, fileName: "c.yaml", baseDirectory: "")
        }
    }

    @Test func cookiesAreOnByDefaultAndTakeASharedSecret() throws {
        #expect(try Self.parse("").get().cookies == CookieSettings())
        let c = try Self.parse(
            """
            cookies:
              secret: 000102030405060708090a0b0c0d0e0f
              previous-secret: "0xf0e0d0c0b0a090807060504030201000"
              secret-lifetime: 7d
            """
        ).get().cookies
        #expect(
            c.enabled && c.secret == Array(0..<16) && c.previousSecret?.first == 0xF0 && c.secretLifetime == 7 * 86400)
    }

    @Test func mistakesAreNamedWithTheirLine() {
        guard
            case .failure(let e) = Self.parse(
                """
                cookies:
                  enabled: maybe
                  secret: 0011
                  secret-lifetime: 1h
                  flavour: chocolate
                """)
        else {
            Issue.record("accepted")
            return
        }
        let text = e.description
        for expected in [
            "c.yaml:3: cookies enabled must be true or false",
            "c.yaml:4: cookies secret must be 16 octets in hex (32 hex digits)",
            "c.yaml:5: cookies secret-lifetime must be from 26h to 36d",
            "c.yaml:6: unknown cookies key 'flavour'",
        ] {
            #expect(text.contains(expected), "\(text)")
        }
    }
}
