import DNSWire
import EtcdClient
import Foundation
import NearcastDNSSEC

/// A fleet's DNSSEC keys in its store (Sources/NearcastDNSSEC/README.md, "A fleet's keys"): each at
/// `P dnssec/ORIGIN/ALG+TAG`, its private part sealed under the fleet's secret (`SealedKey`).
extension FleetStoreConnection {
    /// A key as the store keeps it: where, the sealed value, and the revision of its last change.
    public struct StoredKey: Sendable {
        public var at: String
        public var zone: DNSName
        public var sealed: SealedKey
        public var modRevision: Int64
    }

    /// The keys the store keeps (of `zone` alone, when given), with the revision read at; a value
    /// that is no sealed key is left out (`unreadable` names it).
    public func storedKeys(of zone: DNSName? = nil) async throws -> (
        revision: Int64, keys: [StoredKey], unreadable: [String]
    ) {
        let prefix = zone.map(layout.dnssecKeys) ?? layout.dnssec
        let (revision, kvs) = try await etcd.range(prefix: Array(prefix.utf8))
        var keys: [StoredKey] = []
        var unreadable: [String] = []
        for kv in kvs {
            if let k = storedKey(kv.key, kv.value, kv.modRevision) {
                keys.append(k)
            } else {
                unreadable.append(String(decoding: kv.key, as: UTF8.self))
            }
        }
        return (revision, keys, unreadable)
    }

    /// The key kept at store key `key` with `value`; nil when it is not one.
    public func storedKey(_ key: [UInt8], _ value: [UInt8], _ modRevision: Int64) -> StoredKey? {
        let at = String(decoding: key, as: UTF8.self)
        guard at.hasPrefix(layout.dnssec), let sealed = SealedKey(value: value) else { return nil }
        let rest = at.dropFirst(layout.dnssec.count)
        guard let slash = rest.lastIndex(of: "/"), let zone = try? DNSName(String(rest[..<slash])) else { return nil }
        return StoredKey(at: at, zone: zone, sealed: sealed, modRevision: modRevision)
    }

    /// Keeps `key`, sealed with `secret`: a new one only if the store has no key of its zone,
    /// algorithm and tag, and, given `keysReadAt`, none of the zone's keys changed since they
    /// were read at that revision (false when either is not so: a rollover begun from keys
    /// another began one from meanwhile); else replacing it (its timing changed). The revision
    /// after the write.
    public func putKey(
        _ key: DNSSECKey, secret: FleetKeySecret, new: Bool, keysReadAt: Int64? = nil, created: Date = Date()
    ) async throws -> (written: Bool, revision: Int64) {
        let at = layout.dnssecKey(key.zone, algorithm: key.algorithm.rawValue, tag: key.keyTag)
        let value = try SealedKey.seal(key, with: secret, at: at, created: created).value
        let k = Array(at.utf8)
        guard new else { return (true, try await etcd.put(k, value)) }
        var conditions: [EtcdCompare] = [.modRevision(k, equals: 0)]
        if let keysReadAt {
            conditions.append(.unchangedSince(prefix: Array(layout.dnssecKeys(key.zone).utf8), before: keysReadAt + 1))
        }
        let r = try await etcd.txn(conditions, success: [.put(k, value)])
        return (r.succeeded, r.revision)
    }

    /// Every key the store keeps sealed under `new` instead of `old` (a new fleet secret), each
    /// in a transaction conditioned on the key as read; those that open with `new` already are
    /// left (so a rotation cut short is run again). How many were sealed anew and left; the keys
    /// that open with neither, or changed meanwhile, are named.
    public func reseal(from old: FleetKeySecret, to new: FleetKeySecret) async throws -> (
        resealed: Int, already: Int, failed: [String]
    ) {
        let read = try await storedKeys()
        var (resealed, already, failed) = (0, 0, read.unreadable)
        for key in read.keys {
            if key.sealed.privateText(with: new, at: key.at) != nil {
                already += 1
                continue
            }
            guard let sealed = try key.sealed.resealed(from: old, to: new, at: key.at) else {
                failed.append(key.at)
                continue
            }
            let k = Array(key.at.utf8)
            let r = try await etcd.txn([.modRevision(k, equals: key.modRevision)], success: [.put(k, sealed.value)])
            if r.succeeded { resealed += 1 } else { failed.append(key.at) }
        }
        return (resealed, already, failed)
    }
}
