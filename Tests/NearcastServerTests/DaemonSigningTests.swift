import DNSWire
import Foundation
import NearcastTestSupport
import Testing

/// The daemon signs (issue 34): a zone whose key is in the state directory is served signed
/// from an unsigned zone file. delv, with the key's DS as its only anchor, validates its answers
/// and denials; names added, changed and removed through the API, and a record changed in the
/// file and reloaded, validate at once, with the NSEC records beside them; the zone as
/// transferred out passes ldns-verify-zone after the changes; the zone file and its journal keep
/// the data alone, and a restart serves the zone signed again, changes included.
@Suite(.timeLimit(.minutes(3))) struct DaemonSigningTests {
    static let token = "signing-test-admin-token-0123456789"

    /// A state directory with a key of example.test made by `nearcast dnssec keygen`; its DS as
    /// a delv trust anchor.
    static func keyed(in dir: TemporaryDirectory) throws -> (state: String, anchors: String) {
        let state = dir.file("state")
        let made = try TestSupport.run(
            try TestSupport.product("nearcast"), ["dnssec", "keygen", "example.test", "--state-dir", state])
        let ds = try #require(made.stdout.split(separator: "\n").first { $0.contains(" DS ") }, "\(made.stderr)")
        let f = ds.split(separator: " ")  // example.test. IN DS tag alg 2 hex
        let anchors = try dir.write(
            "trust-anchors { example.test. static-ds \(f[3]) \(f[4]) \(f[5]) \"\(f[6...].joined())\"; };\n",
            to: "anchors.conf")
        return (state, anchors)
    }

    /// nearcastd serving `zoneFile` as example.test with keys in `state`; `settings`: config lines added.
    static func start(_ zoneFile: String, state: String, in dir: TemporaryDirectory, settings: String = "") throws
        -> Daemon
    {
        let tokens = try dir.write("admin \(token)\n", to: "tokens")
        let config = try dir.write(
            """
            listen: ["127.0.0.1:0"]
            state-dir: \(state)
            zonefile-sync: 1
            \(settings)
            api: { listen: "127.0.0.1:0", tokens: \(tokens) }
            zones:
              - origin: example.test.
                file: \(zoneFile)
                allow-transfer: ["127.0.0.1"]
            """, to: "config-\(UUID().uuidString).yaml")
        return try Daemon(["--config", config])
    }

    /// delv's verdicts on `questions` (name, type, what the answer must hold) asked of `daemon`.
    static func expectValidated(
        _ daemon: Daemon, _ anchors: String, _ questions: [(String, String, String)],
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        for (name, type, outcome) in questions {
            let out = try SignedZoneTests.delv(daemon, anchors, name, type)
            #expect(
                out.contains("fully validated") && out.contains(outcome), "\(name) \(type):\n\(out)",
                sourceLocation: sourceLocation)
        }
    }

    /// The zone as transferred out passes ldns-verify-zone (every signature, the NSEC chain).
    static func expectVerified(_ daemon: Daemon, in dir: TemporaryDirectory) throws {
        let axfr = try TestSupport.run(
            try TestSupport.tool("kdig"), ["@127.0.0.1", "-p", "\(daemon.dnsPort)", "example.test.", "AXFR"])
        #expect(axfr.status == 0 && axfr.stdout.contains("NSEC"), "\(axfr.stderr)")
        let verify = try TestSupport.run(
            try TestSupport.tool("ldns-verify-zone"), [try dir.write(axfr.stdout, to: "axfr.zone")])
        #expect(verify.status == 0, "\(verify.stdout)\(verify.stderr)")
    }

    @Test func aZoneWithKeysIsServedSignedAndStaysSoThroughItsChanges() async throws {
        try await TestSupport.blocking {
            let dir = try TemporaryDirectory("nearcast-daemon-signs")
            let (state, anchors) = try Self.keyed(in: dir)
            let zoneFile = try dir.write(
                try String(
                    contentsOf: TestSupport.fixtures.appendingPathComponent("example.test.zone"), encoding: .utf8),
                to: "example.test.zone")
            var daemon = try Self.start(zoneFile, state: state, in: dir)
            defer { daemon.stop() }
            #expect(daemon.log.contains("zone signed"), "\(daemon.log)")
            try Self.expectValidated(daemon, anchors, SignedZoneTests.validated)
            try Self.expectVerified(daemon, in: dir)

            // Through the API: a name added, an RRset changed, a name removed.
            func cli(_ args: String) throws {
                let out = try daemon.cli(args.split(separator: " ").map(String.init), token: Self.token)
                #expect(out.status == 0, "\(args): \(out.stdout)\(out.stderr)")
            }
            try cli("record add example.test. new A 192.0.2.50")
            try cli("record set example.test. www A 192.0.2.9")
            try cli("record delete example.test. ptr PTR")
            try Self.expectValidated(
                daemon, anchors,
                [
                    ("new.example.test", "A", "192.0.2.50"), ("new.example.test", "TXT", "nxrrset"),
                    ("newer.example.test", "A", "nxdomain"), ("www.example.test", "A", "192.0.2.9"),
                    ("ptr.example.test", "PTR", "nxdomain"), ("mail.example.test", "A", "192.0.2.25"),
                ])
            try Self.expectVerified(daemon, in: dir)
            // The signer's records are its own.
            let refused = try daemon.cli(
                ["record", "add", "example.test.", "www", "NSEC", "example.test.", "A"], token: Self.token)
            #expect(refused.status != 0 && refused.stderr.contains("signed here"), "\(refused.stdout)\(refused.stderr)")

            // The file, once written back (the data alone), changed and reloaded: the change
            // re-signed, the rest as it was.
            try poll("the changes written back to the zone file", timeout: 20) {
                (try String(contentsOfFile: zoneFile, encoding: .utf8)).contains("192.0.2.50")
            }
            #expect(!(try String(contentsOfFile: zoneFile, encoding: .utf8)).contains("RRSIG"))
            let text = try String(contentsOfFile: zoneFile, encoding: .utf8)
            try text.replacingOccurrences(of: "2026112201", with: "2026112299")
                .replacingOccurrences(of: "192.0.2.25", with: "192.0.2.26")
                .write(toFile: zoneFile, atomically: true, encoding: .utf8)
            let reload = try daemon.cli(["reload"], token: Self.token)
            #expect(reload.status == 0, "\(reload.stdout)\(reload.stderr)")
            try Self.expectValidated(
                daemon, anchors,
                [("mail.example.test", "A", "192.0.2.26"), ("www.example.test", "AAAA", "2001:db8::1")])

            // A restart signs the zone again, changes included.
            daemon.stop()
            daemon = try Self.start(zoneFile, state: state, in: dir)
            try Self.expectValidated(
                daemon, anchors, [("new.example.test", "A", "192.0.2.50"), ("mail.example.test", "A", "192.0.2.26")])
            try Self.expectVerified(daemon, in: dir)
        }
    }

    /// The expiration of the signature over `name`'s `type` RRset as `daemon` serves it (its
    /// YYYYMMDDHHmmSS), and the zone's serial. Throws, recording nothing, when dig got no
    /// signature (a poll asks again: a dig on a loaded machine can time out).
    static func signatureEnd(_ daemon: Daemon, _ name: String, _ type: String) throws -> (String, UInt32) {
        let out = try daemon.dig(["+norec", "+dnssec", "+short", name, type])
        guard let sig = out.stdout.split(separator: "\n").first(where: { $0.hasPrefix("\(type) ") }) else {
            throw TestFailure("no signature over \(name) \(type): \(out.stdout)\(out.stderr)")
        }
        let soa = try daemon.dig(["+norec", "+short", "example.test.", "SOA"]).stdout.split(separator: " ")
        return (String(sig.split(separator: " ")[4]), UInt32(soa.count > 2 ? soa[2] : "") ?? 0)
    }

    /// Signatures are made anew before they end: with `signature-validity: 60`, once less than
    /// 30 s of a signature is left one that ends later replaces it, the zone's serial goes up
    /// (secondaries take the new ones), and the answers validate throughout.
    @Test func signaturesAreMadeAnewBeforeTheyEnd() async throws {
        try await TestSupport.blocking {
            let dir = try TemporaryDirectory("nearcast-signatures-refreshed")
            let (state, anchors) = try Self.keyed(in: dir)
            let zoneFile = try dir.write(
                try String(
                    contentsOf: TestSupport.fixtures.appendingPathComponent("example.test.zone"), encoding: .utf8),
                to: "example.test.zone")
            let daemon = try Self.start(zoneFile, state: state, in: dir, settings: "signature-validity: 60")
            defer { daemon.stop() }
            let (firstEnd, firstSerial) = try Self.signatureEnd(daemon, "www.example.test.", "A")
            try poll("a signature made anew", timeout: 60) {
                try Self.signatureEnd(daemon, "www.example.test.", "A").0 > firstEnd
            }
            let (_, serial) = try Self.signatureEnd(daemon, "www.example.test.", "A")
            #expect(serial > firstSerial, "the serial goes up with the new signatures")
            #expect(daemon.log.contains("signatures refreshed"), "\(daemon.log)")
            try Self.expectValidated(
                daemon, anchors,
                [("www.example.test", "A", "192.0.2.1"), ("nope.example.test", "A", "nxdomain")])
            try Self.expectVerified(daemon, in: dir)
        }
    }

    /// A zone with a 2-second TTL everywhere, and a combined key (its DS the anchor) and a ZSK.
    /// The tags of the keys in the DNSKEY RRset `daemon` serves, and the tag that signs www's A.
    static func keys(_ daemon: Daemon) throws -> (dnskey: Set<Int>, signer: Int?) {
        let tags = try daemon.dig(["+norec", "+multiline", "example.test.", "DNSKEY"]).stdout
            .components(separatedBy: "key id = ").dropFirst().compactMap { Int($0.prefix { $0.isNumber }) }
        let sig = try daemon.dig(["+norec", "+dnssec", "+short", "www.example.test.", "A"]).stdout
            .split(separator: "\n").first { $0.hasPrefix("A ") }?.split(separator: " ")
        return (Set(tags), sig.flatMap { $0.count > 6 ? Int($0[6]) : nil })
    }

    /// The tag `nearcast dnssec keygen` says it made ("; key TAG, ...").
    static func tag(_ out: TestSupport.Output) -> Int? {
        out.stdout.split(separator: " ").dropFirst(2).first.flatMap { Int($0.trimmingCharacters(in: [","])) }
    }

    static let shortLived = """
        $ORIGIN example.test.
        $TTL 2
        @    SOA ns1 hostmaster 2026112801 3600 600 1209600 2
        @    NS  ns1
        ns1  A   127.0.0.1
        www  A   192.0.2.1
        mail A   192.0.2.25
        """

    /// A ZSK rollover by pre-publication (RFC 7583 §3.2) through all its steps, with 2-second
    /// TTLs and a propagation delay of a second, Unbound validating throughout: `nearcast dnssec
    /// roll` and a reload begin it; the new key is published beside the old, then signs the zone
    /// in its place, then the old key leaves the DNSKEY RRset. Every answer Unbound gives on the
    /// way is secure (AD); the keys' files hold the steps' times.
    @Test func aZoneSigningKeyIsRolledWhileAValidatorTrustsTheZone() async throws {
        try await TestSupport.blocking {
            let dir = try TemporaryDirectory("nearcast-key-rollover")
            let (state, anchors) = try Self.keyed(in: dir)
            let cli = try TestSupport.product("nearcast")
            let zsk = try TestSupport.run(cli, ["dnssec", "keygen", "example.test", "--zsk", "--state-dir", state])
            let oldTag = try #require(Self.tag(zsk), "\(zsk.stdout)\(zsk.stderr)")
            let zoneFile = try dir.write(Self.shortLived, to: "example.test.zone")
            let daemon = try Self.start(
                zoneFile, state: state, in: dir, settings: "signature-validity: 3600\npropagation-delay: 1")
            defer { daemon.stop() }
            let unbound = try ValidatingResolver.Local(
                anchor: try ValidatingResolver.anchor(fromDelvAnchors: anchors), server: "127.0.0.1@\(daemon.dnsPort)",
                directory: dir.path)
            defer { unbound.stop() }
            let resolve = unbound.resolve
            func keys() throws -> (dnskey: Set<Int>, signer: Int?) { try Self.keys(daemon) }
            let before = try keys()
            #expect(before.dnskey.count == 2 && before.signer == oldTag, "\(before)")

            let roll = try TestSupport.run(cli, ["dnssec", "roll", "example.test", "--state-dir", state])
            #expect(roll.status == 0, "\(roll.stdout)\(roll.stderr)")
            let reload = try daemon.cli(["reload"], token: Self.token)
            #expect(reload.status == 0, "\(reload.stdout)\(reload.stderr)")
            // Through every step, each answer Unbound gives is secure.
            var seen: [Set<Int>] = []
            var insecure: [String] = []
            try poll("the old key gone from the DNSKEY RRset", timeout: 90) {
                for (name, type) in [("www.example.test", "A"), ("nope.example.test", "A")] {
                    let out = try resolve(name, type)
                    if !out.contains(" ad") { insecure.append("\(name) \(type): \(out)") }
                }
                let now = try keys()
                if seen.last != now.dnskey { seen.append(now.dnskey) }
                return !now.dnskey.contains(oldTag) && now.signer != oldTag
            }
            #expect(insecure.isEmpty, "\(insecure.prefix(3))")
            let newTag = try #require(keys().signer)
            #expect(newTag != oldTag)
            #expect(
                seen.contains { $0.count == 3 && $0.contains(oldTag) && $0.contains(newTag) },
                "published together: \(seen)")
            #expect(daemon.log.contains("key rollover scheduled"), "\(daemon.log)")
            let files = try FileManager.default.contentsOfDirectory(atPath: state + "/dnssec/example.test")
            let old = try #require(files.first { $0.hasSuffix(String(format: "%05d.private", oldTag)) })
            let text = try String(contentsOfFile: state + "/dnssec/example.test/" + old, encoding: .utf8)
            #expect(text.contains("Inactive: ") && text.contains("Delete: "), "\(text)")
            try Self.expectVerified(daemon, in: dir)
        }
    }

    /// Geo names in a zone signed here (issue 34): each client's nodes come signed, and delv
    /// validates them from clients in Paris, New York and Tokyo (its source address located by
    /// the database); the geo name is in the NSEC chain with its types, so NODATA at it and
    /// NXDOMAIN beside it validate too, and the zone as transferred passes ldns-verify-zone.
    @Test func geoAnswersAreSignedForEachClient() async throws {
        try await TestSupport.blocking {
            let dir = try TemporaryDirectory("nearcast-signed-geo")
            let (state, anchors) = try Self.keyed(in: dir)
            let database = dir.file("city.mmdb")
            try Fixtures.writeCityDatabase(
                [("127.0.1.0/24", "paris"), ("127.0.2.0/24", "new-york"), ("127.0.3.0/24", "tokyo")], to: database)
            let zoneFile = try dir.write(
                try String(
                    contentsOf: TestSupport.fixtures.appendingPathComponent("example.test.zone"), encoding: .utf8),
                to: "example.test.zone")
            let daemon = try Self.start(
                zoneFile, state: state, in: dir,
                settings: """
                    geo:
                      database: \(database)
                    \(Fixtures.fourNodes(indent: 2))
                      names:
                        - { name: geo.example.test, type: A, pool: web, answers: 2, ttl: 20 }
                        - { name: geo.example.test, type: AAAA, pool: web, all-down: nodata }
                    """)
            defer { daemon.stop() }
            #expect(daemon.log.contains("geo answers signed"), "\(daemon.log)")
            func delv(from source: String, _ name: String, _ type: String) throws -> String {
                let out = try TestSupport.run(
                    try TestSupport.tool("delv"),
                    [
                        "@127.0.0.1", "-p", "\(daemon.dnsPort)", "-b", source, "-a", anchors, "+root=example.test",
                        name, type,
                    ])
                return out.stdout + out.stderr
            }
            // Each client its nearest two, validated: Paris, New York, Tokyo.
            var answers: Set<String> = []
            for (source, nearest) in [
                ("127.0.1.1", "192.0.2.20"), ("127.0.2.1", "192.0.2.30"), ("127.0.3.1", "192.0.2.40"),
            ] {
                let out = try delv(from: source, "geo.example.test", "A")
                #expect(out.contains("fully validated") && out.contains(nearest), "\(source):\n\(out)")
                answers.insert(out.split(separator: "\n").filter { $0.contains("\tA\t") }.sorted().joined())
            }
            #expect(answers.count == 3, "\(answers)")
            #expect(try delv(from: "127.0.1.1", "geo.example.test", "AAAA").contains("fully validated"))
            try Self.expectValidated(
                daemon, anchors,
                [
                    ("geo.example.test", "MX", "nxrrset"), ("geo2.example.test", "A", "nxdomain"),
                    ("gen.example.test", "A", "nxdomain"),
                ])
            // The chain holds the geo name with its types.
            let nodata = try daemon.dig(["+norec", "+dnssec", "geo.example.test", "MX"]).stdout
            #expect(
                nodata.split(separator: "\n").contains {
                    $0.hasPrefix("geo.example.test.") && $0.contains("NSEC") && $0.contains(" A AAAA RRSIG NSEC")
                }, "\(nodata)")
            // Asked by a resolver for its client (ECS), the answer comes with its signature.
            let ecs = try daemon.dig(["+norec", "+dnssec", "+subnet=127.0.3.0/24", "geo.example.test", "A"]).stdout
            #expect(ecs.contains("RRSIG\tA 13 3 20 ") && ecs.contains("192.0.2.40"), "\(ecs)")
            try Self.expectVerified(daemon, in: dir)

            // A geo name added by a reload comes into the chain (a change of the zone, not the
            // zone signed whole), and validates at once; the one removed leaves it.
            let config = try #require(
                try FileManager.default.contentsOfDirectory(atPath: dir.path).first { $0.hasPrefix("config-") })
            let text = try String(contentsOfFile: dir.file(config), encoding: .utf8)
            try text.replacingOccurrences(
                of: "name: geo.example.test, type: AAAA", with: "name: geo2.example.test, type: AAAA"
            )
            .write(toFile: dir.file(config), atomically: true, encoding: .utf8)
            let reload = try daemon.cli(["reload"], token: Self.token)
            #expect(reload.status == 0, "\(reload.stdout)\(reload.stderr)")
            #expect(try delv(from: "127.0.2.1", "geo2.example.test", "AAAA").contains("2001:db8::30"))
            try Self.expectValidated(
                daemon, anchors,
                [
                    ("geo2.example.test", "AAAA", "fully validated"), ("geo2.example.test", "A", "nxrrset"),
                    ("geo.example.test", "AAAA", "nxrrset"), ("geo.example.test", "A", "192.0.2."),
                ])
            #expect(!daemon.log.contains("zone signed whole"), "\(daemon.log)")
            try Self.expectVerified(daemon, in: dir)

            // Every node drained, and the AAAA name's policy NODATA: its NODATA validates (the
            // name's NSEC without AAAA, signed as the answers are).
            for node in ["fra1", "par1", "nyc1", "tyo1"] {
                let drained = try daemon.cli(["node", "drain", node, "--for", "10m"], token: Self.token)
                #expect(drained.status == 0, "\(drained.stdout)\(drained.stderr)")
            }
            try poll("geo2's AAAA a NODATA", timeout: 10) {
                try daemon.dig(["+norec", "+short", "geo2.example.test", "AAAA"]).stdout.isEmpty
            }
            try Self.expectValidated(daemon, anchors, [("geo2.example.test", "AAAA", "nxrrset")])
        }
    }
}
