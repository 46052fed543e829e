import DNSWire
import EtcdClient
import Foundation
import Logging
import NearcastDNSSEC
import NearcastStore

/// A fleet's DNSSEC keys, kept in its store and brought into this server's state directory
/// (docs/ARCHITECTURE.md §18, "A fleet's keys"): each key at `P dnssec/ORIGIN/ALG+TAG`, its
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
    /// Told of the zones whose keys changed (a reload reads them).
    var served: (any ServedFromStore)?
    /// The store keys whose value did not open, each said once.
    var refused: Set<String> = []

    package init(connection: FleetStoreConnection, secret: FleetKeySecret, stateDirectory: String, logger: Logger) {
        self.connection = connection
        self.secret = secret
        store = DNSSECKeyStore(stateDirectory: stateDirectory)
        self.logger = logger
    }

    /// From now on, the zones whose keys the store changes are told to `served`.
    package func follow(into served: any ServedFromStore) { self.served = served }

    /// Every key the store keeps written into the state directory where it differs; the zones
    /// whose keys changed. Throws when the store cannot be read.
    @discardableResult
    package func readAll() async throws -> Set<DNSName> {
        let read = try await connection.storedKeys()
        for at in read.unreadable where refused.insert(at).inserted {
            logger.error("a key in the store is not one nearcast kept", metadata: ["key": "\(at)"])
        }
        var zones = Set<DNSName>()
        for key in read.keys where write(key) { zones.insert(key.zone) }
        return zones
    }

    /// The watch's `events` of keys (`P dnssec/`) written into the state directory, and the
    /// zones they changed told.
    package func take(_ events: [WatchEvent]) async {
        var zones = Set<DNSName>()
        for e in events where e.kind == .put {
            guard let key = connection.storedKey(e.kv.key, e.kv.value, e.kv.modRevision) else {
                let at = String(decoding: e.kv.key, as: UTF8.self)
                if refused.insert(at).inserted {
                    logger.error("a key in the store is not one nearcast kept", metadata: ["key": "\(at)"])
                }
                continue
            }
            if write(key) { zones.insert(key.zone) }
        }
        for e in events where e.kind == .delete {
            logger.notice(
                "a key taken out of the store stays in the state directory (its timing says whether it signs)",
                metadata: ["key": "\(String(decoding: e.kv.key, as: UTF8.self))"])
        }
        if !zones.isEmpty { await tell(zones) }
    }

    /// Tells `served` that the keys of `zones` changed.
    package func tell(_ zones: Set<DNSName>) async {
        guard let served else { return }
        logger.info("keys from the store", metadata: ["zones": "\(zones.map(\.description).sorted())"])
        await served.keysFromStore(zones)
    }

    /// `key` opened and written into the state directory; whether its files changed.
    func write(_ key: FleetStoreConnection.StoredKey) -> Bool {
        guard let text = key.sealed.privateText(with: secret, at: key.at) else {
            if refused.insert(key.at).inserted {
                logger.error(
                    "a key in the store does not open with this server's key secret (another fleet's secret, or altered)",
                    metadata: ["key": "\(key.at)"])
            }
            return false
        }
        do {
            let opened = try DNSSECKeyFile.parse(
                privateText: text, file: key.at, publicText: key.sealed.public, publicFile: key.at, zone: key.zone)
            refused.remove(key.at)
            return try store.put(opened, privateText: text, publicText: key.sealed.public)
        } catch {
            logger.error("a key from the store cannot be kept", metadata: ["key": "\(key.at)", "why": "\(error)"])
            return false
        }
    }

    /// Keeps `key` (its timing changed: a rollover's step this server drives) in the store,
    /// whence every server, this one too, takes it.
    package func put(_ key: DNSSECKey) async throws {
        _ = try await connection.putKey(key, secret: secret, new: false)
    }
}
