import DNSWire
import NearcastZones

/// The recent changes of a zone, oldest first, each from the serial the one before it made: what
/// an IXFR out (RFC 1995) sends a secondary at one of those serials. Bounded by the records it
/// holds; the oldest changes go first, and a secondary older than what is left gets the whole
/// zone. Kept in memory: a restart begins with none, and secondaries then take an AXFR once.
public struct ZoneHistory: Sendable {
    public private(set) var changesets: [ZoneChangeset] = []
    /// Records in `changesets`.
    public private(set) var records = 0
    /// The most records it keeps (an IXFR of more is not much smaller than the zone).
    public var recordLimit: Int

    public init(recordLimit: Int = 100_000) { self.recordLimit = recordLimit }

    /// Adds `changeset`, made from the serial the last one made; a changeset from another serial
    /// (the zone replaced meanwhile) begins the history anew. A changeset that does not move the
    /// serial forward (RFC 1982) cannot be told from the zone before it by a secondary: the
    /// history is emptied.
    public mutating func append(_ changeset: ZoneChangeset) {
        if let last = changesets.last, last.serialAfter != changeset.serialBefore { clear() }
        guard Self.isNewer(changeset.serialAfter, than: changeset.serialBefore) else { return clear() }
        changesets.append(changeset)
        records += changeset.removed.count + changeset.added.count
        var drop = 0
        while records > recordLimit, drop < changesets.count {
            records -= changesets[drop].removed.count + changesets[drop].added.count
            drop += 1
        }
        if drop > 0 { changesets.removeFirst(drop) }
    }

    public mutating func clear() {
        changesets = []
        records = 0
    }

    /// The changes from `serial` to the last one, when the history reaches back to it.
    public func changes(from serial: UInt32) -> ArraySlice<ZoneChangeset>? {
        guard let i = changesets.firstIndex(where: { $0.serialBefore == serial }) else { return nil }
        return changesets[i...]
    }

    /// Serial number arithmetic (RFC 1982): whether `a` is newer than `b`.
    public static func isNewer(_ a: UInt32, than b: UInt32) -> Bool {
        a != b && (a &- b) < 0x8000_0000
    }
}

extension ZoneHistory {
    /// The history a zone's journal gives at a start: its changesets (`ZoneJournal.read`, those
    /// since the zone file's serial) when they lead to `servedSerial`, the serial of the zone
    /// served once they are replayed. Secondaries then take an IXFR across a restart for the
    /// changes since the last write-back, not the whole zone.
    public static func journaled(_ changesets: [ZoneChangeset], servedSerial: UInt32) -> ZoneHistory {
        var h = ZoneHistory()
        for c in changesets { h.append(c) }
        if h.changesets.last?.serialAfter != servedSerial { h.clear() }
        return h
    }
}

extension ZoneChangeset {
    /// The changeset that makes `after` from `before` (a zone of the same origin), given the
    /// owners whose RRsets may differ: each RRset that differs removed whole and added whole.
    public static func between(_ before: Zone, _ after: Zone, owners: some Sequence<DNSName>) -> ZoneChangeset {
        var removed: [ResourceRecord] = []
        var added: [ResourceRecord] = []
        for owner in owners {
            for type in Set(before.types(at: owner) + after.types(at: owner)) {
                let old = before.rrset(owner, type)
                let new = after.rrset(owner, type)
                if let old, let new, old.isIdentical(to: new) { continue }
                removed += old?.records() ?? []
                added += new?.records() ?? []
            }
        }
        // The SOA goes with every change, as the journal keeps it.
        if !removed.contains(where: { $0.type == .soa }) {
            removed += before.soa.records()
            added += after.soa.records()
        }
        return ZoneChangeset(
            serialBefore: before.serial, serialAfter: after.serial, removed: removed, added: added)
    }
}
