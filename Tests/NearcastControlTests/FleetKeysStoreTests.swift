import DNSWire
import NearcastConfiguration
import NearcastDNSSEC
import NearcastStore
import NearcastTestSupport
import Testing

/// A fleet's keys as the store keeps them: a new key never replaces one of its tag, and a
/// rollover begun from the keys read at a revision is refused once another key came since, so
/// two operators rolling at once do not bring in two successors.
@Suite(.timeLimit(.minutes(1))) struct FleetKeysStoreTests {
    static let zone = try! DNSName("example.test.")

    @Test func aKeyIsAddedOnlyFromTheKeysAsTheyAreNow() async throws {
        let etcd = try EtcdServer()
        defer { etcd.stop() }
        let store = try FleetStoreConnection(EtcdSettings(endpoints: [etcd.endpoint]))
        let secret = FleetKeySecret.generate()
        func key() -> DNSSECKey {
            DNSSECKey.generate(zone: Self.zone, algorithm: .ecdsaP256SHA256, flags: DNSSECKey.zsk)
        }
        do {
            let first = key()
            #expect(try await store.putKey(first, secret: secret, new: true).written)
            #expect(try await !store.putKey(first, secret: secret, new: true).written, "its tag is kept already")
            let read = try await store.storedKeys(of: Self.zone)
            #expect(read.keys.count == 1 && read.unreadable.isEmpty)
            // Another key comes after the read: a key added from that read is refused.
            #expect(try await store.putKey(key(), secret: secret, new: true).written)
            #expect(try await !store.putKey(key(), secret: secret, new: true, keysReadAt: read.revision).written)
            // From the keys as they are now, it goes in; another zone's keys do not count.
            let now = try await store.storedKeys(of: Self.zone)
            let other = DNSSECKey.generate(zone: try DNSName("other.test."), algorithm: .ed25519, flags: DNSSECKey.csk)
            #expect(try await store.putKey(other, secret: secret, new: true).written)
            #expect(try await store.putKey(key(), secret: secret, new: true, keysReadAt: now.revision).written)
            let all = try await store.storedKeys()
            #expect(all.keys.count == 4 && Set(all.keys.map(\.zone)).count == 2)
            #expect(
                try all.keys.allSatisfy { try $0.sealed.open(with: secret, at: $0.at, zone: $0.zone).zone == $0.zone })
        } catch {
            await store.close()
            throw error
        }
        await store.close()
    }
}
