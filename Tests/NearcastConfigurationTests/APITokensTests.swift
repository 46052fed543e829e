import Testing

@testable import NearcastBasics
@testable import NearcastConfiguration

@Suite(.timeLimit(.minutes(1))) struct APITokensTests {
    let read = "0123456789abcdef0123456789abcdef"
    let admin = "fedcba9876543210fedcba9876543210"

    @Test func aTokensFileGivesEachTokenItsRole() throws {
        let t = try APITokens.parse("# operators\nread \(read)\n\n  admin\t\(admin)   # on-call\n", fileName: "tokens")
        #expect(t.entries.map(\.role) == [.read, .admin])
        #expect(t.match(read)?.source == "tokens:2")
        #expect(t.match(admin)?.role == .admin)
        #expect(APIRole.admin > .write && APIRole.write > .read)
    }

    @Test func onlyTheWholeTokenMatches() throws {
        let t = try APITokens.parse("read \(read)\n", fileName: "tokens")
        #expect(t.match(read) != nil)
        #expect(t.match(read.dropLast()) == nil, "a prefix is not the token")
        #expect(t.match(read + "0") == nil, "nor is a longer string")
        #expect(t.match("") == nil)
        #expect(t.match(read.uppercased()) == nil, "tokens are case-sensitive")
    }

    @Test func everyBadLineIsReportedWithItsNumber() {
        let text = "read \(read)\nroot \(admin)\nread short\nwrite\nread \(read)\n"
        do {
            _ = try APITokens.parse(text, fileName: "/etc/nearcast/tokens")
            Issue.record("a bad tokens file must be refused")
        } catch {
            let d = error.diagnostics.map(\.description)
            #expect(d.count == 4, "\(d)")
            #expect(
                d.contains("/etc/nearcast/tokens:2: unknown role 'root' (known: read, write, admin, agent, agent:NODE)")
            )
            #expect(d.contains { $0.hasPrefix("/etc/nearcast/tokens:3: a token is at least 32 characters") })
            #expect(d.contains("/etc/nearcast/tokens:4: expected ROLE TOKEN (two fields), found 1"))
            #expect(d.contains("/etc/nearcast/tokens:5: this token is already listed"))
        }
    }

    @Test func aMissingFileSaysSo() {
        #expect(throws: DiagnosticsError.self) { try APITokens.load(path: "/nonexistent/tokens") }
        do { _ = try APITokens.load(path: "/nonexistent/tokens") } catch {
            #expect(error.description == "/nonexistent/tokens: tokens file does not exist")
        }
    }

    @Test func agentTokensPostReportsOnlyForTheirNode() throws {
        let t = try APITokens.parse(
            "agent:fra1 \(read)\nagent \(admin)\nwrite 11112222333344445555666677778888\nread 99990000aaaabbbbccccddddeeeeffff\n",
            fileName: "tokens")
        let fra1 = try #require(t.match(read))
        let any = try #require(t.match(admin))
        #expect(fra1.role == .agent && fra1.node == "fra1" && any.node == nil)
        #expect(fra1.mayReport(for: "fra1") && !fra1.mayReport(for: "par1"))
        #expect(any.mayReport(for: "par1"))
        #expect(t.entries[2].mayReport(for: "par1") && !t.entries[3].mayReport(for: "par1"), "write may, read may not")
        #expect(APIRole.agent < .read, "an agent reads nothing")
        do {
            _ = try APITokens.parse("read:fra1 \(read)\nagent: \(admin)\n", fileName: "tokens")
            Issue.record("a node on a non-agent token must be refused")
        } catch {
            #expect(error.diagnostics.count == 2)
            #expect(error.diagnostics.allSatisfy { $0.message.hasPrefix("only an agent token names a node") })
        }
    }

    /// An agent token may be scoped to the pools a node it registers joins and the networks its
    /// addresses lie in (issue 30); the scopes travel to a fleet's store with it.
    @Test func agentTokensMayBeScopedToPoolsAndNetworks() throws {
        let t = try APITokens.parse(
            "agent:edge9 pools=web,img nets=192.0.2.64/28,2001:db8::/32 \(read)\nagent \(admin)\n", fileName: "tokens")
        let scoped = try #require(t.match(read))
        #expect(scoped.node == "edge9" && scoped.pools == ["web", "img"] && scoped.networks?.count == 2)
        #expect(scoped.refusal(registering: ["web"], at: [[192, 0, 2, 70]]) == nil)
        #expect(
            scoped.refusal(
                registering: ["img"],
                at: [[192, 0, 2, 79], [0x20, 0x01, 0x0d, 0xb8] + Array(repeating: 0, count: 12)]) == nil)
        #expect(scoped.refusal(registering: ["api"], at: [])?.contains("pools web, img only, not api") == true)
        #expect(
            scoped.refusal(registering: ["web"], at: [[192, 0, 2, 80]])?.contains(
                "addresses in 192.0.2.64/28, 2001:db8::/32 only, not 192.0.2.80") == true)
        #expect(try #require(t.match(admin)).refusal(registering: ["any"], at: [[10, 0, 0, 1]]) == nil, "unscoped")
        // Through a fleet's store: the same scopes; an entry a server cannot read is no token.
        let stored = try #require(t.storeEntries[APITokens.digest(read)])
        #expect(stored.hasPrefix("agent:edge9;pools=web,img;nets=192.0.2.64/28,2001:db8::/32 "), "\(stored)")
        let back = try #require(APITokens.storeEntry(stored))
        #expect(back.pools == scoped.pools && back.networks == scoped.networks && back.node == "edge9")
        #expect(APITokens.storeEntry("agent;colour=blue tokens:1") == nil)
        #expect(APITokens.storeEntry("write;pools=web tokens:1") == nil)
        #expect(APITokens.storeEntry("agent:edge7 tokens:2")?.pools == nil)
        // Scopes only on agent tokens, and each well formed.
        do {
            _ = try APITokens.parse(
                "write pools=web \(read)\nagent nets=300.0.0.0/8 \(admin)\nagent colour=blue 11112222333344445555666677778888\n",
                fileName: "tokens")
            Issue.record("bad scopes must be refused")
        } catch {
            let d = error.diagnostics.map(\.description)
            #expect(d.count == 3, "\(d)")
            #expect(d.contains { $0.hasPrefix("tokens:1: only an agent token takes scopes") })
            #expect(d.contains { $0.hasPrefix("tokens:2: nets: '300.0.0.0/8' is not a prefix") })
            #expect(d.contains("tokens:3: unknown scope 'colour' (known: pools, nets)"))
        }
    }
}
