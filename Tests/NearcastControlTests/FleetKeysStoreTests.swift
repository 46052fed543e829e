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

    /// A new fleet secret: every key sealed under it instead, none changed otherwise; run again,
    /// nothing more is sealed; a key that opens with neither secret is named, not written.
    @Test func aNewSecretSealsEveryKeyAnewOnce() async throws {
        let etcd = try EtcdServer()
        defer { etcd.stop() }
        let store = try FleetStoreConnection(EtcdSettings(endpoints: [etcd.endpoint]))
        let (old, new, stranger) = (FleetKeySecret.generate(), FleetKeySecret.generate(), FleetKeySecret.generate())
        do {
            let keys = [
                DNSSECKey.generate(zone: Self.zone, algorithm: .ecdsaP256SHA256, flags: DNSSECKey.csk),
                DNSSECKey.generate(zone: try DNSName("other.test."), algorithm: .ed25519, flags: DNSSECKey.zsk),
            ]
            for k in keys { #expect(try await store.putKey(k, secret: old, new: true).written) }
            let first = try await store.reseal(from: old, to: new)
            #expect(first.resealed == 2 && first.already == 0 && first.failed.isEmpty, "\(first)")
            let read = try await store.storedKeys()
            for k in read.keys {
                #expect(k.sealed.privateText(with: old, at: k.at) == nil)
                let opened = try k.sealed.open(with: new, at: k.at, zone: k.zone)
                #expect(keys.contains { $0.dnskeyRData == opened.dnskeyRData })
            }
            let again = try await store.reseal(from: old, to: new)
            #expect(again.resealed == 0 && again.already == 2 && again.failed.isEmpty, "\(again)")
            // A key of another secret altogether: named, and left as it is.
            let foreign = DNSSECKey.generate(
                zone: try DNSName("third.test."), algorithm: .ecdsaP256SHA256, flags: DNSSECKey.csk)
            #expect(try await store.putKey(foreign, secret: stranger, new: true).written)
            let third = try await store.reseal(from: old, to: new)
            #expect(third.failed.count == 1 && third.failed[0].contains("third.test."), "\(third)")
            let kept = try await store.storedKeys(of: try DNSName("third.test."))
            #expect(kept.keys.first?.sealed.privateText(with: stranger, at: kept.keys[0].at) != nil)
        } catch {
            await store.close()
            throw error
        }
        await store.close()
    }
}
