import Foundation
import Testing

/// Reloads that must be refused leave the running daemon as it was, and say why (issue 6).
@Suite(.timeLimit(.minutes(2))) struct ReloadTests {
    @Test func aRefusedReloadChangesNothingAndSaysWhy() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("nearcast-reload-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let zone = dir.appendingPathComponent("z.zone")
        let fixture = try String(contentsOf: URL(fileURLWithPath: DaemonTests.zone), encoding: .utf8)
        try (fixture + "\nnew.example.test. 300 IN A 192.0.2.77\n").write(to: zone, atomically: true, encoding: .utf8)
        let port = try TestSupport.freePort(), api = try TestSupport.freePort()
        let config = dir.appendingPathComponent("c.yaml")
        func writeConfig(listen: Int) throws {
            try """
                listen: ["127.0.0.1:\(listen)"]
                zones: [{ origin: example.test., file: z.zone }]
                api: { listen: "127.0.0.1:\(api)", tokens: tokens }
                """.write(to: config, atomically: true, encoding: .utf8)
        }
        try writeConfig(listen: port)
        let admin = "abcdefabcdefabcdefabcdefabcdef00", writer = "abcdefabcdefabcdefabcdefabcdef11"
        try "admin \(admin)\nwrite \(writer)\n".write(to: dir.appendingPathComponent("tokens"), atomically: true, encoding: .utf8)
        let server = try ServerProcess(try TestSupport.product("nearcastd"), ["--config", config.path])
        defer { server.stop() }
        try server.waitUntilReady { server.log.contains("management API listening") }
        let dig = try TestSupport.tool("dig")
        func ask(_ name: String) throws -> String { try TestSupport.run(dig, ["@127.0.0.1", "-p", "\(port)", name, "A", "+short"]).stdout }
        func reload(_ token: String) throws -> TestSupport.Output {
            var env = ProcessInfo.processInfo.environment
            env["NEARCAST_TOKEN"] = token
            return try TestSupport.run(try TestSupport.product("nearcast"), ["reload", "--api", "127.0.0.1:\(api)"], environment: env)
        }
        #expect(try ask("new.example.test") == "192.0.2.77\n")

        // A zone with an error: refused with file and line, the old data still served.
        try (fixture + "\nnew.example.test. 300 IN A 192.0.2.78\nbroken.example.test. 300 IN A 300.1.1.1\n").write(to: zone, atomically: true, encoding: .utf8)
        let bad = try reload(admin)
        #expect(bad.status == 1 && bad.stderr.contains("answered 400: the new config is not valid, nothing was changed"), "\(bad.stderr)")
        #expect(bad.stderr.contains("z.zone:"), "the file and line at fault: \(bad.stderr)")
        #expect(try ask("new.example.test") == "192.0.2.77\n")

        // Only admins reload.
        #expect(try reload(writer).stderr.contains("answered 403"))

        // A setting only a restart applies: refused as a conflict, nothing changed.
        try (fixture + "\nnew.example.test. 300 IN A 192.0.2.79\n").write(to: zone, atomically: true, encoding: .utf8)
        try writeConfig(listen: try TestSupport.freePort())
        let conflict = try reload(admin)
        #expect(conflict.status == 1 && conflict.stderr.contains("answered 409: listen changed: those apply at a restart"), "\(conflict.stderr)")
        #expect(try ask("new.example.test") == "192.0.2.77\n")

        // Put back, it goes through; SIGHUP does the same.
        try writeConfig(listen: port)
        let ok = try reload(admin)
        #expect(ok.status == 0 && ok.stdout.hasPrefix("reloaded: 1 zone,"), "\(ok.stdout) \(ok.stderr)")
        #expect(try ask("new.example.test") == "192.0.2.79\n")
        try (fixture + "\nnew.example.test. 300 IN A 192.0.2.80\n").write(to: zone, atomically: true, encoding: .utf8)
        kill(server.process.processIdentifier, SIGHUP)
        try server.waitUntilReady(timeout: 10) { (try? ask("new.example.test")) == "192.0.2.80\n" }
        try server.waitUntilReady(timeout: 5) { server.log.split(separator: "\n").contains { $0.contains("reloaded") && $0.contains("by=SIGHUP") } }
    }
}
