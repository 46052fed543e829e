import DNSWire
import Foundation
import NearcastTestSupport
import Testing

@testable import NearcastConfiguration
@testable import NearcastZones

/// A fleet's store in etcd, seeded and read back through the CLI (`nearcast store import|export`)
/// against a real etcd.
@Suite(.timeLimit(.minutes(2))) struct StoreTests {
    static let zone = TestSupport.fixtures.appendingPathComponent("example.test.zone").path

    /// Import then export gives back the same zones (record for record) and an equivalent geo
    /// section; exporting what an export imports gives the same files byte for byte.
    @Test func importThenExportGivesBackTheSameZonesAndGeoSection() throws {
        let etcd = try EtcdServer()
        defer { etcd.stop() }
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("nearcast-store-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let store = """
            store:
              etcd: { endpoints: ["\(etcd.endpoint)"], prefix: /fleet-a/ }
            """
        let config = dir.appendingPathComponent("nearcast.yaml")
        try """
        listen: ["127.0.0.1:53"]
        zones:
          - { origin: example.test., file: \(Self.zone) }
        \(store)
        geo:
          database: \(Repository.testCityDatabase)
        \(Fixtures.fourNodes(indent: 2))
          names:
            - { name: geo.example.test, type: A, pool: web, answers: 2, ttl: 20 }
        """.write(to: config, atomically: true, encoding: .utf8)
        let cli = try TestSupport.product("nearcast")
        let imported = try TestSupport.run(cli, ["store", "import", config.path])
        #expect(imported.status == 0, "\(imported.stderr)")
        #expect(imported.stdout.hasPrefix("imported 1 zone and the geo section into /fleet-a/ (revision "))

        let out = dir.appendingPathComponent("export")
        let exported = try TestSupport.run(cli, ["store", "export", out.path, "--config", config.path])
        #expect(
            exported.status == 0 && exported.stdout == "exported 1 zone and the geo section to \(out.path)\n",
            "\(exported.stderr)")
        let origin = try DNSName("example.test.")
        let before = try ZoneFileParser.parse(path: Self.zone, origin: origin).map(\.record)
        let after = try ZoneFileParser.parse(path: out.path + "/zones/example.test.zone", origin: origin).map(\.record)
        #expect(Set(before) == Set(after) && before.count == after.count)
        let exportedConfig = try NearcastConfig.load(path: out.path + "/nearcast.yaml")
        let original = try NearcastConfig.load(path: config.path)
        #expect(exportedConfig.geo.isEquivalent(to: original.geo))
        #expect(exportedConfig.zones.map(\.origin) == [origin])

        // The exported files are a config again: with a store section, imported and exported,
        // they come back byte for byte.
        let again = out.appendingPathComponent("nearcast.yaml")
        try (try String(contentsOf: again, encoding: .utf8) + "\n" + store + "\n").write(
            to: again, atomically: true, encoding: .utf8)
        #expect(try TestSupport.run(cli, ["store", "import", again.path]).status == 0)
        let second = dir.appendingPathComponent("second")
        #expect(try TestSupport.run(cli, ["store", "export", second.path, "--config", again.path]).status == 0)
        for file in ["zones/example.test.zone"] {
            #expect(
                try String(contentsOfFile: out.path + "/" + file, encoding: .utf8)
                    == String(contentsOfFile: second.path + "/" + file, encoding: .utf8))
        }

        // Another fleet's prefix is untouched, and a config without a store section is refused.
        let other = try TestSupport.run(
            try TestSupport.tool("etcdctl"), ["--endpoints", etcd.endpoint, "get", "--prefix", "--keys-only", "/"],
            environment: ["ETCDCTL_API": "3"])
        #expect(other.stdout.split(separator: "\n").allSatisfy { $0.hasPrefix("/fleet-a/") }, "\(other.stdout)")
        #expect(other.stdout.contains("/fleet-a/zones/example.test.") && other.stdout.contains("/fleet-a/geo"))
        let plain = dir.appendingPathComponent("plain.yaml")
        try "listen: [\"127.0.0.1:53\"]\n".write(to: plain, atomically: true, encoding: .utf8)
        let refused = try TestSupport.run(cli, ["store", "import", plain.path])
        #expect(refused.status != 0 && refused.stderr.contains("has no store section"), "\(refused.stderr)")
    }

    /// A bad store section is refused with its line, as every config error is.
    @Test func aBadStoreSectionIsRefusedWithItsLine() {
        let text = """
            store:
              etcd:
                endpoints: [ftp://x, "http://127.0.0.1:2379"]
                prefix: nearcast
                tls: { ca: /nonexistent/ca.pem }
                colour: blue
            """
        do {
            _ = try NearcastConfig.parse(yaml: text, fileName: "c.yaml", baseDirectory: "/etc/nearcast")
            Issue.record("a bad store section must be refused")
        } catch {
            let d = error.diagnostics.map(\.description)
            #expect(d.contains("c.yaml:3: store etcd endpoint 'ftp://x' is not http://HOST:PORT or https://HOST:PORT"))
            #expect(d.contains("c.yaml:4: store etcd prefix must start and end with / (e.g. /nearcast/)"))
            #expect(d.contains("c.yaml:5: store etcd tls ca /nonexistent/ca.pem does not exist or cannot be read"))
            #expect(d.contains { $0.hasPrefix("c.yaml:6: unknown store etcd key 'colour'") }, "\(d)")
        }
    }
}
