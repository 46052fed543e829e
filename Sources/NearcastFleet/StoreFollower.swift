import DNSWire
import EtcdClient
import Foundation
import Logging
import NearcastAPIModel
import NearcastBasics
import NearcastConfiguration
import NearcastServer
import NearcastStore
import NearcastZones
import Synchronization

/// Which copy of the store a reload reads: the last good snapshot, or, while a change from the
/// store is being tried, the candidate written beside it; with the registered nodes as the
/// follower holds them, when it does (nil: as the snapshot's file has them).
package final class SnapshotSource: Sendable {
    private let current: Mutex<(snapshot: StoreSnapshot, registered: [NodeRegistration]?)>
    package init(_ s: StoreSnapshot) { current = Mutex((s, nil)) }
    package var snapshot: StoreSnapshot { current.withLock { $0.snapshot } }

    /// `local` serving what the source holds (`StoreSnapshot.config(over:)`). The registered
    /// nodes the follower holds are not read from the snapshot again: at 5,000 nodes, decoding
    /// that file was a twentieth of every registration's reload.
    package func config(over local: NearcastConfig) throws(DiagnosticsError) -> NearcastConfig {
        let (snapshot, registered) = current.withLock { $0 }
        return try snapshot.config(over: local, registered: registered)
    }

    func use(_ s: StoreSnapshot, registered: [NodeRegistration]? = nil) {
        current.withLock { $0 = (s, registered) }
    }

    /// The registered nodes the source holds (nil: the snapshot's file).
    var registered: [NodeRegistration]? { current.withLock { $0.registered } }
}

/// Follows a fleet's store (ARCHITECTURE §13): reads it whole, then watches its prefix. A change
/// of RRsets of zones it serves is applied as a change (`ServedFromStore.applyFromStore`: what it
/// costs grows with the change, not with the zone), journaled beside the snapshot's zone file; a
/// change of the geo section, registered nodes or tokens is applied to those as it holds them
/// and reloaded with the zones served. Anything else it serves (a zone's import, the layout)
/// makes it read the store whole again into a candidate snapshot and have the served config
/// reload from it, through the same path and the same checks as a reload of files. A candidate that is
/// refused is dropped and the last good snapshot stays, served and on disk; one that is served
/// becomes the snapshot. When etcd is out of reach the server goes on serving what it has, says
/// so once, and takes the watch up where it left it when etcd is back (a revision compacted away
/// meanwhile means a read of the whole).
package actor StoreFollower {
    package nonisolated let connection: FleetStoreConnection
    let snapshot: StoreSnapshot
    package nonisolated let source: SnapshotSource
    let logger: Logger
    /// This server's name in the store's audit lines (`store: server:`, or the host name).
    package nonisolated let serverName: String
    /// The store's revision the served data was read at.
    package private(set) var revision: Int64?
    /// Whether the store's overrides have been read since the last start or outage.
    var overridesRead = false
    /// Why the store cannot be followed now (nil: it is).
    package private(set) var degraded: String?
    /// The store's revision of the last audit line the watch brought (0: none yet): it moves
    /// whenever a server of the fleet audits a change.
    package private(set) var auditRevision: Int64 = 0
    /// The store's API tokens last read (or kept in the snapshot).
    var storeTokens: [String: String] = [:]
    /// Where the serial of each zone served as the store holds it counts from (as last read
    /// whole): the zones whose RRsets' changes are applied as changes. Empty after a read whose
    /// state was refused (and the two below nil): every change is then a read of the whole store
    /// again, until one is served.
    var serialBases: [DNSName: StoredZone.SerialBase] = [:]
    /// The zones whose import is under way (their meta `importing`): their keys' changes are
    /// not served, nor read for, until the meta says `ready` (a million names imported in ten
    /// thousand transactions are one change, or one read of the store, not one per batch the
    /// watch brings).
    var imports = ImportsUnderWay()
    /// The zones the snapshot holds (as last read whole); nil when not known (the snapshot a
    /// previous run kept): a change of the geo section, nodes or tokens then reads the whole store.
    var snapshotZones: [DNSName]?
    /// The geo section, registered nodes and tokens as last read, with the watch's changes since
    /// (no zones); nil when not known (as `snapshotZones`).
    var followedShared: FleetFiles?

    package init(connection: FleetStoreConnection, serverName: String, stateDirectory: String, logger: Logger) {
        self.connection = connection
        self.serverName = serverName
        snapshot = StoreSnapshot(stateDirectory: stateDirectory)
        source = SnapshotSource(snapshot)
        self.logger = logger
    }

    /// At start: the store read into the snapshot; or, with etcd out of reach, the snapshot a
    /// previous run kept. Throws when there is neither.
    package func prepare() async throws {
        do {
            let (rev, files) = try await read()
            try await onOwnThread { [snapshot] in try snapshot.write(files, revision: rev) }
            revision = rev
            storeTokens = files.tokens
            (serialBases, imports) = (files.serialBases, ImportsUnderWay(zones: files.importing))
            (snapshotZones, followedShared) = (Array(files.zones.keys), files.withoutZones)
            logger.info("store read", metadata: ["revision": "\(rev)", "zones": "\(files.zones.count)"])
        } catch {
            guard let kept = snapshot.revision else {
                throw StoreFollowerError(
                    description:
                        "the store cannot be read (\(error)) and no snapshot of it is kept in \(snapshot.directory)")
            }
            revision = kept
            storeTokens = FleetFiles.tokens(in: snapshot.directory)
            markDegraded("\(error)")
            logger.warning(
                "store out of reach: serving the snapshot kept at its revision",
                metadata: ["revision": "\(kept)", "error": "\(error)"])
        }
    }

    /// The store as this server follows it, for status and metrics.
    package var status: StoreStatus {
        StoreStatus(
            endpoints: connection.etcd.endpoints, prefix: connection.layout.prefix, revision: revision,
            degraded: degraded)
    }

    /// Where what the store brings goes: what is served (reloaded after each change of it), the
    /// operators' overrides, the API's tokens, and the fleet's DNSSEC keys (nil: the fleet keeps
    /// none; each server its own).
    package struct Targets: Sendable {
        package var served: any ServedFromStore
        package var overrides: (any OverridesFromStore)?
        package var tokens: LiveTokens?
        package var keys: FleetKeys?

        package init(
            served: any ServedFromStore, overrides: (any OverridesFromStore)?, tokens: LiveTokens?, keys: FleetKeys?
        ) {
            self.served = served
            self.overrides = overrides
            self.tokens = tokens
            self.keys = keys
        }
    }

    /// Closes the connection to etcd (a `StoreMirror` that follows the store is stopped first).
    package func stop() async { await connection.close() }

    /// What the store serves now; a zone it does not hold whole (an import under way, or keys
    /// that do not sum to their import's checksum) as the snapshot kept it (none, if it never held it).
    func read() async throws -> (Int64, FleetFiles) {
        var (rev, files) = try await connection.served()
        for (origin, why) in files.unready.sorted(by: { $0.key < $1.key }) {
            let kept = snapshot.directory + "/" + FleetFiles.zoneFile(origin)
            files.zones[origin] = try? await onOwnThread { try String(contentsOfFile: kept, encoding: .utf8) }
            logger.warning(
                "a zone of the store is not served as the store holds it: the last one read goes on being served",
                metadata: ["zone": "\(origin)", "why": "\(why)", "revision": "\(rev)"])
        }
        return (rev, files)
    }

    /// Follows the store's watch from the revision served. After an outage it takes the watch up
    /// where it left it (no change is lost: the watch brings every one since); only a revision
    /// etcd has compacted away (or none read yet) is a read of the whole store.
    func follow(into to: Targets) async {
        var pause = Duration.milliseconds(200)
        var wholeReadDue = false
        while !Task.isCancelled {
            do {
                if revision == nil || wholeReadDue {
                    try await apply(to)
                    wholeReadDue = false
                }
                if !overridesRead { try await readOverrides(to.overrides) }
                let from = (revision ?? 0) + 1
                // The batches that came while the last were served, taken together: a change of
                // the geo section (a node that registers) costs a reload, and a hundred of them
                // in a second cost a few, not a hundred.
                let watch = CoalescedWatch(
                    connection.etcd.watch(prefix: Array(connection.layout.prefix.utf8), from: from))
                defer { watch.cancel() }
                while let batches = try await watch.next() {
                    if batches.contains(where: \.created) { followedAgain() }
                    // Each event once: a watch taken up again may bring some anew.
                    let events = batches.flatMap(\.events).filter { $0.kv.modRevision > (revision ?? 0) }
                    guard let latest = events.map(\.kv.modRevision).max() else { continue }
                    for e in events where e.kv.keyString.hasPrefix(connection.layout.overrides) {
                        await override(e.kv.keyString, e.kind == .put ? e.kv.value : nil, to.overrides)
                    }
                    let keyEvents = events.filter { $0.kv.keyString.hasPrefix(connection.layout.dnssec) }
                    if let keys = to.keys, !keyEvents.isEmpty {
                        let changed = await keys.take(keyEvents)
                        if !changed.isEmpty { await to.served.keysFromStore(changed) }
                    }
                    if events.contains(where: { $0.kv.keyString.hasPrefix(connection.layout.audit) }) {
                        auditRevision = latest
                    }
                    // Only what is served is reloaded for: zones, the geo section, registered
                    // nodes, tokens, the layout (not overrides, audit lines or health views).
                    if events.contains(where: { affectsServing($0.kv.keyString) }) {
                        try await serve(events, at: latest, to)
                    }
                    revision = max(revision ?? 0, latest)
                    pause = .milliseconds(200)
                }
            } catch EtcdError.compacted(let r) {
                logger.notice("store history compacted: reading it whole", metadata: ["compacted": "\(r)"])
                wholeReadDue = true
            } catch is CancellationError {
                return
            } catch {
                if Task.isCancelled { return }
                markDegraded("\(error)")
                try? await Task.sleep(for: pause)
                pause = min(pause * 2, .seconds(5))
            }
        }
    }

    /// The store answers again: said once, and no longer degraded.
    func followedAgain() {
        guard let was = degraded else { return }
        logger.notice("store followed again", metadata: ["revision": "\(revision ?? 0)", "was": "\(was)"])
        degraded = nil
    }

    /// Reads the store whole into a candidate beside the snapshot and reloads from it; the
    /// candidate becomes the snapshot when it is served, and is dropped when it is refused.
    func apply(_ to: Targets) async throws {
        let served = to.served
        let (rev, files) = try await read()
        useTokens(files.tokens, to.tokens)  // not part of what a reload checks: they apply as read
        try await to.keys?.readAll()  // into the state directory, where the reload reads them
        let candidate = StoreSnapshot(directory: snapshot.directory + ".candidate")
        try await onOwnThread { [files, rev] in try candidate.writeInPlace(files, revision: rev) }
        let registered = files.registered.values.sorted { $0.id < $1.id }
        source.use(candidate, registered: registered)
        do {
            try await served.reloadFromStore(by: "store@\(rev)", zonesUnchanged: false)
            try await onOwnThread { [snapshot] in try snapshot.replace(with: candidate) }  // renamed, not written again
            await served.zoneFilesMoved(from: candidate.directory, to: snapshot.directory)
            source.use(snapshot, registered: registered)
            revision = rev
            (serialBases, imports) = (files.serialBases, ImportsUnderWay(zones: files.importing))
            (snapshotZones, followedShared) = (Array(files.zones.keys), files.withoutZones)
        } catch {
            // Refused (logged by the reload): the last good snapshot stays, and is served.
            source.use(snapshot)
            revision = rev
            (serialBases, snapshotZones, followedShared) = ([:], nil, nil)
            logger.error(
                "the store's state is not valid: the last good one goes on being served",
                metadata: ["revision": "\(rev)", "error": "\(error)"])
        }
        try? FileManager.default.removeItem(atPath: candidate.directory)
        followedAgain()
    }

    /// A zone's RRsets changed in the store (each whole, nil: none), and the latest revision among them.
    struct StoredChange {
        var sets: [(name: DNSName, type: RRType, set: RRSet?)] = []
        var at: Int64 = 0
    }

    /// Serves what a watch's batch changed of what is served: the RRsets of zones as changes,
    /// then, if it changed them, the geo section, nodes and tokens without the zones; anything
    /// else (or a change refused) by reading the whole store again.
    func serve(_ events: [WatchEvent], at latest: Int64, _ to: Targets) async throws {
        // (An import ends by writing the layout's version again: the same, it changes nothing.)
        let serving = events.filter { affectsServing($0.kv.keyString) && !rewritesLayout($0) }
        let shared = serving.filter { isShared($0.kv.keyString) }
        let followed = shared.isEmpty ? followedShared : followedShared.flatMap { self.followed($0, shared) }
        if let (changes, bases, after) = zoneChanges(serving.filter { !isShared($0.kv.keyString) }),
            shared.isEmpty || (snapshotZones != nil && followed != nil),
            await applyChanges(changes, to.served, revision: latest, bases: bases)
        {
            imports = after
            // (An import writes the geo section and tokens again: as they were, nothing to reload.)
            if !shared.isEmpty, let followed, followed != followedShared {
                try await applyShared(followed, to, at: latest)
            }
        } else {
            try await apply(to)
        }
    }

    /// Keys that change what is served but no zone: the geo section, registered nodes, tokens.
    func isShared(_ key: String) -> Bool {
        let l = connection.layout
        return key == l.geo || key.hasPrefix(l.nodes) || key.hasPrefix(l.tokens)
    }

    /// `files` (geo section, nodes, tokens) with the watch's `events` of them applied; nil when one
    /// does not read (a registration that is not one: a read of the whole says what is wrong).
    func followed(_ files: FleetFiles, _ events: [WatchEvent]) -> FleetFiles? {
        let l = connection.layout
        var out = files
        for e in events {
            let key = e.kv.keyString
            let value = e.kind == .put ? String(decoding: e.kv.value, as: UTF8.self) : nil
            if key == l.geo {
                out.geo = value
            } else if key.hasPrefix(l.nodes) {
                let id = String(key.dropFirst(l.nodes.count))
                guard let value else {
                    out.registered[id] = nil
                    continue
                }
                guard let r = NodeRegistration(stored: value) else { return nil }
                out.registered[r.id] = r
            } else if key.hasPrefix(l.tokens) {
                out.tokens[String(key.dropFirst(l.tokens.count))] = value
            }
        }
        return out
    }

    /// Serves `files` (the geo section, registered nodes and tokens the watch brought, at
    /// `revision`) with the zones served: written into the snapshot, which is reloaded with
    /// `zonesUnchanged` (the zone files are not read again). A node that registers costs what
    /// its registration is, not a read of every node or of a million names. Refused, the
    /// snapshot's files are put back and the last good state goes on being served.
    func applyShared(_ files: FleetFiles, _ to: Targets, at rev: Int64) async throws {
        followedShared = files
        useTokens(files.tokens, to.tokens)
        let zones = snapshotZones ?? []
        let kept = try await onOwnThread { [snapshot] in try snapshot.replaceShared(files, zones: zones) }
        let keptRegistered = source.registered
        source.use(snapshot, registered: files.registered.values.sorted { $0.id < $1.id })
        do {
            try await to.served.reloadFromStore(by: "store@\(rev)", zonesUnchanged: true)
        } catch {
            source.use(snapshot, registered: keptRegistered)
            try? await onOwnThread { [snapshot] in try snapshot.restore(kept) }
            logger.error(
                "the store's state is not valid: the last good one goes on being served",
                metadata: ["revision": "\(rev)", "error": "\(error)"])
        }
    }

    /// What a batch's keys of zones ask for, their metas read in order: the RRset changes to serve
    /// (`rrsetChanges`), with the serial's new base of each zone whose meta the batch rewrote. A
    /// meta `importing` begins an import: the zone's keys after it are held (`held`), not served,
    /// until its meta says `ready`, when they are served as one change at the meta's base; they
    /// are what the import changed (it writes only the RRsets that differ, and deletes the
    /// others). A transfer's write of one transaction (`FleetStoreConnection.writeSecondaryChange`)
    /// is served so too. nil: anything else (an import whose start this server did not see, or
    /// of more than `heldLimit` keys; a meta removed; a declaration changed), which a read of the
    /// whole store serves.
    func zoneChanges(_ events: [WatchEvent]) -> (
        [DNSName: StoredChange], [DNSName: StoredZone.SerialBase], ImportsUnderWay
    )? {
        let layout = connection.layout
        var bases: [DNSName: StoredZone.SerialBase] = [:]
        // (Kept only once the batch is served: a batch that is not comes again after the read.)
        var imports = self.imports
        var now: [WatchEvent] = []
        for e in events {
            let key = e.kv.keyString
            let origin = StoredZone.origin(ofKey: key, layout)
            guard let origin, key == StoredZone.metaKey(layout, origin) else {
                if let origin, imports.zones.contains(origin) {
                    // (An import whose start came before this server's read: not held.)
                    imports.held[origin]?.append(e)
                    if (imports.held[origin]?.count ?? 0) > Self.heldLimit { imports.held[origin] = nil }
                } else {
                    now.append(e)
                }
                continue
            }
            guard e.kind == .put, let meta = StoredZone.Meta(json: e.kv.value),
                let declared = followedShared?.secondaries, meta.primaries == declared[origin]
            else { return nil }
            let base = StoredZone.SerialBase(meta, metaRevision: e.kv.modRevision)
            if meta.state == .importing {
                if !imports.zones.contains(origin) { imports.held[origin] = serialBases[origin] != nil ? [] : nil }
                imports.zones.insert(origin)
            } else if imports.zones.contains(origin) {
                guard let kept = imports.held[origin] else { return nil }
                (imports.zones, imports.held[origin]) = (imports.zones.subtracting([origin]), nil)
                now += kept
                bases[origin] = base
            } else if meta.rrsets != 0, isTransferWrite(origin, at: e.kv.modRevision, events) {
                // (rrsets 0: an expired secondary's records taken out, which a read serves as unavailable.)
                bases[origin] = base
            } else {
                return nil
            }
        }
        guard let changes = rrsetChanges(now) else { return nil }
        return (changes, bases, imports)
    }

    /// The most keys of one import held until it ends: a larger import is read whole at its end
    /// (a million names held would be the whole read's memory, twice).
    static let heldLimit = 200_000

    /// Whether a zone served here whose meta (ready) was written at `revision` was written with
    /// every RRset of it the batch has, in one transaction: its serial is then the meta's base.
    func isTransferWrite(_ origin: DNSName, at revision: Int64, _ events: [WatchEvent]) -> Bool {
        guard serialBases[origin] != nil else { return false }
        let layout = connection.layout
        let own = events.filter {
            StoredZone.origin(ofKey: $0.kv.keyString, layout) == origin
                && $0.kv.keyString != StoredZone.metaKey(layout, origin)
        }
        return !own.isEmpty && own.allSatisfy { $0.kv.modRevision == revision }
    }

    /// The RRsets that `events` change, by zone, each with the latest revision among them; nil
    /// when they change anything else (a zone's meta: an import; the layout) or a zone not
    /// followed as a change (not served as the store holds it), or hold an RRset that does not
    /// read: those are a read of the whole.
    func rrsetChanges(_ events: [WatchEvent]) -> [DNSName: StoredChange]? {
        let layout = connection.layout
        var out: [DNSName: StoredChange] = [:]
        for e in events {
            let key = e.kv.keyString
            guard let origin = StoredZone.origin(ofKey: key, layout), serialBases[origin] != nil,
                let (owner, type) = StoredZone.rrset(ofKey: key, layout, origin),
                let set = try? StoredZone.rrset(
                    e.kind == .put ? e.kv.value : [], owner: owner, type: type, origin: origin)
            else { return nil }
            out[origin, default: StoredChange()].sets.append((owner, type, set))
            out[origin]!.at = max(out[origin]!.at, e.kv.modRevision)
        }
        return out
    }

    /// Serves `changes` (`rrsetChanges`), each zone's serial derived from its latest revision
    /// (from the base in `bases` for a zone a transfer wrote, which then becomes its base);
    /// false when one is refused (the rest of the batch is then not applied: the caller reads
    /// the store whole, which serves its state or keeps the last good one).
    func applyChanges(
        _ changes: [DNSName: StoredChange], _ served: any ServedFromStore,
        revision: Int64, bases: [DNSName: StoredZone.SerialBase] = [:]
    ) async -> Bool {
        // A rewritten meta is the zone's latest key: its serial is the meta's base (its keys, held
        // through an import, are older).
        for (origin, base) in bases where changes[origin] == nil { serialBases[origin] = base }
        for (origin, change) in changes {
            guard let base = bases[origin] ?? serialBases[origin] else { return false }
            let at = bases[origin].map { max(change.at, $0.metaRevision) } ?? change.at
            do {
                try await served.applyFromStore(origin, change.sets, serial: base.serial(at: at), revision: revision)
                if let new = bases[origin] { serialBases[origin] = new }
            } catch {
                logger.warning(
                    "a change from the store is not served as a change: reading the store whole",
                    metadata: ["zone": "\(origin)", "revision": "\(revision)", "why": "\(error)"])
                return false
            }
        }
        return true
    }

    /// Every override the store holds, handed to `overrides` (at start, and after an outage).
    func readOverrides(_ overrides: (any OverridesFromStore)?) async throws {
        let (_, kvs) = try await connection.etcd.range(prefix: Array(connection.layout.overrides.utf8))
        for kv in kvs { await override(kv.keyString, kv.value, overrides) }
        overridesRead = true
    }

    /// One override key as the store holds it (nil: deleted), handed to `overrides`.
    func override(_ key: String, _ value: [UInt8]?, _ overrides: (any OverridesFromStore)?) async {
        let node = String(key.dropFirst(connection.layout.overrides.count))
        let kept = value.flatMap { try? JSONDecoder().decode(KeptOverride.self, from: Data($0)) }
        await overrides?.applyShared(node, kept)
    }

    /// Whether `event` puts the layout's version this server reads, as it was.
    func rewritesLayout(_ event: WatchEvent) -> Bool {
        event.kv.keyString == connection.layout.layoutKey && event.kind == .put
            && String(decoding: event.kv.value, as: UTF8.self) == StoreLayout.version
    }

    func affectsServing(_ key: String) -> Bool {
        let l = connection.layout
        return key.hasPrefix(l.zones) || key == l.geo || key == l.layoutKey || key.hasPrefix(l.nodes)
            || key.hasPrefix(l.tokens)
    }

    /// The store's tokens (SHA-256 -> `ROLE[:NODE] SOURCE`) given to the API's `tokens`; one that
    /// cannot be read is left out, and said.
    func useTokens(_ stored: [String: String], _ tokens: LiveTokens?) {
        storeTokens = stored
        var hashed: [String: APITokens.Entry] = [:]
        for (digest, value) in stored {
            guard let e = APITokens.storeEntry(value) else {
                logger.warning(
                    "a token in the store is not ROLE[:NODE] SOURCE: left out", metadata: ["sha256": "\(digest)"])
                continue
            }
            hashed[digest] = e
        }
        tokens?.setShared(hashed)
    }

    func markDegraded(_ why: String) {
        overridesRead = false
        if degraded == nil {
            logger.warning("store out of reach: serving what was last read", metadata: ["error": "\(why)"])
        }
        degraded = why
    }
}

package struct StoreFollowerError: Error, CustomStringConvertible {
    package var description: String
}

extension StoreFollower: SharedZones {
    package func owner(_ origin: DNSName, _ owner: DNSName) async throws -> StoredZone.Owner {
        let l = connection.layout
        let (rev, kvs) = try await connection.etcd.range(prefix: Array(StoredZone.ownerPrefix(l, origin, owner).utf8))
        let (_, meta) = try await connection.etcd.get(Array(StoredZone.metaKey(l, origin).utf8), revision: rev)
        return StoredZone.Owner(origin: origin, owner: owner, revision: rev, kvs: kvs, meta: meta, layout: l)
    }

    package func writeRRset(_ type: RRType, value: [UInt8], from read: StoredZone.Owner, audit: AuditLog.Entry)
        async throws -> Int64?
    {
        let key = Array(StoredZone.rrsetKey(connection.layout, read.origin, read.owner, type).utf8)
        let r = try await connection.etcd.txn(
            read.conditions(writing: type, connection.layout), success: [.put(key, value), try auditWrite(audit)])
        return r.succeeded ? r.revision : nil
    }

    /// The write of `entry` as an audit line of the store (`P audit/TIME-SERVER-RANDOM`), naming
    /// this server.
    func auditWrite(_ entry: AuditLog.Entry) throws -> EtcdOperation {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let key = connection.layout.audit + "\(entry.time)-\(serverName)-\(UInt32.random(in: 0...UInt32.max))"
        return .put(Array(key.utf8), Array(try encoder.encode(StoreAuditLine(server: serverName, entry: entry))))
    }

    /// The fleet's last `count` audit lines, oldest first, each naming the server that took the
    /// change (a line that does not parse is left out).
    package nonisolated func lastAudit(_ count: Int) async throws -> [AuditLog.Entry] {
        let kvs = try await connection.etcd.last(count, prefix: Array(connection.layout.audit.utf8))
        let decoder = JSONDecoder()
        return kvs.reversed().compactMap { kv in
            guard var line = try? decoder.decode(StoreAuditLine.self, from: Data(kv.value)) else { return nil }
            line.entry.server = line.server
            return line.entry
        }
    }

    package func writeTransferred(_ zone: Zone, primaries: [String]) async throws -> Int64 {
        try await connection.importZone(zone, primaries: primaries)
    }

    package func writeTransferredChange(
        _ origin: DNSName, _ sets: [(owner: DNSName, type: RRType, value: [UInt8])], serial: UInt32,
        from before: UInt32, primaries: [String]
    ) async throws -> Int64? {
        try await connection.writeSecondaryChange(origin, sets, serial: serial, from: before, primaries: primaries)
    }

    package func clearTransferred(_ origin: DNSName, primaries: [String]) async throws -> Int64 {
        try await connection.clearSecondary(origin, primaries: primaries)
    }

    package func waitServed(_ target: Int64, timeout: Duration) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while (revision ?? 0) < target {
            guard ContinuousClock.now < deadline else { return false }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return true
    }
}

/// The imports under way a follower knows of (`StoreFollower.zoneChanges`).
struct ImportsUnderWay {
    /// The zones whose meta says `importing`.
    var zones: Set<DNSName> = []
    /// The keys each changed since, as the watch brought them, for the zones served here whose
    /// import began in the watch (none for one that began before the last read).
    var held: [DNSName: [WatchEvent]] = [:]
}

/// An audit line in the store: the entry and the server that took the change.
struct StoreAuditLine: Codable {
    var server: String
    var entry: AuditLog.Entry
}

extension StoreFollower: SharedOverrides {
    package func putOverride(_ node: String, _ override: KeptOverride?, audit: AuditLog.Entry) async throws {
        let key = Array((connection.layout.overrides + node).utf8)
        let write: EtcdOperation = try override.map { .put(key, Array(try JSONEncoder().encode($0))) } ?? .delete(key)
        _ = try await connection.etcd.txn([], success: [write, try auditWrite(audit)])
    }
}

extension StoreFollower: SharedNodes {
    package func geoText() async throws -> (text: String?, modRevision: Int64) {
        let (_, kv) = try await connection.etcd.get(Array(connection.layout.geo.utf8))
        return (kv.map { String(decoding: $0.value, as: UTF8.self) }, kv?.modRevision ?? 0)
    }

    package func registration(_ id: String) async throws -> (json: String, modRevision: Int64)? {
        let (_, kv) = try await connection.etcd.get(Array((connection.layout.nodes + id).utf8))
        return kv.map { (String(decoding: $0.value, as: UTF8.self), $0.modRevision) }
    }

    package func putRegistration(
        _ r: NodeRegistration, ifGeoAt geoAt: Int64, ifNodeAt nodeAt: Int64, audit: AuditLog.Entry
    ) async throws -> Int64? {
        let key = Array((connection.layout.nodes + r.id).utf8)
        let txn = try await connection.etcd.txn(
            [.modRevision(Array(connection.layout.geo.utf8), equals: geoAt), .modRevision(key, equals: nodeAt)],
            success: [.put(key, Array(r.json.utf8)), try auditWrite(audit)])
        return txn.succeeded ? txn.revision : nil
    }

    package func deleteRegistration(_ id: String, ifAt: Int64, audit: AuditLog.Entry) async throws -> Int64? {
        let key = Array((connection.layout.nodes + id).utf8)
        let txn = try await connection.etcd.txn(
            [.modRevision(key, equals: ifAt)], success: [.delete(key), try auditWrite(audit)])
        return txn.succeeded ? txn.revision : nil
    }
}
