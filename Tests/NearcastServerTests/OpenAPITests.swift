import Foundation
import Logging
import NearcastAPIModel
import NearcastConfiguration
import NearcastTestSupport
import Testing
import Yams

@testable import NearcastServer

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// docs/openapi.yaml matches the API: the same routes, and each route takes exactly the role the
/// document says (401 without a token, 403 with one role too low, through with its own).
@Suite(.timeLimit(.minutes(2))) struct OpenAPITests {
    /// "METHOD /path/{param}" -> the least role, from the document.
    static var documented: [String: String] {
        let url = XDPEndToEndTests.root.appendingPathComponent("docs/openapi.yaml")
        let document = (try! Yams.load(yaml: String(contentsOf: url, encoding: .utf8))) as! [String: Any]
        var out: [String: String] = [:]
        for (path, item) in document["paths"] as! [String: Any] {
            for (method, op) in item as! [String: Any] {
                out["\(method.uppercased()) \(path)"] = (op as! [String: Any])["x-nearcast-role"] as? String ?? "?"
            }
        }
        return out
    }

    @Test func theDocumentListsEveryRouteAndNoOther() {
        let router = ManagementAPI.makeRouter(
            tokens: LiveTokens(APITokens()), desks: APIDesks(daemon: IdleDaemonDesk()),
            logger: Logger(label: "t")
        )
        let served = Set(
            router.routes.map { r in
                let path = "\(r.path)".split(separator: "/").map {
                    $0.hasPrefix(":") ? "{\($0.dropFirst())}" : String($0)
                }.joined(separator: "/")
                return "\(r.method.rawValue) /" + path
            })
        #expect(
            served == Set(Self.documented.keys),
            "served, not documented: \(served.subtracting(Self.documented.keys).sorted()); documented, not served: \(Set(Self.documented.keys).subtracting(served).sorted())"
        )
    }

    @Test func everyRouteTakesTheRoleItDocuments() async throws {
        let dir = try TemporaryDirectory.url("nearcast-openapi")
        let tokens: [String: String] = [
            "agent": "a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0", "read": "b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1",
            "write": "c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2", "admin": "d3d3d3d3d3d3d3d3d3d3d3d3d3d3d3d3",
        ]
        let file = dir.appendingPathComponent("tokens")
        try tokens.map { "\($0.key) \($0.value)" }.joined(separator: "\n").write(
            to: file, atomically: true, encoding: .utf8)
        let (server, _, zdir) = try GeoDaemonTests.start(
            extraArgs: [
                "--api", "127.0.0.1:0", "--api-tokens", file.path, "--state-dir",
                dir.appendingPathComponent("state").path,
            ],
            par1Checks: "[{ type: report, stale-after: 60 }]")
        defer {
            server.stop()
            try? FileManager.default.removeItem(at: zdir)
        }
        let api = try #require(server.apiPort)
        let below = ["read": "agent", "write": "read", "admin": "write", "agent": "read"]
        func call(_ method: String, _ path: String, _ token: String?) async throws -> Int {
            let concrete = path.replacingOccurrences(of: "{id}", with: "par1").replacingOccurrences(
                of: "{origin}", with: "example.test."
            ).replacingOccurrences(of: "{file}", with: "app.js")
            if concrete == "/v1/events" {
                // A stream that never ends: its status, then curl gives up after a second.
                let out = try TestSupport.run(
                    "/usr/bin/curl",
                    ["-s", "-o", "/dev/null", "-m", "1", "-w", "%{http_code}"]
                        + (token.map { ["-H", "Authorization: Bearer \($0)"] } ?? [])
                        + ["http://127.0.0.1:\(api)\(concrete)"])
                return Int(out.stdout) ?? 0
            }
            var query = ""
            if concrete.hasSuffix("/explain") { query = "?name=geo.example.test&type=A&client=198.51.100.7" }
            if method == "DELETE" || method == "PUT" { query = "?name=doc&type=A" }  // the record the POST added
            var r = URLRequest(url: URL(string: "http://127.0.0.1:\(api)\(concrete)\(query)")!)
            r.httpMethod = method
            if concrete.hasSuffix("/records") && method == "POST" {
                r.httpBody = Data(#"{"name": "doc", "type": "A", "data": "192.0.2.9"}"#.utf8)
            }
            if concrete.hasSuffix("/records") && method == "PUT" {
                r.httpBody = Data(#"{"data": ["192.0.2.10"]}"#.utf8)
            }
            if let token { r.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
            return (try await URLSession.shared.data(for: r).1 as! HTTPURLResponse).statusCode
        }
        // Reads first, then changes (a record added before it is deleted), the reload last.
        let order = Self.documented.sorted { a, b in
            func rank(_ k: String) -> Int {
                k.hasPrefix("GET") ? 0 : k.contains("reload") ? 3 : k.hasPrefix("DELETE") ? 2 : 1
            }
            return (rank(a.key), a.key) < (rank(b.key), b.key)
        }
        for (route, role) in order {
            let parts = route.split(separator: " ", maxSplits: 1).map(String.init)
            if role == "none" {
                #expect(try await call(parts[0], parts[1], nil) == 200, "\(route) needs no token")
                continue
            }
            #expect(try await call(parts[0], parts[1], nil) == 401, "\(route) without a token")
            if let lower = below[role] {
                #expect(
                    try await call(parts[0], parts[1], tokens[lower]) == 403,
                    "\(route) with a \(lower) token (it takes \(role))")
            }
            // `any`: every token, the lowest (an agent's) included.
            let status = try await call(parts[0], parts[1], tokens[role == "any" ? "agent" : role])
            // Registration is a fleet's (FleetTests): a server without a store says so, past the role check.
            let fleetOnly = ["POST /v1/nodes", "DELETE /v1/nodes/{id}"].contains(route)
            #expect(status == (fleetOnly ? 404 : 200), "\(route) with a \(role) token: \(status)")
        }
    }
}
