import DNSWire
import Foundation

/// The fixture zone (Tests/Fixtures/example.test.zone) signed ahead, as an operator signs a zone
/// for NSD or Knot to serve: new keys from ldns-keygen (a KSK and a ZSK, ECDSA P-256, algorithm
/// 13) and ldns-signzone, with NSEC or with NSEC3 (salted, two extra iterations, so the hashing
/// of every step is exercised). Made fresh for each test, so signatures are never stale.
public struct SignedFixture: Sendable {
    /// The signed zone file.
    public let zoneFile: URL
    /// The KSK's DS record (SHA-256), in presentation format: what a parent holds, and a
    /// validator's trust anchor.
    public let ds: String
    /// The owner names of the NSEC3 records (none with NSEC).
    public let hashedOwners: [String]

    public static let origin = "example.test."

    /// Signs the fixture in `dir`.
    public static func make(in dir: URL, nsec3: Bool) throws -> SignedFixture {
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let source = dir.appendingPathComponent("example.test.zone")
        try? FileManager.default.removeItem(at: source)
        try FileManager.default.copyItem(
            at: TestSupport.fixtures.appendingPathComponent("example.test.zone"), to: source)
        // ldns-keygen writes its files where it runs and prints their base name.
        func keygen(_ flags: [String]) throws -> String {
            let quoted = (flags + ["-a", "ECDSAP256SHA256", "example.test"]).joined(separator: " ")
            let out = try TestSupport.run(
                "/bin/sh", ["-c", "cd '\(dir.path)' && '\(try TestSupport.tool("ldns-keygen"))' \(quoted)"])
            guard out.status == 0, let base = out.stdout.split(separator: "\n").first else {
                throw TestFailure("ldns-keygen failed: \(out.stderr)")
            }
            return dir.appendingPathComponent(String(base)).path
        }
        let ksk = try keygen(["-k"])
        let zsk = try keygen([])
        let signed = dir.appendingPathComponent("example.test.zone.signed")
        let denial = nsec3 ? ["-n", "-s", "d2a4e1", "-t", "2"] : []
        let out = try TestSupport.run(
            try TestSupport.tool("ldns-signzone"),
            denial + ["-f", signed.path, "-o", "example.test.", source.path, ksk, zsk])
        guard out.status == 0 else { throw TestFailure("ldns-signzone failed: \(out.stderr)") }
        let text = try String(contentsOf: signed, encoding: .utf8)
        let hashed = text.split(separator: "\n").compactMap { line -> String? in
            let f = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            return f.count > 3 && f[3] == "NSEC3" ? String(f[0]) : nil
        }
        // The DS of the KSK, SHA-256, from its public key file.
        let dsOut = try TestSupport.run(
            "/bin/sh",
            ["-c", "cd '\(dir.path)' && '\(try TestSupport.tool("ldns-key2ds"))' -n -2 '\(ksk).key'"])
        guard dsOut.status == 0 else { throw TestFailure("ldns-key2ds failed: \(dsOut.stderr)") }
        let ds = dsOut.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        return SignedFixture(zoneFile: signed, ds: ds, hashedOwners: hashed)
    }

    /// Signs the fixture in `dir` with nearcast's own commands: `nearcast dnssec keygen` (a
    /// combined key of `algorithm`) and `nearcast dnssec sign` (NSEC).
    public static func signedByNearcast(in dir: URL, algorithm: String = "ecdsap256sha256") throws -> SignedFixture {
        let state = dir.appendingPathComponent("state").path
        let cli = try TestSupport.product("nearcast")
        let made = try TestSupport.run(
            cli, ["dnssec", "keygen", "example.test", "--state-dir", state, "--algorithm", algorithm])
        guard made.status == 0, let ds = made.stdout.split(separator: "\n").first(where: { $0.contains(" DS ") }) else {
            throw TestFailure("nearcast dnssec keygen failed: \(made.stderr)")
        }
        let signed = dir.appendingPathComponent("example.test.zone.signed")
        let out = try TestSupport.run(
            cli,
            [
                "dnssec", "sign", "example.test", TestSupport.fixtures.appendingPathComponent("example.test.zone").path,
                "--state-dir", state, "-o", signed.path,
            ])
        guard out.status == 0 else { throw TestFailure("nearcast dnssec sign failed: \(out.stderr)") }
        // "example.test. IN DS tag alg 2 hex", as ldns-key2ds's fields are (a TTL after the owner).
        let f = ds.split(separator: " ")
        return SignedFixture(
            zoneFile: signed, ds: "\(f[0]) 3600 IN DS \(f[3...].joined(separator: " "))", hashedOwners: [])
    }

    /// `ds` as a trust anchor in BIND's syntax (delv's `-a` file).
    public var delvTrustAnchor: String {
        let f = ds.split(whereSeparator: { $0 == " " || $0 == "\t" })
        return "trust-anchors { example.test. static-ds \(f[4]) \(f[5]) \(f[6]) \"\(f[7])\"; };\n"
    }

    /// The questions asked of the signed zone: the fixture's (each with and without EDNS, and with
    /// the DO bit), the DNSSEC types at every name, and questions at the hashed owner names.
    public func queries() -> [(String, RRType, EDNS?)] {
        var out = Fixtures.differentialQueries
        let dnssecTypes: [RRType] = [.rrsig, .nsec, .nsec3, .nsec3param, .dnskey, .ds]
        let names = Set(out.map(\.0)).sorted()
        let editions: [EDNS?] = [EDNS(udpPayloadSize: 1232, dnssecOK: true), EDNS(udpPayloadSize: 1232)]
        for n in names { for t in dnssecTypes { for e in editions { out.append((n, t, e)) } } }
        for h in hashedOwners.prefix(6) {
            for t in [RRType.nsec3, .a, .rrsig, .txt] { for e in editions { out.append((h, t, e)) } }
            for e in editions { out.append(("x." + h, .a, e)) }
        }
        return out
    }
}
