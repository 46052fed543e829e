import DNSWire
import Foundation
import NearcastBasics
import NearcastTestSupport
import Testing

@testable import NearcastDNSSEC

/// A ZSK rollover's steps as RFC 7583 §3.2 times them, and the keys' files that keep them: the new
/// key is active once published for Ipub (propagation delay + DNSKEY TTL), the old one inactive
/// then and removed after Iret (re-signing + propagation delay + largest TTL); BIND's timing
/// fields read back as written.
@Suite(.timeLimit(.minutes(1))) struct KeyRolloverTests {
    static let zone = try! DNSName("example.test.")
    static let now = Date(timeIntervalSince1970: 1_795_000_000)

    static func key(_ flags: UInt16, _ timing: KeyTiming = KeyTiming()) -> DNSSECKey {
        var k = DNSSECKey.generate(zone: zone, flags: flags)
        k.timing = timing
        return k
    }

    @Test func theNewKeyIsActiveAfterIpubAndTheOldOneGoesAfterIret() throws {
        let (csk, old) = (Self.key(DNSSECKey.csk), Self.key(DNSSECKey.zsk))
        let new = try KeyRollover.successor(in: [csk, old], at: Self.now).get()
        #expect(new.isZSK && new.timing.isPublished(at: Self.now) && !new.timing.isActive(at: Self.now))
        let intervals = KeyRollover.Intervals(propagation: 60, dnskeyTTL: 300, largestTTL: 3600, resign: 100)
        let (keys, changed) = KeyRollover.schedule([csk, old, new], at: Self.now, intervals)
        #expect(changed.count == 2)
        let activate = Self.now + 360
        #expect(keys[2].timing.activate == activate)
        #expect(keys[1].timing.inactive == activate && keys[1].timing.delete == activate + 100 + 60 + 3600)
        #expect(keys[0].timing == csk.timing, "the combined key is not rolled")
        // Before, between and after the steps.
        #expect(keys[1].timing.isActive(at: activate - 1) && !keys[2].timing.isActive(at: activate - 1))
        #expect(!keys[1].timing.isActive(at: activate) && keys[2].timing.isActive(at: activate))
        #expect(keys[1].timing.isPublished(at: activate + 3759) && !keys[1].timing.isPublished(at: activate + 3760))
        #expect(KeyRollover.nextEvent(keys, after: Self.now) == activate)
        // Nothing waits for a schedule any more; a second rollover waits for this one.
        #expect(KeyRollover.schedule(keys, at: Self.now, intervals).changed.isEmpty)
        #expect(throws: (any Error).self) { try KeyRollover.successor(in: keys, at: Self.now).get() }
    }

    @Test func aZoneWithACombinedKeyAloneIsNotRolledByPrePublication() {
        guard case .failure(let refusal) = KeyRollover.successor(in: [Self.key(DNSSECKey.csk)], at: Self.now) else {
            Issue.record("rolled")
            return
        }
        #expect(refusal.description.contains("--zsk"))
    }

    @Test func theTimingFieldsReadBackAsWritten() throws {
        let dir = try TemporaryDirectory("nearcast-key-timing")
        let store = DNSSECKeyStore(stateDirectory: dir.file("state"))
        var key = Self.key(DNSSECKey.zsk, KeyTiming(publish: Self.now, activate: Self.now + 360))
        let (privateFile, _) = try store.add(key, created: Self.now)
        #expect(try String(contentsOfFile: privateFile, encoding: .utf8).contains("Activate: 20261118"))
        key.timing.inactive = Self.now + 7200
        key.timing.delete = Self.now + 9000
        try store.update(key, created: Self.now)
        let read = try #require(try store.keys(of: Self.zone).first)
        #expect(read.timing == key.timing)
        var st = stat()
        #expect(stat(privateFile, &st) == 0 && st.st_mode & 0o777 == 0o600)
        // A bad time names its line.
        try "Private-key-format: v1.3\nAlgorithm: 13\nPrivateKey: AAAA\nActivate: soon\n".write(
            toFile: privateFile, atomically: true, encoding: .utf8)
        do {
            _ = try store.keys(of: Self.zone)
            Issue.record("read")
        } catch {
            #expect(error.diagnostics.first?.line == 4 && error.description.contains("YYYYMMDDHHMMSS"), "\(error)")
        }
    }
}
