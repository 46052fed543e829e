import Foundation
import NearcastTestSupport
import Testing

/// Catalog zones (RFC 9432, issue 33) with a real Knot, both ways, every transfer signed: a catalog
/// nearcastd makes of the zones it offers, followed by Knot (`catalog-role: interpret`), which
/// then serves a zone added to nearcastd's config and drops one removed; and a catalog Knot
/// makes (`catalog-role: generate`), followed by nearcastd, which serves the zones Knot lists,
/// a zone added to Knot's config included, and stops serving one Knot removed.
@Suite(.timeLimit(.minutes(3))) struct CatalogZoneTests {
    static let keyName = ZoneTransferTests.keyName
    static let secret = ZoneTransferTests.secret
    static let reader = "55555555555555555555555555555555"

    /// A small zone `origin` (no final dot) whose www answers `address`.
    static func zoneText(_ origin: String, _ address: String) -> String {
        """
        $ORIGIN \(origin).
        @ 60 IN SOA ns.\(origin). hostmaster.\(origin). 1 60 60 600 60
        @ 60 IN NS ns.\(origin).
        ns 60 IN A 192.0.2.53
        www 60 IN A \(address)
        """
    }

    /// What the server at `port` answers for www.`origin`: its rcode and addresses.
    static func www(_ port: Int, _ origin: String) throws -> (String, [String]) {
        let dig = try TestSupport.tool("dig")
        let out = try TestSupport.run(
            dig, ["@127.0.0.1", "-p", "\(port)", "+norec", "+tries=1", "+time=1", "www.\(origin).", "A"]
        ).stdout
        let rcode = out.range(of: "status: ").map { String(out[$0.upperBound...].prefix { $0 != "," }) } ?? "?"
        let addresses = out.split(separator: "\n").filter { !$0.hasPrefix(";") && $0.contains("\tA\t") }
            .compactMap { $0.split(whereSeparator: { $0 == "\t" || $0 == " " }).last.map(String.init) }
        return (rcode, addresses.sorted())
    }

    /// knotd with `conf` (the server, key and database sections added), once knotc answers.
    static func knot(_ dir: URL, port: Int, conf: String) throws -> (ServerProcess, socket: String) {
        let path = dir.appendingPathComponent("knot.conf")
        try FileManager.default.createDirectory(at: dir.appendingPathComponent("db"), withIntermediateDirectories: true)
        try Self.knotConf(dir, port: port, conf).write(to: path, atomically: true, encoding: .utf8)
        let knot = try ServerProcess(try TestSupport.tool("knotd"), ["-c", path.path])
        let socket = dir.appendingPathComponent("knot.sock").path
        do {
            try knot.waitUntilReady {
                (try? TestSupport.run(try TestSupport.tool("knotc"), ["-s", socket, "status"]))?.status == 0
            }
        } catch {
            knot.stop()
            throw error
        }
        return (knot, socket)
    }

    /// Knot's remote `nearcast` (nearcastd at `port`, signing with the key) and its ACL `acl`,
    /// which lets 127.0.0.1 signing with the key do `action`.
    static func knotPeer(_ port: Int, acl: String, action: String) -> String {
        """
        remote:
          - id: nearcast
            address: 127.0.0.1@\(port)
            key: \(keyName)
        acl:
          - id: \(acl)
            address: 127.0.0.1
            key: \(keyName)
            action: \(action)
        """
    }

    static func knotConf(_ dir: URL, port: Int, _ conf: String) -> String {
        """
        server:
            listen: 127.0.0.1@\(port)
            rundir: "\(dir.path)"
        database:
            storage: "\(dir.path)/db"
        \(ZoneTransferTests.knotKey)
        \(conf)
        log:
          - target: stderr
            any: warning
        """
    }

    /// Has Knot at `socket` read `conf` again (its zones added and removed).
    static func knotReload(_ dir: URL, port: Int, socket: String, conf: String) throws {
        try Self.knotConf(dir, port: port, conf).write(
            to: dir.appendingPathComponent("knot.conf"), atomically: true, encoding: .utf8)
        let out = try TestSupport.run(try TestSupport.tool("knotc"), ["-s", socket, "reload"])
        #expect(out.status == 0, "knotc reload: \(out.stdout)\(out.stderr)")
    }

    /// nearcastd's config: its own zones `zones` (origin and www address), each offered to
    /// 127.0.0.1 with the key, and the catalog entry `catalog`.
    static func nearcastConfig(_ dir: TemporaryDirectory, zones: [(String, String)], catalog: String) throws {
        var entries = ""
        for (origin, address) in zones {
            _ = try dir.write(Self.zoneText(origin, address), to: "\(origin).zone")
            entries += """

                  - origin: \(origin).
                    file: \(origin).zone
                    allow-transfer: ["127.0.0.1 key \(keyName)"]
                """
        }
        _ = try dir.write(
            """
            listen: ["127.0.0.1:0"]
            state-dir: state
            zones:\(entries)
            \(catalog)
            tsig:
              keys: [{ name: \(keyName), algorithm: hmac-sha256, secret: \(secret) }]
            api: { listen: "127.0.0.1:0", tokens: tokens }
            """, to: "c.yaml")
        _ = try dir.write("read \(reader)\n", to: "tokens")
    }

    /// nearcastd makes catalog.test. of its zones; Knot follows it and transfers each zone it
    /// lists from nearcastd. A zone added to nearcastd's config reaches Knot by the catalog's
    /// NOTIFY; one removed is dropped by Knot (REFUSED).
    @Test func aCatalogMadeByNearcastIsFollowedByKnot() throws {
        let dir = try TemporaryDirectory("nearcast-catalog-produce")
        let knotPort = try TestSupport.unusedPort()
        let catalog = """
              - origin: catalog.test.
                catalog: produce
                allow-transfer: ["127.0.0.1 key \(Self.keyName)"]
                notify: ["127.0.0.1:\(knotPort) key \(Self.keyName)"]
            """
        try Self.nearcastConfig(dir, zones: [("a.test", "192.0.2.1")], catalog: catalog)
        // The catalog's file is nearcastd's to write at its start: the config checks without it.
        let check = try TestSupport.run(try TestSupport.product("nearcast"), ["check-config", dir.file("c.yaml")])
        #expect(check.status == 0 && check.stdout.contains("ok: 1 zone"), "\(check.stdout)\(check.stderr)")
        let daemon = try Daemon(["--config", dir.file("c.yaml")])
        defer { daemon.process.stop() }
        let knotDir = try TemporaryDirectory.url("nearcast-catalog-knot-follows")
        let (knot, _) = try Self.knot(
            knotDir, port: knotPort,
            conf: """
                \(Self.knotPeer(daemon.dnsPort, acl: "notify", action: "notify"))
                template:
                  - id: default
                    storage: "\(knotDir.path)"
                  - id: member
                    storage: "\(knotDir.path)"
                    master: nearcast
                    acl: [notify]
                zone:
                  - domain: catalog.test.
                    master: nearcast
                    acl: [notify]
                    catalog-role: interpret
                    catalog-template: member
                """)
        defer { knot.stop() }
        try poll("Knot serves a.test. from the catalog", timeout: 30) {
            try Self.www(knotPort, "a.test") == ("NOERROR", ["192.0.2.1"])
        }
        #expect(try daemon.cli(["zones"], token: Self.reader).stdout.contains("catalog made here"))

        // b.test. added to nearcastd's config: the catalog's serial rises and Knot is told.
        try Self.nearcastConfig(dir, zones: [("a.test", "192.0.2.1"), ("b.test", "192.0.2.2")], catalog: catalog)
        kill(daemon.pid, SIGHUP)
        try poll("Knot serves b.test., added to the catalog", timeout: 30) {
            try Self.www(knotPort, "b.test") == ("NOERROR", ["192.0.2.2"])
        }
        // a.test. removed: Knot drops it.
        try Self.nearcastConfig(dir, zones: [("b.test", "192.0.2.2")], catalog: catalog)
        kill(daemon.pid, SIGHUP)
        try poll("Knot no longer serves a.test.", timeout: 30) { try Self.www(knotPort, "a.test").0 == "REFUSED" }
        #expect(try Self.www(knotPort, "b.test") == ("NOERROR", ["192.0.2.2"]))
    }

    /// Knot makes cat.test. of x.test.; nearcastd follows it and serves x.test., transferred from
    /// Knot. y.test. added to Knot's config is served by nearcastd; x.test. removed from it is
    /// not (REFUSED), and its file is gone from the state directory.
    @Test func aCatalogMadeByKnotIsFollowedByNearcast() throws {
        let dir = try TemporaryDirectory("nearcast-catalog-consume")
        let knotPort = try TestSupport.unusedPort()
        try Self.nearcastConfig(
            dir, zones: [],
            catalog: """
                  - origin: cat.test.
                    catalog: consume
                    primaries: ["127.0.0.1:\(knotPort)"]
                    tsig: \(Self.keyName)
                """)
        let daemon = try Daemon(["--config", dir.file("c.yaml")])
        defer { daemon.process.stop() }
        #expect(try Self.www(daemon.dnsPort, "x.test").0 == "REFUSED")

        let knotDir = try TemporaryDirectory.url("nearcast-catalog-knot-makes")
        for (origin, address) in [("x.test", "198.51.100.1"), ("y.test", "198.51.100.2")] {
            try Self.zoneText(origin, address).write(
                to: knotDir.appendingPathComponent("\(origin).zone"), atomically: true, encoding: .utf8)
        }
        func conf(_ members: [String]) -> String {
            let zones = members.map {
                "  - domain: \($0).\n    file: \($0).zone\n    catalog-role: member\n    catalog-zone: cat.test."
            }
            return """
                \(Self.knotPeer(daemon.dnsPort, acl: "signed", action: "transfer"))
                template:
                  - id: default
                    storage: "\(knotDir.path)"
                    zonefile-sync: -1
                    acl: [signed]
                    notify: [nearcast]
                zone:
                  - domain: cat.test.
                    catalog-role: generate
                \(zones.joined(separator: "\n"))
                """
        }
        let (knot, socket) = try Self.knot(knotDir, port: knotPort, conf: conf(["x.test"]))
        defer { knot.stop() }
        _ = try TestSupport.run(try TestSupport.tool("knotc"), ["-s", socket, "zone-notify", "cat.test."])
        try poll("nearcastd serves x.test. from Knot's catalog", timeout: 30) {
            try Self.www(daemon.dnsPort, "x.test") == ("NOERROR", ["198.51.100.1"])
        }

        try Self.knotReload(knotDir, port: knotPort, socket: socket, conf: conf(["x.test", "y.test"]))
        try poll("nearcastd serves y.test., added to Knot's catalog", timeout: 30) {
            try Self.www(daemon.dnsPort, "y.test") == ("NOERROR", ["198.51.100.2"])
        }
        let xFile = dir.file("state/secondary/x.test.zone")
        #expect(FileManager.default.fileExists(atPath: xFile))
        // `nearcast zones` says which zone is the catalog and which it listed.
        let zones = try daemon.cli(["zones"], token: Self.reader).stdout
        #expect(zones.contains("cat.test.  serial ") && zones.contains("catalog followed"), "\(zones)")
        #expect(zones.components(separatedBy: "listed in catalog cat.test.").count == 3, "\(zones)")

        try Self.knotReload(knotDir, port: knotPort, socket: socket, conf: conf(["y.test"]))
        try poll("nearcastd no longer serves x.test.", timeout: 30) {
            try Self.www(daemon.dnsPort, "x.test").0 == "REFUSED"
        }
        #expect(!FileManager.default.fileExists(atPath: xFile))
        #expect(try Self.www(daemon.dnsPort, "y.test") == ("NOERROR", ["198.51.100.2"]))
        #expect(daemon.log.contains("catalog changed its zones"), "\(daemon.log)")
    }
}
