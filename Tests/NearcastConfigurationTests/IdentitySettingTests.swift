import NearcastBasics
import Testing

@testable import NearcastConfiguration

/// `identity:`: the name a server says it is (CHAOS id.server, NSID), the host's unless configured.
@Suite(.timeLimit(.minutes(1))) struct IdentitySettingTests {
    @Test func theIdentityIsTheHostsNameUnlessConfigured() throws {
        #expect(try CookieSettingsTests.parse("").get().identity == NearcastConfig.hostName)
        #expect(NearcastConfig.hostName?.isEmpty == false)
        #expect(try CookieSettingsTests.parse("identity: ns1.fleet.example\n").get().identity == "ns1.fleet.example")
        #expect(try CookieSettingsTests.parse("identity: \"\"\n").get().identity == nil, "said nowhere")
    }

    @Test func anIdentityTooLongForATXTStringIsNamedWithItsLine() {
        guard case .failure(let e) = CookieSettingsTests.parse("identity: \(String(repeating: "x", count: 256))\n")
        else {
            Issue.record("accepted")
            return
        }
        #expect(e.diagnostics.map(\.line) == [2] && e.description.contains("255 octets"), "\(e)")
    }
}
