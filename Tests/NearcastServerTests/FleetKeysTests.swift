import DNSWire
import Foundation
import NearcastTestSupport
import Testing

/// A fleet's DNSSEC keys (issue 34): kept in the store, sealed under a secret every server is
/// given (`store: { key-secret: FILE }`), and brought by each server into its state directory,
/// where it signs with them. `nearcast dnssec keygen` and `roll` with the fleet's config write to
/// the store; one server, the holder of the signing duty, drives a rollover for every server.
@Suite(.timeLimit(.minutes(3))) struct FleetKeysTests {
    static func keys(_ daemon: Daemon) throws -> (dnskey: Set<Int>, signer: Int?) {
        try DaemonSigningTests.keys(daemon)
    }

    static func tag(_ out: TestSupport.Output) -> Int? { DaemonSigningTests.tag(out) }

    @Test func keysKeptSealedInTheStoreSignEveryServerAndOneDrivesTheRollover() async throws {
        try await TestSupport.blocking { try Self.fleetKeysBody() }
    }

    static func fleetKeysBody() throws {
        let fleet = try FleetTests.Fleet()
        defer { fleet.finish() }
        let cli = fleet.cli
        let dir = fleet.dir.path
        // The fleet's secret: made 0600, and never over one that is there.
        let secret = dir + "/fleet.secret"
        let made = try TestSupport.run(cli, ["store", "secret", secret])
        #expect(made.status == 0, "\(made.stderr)")
        let mode = try FileManager.default.attributesOfItem(atPath: secret)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        let again = try TestSupport.run(cli, ["store", "secret", secret])
        #expect(again.status != 0 && again.stderr.contains("there already"), "\(again.stderr)")

        let zone = dir + "/example.test.zone"
        try DaemonSigningTests.shortLived.write(toFile: zone, atomically: true, encoding: .utf8)
        try fleet.seed("zones:\n  - { origin: example.test., file: \(zone) }")
        // The operator's config for the fleet's keys: the store and the secret.
        let keysConfig = dir + "/keys.yaml"
        try (fleet.store + "  key-secret: \(secret)\n").write(toFile: keysConfig, atomically: true, encoding: .utf8)
        let csk = try TestSupport.run(cli, ["dnssec", "keygen", "example.test", "--config", keysConfig])
        #expect(csk.status == 0 && csk.stdout.contains("sealed"), "\(csk.stdout)\(csk.stderr)")
        let ds = try #require(csk.stdout.split(separator: "\n").first { $0.contains(" DS ") }, "\(csk.stdout)")
        let cskTag = try #require(Self.tag(csk), "\(csk.stdout)")
        let zsk = try TestSupport.run(cli, ["dnssec", "keygen", "example.test", "--zsk", "--config", keysConfig])
        let oldTag = try #require(Self.tag(zsk), "\(zsk.stdout)\(zsk.stderr)")

        let settings = "signature-validity: 3600\npropagation-delay: 1"
        let storeExtra = "  key-secret: \(secret)"
        let servers = try (0..<3).map { try fleet.startServer($0, extra: settings, storeExtra: storeExtra) }
        defer { for s in servers { s.stop() } }
        // Every server signs with the store's keys: both published, the ZSK signing.
        for s in servers {
            try poll("the store's keys sign at every server\n\(s.log)", timeout: 30) {
                try Self.keys(s) == ([cskTag, oldTag], oldTag)
            }
        }
        // The private keys are sealed in the store: no private key is there in the clear.
        let stateKeys = dir + "/state0/dnssec/example.test"
        let files = try FileManager.default.contentsOfDirectory(atPath: stateKeys).filter { $0.hasSuffix(".private") }
        #expect(files.count == 2, "\(files)")
        let stored = try StoreTests.etcdctl(fleet.etcd, ["get", "--prefix", "/nearcast/dnssec/"]).stdout
        #expect(stored.contains("\"sealed\""), "\(stored)")
        for f in files {
            let path = stateKeys + "/" + f
            #expect(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int == 0o600)
            let text = try String(contentsOfFile: path, encoding: .utf8)
            let privateKey = try #require(text.split(separator: "\n").first { $0.hasPrefix("PrivateKey: ") })
            #expect(!stored.contains(privateKey.dropFirst(12)), "a private key in the clear in the store")
        }
        // A server given another secret opens none, and says so.
        let otherSecret = dir + "/other.secret"
        #expect(try TestSupport.run(cli, ["store", "secret", otherSecret]).status == 0)
        let stranger = try fleet.startServer(3, extra: settings, storeExtra: "  key-secret: \(otherSecret)")
        defer { stranger.stop() }
        try stranger.waitUntilReady(timeout: 30) {
            stranger.log.contains("does not open with this server's key secret")
        }
        #expect(try Self.keys(stranger).dnskey.isEmpty)
        stranger.stop()
        // A secret others may read is refused: the server does not start.
        let readable = dir + "/readable.secret"
        try FileManager.default.copyItem(atPath: secret, toPath: readable)
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: readable)
        let refused = try TestSupport.run(
            try TestSupport.product("nearcastd"),
            ["--config", try fleet.serverConfig(4, extra: settings, storeExtra: "  key-secret: \(readable)")])
        #expect(refused.status != 0 && refused.stderr.contains("chmod 600"), "\(refused.stderr)")
        // A server given no secret says the store keeps keys it cannot sign with.
        let unkeyed = try fleet.startServer(5, extra: settings)
        defer { unkeyed.stop() }
        try unkeyed.waitUntilReady(timeout: 30) { unkeyed.log.contains("this server has no key-secret") }
        unkeyed.stop()

        // Unbound validates server 0's answers with the CSK's DS as its anchor.
        let unbound = try ValidatingResolver.Local(
            anchor: String(ds), server: "127.0.0.1@\(servers[0].dnsPort)", directory: dir)
        defer { unbound.stop() }
        let resolve = unbound.resolve

        // The rollover, begun in the store: one server schedules it, every one carries it out.
        let roll = try TestSupport.run(cli, ["dnssec", "roll", "example.test", "--config", keysConfig])
        #expect(roll.status == 0 && roll.stdout.contains("sealed"), "\(roll.stdout)\(roll.stderr)")
        var seen: [Set<Int>] = []
        var insecure: [String] = []
        try poll("the old key gone from every server's DNSKEY RRset", timeout: 90) {
            for (name, type) in [("www.example.test", "A"), ("nope.example.test", "A")] {
                let out = try resolve(name, type)
                if !out.contains(" ad") { insecure.append("\(name) \(type): \(out)") }
            }
            let all = try servers.map(Self.keys)
            if seen.last != all[0].dnskey { seen.append(all[0].dnskey) }
            return all.allSatisfy { !$0.dnskey.contains(oldTag) && $0.signer != nil && $0.signer != oldTag }
        }
        #expect(insecure.isEmpty, "\(insecure.prefix(3))")
        let newTag = try #require(Self.keys(servers[0]).signer)
        #expect(try servers.allSatisfy { try Self.keys($0).signer == newTag })
        #expect(seen.contains { $0.count == 3 && $0.contains(oldTag) && $0.contains(newTag) }, "\(seen)")
        let drivers = servers.indices.filter { servers[$0].log.contains("key rollover scheduled") }
        #expect(drivers.count == 1, "one server drives it: \(drivers)")
        // The times it set are every server's: the same key files in each state directory.
        let name = try #require(
            try FileManager.default.contentsOfDirectory(atPath: stateKeys).first {
                $0.hasSuffix(String(format: "%05d.private", oldTag))
            })
        let texts = try (0..<3).map {
            try String(contentsOfFile: dir + "/state\($0)/dnssec/example.test/" + name, encoding: .utf8)
        }
        #expect(texts[0].contains("Inactive: ") && texts[0].contains("Delete: "), "\(texts[0])")
        #expect(Set(texts.map { $0.split(separator: "\n").filter { !$0.hasPrefix("Created") } }).count == 1, "\(texts)")

        // The fleet's secret rotated: every key sealed anew under the new one, which a server
        // started with it opens (the others sign on with the keys their state directories keep).
        let newSecret = dir + "/new.secret"
        #expect(try TestSupport.run(cli, ["store", "secret", newSecret]).status == 0)
        let rekeyed = try TestSupport.run(cli, ["store", "rekey", newSecret, "--config", keysConfig])
        #expect(
            rekeyed.status == 0 && rekeyed.stdout.contains("sealed 3 keys anew"), "\(rekeyed.stdout)\(rekeyed.stderr)")
        let renewed = try fleet.startServer(6, extra: settings, storeExtra: "  key-secret: \(newSecret)")
        defer { renewed.stop() }
        try poll("the rotated keys sign at a server given the new secret\n\(renewed.log)", timeout: 30) {
            try Self.keys(renewed).signer == newTag
        }
        #expect(!renewed.log.contains("does not open"), "\(renewed.log)")
        renewed.stop()

        // The driver stops: another server takes the duty.
        guard let driver = drivers.first else { return }
        #expect(servers[driver].log.contains("now drives the fleet's key rollovers"))
        let others = servers.indices.filter { $0 != driver }
        func takings() -> Int {
            others.map { servers[$0].log.components(separatedBy: "now drives the fleet's key rollovers").count - 1 }
                .reduce(0, +)
        }
        let before = takings()
        servers[driver].stop()
        try poll("another server drives the rollovers", timeout: 30) { takings() > before }
    }
}
