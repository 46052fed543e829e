import DNSWire
import EtcdClient
import Foundation
import Logging
import NearcastBasics
import NearcastDNSSEC
import NearcastStore

/// A fleet's DNSSEC keys, kept in its store and brought into this server's state directory
/// (Sources/NearcastDNSSEC/README.md, "A fleet's keys"): each key at `P dnssec/ORIGIN/ALG+TAG`, its
/// private part sealed under the fleet's secret (`SealedKey`), opened here and written as the
/// key's two files in `STATE-DIR/dnssec/ZONE/`, where the server signs with them as with keys
/// made there. So a restart while etcd is out of reach signs with the keys it had, and the
/// secret is the only thing besides the etcd credentials an operator copies to each server.
/// A key taken out of the store stays in the state directory: its timing says whether it signs.
package actor FleetKeys: SharedKeys {
    let connection: FleetStoreConnection
    let secret: FleetKeySecret
    let store: DNSSECKeyStore
    let logger: Logger
    /// The store keys whose value did not open, each said once.
    var refused: Set<String> = []

    package init(connection: FleetStoreConnection, secret: FleetKeySecret, stateDirectory: String, logger: Logger) {
        self.connection = connection
        self.secret = secret
        store = DNSSECKeyStore(stateDirectory: stateDirectory)
        self.logger = logger
    }

    /// Every key the store keeps written into the state directory where it differs; the zones
    /// whose keys changed. Throws when the store cannot be read.
    @discardableResult
    package func readAll() async throws -> Set<DNSName> {
        let read = try await connection.storedKeys()
        for at in read.unreadable { refuse(at, "a key in the store is not one nearcast kept") }
        return await write(read.keys)
    }

    /// The watch's `events` of keys (`P dnssec/`) written into the state directory; the zones
    /// whose keys they changed (the follower has them read again).
    package func take(_ events: [WatchEvent]) async -> Set<DNSName> {
        var keys: [FleetStoreConnection.StoredKey] = []
        for e in events {
            let at = String(decoding: e.kv.key, as: UTF8.self)
            guard e.kind == .put else {
                logger.notice(
                    "a key taken out of the store stays in the state directory (its timing says whether it signs)",
                    metadata: ["key": "\(at)"])
                continue
            }
            guard let key = connection.storedKey(e.kv.key, e.kv.value, e.kv.modRevision) else {
                refuse(at, "a key in the store is not one nearcast kept")
                continue
            }
            keys.append(key)
        }
        let zones = await write(keys)
        if !zones.isEmpty {
            logger.info("keys from the store", metadata: ["zones": "\(zones.map(\.description).sorted())"])
        }
        return zones
    }

    /// `keys` opened and written into the state directory (on a thread of their own: each file
    /// is synced); the zones whose keys' files changed.
    func write(_ keys: [FleetStoreConnection.StoredKey]) async -> Set<DNSName> {
        var opened: [(key: DNSSECKey, at: String, text: String, public: String)] = []
        for key in keys {
            guard let text = key.sealed.privateText(with: secret, at: key.at) else {
                refuse(
                    key.at,
                    "a key in the store does not open with this server's key secret (another fleet's secret, or altered)"
                )
                continue
            }
            do {
                let k = try DNSSECKeyFile.parse(
                    privateText: text, file: key.at, publicText: key.sealed.public, publicFile: key.at, zone: key.zone)
                opened.append((k, key.at, text, key.sealed.public))
                refused.remove(key.at)
            } catch {
                refuse(key.at, "a key in the store does not read: \(error)")
            }
        }
        guard !opened.isEmpty else { return [] }
        let (store, logger) = (store, logger)
        let written = try? await onOwnThread { [opened] in
            opened.compactMap { o -> DNSName? in
                do { return try store.put(o.key, privateText: o.text, publicText: o.public) ? o.key.zone : nil } catch {
                    logger.error(
                        "a key from the store cannot be kept", metadata: ["key": "\(o.at)", "why": "\(error)"])
                    return nil
                }
            }
        }
        return Set(written ?? [])
    }

    /// Says once that the key at `at` is left out, and why.
    func refuse(_ at: String, _ why: String) {
        if refused.insert(at).inserted { logger.error("\(why)", metadata: ["key": "\(at)"]) }
    }

    /// Keeps `key` (its timing changed: a rollover's step this server drives) in the store,
    /// whence every server, this one too, takes it.
    package func put(_ key: DNSSECKey) async throws {
        _ = try await connection.putKey(key, secret: secret, new: false)
    }
}
