import AsyncHTTPClient
import DNSWire
import EtcdClient
import Foundation
import NIOSSL
import NearcastBasics
import NearcastConfiguration
import NearcastZones

/// A connection to a fleet's etcd, as its `store` settings describe it.
public final class FleetStoreConnection: Sendable {
    public let etcd: EtcdClient
    public let layout: StoreLayout
    let http: HTTPClient

    /// Connects nothing yet: the first call does (TLS and the user as `settings` say).
    public init(_ settings: EtcdSettings) throws {
        var tls: TLSConfiguration?
        if settings.caFile != nil || settings.certificateFile != nil {
            var t = TLSConfiguration.makeClientConfiguration()
            if let ca = settings.caFile { t.trustRoots = .file(ca) }
            if let cert = settings.certificateFile, let key = settings.keyFile {
                t.certificateChain = try NIOSSLCertificate.fromPEMFile(cert).map { .certificate($0) }
                t.privateKey = .file(key)
            }
            tls = t
        }
        // A connection etcd refuses fails at once: the follower and the API say so and retry
        // with their own backoff. (AsyncHTTPClient's default tries again until the request's
        // deadline, which for a page of a large range is minutes.)
        var configuration = HTTPClient.Configuration(tlsConfiguration: tls)
        configuration.connectionPool.retryConnectionEstablishment = false
        http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        etcd = EtcdClient(
            endpoints: settings.endpoints, http: http, username: settings.username, password: try settings.password())
        layout = StoreLayout(prefix: settings.prefix)
    }

    /// Closes the connection.
    public func close() async { try? await http.shutdown() }

    /// Makes the store hold `files` (in layout 2: ARCHITECTURE §13): each zone as `importZone`
    /// writes it, zones the files do not have deleted, then the geo section, the tokens and the
    /// layout's version in one transaction. A store of layout 1 is refused (`migrate` first).
    /// Returns the store's revision after the last write.
    public func importFiles(_ files: FleetFiles) async throws -> Int64 {
        let (revision0, layoutKV) = try await etcd.get(Array(layout.layoutKey.utf8))
        if let v = layoutKV?.value, String(decoding: v, as: UTF8.self) != StoreLayout.version {
            throw FleetStoreError.layout(String(decoding: v, as: UTF8.self))
        }
        var revision = revision0
        for (origin, text) in files.zones.sorted(by: { $0.key < $1.key }) {
            revision = try await importZone(origin, text: text)
        }
        for (origin, primaries) in files.secondaries.sorted(by: { $0.key < $1.key }) {
            revision = try await declareSecondary(origin, primaries: primaries)
        }
        let (_, stored) = try await etcd.range(prefix: Array(layout.zones.utf8))
        let storedOrigins = Set(stored.compactMap { StoredZone.origin(ofKey: $0.keyString, layout) })
        var ops: [EtcdOperation] = []
        for origin in storedOrigins where files.zones[origin] == nil && files.secondaries[origin] == nil {
            ops.append(.deletePrefix(Array(StoredZone.prefix(layout, origin).utf8)))
        }
        ops.append(files.geo.map { .put(Array(layout.geo.utf8), Array($0.utf8)) } ?? .delete(Array(layout.geo.utf8)))
        let (_, tokens) = try await etcd.range(prefix: Array(layout.tokens.utf8))
        for kv in tokens where files.tokens[String(kv.keyString.dropFirst(layout.tokens.count))] == nil {
            ops.append(.delete(kv.key))
        }
        for (digest, entry) in files.tokens.sorted(by: { $0.key < $1.key }) {
            ops.append(.put(Array((layout.tokens + digest).utf8), Array(entry.utf8)))
        }
        // Last: every transaction before it finds the layout key as read.
        ops.append(.put(Array(layout.layoutKey.utf8), Array(StoreLayout.version.utf8)))
        for chunk in Self.chunks(ops) {
            // The layout's version as read: a migration or another version's import meanwhile stops this one.
            let r = try await etcd.txn(
                [.modRevision(Array(layout.layoutKey.utf8), equals: layoutKV?.modRevision ?? 0)], success: chunk)
            guard r.succeeded else { throw FleetStoreError.changedMeanwhile }
            revision = r.revision
        }
        return revision
    }

    /// Makes the store hold zone `origin` as master-file `text` says (checked as the daemon
    /// loads a zone file), a key per RRset (`StoredZone`): `meta` marked `importing`, then the
    /// keys whose value differs from the text's written and those it has not deleted, in
    /// transactions within etcd's limits (`chunks`), each conditioned on the meta as this import
    /// wrote it (another import meanwhile stops this one), then `meta` marked `ready` with the
    /// zone's checksum and the serial's base (`serialBase`). Run again after an interruption,
    /// it writes only what is still missing. Returns the revision of the last write. `primaries`:
    /// the zone is a secondary of the fleet's, and this a transfer of it (their declaration kept).
    public func importZone(_ origin: DNSName, text: String, primaries: [String]? = nil) async throws -> Int64 {
        let zone: Zone
        do {
            let records = try ZoneFileParser.parse(text: text, fileName: "zone \(origin)", origin: origin)
            zone = try Zone.build(origin: origin, records: records, sourceName: "zone \(origin)")
        } catch { throw FleetStoreError.zone(origin, "\(error)") }
        return try await importZone(zone, primaries: primaries)
    }

    /// Makes the store hold `zone` (built and checked already), as `importZone(_:text:)` does.
    public func importZone(_ zone: Zone, primaries: [String]? = nil) async throws -> Int64 {
        let origin = zone.origin
        let metaKey = Array(StoredZone.metaKey(layout, origin).utf8)
        let (_, current) = try await etcd.range(prefix: Array(StoredZone.prefix(layout, origin).utf8))
        let metaRevision = current.first { $0.key == metaKey }?.modRevision ?? 0
        var held = [String: [UInt8]](minimumCapacity: current.count)
        for kv in current where kv.key != metaKey { held[kv.keyString] = kv.value }
        var ops: [EtcdOperation] = []
        let entries = StoredZone.entries(of: zone, layout)
        var wanted = Set<String>(minimumCapacity: entries.count)
        for e in entries {
            wanted.insert(e.key)
            if held[e.key] != e.value { ops.append(.put(Array(e.key.utf8), e.value)) }
        }
        for key in held.keys where !wanted.contains(key) { ops.append(.delete(Array(key.utf8))) }
        let serial = Self.serialBase(
            file: zone.serial, served: StoredZone.Read(origin: origin, kvs: current, layout: layout),
            changes: !ops.isEmpty)
        let importing = StoredZone.Meta(serialBase: serial, state: .importing, primaries: primaries)
        let begun = try await etcd.txn(
            [.modRevision(metaKey, equals: metaRevision)], success: [.put(metaKey, importing.json)])
        guard begun.succeeded else { throw FleetStoreError.changedMeanwhile }
        // One after another: eight at once were no faster (a million names: 345 s against 341 s
        // in one run of make bench-fleet-secondary); etcd's rate of puts bounds an import.
        for chunk in Self.chunks(ops) {
            let r = try await etcd.txn([.modRevision(metaKey, equals: begun.revision)], success: chunk)
            guard r.succeeded else { throw FleetStoreError.changedMeanwhile }
        }
        let ready = StoredZone.Meta(
            serialBase: serial, state: .ready, checksum: zone.checksum, rrsets: entries.count, primaries: primaries)
        let done = try await etcd.txn(
            [.modRevision(metaKey, equals: begun.revision)], success: [.put(metaKey, ready.json)])
        guard done.succeeded else { throw FleetStoreError.changedMeanwhile }
        return done.revision
    }

    /// Declares zone `origin` a secondary of the fleet's, transferred from `primaries` by the
    /// server that holds `P transferrer` (ARCHITECTURE §17): its meta says so. A zone the store
    /// does not hold yet is declared with no records (not served until its first transfer); one
    /// it holds keeps its records, and the serial they are served at, until a transfer replaces
    /// them. Returns the store's revision after it.
    public func declareSecondary(_ origin: DNSName, primaries: [String]) async throws -> Int64 {
        let metaKey = Array(StoredZone.metaKey(layout, origin).utf8)
        let (revision, current) = try await etcd.range(prefix: Array(StoredZone.prefix(layout, origin).utf8))
        let read = StoredZone.Read(origin: origin, kvs: current, layout: layout)
        guard var meta = read.meta else {
            let declared = StoredZone.Meta(serialBase: 0, state: .ready, rrsets: 0, primaries: primaries)
            return try await putMeta(declared, metaKey, ifAt: 0)
        }
        if meta.primaries == primaries { return revision }
        // Written anew, the meta is the zone's latest key: its base is the serial served now.
        (meta.serialBase, meta.primaries) = (read.serial, primaries)
        return try await putMeta(meta, metaKey, ifAt: read.metaRevision)
    }

    /// Writes what an IXFR changed of secondary zone `origin` (of `primaries`): each RRset it
    /// touched, whole (an empty value: removed), and the meta with the primary's `serial` as the
    /// serial's base, in one transaction, so its keys are all of one revision and every server
    /// serves the primary's serial, as a change (StoreFollower). It is conditioned on the meta as
    /// read, which must say the zone is at `before`, the serial the changes were applied to (nil,
    /// nothing written, when it is not: an import of the zone, `importZone`, then writes it). A
    /// change that does not fit one transaction is written as an import of those RRsets alone:
    /// the meta `importing`, the RRsets, the meta `ready`.
    public func writeSecondaryChange(
        _ origin: DNSName, _ sets: [(owner: DNSName, type: RRType, value: [UInt8])], serial: UInt32,
        from before: UInt32, primaries: [String]
    ) async throws -> Int64? {
        let metaKey = Array(StoredZone.metaKey(layout, origin).utf8)
        let (_, kv) = try await etcd.get(metaKey)
        guard let kv, let meta = StoredZone.Meta(json: kv.value), meta.state == .ready, meta.primaries == primaries,
            meta.serialBase == before
        else { return nil }
        let ops: [EtcdOperation] = sets.map {
            .put(Array(StoredZone.rrsetKey(layout, origin, $0.owner, $0.type).utf8), $0.value)
        }
        // No checksum: the write is whole or not served, and a sum would cost a walk of the zone.
        let ready = EtcdOperation.put(
            metaKey, StoredZone.Meta(serialBase: serial, state: .ready, primaries: primaries).json)
        if Self.chunks(ops + [ready]).count == 1 {
            let r = try await etcd.txn([.modRevision(metaKey, equals: kv.modRevision)], success: ops + [ready])
            return r.succeeded ? r.revision : nil
        }
        // Larger: as an import, which servers serve when it ends (as one change: StoreFollower).
        let importing = StoredZone.Meta(serialBase: before, state: .importing, primaries: primaries)
        let begun = try await etcd.txn(
            [.modRevision(metaKey, equals: kv.modRevision)], success: [.put(metaKey, importing.json)])
        guard begun.succeeded else { return nil }
        for chunk in Self.chunks(ops) {
            let r = try await etcd.txn([.modRevision(metaKey, equals: begun.revision)], success: chunk)
            guard r.succeeded else { throw FleetStoreError.changedMeanwhile }
        }
        let done = try await etcd.txn([.modRevision(metaKey, equals: begun.revision)], success: [ready])
        guard done.succeeded else { throw FleetStoreError.changedMeanwhile }
        return done.revision
    }

    /// Takes the records of secondary zone `origin` (of `primaries`) out of the store, keeping its
    /// declaration: its expire passed without a refresh, and every server answers SERVFAIL until
    /// a transfer brings it again. Returns the store's revision after it.
    public func clearSecondary(_ origin: DNSName, primaries: [String]) async throws -> Int64 {
        let metaKey = Array(StoredZone.metaKey(layout, origin).utf8)
        let (_, kv) = try await etcd.get(metaKey)
        let base = kv.flatMap { StoredZone.Meta(json: $0.value) }?.serialBase ?? 0
        let declared = StoredZone.Meta(serialBase: base, state: .ready, rrsets: 0, primaries: primaries)
        let r = try await etcd.txn(
            [.modRevision(metaKey, equals: kv?.modRevision ?? 0)],
            success: [
                .deletePrefix(Array(StoredZone.rrsetsPrefix(layout, origin).utf8)), .put(metaKey, declared.json),
            ])
        guard r.succeeded else { throw FleetStoreError.changedMeanwhile }
        return r.revision
    }

    /// Puts `meta` at `key` if the key's modification revision is `revision` (0: absent).
    func putMeta(_ meta: StoredZone.Meta, _ key: [UInt8], ifAt revision: Int64) async throws -> Int64 {
        let r = try await etcd.txn([.modRevision(key, equals: revision)], success: [.put(key, meta.json)])
        guard r.succeeded else { throw FleetStoreError.changedMeanwhile }
        return r.revision
    }

    /// The serial an import starts the zone at: the file's, unless the zone is served at a serial
    /// the file's is not above (RFC 1982; the zone changed since the file was written): then the
    /// one after it if the import changes any RRset, or the same if it changes none. The serial
    /// never goes back, and an import of what is served leaves it as it is.
    static func serialBase(file: UInt32, served: StoredZone.Read, changes: Bool) -> UInt32 {
        guard served.isReady, Int32(bitPattern: file &- served.serial) <= 0 else { return file }
        return changes ? served.serial &+ 1 : served.serial
    }

    /// `ops` cut into transactions etcd takes: at most 100 operations (its default limit is 128)
    /// and about 1 MiB of keys and values (its request limit is 1.5 MiB, and the JSON gateway
    /// carries them in base64, a third more).
    static func chunks(_ ops: [EtcdOperation]) -> [[EtcdOperation]] {
        var out: [[EtcdOperation]] = []
        var chunk: [EtcdOperation] = []
        var bytes = 0
        for op in ops {
            let size = op.byteCount
            if !chunk.isEmpty && (chunk.count == 100 || bytes + size > 768 << 10) {
                out.append(chunk)
                (chunk, bytes) = ([], 0)
            }
            chunk.append(op)
            bytes += size
        }
        if !chunk.isEmpty { out.append(chunk) }
        return out
    }

    /// Turns a store of layout 1 (each zone one master file under `zones/ORIGIN`) into layout 2:
    /// each zone imported as `importZone` writes it, then the old keys deleted and the layout's
    /// version set in one transaction conditioned on the version as read (two migrations at once:
    /// one wins). Servers of layout 1 go on serving what they hold until they run a nearcast that
    /// reads layout 2. Returns the zones migrated (none when the store is of layout 2 already).
    public func migrate() async throws -> [DNSName] {
        let (revision, layoutKV) = try await etcd.get(Array(layout.layoutKey.utf8))
        let version = layoutKV.map { String(decoding: $0.value, as: UTF8.self) }
        if version == StoreLayout.version { return [] }
        guard version == "1" || version == nil else { throw FleetStoreError.layout(version ?? "") }
        let (_, kvs) = try await etcd.range(prefix: Array(layout.zones.utf8), revision: revision)
        var old: [(DNSName, KeyValue)] = []
        for kv in kvs {
            let name = String(kv.keyString.dropFirst(layout.zones.count))
            guard !name.contains("/") else { continue }  // a zone of layout 2 an earlier run wrote
            guard let origin = try? DNSName(name) else {
                throw FleetStoreError.zone(nil, "'\(name)' is not a zone origin")
            }
            old.append((origin, kv))
        }
        for (origin, kv) in old { _ = try await importZone(origin, text: String(decoding: kv.value, as: UTF8.self)) }
        var ops: [EtcdOperation] = old.map { .delete($0.1.key) }
        ops.append(.put(Array(layout.layoutKey.utf8), Array(StoreLayout.version.utf8)))
        for chunk in Self.chunks(ops) {
            let r = try await etcd.txn(
                [.modRevision(Array(layout.layoutKey.utf8), equals: layoutKV?.modRevision ?? 0)], success: chunk)
            guard r.succeeded else { throw FleetStoreError.changedMeanwhile }
        }
        return old.map(\.0)
    }

    /// The zones and geo section the store holds now (not its tokens: a digest is no token).
    public func exportFiles() async throws -> FleetFiles {
        var files = try await served().files
        files.tokens = [:]
        return files
    }

    /// What a server serves from the store, read at one revision: the layout's version, the
    /// zones, the geo section, the registered nodes and the API's tokens. Not the rest (health
    /// views, audit lines, overrides), which grow with the fleet and are read by those who need them.
    public func served() async throws -> (revision: Int64, files: FleetFiles) {
        let (revision, zones) = try await etcd.range(prefix: Array(layout.zones.utf8))
        let (_, nodes) = try await etcd.range(prefix: Array(layout.nodes.utf8), revision: revision)
        let (_, tokens) = try await etcd.range(prefix: Array(layout.tokens.utf8), revision: revision)
        let (_, geo) = try await etcd.get(Array(layout.geo.utf8), revision: revision)
        let (_, version) = try await etcd.get(Array(layout.layoutKey.utf8), revision: revision)
        if let v = version?.value, String(decoding: v, as: UTF8.self) != StoreLayout.version {
            throw FleetStoreError.layout(String(decoding: v, as: UTF8.self))
        }
        // Each zone's text made from its keys (and, right after an import, read back for its
        // checksum): seconds at a million names, so on a thread of its own, not Swift's pool.
        let kvs = zones + nodes + tokens + [geo].compactMap { $0 }
        let layout = layout
        return (revision, try await onOwnThread { try FleetFiles(kvs, layout: layout) })
    }
}

/// Why the store cannot be written.
public enum FleetStoreError: Error, CustomStringConvertible {
    case layout(String)
    case changedMeanwhile
    case zone(DNSName?, String)

    public var description: String {
        switch self {
        case .layout("1"):
            "the store holds layout version 1; this nearcast reads and writes version \(StoreLayout.version): run nearcast store migrate"
        case .layout(let v): "the store holds layout version \(v); this nearcast writes version \(StoreLayout.version)"
        case .changedMeanwhile:
            "the store changed while it was being written (another import or migration?); run it again: it writes what is still missing"
        case .zone(let origin, let why): "zone \(origin.map { "\($0)" } ?? ""): \(why)"
        }
    }
}
