import DNSWire
import Foundation
import NearcastTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Transaction signatures (RFC 8945) end to end: keys made by `nearcast tsig keygen` and given in
/// the config, queries signed by dig, kdig and nsupdate, and each reply checked by the client's own
/// verification.
@Suite(.timeLimit(.minutes(2))) struct TSIGTests {
    /// A daemon serving example.test with two keys: one from `nearcast tsig keygen` in a key file,
    /// one hmac-sha512 key given inline in the YAML; and that key file's path.
    static func start(in dir: URL) throws -> (Daemon, keyFile: String, keyFileSecret: String) {
        let keygen = try TestSupport.run(try TestSupport.product("nearcast"), ["tsig", "keygen", "xfr.example.test"])
        #expect(keygen.status == 0, "\(keygen.stderr)")
        let keyFile = dir.appendingPathComponent("xfr.key")
        try keygen.stdout.write(to: keyFile, atomically: true, encoding: .utf8)
        let secret = try #require(keygen.stdout.split(separator: "\"").dropFirst(3).first.map(String.init))
        try """
        listen: ["127.0.0.1:0"]
        zones:
          - { origin: example.test., file: \(TestSupport.fixtures.appendingPathComponent("example.test.zone").path) }
        tsig:
          key-files: [xfr.key]
          keys:
            - { name: update.example.test., algorithm: hmac-sha512, secret: \(Self.sha512Secret) }
        """.write(to: dir.appendingPathComponent("c.yaml"), atomically: true, encoding: .utf8)
        let daemon = try Daemon(["--config", dir.appendingPathComponent("c.yaml").path])
        return (daemon, keyFile.path, secret)
    }

    static let sha512Secret = Data((0..<64).map { UInt8($0) }).base64EncodedString()

    static func withDaemon(_ body: (Daemon, String, String) throws -> Void) throws {
        let dir = try TemporaryDirectory.url("nearcast-tsig")
        let (daemon, keyFile, secret) = try start(in: dir)
        defer { daemon.stop() }
        try body(daemon, keyFile, secret)
    }

    /// dig signs with the key file keygen wrote, or with -y: the answer comes signed, over UDP and
    /// TCP, and dig's verification of the reply raises nothing. A wrong secret is BADSIG, a key
    /// the server does not have is BADKEY, both NOTAUTH with no data.
    @Test func digSignedQueriesAreAnsweredAndSigned() throws {
        try Self.withDaemon { daemon, keyFile, secret in
            let dig = try TestSupport.tool("dig")
            let at = ["@127.0.0.1", "-p", "\(daemon.dnsPort)"]
            for (key, tcp) in [
                (["-k", keyFile], false), (["-k", keyFile], true),
                (["-y", "hmac-sha256:xfr.example.test:\(secret)"], false),
                (["-y", "hmac-sha512:update.example.test:\(Self.sha512Secret)"], false),
            ] {
                let out = try TestSupport.run(dig, at + key + ["www.example.test", "A"] + (tcp ? ["+tcp"] : []))
                #expect(out.status == 0, "\(out.stderr)")
                #expect(out.stdout.contains("status: NOERROR") && out.stdout.contains("192.0.2.1"), "\(out.stdout)")
                #expect(out.stdout.contains("TSIG\thmac-sha") && out.stdout.contains(" NOERROR 0"), "\(out.stdout)")
                #expect(!out.stdout.contains("Couldn't verify") && !out.stdout.contains("could not be validated"))
            }
            let wrong = try TestSupport.run(
                dig, at + ["-y", "hmac-sha256:xfr.example.test:c2VjcmV0c2VjcmV0c2VjcmV0", "www.example.test", "A"])
            #expect(wrong.stdout.contains("status: NOTAUTH") && wrong.stdout.contains("ANSWER: 0"), "\(wrong.stdout)")
            #expect(wrong.stdout.contains("BADSIG"), "\(wrong.stdout)")
            // The right secret under another algorithm is a key the server does not have.
            let otherAlgorithm = try TestSupport.run(
                dig, at + ["-y", "hmac-sha384:xfr.example.test:\(secret)", "www.example.test", "A"])
            #expect(otherAlgorithm.stdout.contains("status: NOTAUTH") && otherAlgorithm.stdout.contains("BADKEY"))
            let unknown = try TestSupport.run(
                dig, at + ["-y", "hmac-sha256:nobody.example.test:\(secret)", "www.example.test", "A"])
            #expect(unknown.stdout.contains("status: NOTAUTH") && unknown.stdout.contains("BADKEY"))
        }
    }

    /// Keys are part of the config: a new key file takes effect on a reload (SIGHUP here), and the
    /// key it replaced is then one the server does not have.
    @Test func keysAreReloadedWithTheConfig() throws {
        try Self.withDaemon { daemon, keyFile, secret in
            let dig = try TestSupport.tool("dig")
            let at = ["@127.0.0.1", "-p", "\(daemon.dnsPort)", "www.example.test", "A"]
            func status(_ key: String) throws -> String {
                let out = try TestSupport.run(dig, ["-y", key] + at)
                return out.stdout.split(separator: "\n").first { $0.contains("status:") }.map(String.init) ?? out.stdout
            }
            #expect(try status("hmac-sha256:xfr.example.test:\(secret)").contains("status: NOERROR"))
            let next = try TestSupport.run(
                try TestSupport.product("nearcast"), ["tsig", "keygen", "next.example.test", "-a", "hmac-sha384"])
            try next.stdout.write(toFile: keyFile, atomically: true, encoding: .utf8)
            let nextSecret = try #require(next.stdout.split(separator: "\"").dropFirst(3).first.map(String.init))
            kill(daemon.pid, SIGHUP)
            try daemon.waitUntilReady(timeout: 10) {
                (try? status("hmac-sha384:next.example.test:\(nextSecret)"))?.contains("status: NOERROR") == true
            }
            #expect(try status("hmac-sha256:xfr.example.test:\(secret)").contains("status: NOTAUTH"))
        }
    }

    /// kdig verifies every signed reply it gets: silent for a good key, "failed to verify" for an
    /// unsigned BADSIG; a client whose clock is ten minutes slow gets BADTIME, signed so that kdig
    /// verifies it, with the server's time in Other Data.
    @Test func kdigVerifiesRepliesAndSeesBadTime() throws {
        try Self.withDaemon { daemon, _, secret in
            let kdig = try TestSupport.tool("kdig")
            let args = ["@127.0.0.1", "-p", "\(daemon.dnsPort)", "-y", "hmac-sha256:xfr.example.test:\(secret)"]
            let good = try TestSupport.run(kdig, args + ["www.example.test", "A"])
            #expect(good.stdout.contains("status: NOERROR") && good.stdout.contains("192.0.2.1"), "\(good.stdout)")
            #expect(!good.stderr.contains("WARNING"), "\(good.stderr)")
            let wrong = try TestSupport.run(
                kdig,
                [
                    "@127.0.0.1", "-p", "\(daemon.dnsPort)", "-y", "hmac-sha256:xfr.example.test:c2VjcmV0c2VjcmV0",
                    "www.example.test",
                ])
            #expect(wrong.stdout.contains("status: BADSIG") && wrong.stderr.contains("failed to verify TSIG"))

            let faketime = try TestSupport.tool("faketime")
            let late = try TestSupport.run(faketime, ["-f", "-10m", kdig] + args + ["www.example.test", "A"])
            #expect(late.stdout.contains("status: BADTIME") && late.stdout.contains("ANSWER: 0"), "\(late.stdout)")
            // kdig checks the MAC before the time: the reply verified, and its TSIG says BADTIME.
            #expect(late.stderr.contains("TSIG out of time window") && !late.stderr.contains("failed to verify"))
            let fields = try #require(late.stdout.split(separator: "\n").first { $0.contains("BADTIME 6 ") })
                .split(whereSeparator: \.isWhitespace)
            let (asked, serverTime) = (try #require(UInt64(fields[5])), try #require(UInt64(fields.last!)))
            #expect(serverTime >= asked + 590 && serverTime <= asked + 610, "\(fields)")
        }
    }

    /// nsupdate signs an UPDATE: the server does not take updates, and says so (NOTIMP) in a reply
    /// nsupdate verifies; with a wrong secret it reports the TSIG error.
    @Test func nsupdateSeesSignedRefusals() throws {
        try Self.withDaemon { daemon, keyFile, _ in
            let dir = URL(fileURLWithPath: keyFile).deletingLastPathComponent()
            let commands = dir.appendingPathComponent("update.txt")
            try """
            server 127.0.0.1 \(daemon.dnsPort)
            zone example.test
            update add new.example.test 60 A 192.0.2.9
            send

            """.write(to: commands, atomically: true, encoding: .utf8)
            let nsupdate = try TestSupport.tool("nsupdate")
            let signed = try TestSupport.run(nsupdate, ["-k", keyFile, commands.path])
            #expect(
                signed.stderr.contains("update failed: NOTIMP") && !signed.stderr.contains("TSIG"), "\(signed.stderr)")
            let wrong = try TestSupport.run(
                nsupdate, ["-y", "hmac-sha256:xfr.example.test:c2VjcmV0c2VjcmV0c2VjcmV0", commands.path])
            #expect(wrong.stderr.contains("NOTAUTH(BADSIG)"), "\(wrong.stderr)")
        }
    }
}
