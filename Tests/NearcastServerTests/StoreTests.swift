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

    /// A real etcd, and a directory of the test's own.
    static func etcdAndDirectory() throws -> (EtcdServer, URL) {
        let etcd = try EtcdServer()
        let dir = try TemporaryDirectory.url("nearcast-store")
        return (etcd, dir)
    }

    /// Import then export gives back the same zones (record for record) and an equivalent geo
    /// section; exporting what an export imports gives the same files byte for byte.
    @Test func importThenExportGivesBackTheSameZonesAndGeoSection() throws {
        let (etcd, dir) = try Self.etcdAndDirectory()
        defer { etcd.stop() }
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

    /// `nearcast ARGS` with `config` for a store under `prefix` of `etcd`, written into `dir`.
    static func storeConfig(_ dir: URL, _ etcd: EtcdServer, prefix: String, zone: String) throws -> String {
        let config = dir.appendingPathComponent("\(prefix.replacingOccurrences(of: "/", with: "")).yaml")
        try """
        zones:
          - { origin: example.test., file: \(zone) }
        store:
          etcd: { endpoints: ["\(etcd.endpoint)"], prefix: \(prefix) }
        """.write(to: config, atomically: true, encoding: .utf8)
        return config.path
    }

    static func etcdctl(_ etcd: EtcdServer, _ args: [String]) throws -> TestSupport.Output {
        try TestSupport.run(
            try TestSupport.tool("etcdctl"), ["--endpoints", etcd.endpoint] + args, environment: ["ETCDCTL_API": "3"])
    }

    /// A zone larger than etcd takes in one request (1.5 MiB; as one value, 100k names could not
    /// be imported at all) goes in as a key per RRset, in transactions within etcd's limits, and
    /// comes back out record for record with its serial; imported again unchanged, it writes no
    /// RRset (an interrupted import, run again, writes only what is missing).
    @Test func aZoneLargerThanARequestIsImportedAKeyPerRRset() throws {
        let (etcd, dir) = try Self.etcdAndDirectory()
        defer { etcd.stop() }
        var text = "$TTL 300\n@ IN SOA ns1 hostmaster 2026112707 3600 900 604800 60\n@ IN NS ns1\nns1 IN A 192.0.2.53\n"
        // 1,200 names of 1.7 KB each: more RRsets than a transaction's 100 operations, and more
        // bytes than its ~768 KiB, so both of the import's limits cut it into transactions.
        let names = 1_200
        let filler = String(repeating: "a text of some length, so that the zone is larger. ", count: 4)
        let strings = Array(repeating: "\"\(filler)\"", count: 8).joined(separator: " ")
        for i in 0..<names {
            text += "n\(i) IN A 10.\(i >> 16).\((i >> 8) & 255).\(i & 255)\n"
            text += "n\(i) IN TXT \(strings) \"\(i)\"\n"
        }
        let zonePath = dir.appendingPathComponent("big.zone").path
        try text.write(toFile: zonePath, atomically: true, encoding: .utf8)
        #expect(text.utf8.count > 3 << 19, "larger than etcd's request limit, 1.5 MiB")
        let config = try Self.storeConfig(dir, etcd, prefix: "/big/", zone: zonePath)
        let cli = try TestSupport.product("nearcast")
        let imported = try TestSupport.run(cli, ["store", "import", config])
        #expect(imported.status == 0, "\(imported.stderr)")
        let keys = try Self.etcdctl(etcd, ["get", "--prefix", "--keys-only", "/big/zones/"])
        let rrsets = 3 + 2 * names
        #expect(keys.stdout.split(separator: "\n").count == rrsets + 1, "a key per RRset and the meta")

        let out = dir.appendingPathComponent("export")
        #expect(try TestSupport.run(cli, ["store", "export", out.path, "--config", config]).status == 0)
        let origin = try DNSName("example.test.")
        let original = try Zone.load(path: zonePath, origin: origin)
        let back = try Zone.load(path: out.path + "/zones/example.test.zone", origin: origin)
        #expect(back.checksum == original.checksum && back.recordCount == original.recordCount)
        #expect(back.serial == 2_026_112_707, "nothing changed since the import: its serial")

        func revision(_ o: TestSupport.Output) -> Int? {
            o.stdout.split(separator: "(revision ").last.flatMap { Int($0.prefix { $0.isNumber }) }
        }
        let again = try TestSupport.run(cli, ["store", "import", config])
        let (r1, r2) = (try #require(revision(imported)), try #require(revision(again)))
        #expect(r2 - r1 == 3, "the meta marked importing and ready, and the layout, geo and tokens: no RRset")
    }

    /// A store of layout 1 (each zone one value) is refused by an import, which says to migrate;
    /// `nearcast store migrate` makes it layout 2, the same records with the same serial, once.
    @Test func aStoreOfLayoutOneIsMigrated() throws {
        let (etcd, dir) = try Self.etcdAndDirectory()
        defer { etcd.stop() }
        let text = try String(contentsOfFile: Self.zone, encoding: .utf8)
        #expect(try Self.etcdctl(etcd, ["put", "/old/layout", "1"]).status == 0)
        #expect(try Self.etcdctl(etcd, ["put", "/old/zones/example.test.", text]).status == 0)
        let config = try Self.storeConfig(dir, etcd, prefix: "/old/", zone: Self.zone)
        let cli = try TestSupport.product("nearcast")
        let refused = try TestSupport.run(cli, ["store", "import", config])
        #expect(refused.status != 0 && refused.stderr.contains("run nearcast store migrate"), "\(refused.stderr)")

        let migrated = try TestSupport.run(cli, ["store", "migrate", "--config", config])
        #expect(migrated.stdout == "migrated 1 zone of /old/ to layout 2\n", "\(migrated.stdout)\(migrated.stderr)")
        let keys = try Self.etcdctl(etcd, ["get", "--prefix", "--keys-only", "/old/"]).stdout
        #expect(!keys.split(separator: "\n").contains("/old/zones/example.test."), "the old key is gone: \(keys)")
        #expect(keys.contains("/old/zones/example.test./meta") && keys.contains("/old/zones/example.test./rr/"))
        #expect(try Self.etcdctl(etcd, ["get", "--print-value-only", "/old/layout"]).stdout == "2\n")

        let out = dir.appendingPathComponent("export")
        #expect(try TestSupport.run(cli, ["store", "export", out.path, "--config", config]).status == 0)
        let origin = try DNSName("example.test.")
        let original = try Zone.load(path: Self.zone, origin: origin)
        let back = try Zone.load(path: out.path + "/zones/example.test.zone", origin: origin)
        #expect(back.checksum == original.checksum && back.serial == original.serial)
        let twice = try TestSupport.run(cli, ["store", "migrate", "--config", config])
        #expect(twice.stdout == "the store at /old/ is of layout 2 already\n", "\(twice.stdout)\(twice.stderr)")

        // Writes to the zone after it (as record changes make them) raise the serial (by the
        // store's revisions since the import); the file imported again does not take it back
        // (RFC 1982): it goes on from there. Imported again unchanged, it stays.
        let rrset = "/old/zones/example.test./rr/new.example.test. A"
        #expect(try Self.etcdctl(etcd, ["put", rrset, "new.example.test. 300 IN A 192.0.2.40\n"]).status == 0)
        #expect(try Self.etcdctl(etcd, ["put", rrset, "new.example.test. 300 IN A 192.0.2.41\n"]).status == 0)
        func exportedSerial() throws -> UInt32 {
            let out = dir.appendingPathComponent("export-\(UUID().uuidString)")
            #expect(try TestSupport.run(cli, ["store", "export", out.path, "--config", config]).status == 0)
            return try Zone.load(path: out.path + "/zones/example.test.zone", origin: origin).serial
        }
        let changed = try exportedSerial()
        #expect(changed &- original.serial >= 2 && changed &- original.serial < 10, "\(changed)")
        #expect(try TestSupport.run(cli, ["store", "import", config]).status == 0)
        #expect(try exportedSerial() == changed &+ 1, "the file's serial is behind: the one after the served one")
        #expect(try TestSupport.run(cli, ["store", "import", config]).status == 0)
        #expect(try exportedSerial() == changed &+ 1, "nothing changed: the same serial")
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
