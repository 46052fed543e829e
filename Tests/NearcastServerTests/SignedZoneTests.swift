import DNSWire
import Foundation
import NearcastTestSupport
import Testing

/// A zone signed ahead (issue 34), served as NSD and Knot serve it: nearcastd, NSD and Knot serve
/// the fixture signed by ldns-signzone, with NSEC and with NSEC3, and are asked the fixture's
/// questions with the DO bit, the DNSSEC types at every name and questions at the hashed owner
/// names; nearcast's replies (signatures, NSEC and NSEC3 proofs of NXDOMAIN, NODATA, wildcards,
/// referrals with DS or the proof of none) must equal each reference's but for the listed
/// differences.
@Suite(.timeLimit(.minutes(4))) struct SignedZoneTests {
    typealias Reference = ReferenceServerDifferentialTests.Reference

    /// Who signed the fixture, and how it denies existence.
    enum Signing: String, CaseIterable, CustomStringConvertible {
        /// ldns-signzone with NSEC, with NSEC3 (salted, iterated), and nearcast's own signer (NSEC).
        case ldnsNSEC, ldnsNSEC3, nearcast
        var description: String { rawValue }
        var nsec3: Bool { self == .ldnsNSEC3 }

        func sign(in dir: URL) throws -> SignedFixture {
            switch self {
            case .ldnsNSEC, .ldnsNSEC3: try SignedFixture.make(in: dir, nsec3: nsec3)
            case .nearcast: try SignedFixture.signedByNearcast(in: dir)
            }
        }
    }

    /// The differences each reference shows on the signed zone.
    static func differences(_ reference: Reference, nsec3: Bool) -> [ReferenceServerDifferentialTests.KnownDifference] {
        switch (reference, nsec3) {
        case (.nsd, false): [.minimalResponses, .anyPicksOneRRset, .dnssecTypeAtCNAME, .dnameNXDOMAINHalfProved]
        case (.nsd, true): [.minimalResponses, .anyPicksOneRRset, .dnssecTypeAtCNAME, .belowHashedOwner]
        case (.knot, false): [.anyPicksOneRRset, .yxdomainExplained, .rrsigAnsweredInPart, .wildcardNSECUnproved]
        case (.knot, true): [.anyPicksOneRRset, .yxdomainExplained, .rrsigAnsweredInPart, .wildcardOwnNameNoData]
        }
    }

    @Test(arguments: Signing.allCases, Reference.allCases)
    func agreesWithTheReferenceServer(signing: Signing, reference: Reference) async throws {
        let nsec3 = signing.nsec3
        let (compared, mismatches, used) = try await TestSupport.blocking {
            try Self.compareServing(reference, signing: signing)
        }
        #expect(compared > 1500)
        let report =
            "\(mismatches.count) differences:\n"
            + mismatches.prefix(ProcessInfo.processInfo.environment["NC_DIFF_ALL"] == nil ? 8 : 500).joined(
                separator: "\n")
        #expect(mismatches.count == 0, "\(report)")
        for d in Self.differences(reference, nsec3: nsec3) {
            #expect(used[d, default: 0] > 0, "\(d) never occurred with \(reference)")
        }
    }

    /// Signs the fixture, starts `reference` and nearcastd on it and compares their replies.
    static func compareServing(_ reference: Reference, signing: Signing) throws -> (
        Int, [String], [ReferenceServerDifferentialTests.KnownDifference: Int]
    ) {
        let dir = try TemporaryDirectory.url("nearcast-signed-\(reference)")
        let signed = try signing.sign(in: dir)
        let port = try TestSupport.unusedPort()
        let server = try reference.start(dir: dir, port: port, file: signed.zoneFile)
        defer { server.stop() }
        let nearcast = try Daemon([
            "--zone", "example.test=\(signed.zoneFile.path)", "--listen", "127.0.0.1:0", "--threads", "2",
        ])
        defer { nearcast.stop() }
        try server.waitUntilReady {
            RawClient.udp(RawClient.query("example.test.", .soa), port: port, timeout: 0.2).map {
                (try? DNSMessage(wire: $0))?.rcode == .noError
            } == true
        }
        // What NSD adds to positive answers (`minimalResponses`): the apex NS RRset and the
        // addresses of its servers, each with its signatures.
        func answers(_ name: String, _ type: RRType) -> [String] {
            let q = RawClient.query(name, type, edns: EDNS(udpPayloadSize: 1232, dnssecOK: true))
            let reply = RawClient.udp(q, port: port).flatMap { try? DNSMessage(wire: $0) }
            return reply?.answers.map { $0.description.lowercased() } ?? []
        }
        let apexNS = answers("example.test.", .ns)
        let addresses = [("ns1", RRType.a), ("ns1", .aaaa), ("ns2", .a)].flatMap {
            answers("\($0.0).example.test.", $0.1)
        }
        #expect(apexNS.count == 3 && addresses.count == 6, "\(apexNS) \(addresses)")

        let withDO = signed.queries().filter { $0.2?.dnssecOK == true }
        return try ReferenceServerDifferentialTests.compare(
            withDO, nearcast: nearcast.dnsPort, reference, at: port, apexNS: apexNS, nsAddresses: Set(addresses),
            differences: differences(reference, nsec3: signing.nsec3))
    }

    /// The questions a validator asks and what it must conclude: a signed answer (static, a
    /// wildcard's, a CNAME chain's, a DNAME's), or a signed NXDOMAIN or NODATA.
    static let validated: [(String, String, outcome: String)] = [
        ("www.example.test", "A", "192.0.2.1"), ("example.test", "MX", "mail.example.test."),
        ("x.wild.example.test", "TXT", "\"wild\""), ("alias.example.test", "AAAA", "2001:db8::1"),
        ("chain1.example.test", "A", "192.0.2.2"), ("q.cw.example.test", "A", "192.0.2.1"),
        ("www.home.example.test", "A", "192.0.2.1"), ("types.example.test", "TLSA", "3 1 1"),
        ("nope.example.test", "A", "nxdomain"), ("deep.nope.example.test", "TXT", "nxdomain"),
        ("dangling.example.test", "A", "nxdomain"), ("nope.home.example.test", "A", "nxdomain"),
        ("www.example.test", "TXT", "nxrrset"), ("b.c.example.test", "A", "nxrrset"),
        ("x.wild.example.test", "MX", "nxrrset"), ("sub.example.test", "DS", "DS"),
        ("sub.wild.example.test", "AAAA", "nxrrset"), ("svc.example.test", "HTTPS", "no-default-alpn"),
    ]

    /// delv, BIND's validating lookup, with the KSK's DS as its only trust anchor, asking
    /// nearcastd directly: every answer and every proof of nonexistence is `fully validated`.
    /// An AXFR of the zone passes ldns-verify-zone. One signature changed in the zone file (the
    /// A RRset of www) and delv refuses that answer, and only that one.
    @Test(arguments: Signing.allCases) func validatorsAcceptWhatItServes(signing: Signing) async throws {
        try await TestSupport.blocking {
            let dir = try TemporaryDirectory("nearcast-validated")
            let signed = try signing.sign(in: dir.url)
            let anchors = try dir.write(signed.delvTrustAnchor, to: "anchors.conf")
            let daemon = try Self.serve(signed.zoneFile.path, in: dir)
            defer { daemon.stop() }
            for (name, type, outcome) in Self.validated {
                let out = try Self.delv(daemon, anchors, name, type)
                #expect(out.contains("fully validated") && out.contains(outcome), "\(name) \(type):\n\(out)")
            }
            // The zone as transferred out, checked by ldns: every signature and the NSEC(3) chain.
            let axfr = try TestSupport.run(
                try TestSupport.tool("kdig"), ["@127.0.0.1", "-p", "\(daemon.dnsPort)", "example.test.", "AXFR"])
            #expect(axfr.status == 0 && axfr.stdout.contains("RRSIG"), "\(axfr.stderr)")
            let transferred = try dir.write(axfr.stdout, to: "axfr.zone")
            let verify = try TestSupport.run(try TestSupport.tool("ldns-verify-zone"), [transferred])
            #expect(verify.status == 0, "\(verify.stdout)\(verify.stderr)")

            // One signature broken: that answer is refused, the others still validate.
            let text = try String(contentsOf: signed.zoneFile, encoding: .utf8)
            let tampered = try dir.write(Self.breakingSignature(of: "www.example.test.", "A", in: text), to: "bad.zone")
            let bad = try Self.serve(tampered, in: dir)
            defer { bad.stop() }
            let refused = try Self.delv(bad, anchors, "www.example.test", "A")
            #expect(!refused.contains("fully validated") && refused.contains("resolution failed"), "\(refused)")
            #expect(try Self.delv(bad, anchors, "mail.example.test", "A").contains("fully validated"))
        }
    }

    /// nearcastd serving `file` as example.test, which 127.0.0.1 may transfer.
    static func serve(_ file: String, in dir: TemporaryDirectory) throws -> Daemon {
        let config = try dir.write(
            """
            listen: ["127.0.0.1:0"]
            zones:
              - origin: example.test.
                file: \(file)
                allow-transfer: ["127.0.0.1"]
            """, to: "config-\(UUID().uuidString).yaml")
        return try Daemon(["--config", config])
    }

    /// What delv says of `name` and `type` asked of `daemon`, validating from `anchors`.
    static func delv(_ daemon: Daemon, _ anchors: String, _ name: String, _ type: String) throws -> String {
        let out = try TestSupport.run(
            try TestSupport.tool("delv"),
            ["@127.0.0.1", "-p", "\(daemon.dnsPort)", "-a", anchors, "+root=example.test", name, type])
        return out.stdout + out.stderr
    }

    /// `zone` (a zone file's text) with one byte of the signature over `name`'s `type` RRset changed.
    static func breakingSignature(of name: String, _ type: String, in zone: String) throws -> String {
        var lines = zone.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let i = try #require(
            lines.firstIndex {
                let f = $0.split(whereSeparator: { $0 == " " || $0 == "\t" })
                return f.count > 5 && f[0] == name && f[3] == "RRSIG" && f[4] == type
            })
        // The signature is the last field, base64: its first character changed.
        var fields = lines[i].split(separator: "\t").map(String.init)
        var last = fields.removeLast().split(separator: " ").map(String.init)
        let sig = last.removeLast()
        let first = sig.first == "A" ? "B" : "A"
        lines[i] = (fields + [(last + [first + sig.dropFirst()]).joined(separator: " ")]).joined(separator: "\t")
        return lines.joined(separator: "\n")
    }

    /// A secondary of a Knot that signs the zone itself (`dnssec-signing: on`, NSEC): the signed
    /// zone comes by AXFR and validates; a name added with knotc comes by IXFR with the NSEC
    /// records Knot changed around it, and the new name, NODATA at it and NXDOMAIN beside it
    /// validate: the chain the proofs are read from follows an incremental change.
    @Test func aSecondaryOfASigningKnotFollowsItsSignedChanges() async throws {
        try await TestSupport.blocking {
            let dir = try TemporaryDirectory("nearcast-signed-secondary")
            let (file, _) = try TransferInTests.zone(in: dir)
            let knotPort = try TestSupport.unusedPort()
            let daemon = try SecondaryZoneTests.secondary(in: dir, primaries: [knotPort])
            defer { daemon.process.stop() }
            let (knot, socket) = try SecondaryZoneTests.knot(
                file: file, port: knotPort, notify: [daemon.dnsPort], label: "nearcast-signing-knot",
                zoneOptions: "    dnssec-signing: on")
            defer { knot.stop() }
            _ = try TestSupport.run(try TestSupport.tool("knotc"), ["-s", socket, "zone-notify", "example.test."])
            try poll("the signed zone served", timeout: 20) {
                try daemon.dig(["+norec", "+dnssec", "www.example.test.", "A"]).stdout.contains("RRSIG")
            }
            // The KSK as the anchor (Knot made the keys).
            let keys = try daemon.dig(["+norec", "+short", "example.test.", "DNSKEY"]).stdout
            let ksk = try #require(keys.split(separator: "\n").first { $0.hasPrefix("257 ") })
            let f = ksk.split(separator: " ")
            let anchors = try dir.write(
                "trust-anchors { example.test. static-key \(f[0]) \(f[1]) \(f[2]) \"\(f[3...].joined())\"; };\n",
                to: "anchors.conf")
            func validated(_ name: String, _ type: String) throws -> String {
                try Self.delv(daemon, anchors, name, type)
            }
            #expect(try validated("www.example.test", "A").contains("fully validated"))
            #expect(try validated("nope.example.test", "A").contains("fully validated"))

            for command in [
                ["zone-begin", "example.test."], ["zone-set", "example.test.", "new", "300", "A", "192.0.2.77"],
                ["zone-commit", "example.test."],
            ] {
                let out = try TestSupport.run(try TestSupport.tool("knotc"), ["-s", socket] + command)
                #expect(out.status == 0, "\(command): \(out.stdout)\(out.stderr)")
            }
            try poll("the signed change served", timeout: 20) {
                try daemon.dig(["+norec", "+short", "new.example.test.", "A"]).stdout.contains("192.0.2.77")
            }
            #expect(daemon.log.contains("asked=IXFR"), "\(daemon.log)")
            for (name, type, outcome) in [
                ("new.example.test", "A", "192.0.2.77"), ("new.example.test", "TXT", "nxrrset"),
                ("nex.example.test", "A", "nxdomain"), ("newer.example.test", "A", "nxdomain"),
            ] {
                let out = try validated(name, type)
                #expect(out.contains("fully validated") && out.contains(outcome), "\(name) \(type): \(out)")
            }
        }
    }

    /// The operator's commands: `nearcast dnssec keygen` keeps a key (Ed25519 here) in the
    /// config's state directory and prints its DS, `import` keeps one ldns made, `ds` prints the
    /// DS of both, and `sign` signs the zone file with both: ldns-verify-zone checks every
    /// signature and the NSEC chain. Without a state directory the commands say so.
    @Test func theCommandLineMakesImportsAndSignsWithKeys() async throws {
        try await TestSupport.blocking {
            let dir = try TemporaryDirectory("nearcast-dnssec-cli")
            let config = try dir.write("listen: [\"127.0.0.1:0\"]\nstate-dir: state\n", to: "c.yaml")
            let cli = try TestSupport.product("nearcast")
            let made = try TestSupport.run(
                cli, ["dnssec", "keygen", "example.test", "-a", "ed25519", "--config", config])
            #expect(made.status == 0, "\(made.stderr)")
            let base = try TestSupport.run(
                "/bin/sh",
                ["-c", "cd '\(dir.path)' && '\(try TestSupport.tool("ldns-keygen"))' -a ECDSAP256SHA256 example.test"])
            let imported = try TestSupport.run(
                cli,
                [
                    "dnssec", "import", "example.test",
                    dir.file(base.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
                        + ".private", "--config", config,
                ])
            #expect(
                imported.status == 0 && imported.stdout.contains("flags 256"), "\(imported.stdout)\(imported.stderr)")
            let ds = try TestSupport.run(cli, ["dnssec", "ds", "example.test", "--config", config])
            let records = ds.stdout.split(separator: "\n").map(String.init)
            #expect(
                ds.status == 0 && records.count == 1 && made.stdout.contains(records[0]), "only the KSK: \(ds.stdout)")

            let signed = dir.file("signed.zone")
            let sign = try TestSupport.run(
                cli,
                [
                    "dnssec", "sign", "example.test",
                    TestSupport.fixtures.appendingPathComponent("example.test.zone").path,
                    "--config", config, "-o", signed,
                ])
            #expect(sign.status == 0, "\(sign.stderr)")
            let verify = try TestSupport.run(try TestSupport.tool("ldns-verify-zone"), [signed])
            #expect(verify.status == 0, "\(verify.stdout)\(verify.stderr)")
            let text = try String(contentsOfFile: signed, encoding: .utf8)
            #expect(text.contains(" 15 2 300 ") && text.contains(" 13 2 300 "), "signed by both keys")

            let none = try dir.write("listen: [\"127.0.0.1:0\"]\n", to: "none.yaml")
            let refused = try TestSupport.run(cli, ["dnssec", "keygen", "example.test", "--config", none])
            #expect(refused.status != 0 && refused.stderr.contains("has no state-dir"), "\(refused.stderr)")
        }
    }
}
