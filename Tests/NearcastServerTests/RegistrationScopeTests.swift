import Foundation
import Hummingbird
import NearcastBasics
import NearcastConfiguration
import Testing

@testable import NearcastServer

/// What a scoped agent token's registration is checked against is what is registered (issue 30).
@Suite(.timeLimit(.minutes(2))) struct RegistrationScopeTests {
    static let scoped = APITokens.Entry(
        role: .agent, token: "", source: "tokens:1", node: "edge9", pools: ["web"],
        networks: [AddressPrefix("192.0.2.64/28")!])

    static func check(_ text: String, _ caller: APITokens.Entry? = scoped) throws -> String {
        let object = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any]
        return try ManagementAPI.withinScopes(text, object, caller)
    }

    static func status(_ text: String) -> Int? {
        do {
            _ = try check(text)
            return nil
        } catch let e as HTTPError { return Int(e.status.code) } catch { return -1 }
    }

    @Test func theRegistrationMadeIsTheOneChecked() throws {
        let made = try Self.check(#"{"id": "edge9", "pools": ["web"], "ipv4": "192.0.2.70", "latitude": 1.5}"#)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(made.utf8)) as? [String: Any])
        #expect(object["pools"] as? [String] == ["web"] && object["ipv4"] as? String == "192.0.2.70")
        #expect(object["latitude"] as? Double == 1.5)
        // A second key of a name: one of them is checked, and only that one is registered.
        let twice = #"{"id": "edge9", "pools": ["img"], "pools": ["web"], "ipv4": "192.0.2.70"}"#
        if let again = try? Self.check(twice) {
            #expect(!again.contains("img"), "\(again)")
        }
        // An unscoped token's registration goes as it came.
        let unscoped = APITokens.Entry(role: .agent, token: "", source: "tokens:2", node: "edge9")
        #expect(try Self.check("id: edge9\npools: [img]\n", unscoped) == "id: edge9\npools: [img]\n")
    }

    @Test func whatTheCheckCannotReadIsRefused() {
        #expect(Self.status("id: edge9\npools: [img]\nipv4: 198.51.100.9\n") == 400, "YAML the check did not read")
        #expect(Self.status(#"{"id": "edge9", "pools": "web", "ipv4": "192.0.2.70"}"#) == 400)
        #expect(Self.status(#"{"id": "edge9", "pools": ["web"], "ipv4": 3221226054}"#) == 400)
        #expect(Self.status(#"{"id": "edge9", "pools": ["web"], "ipv4": "192.0.2.64/28"}"#) == 400)
        #expect(Self.status(#"{"id": "edge9", "pools": ["web"], "ipv4": "198.51.100.9"}"#) == 403)
        #expect(Self.status(#"{"id": "edge9", "pools": ["img"], "ipv4": "192.0.2.70"}"#) == 403)
        #expect(Self.status(#"{"id": "edge9", "pools": ["web"], "ipv6": "2001:db8::1"}"#) == 403)
    }
}
