import DNSWire
import Foundation
import Logging
import NearcastAPIModel
import NearcastBasics
import NearcastDNSSEC
import NearcastFleet
import NearcastServer
import NearcastStore
import NearcastZones

/// Record changes: through the API (`edit`, made for an RRset's `version`), and those a fleet's
/// store brings (`applyFromStore`). Each is checked where it reaches (`ZoneEditor`, the geo
/// section), audited, and served through `ServedConfig.commit` on a turn of its own: appended to
/// the zone's journal (synced: durable from then on), then served, and the zone file written back
/// later (`ZoneWriteBack`). A change that fails at any step leaves the journal and the served data
/// as they were. Its cost grows with the change, not with the zone (docs/ARCHITECTURE.md §15): the
/// fast path is written the records the change reaches, in its live generation.
///
/// In a fleet (`shared`), a change is written to the store instead, conditioned on what it was
/// made from, and served when the store's watch brings it back, here as on every server.
package struct ZoneEdits: Sendable {
    let served: ServedConfig
    let audit: AuditLog?
    /// A fleet's store, when the zones are shared (record changes go there).
    let shared: (any SharedZones)?
    let logger: Logger

    package init(served: ServedConfig, audit: AuditLog?, shared: (any SharedZones)?, logger: Logger) {
        self.served = served
        self.audit = audit
        self.shared = shared
        self.logger = logger
    }

    /// Changes zone `origin` as `edit` says, by `by`. `ifMatch`: the version of the RRset
    /// (`version`) the change was made for; another now refuses it (`versionChanged`).
    package func edit(_ origin: String, _ edit: ZoneEditor.Edit, by: String, ifMatch: String? = nil)
        async throws(ZoneEditError) -> RecordChange
    {
        let started = ContinuousClock.now
        if let shared {
            return try await editShared(shared, origin, edit, by: by, ifMatch: ifMatch, started: started)
        }
        let (audit, logger) = (self.audit, self.logger)
        return try await served.withTurn { (s) throws(ZoneEditError) -> RecordChange in
            let i = try Self.editable(s, origin, edit)
            let source = s.running.zones[i]
            let zone = s.zones[i]
            if let ifMatch, ifMatch != Self.version(serial: zone.serial) {
                throw .versionChanged(
                    "zone \(source.origin) is at version \(Self.version(serial: zone.serial)), the change was made for \(ifMatch): nothing was changed; read the records again"
                )
            }
            if zone.fromSeveralFiles {
                throw .conflict(
                    "zone \(source.origin) is read from several files ($INCLUDE): change its files and reload")
            }
            if source.catalog == .produce {
                throw .conflict(
                    "zone \(source.origin) is a catalog made here of the zones served: add or remove zones in the config"
                )
            }
            // Problems are reported against the zone as it would be after the change (not yet written).
            let (changed, change, changeset) = try ZoneEditor.apply(
                edit, to: zone, fileName: "\(source.path) as changed")
            try s.checkGeo(replacing: i, with: changed)
            let action = Self.describe(edit)
            let block = ZoneJournal.block(changeset)
            do {
                try audit?.record(
                    AuditLog.entry(
                        who: by, action: "record", target: source.origin.description, detail: action,
                        before: "serial \(changeset.serialBefore)", after: AuditLog.digest(Array(block.utf8))))
            } catch { throw .failed("the audit log cannot be written (\(error)): nothing was changed") }
            try await s.commit(i, changed, changeset, started: started)
            logger.notice(
                "zone changed",
                metadata: [
                    "zone": "\(source.origin)", "by": "\(by)", "change": "\(action)", "serial": "\(change.serial)",
                    "ms": "\((ContinuousClock.now - started).seconds * 1000)",
                ])
            return change
        }
    }

    /// The index of zone `origin` served in `s`, if `edit` may change it there: not a secondary
    /// (a fleet's too: its next transfer would undo the change), nor what the signer makes of a
    /// zone signed here.
    static func editable(_ s: isolated ServedConfig, _ origin: String, _ edit: ZoneEditor.Edit)
        throws(ZoneEditError) -> Int
    {
        guard let i = ServedConfig.index(of: origin, in: s.zones) else {
            throw .notFound("no zone \(origin) is served here")
        }
        let source = s.running.zones[i]
        if source.isSecondary {
            throw .conflict("zone \(source.origin) is a secondary, transferred from its primaries: change it there")
        }
        if s.signing.signs(source.origin), let (owner, type) = try? ZoneEditor.target(of: edit, origin: source.origin),
            ZoneSigner.replaces(type, at: owner, origin: source.origin)
        {
            throw .conflict(
                "zone \(source.origin) is signed here: its \(type) records at \(owner) are the signer's, made from its keys and data"
            )
        }
        return i
    }

    /// Serves the change of zone `origin` that a fleet's store brought (its watch, at
    /// `revision`): each of `sets` the whole RRset of its name and type now (nil: none), and the
    /// zone's serial `serial` (derived: docs/ARCHITECTURE.md §13). Checked where it reaches, as a
    /// change through the API is, journaled beside the store's snapshot of the zone (what a
    /// restart with etcd out of reach serves), and served: it costs what it changes, not a
    /// reread of the store. Not audited here: the server that wrote it audited it in the store.
    package func applyFromStore(
        _ origin: DNSName, _ sets: [(name: DNSName, type: RRType, set: RRSet?)], serial: UInt32, revision: Int64
    ) async throws(ZoneEditError) {
        let logger = self.logger
        try await served.withTurn { (s) throws(ZoneEditError) in
            let started = ContinuousClock.now
            guard let i = s.zones.firstIndex(where: { $0.origin == origin }) else {
                throw .notFound("no zone \(origin) is served here")
            }
            let changed: Zone
            let changeset: ZoneChangeset
            do throws(DiagnosticsError) {
                (changed, changeset) = try s.zones[i].replacing(
                    sets, serial: serial, source: "store@\(revision) \(origin)")
            } catch { throw .zone(error) }
            guard !changeset.removed.isEmpty || !changeset.added.isEmpty else { return }
            try s.checkGeo(replacing: i, with: changed)
            try await s.commit(i, changed, changeset, started: started)
            logger.info(
                "zone changed from the store",
                metadata: [
                    "zone": "\(origin)", "revision": "\(revision)", "serial": "\(serial)", "rrsets": "\(sets.count)",
                    "ms": "\((ContinuousClock.now - started).seconds * 1000)",
                ])
        }
    }

    /// A record change in a fleet's store (layout 2, docs/ARCHITECTURE.md §13): the owner's
    /// RRsets as the store holds them now put in the zone served, the change made and checked
    /// there as a file edit is, and the one RRset it changes written back in one transaction
    /// conditioned on what it was made from (`StoredZone.Owner.conditions`: a change to the same
    /// RRset meanwhile refuses this one, and says so; changes to other RRsets do not), with its
    /// audit line. The turn is held for the check and the write only: the store's change comes
    /// back through the watch and is served like any other, which this waits for.
    func editShared(
        _ shared: any SharedZones, _ origin: String, _ edit: ZoneEditor.Edit, by: String, ifMatch: String?,
        started: ContinuousClock.Instant
    ) async throws(ZoneEditError) -> RecordChange {
        let audit = self.audit
        let (change, written) = try await served.withTurn { (s) throws(ZoneEditError) -> (RecordChange, Int64) in
            let i = try Self.editable(s, origin, edit)
            let origin = s.zones[i].origin
            let (owner, type) = try ZoneEditor.target(of: edit, origin: origin)
            let stored: StoredZone.Owner
            do { stored = try await shared.owner(origin, owner) } catch {
                throw .unavailable("the store cannot be read (\(error)): nothing was changed")
            }
            guard stored.meta?.state == .ready else {
                throw stored.meta == nil
                    ? .notFound("the store holds no zone \(origin)")
                    : .conflict(
                        "zone \(origin) is being imported into the store: nothing was changed; retry once it is")
            }
            let version = Self.version(revision: stored.values[type]?.modRevision ?? 0)
            if let ifMatch, ifMatch != version {
                throw .versionChanged(
                    "the \(type) records at \(owner) are at version \(version), the change was made for \(ifMatch): nothing was changed; read them again"
                )
            }
            // The zone served, its owner's RRsets as the store holds them now (the SOA's serial is
            // derived, not stored: the served one stays, unless the SOA is what changes).
            let base: Zone
            do throws(DiagnosticsError) {
                var sets: [(name: DNSName, type: RRType, set: RRSet?)] = []
                let types = Set(s.zones[i].types(at: owner)).union(stored.values.keys)
                for t in types where t != .soa || type == .soa { sets.append((owner, t, try stored.rrset(t))) }
                base = try s.zones[i].changing(sets, source: "store \(origin)")
            } catch { throw .zone(error) }
            let (zone, c, _) = try ZoneEditor.apply(edit, to: base, fileName: "store \(origin) as changed")
            try s.checkGeo(replacing: i, with: zone)
            let before = stored.values[type]?.value ?? []
            let after = zone.rrset(owner, type).map(StoredZone.value) ?? []
            let entry = AuditLog.entry(
                who: by, action: "record", target: origin.description, detail: Self.describe(edit),
                before: AuditLog.digest(before), after: AuditLog.digest(after))
            let revision: Int64?
            do { revision = try await shared.writeRRset(type, value: after, from: stored, audit: entry) } catch {
                throw .unavailable("the store cannot be written (\(error)): nothing was changed")
            }
            guard let revision else {
                // What changed under it: the RRset (or, for a CNAME, the owner) at the revision it is at now.
                let now =
                    (try? await shared.owner(origin, owner)).map { "revision \($0.revision)" } ?? "a later revision"
                if ifMatch != nil {
                    throw .versionChanged(
                        "the \(type) records at \(owner) changed in the store while this change was made for version \(version) (read again at \(now)): nothing was changed; read them again"
                    )
                }
                throw .conflict(
                    "the \(type) records at \(owner) changed in the store while this change was made (read at revision \(stored.revision), read again at \(now)): nothing was changed; read them again and retry"
                )
            }
            try? audit?.record(entry)
            var change = c
            change.serial = stored.serial(at: revision)
            return (change, revision)
        }
        if !(await shared.waitServed(written, timeout: .seconds(5))) {
            logger.warning("a change written to the store is not served here yet", metadata: ["revision": "\(written)"])
        }
        logger.notice(
            "zone changed in the store",
            metadata: [
                "zone": "\(origin)", "by": "\(by)", "change": "\(Self.describe(edit))", "revision": "\(written)",
                "ms": "\((ContinuousClock.now - started).seconds * 1000)",
            ])
        return change
    }

    /// The version of the RRset of `name` and `type` in zone `origin`, which a change made for it
    /// names (`edit`'s `ifMatch`; HTTP ETag and If-Match): in a fleet's store, the revision its
    /// key was last written at (`r` and the number; `r0`: never written); on a server of its own,
    /// the zone's serial (`s` and the serial: any change of the zone changes it).
    package func version(_ origin: String, name: String, type: String) async throws(ZoneEditError) -> String {
        let zones = await served.now.zones
        guard let i = ServedConfig.index(of: origin, in: zones) else {
            throw .notFound("no zone \(origin) is served here")
        }
        let zoneOrigin = zones[i].origin
        guard let shared else { return Self.version(serial: zones[i].serial) }
        let owner = try ZoneEditor.ownerName(name, origin: zoneOrigin)
        guard let rrtype = RRType(mnemonic: type) else {
            throw .invalid(field: "type", "'\(type)' is not a record type")
        }
        do {
            let stored = try await shared.owner(zoneOrigin, owner)
            return Self.version(revision: stored.values[rrtype]?.modRevision ?? 0)
        } catch { throw .unavailable("the store cannot be read (\(error))") }
    }

    static func version(serial: UInt32) -> String { "s\(serial)" }
    static func version(revision: Int64) -> String { "r\(revision)" }

    static func describe(_ edit: ZoneEditor.Edit) -> String {
        switch edit {
        case .add(let r): "add \(r.name) \(r.type) \(r.data)"
        case .delete(let n, let t, let d): "delete \(n) \(t)" + (d.map { " \($0)" } ?? "")
        case .replace(let n, let t, let r): "set \(n) \(t) " + r.data.joined(separator: ", ")
        }
    }
}
