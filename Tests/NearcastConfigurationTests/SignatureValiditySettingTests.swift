import NearcastBasics
import Testing

@testable import NearcastConfiguration

/// `signature-validity:`: how long the signatures of the zones a server signs are valid.
@Suite(.timeLimit(.minutes(1))) struct SignatureValiditySettingTests {
    @Test func fourteenDaysUnlessConfigured() throws {
        #expect(try CookieSettingsTests.parse("").get().signatureValidity == 14 * 86_400)
        #expect(try CookieSettingsTests.parse("signature-validity: 3600\n").get().signatureValidity == 3600)
    }

    @Test(arguments: ["signature-validity: 10\n", "signature-validity: 2y\n", "signature-validity: 99999999\n"])
    func aValidityOutOfRangeIsNamedWithItsLine(_ text: String) {
        guard case .failure(let e) = CookieSettingsTests.parse(text) else {
            Issue.record("accepted")
            return
        }
        #expect(e.diagnostics.map(\.line) == [2] && e.description.contains("from 60 to"), "\(e)")
    }
}
