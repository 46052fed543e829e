import DNSWire
import NearcastBasics
import NearcastDNSSEC
import NearcastServer
import NearcastStore
import NearcastZones

// The seams between a fleet's parts (this module) and what a server serves (NearcastControl):
// what the server asks of the store, and what the store's follower hands the server.

/// Where a fleet's zones are kept and changed (the store's follower): what `ZoneEdits.edit`
/// writes through instead of a zone file.
package protocol SharedZones: Sendable {
    /// `owner`'s RRsets in zone `origin` as the store holds them now, with the zone's meta.
    func owner(_ origin: DNSName, _ owner: DNSName) async throws -> StoredZone.Owner
    /// Writes `value` (empty: none) as the RRset of `type` at the owner `read` is of, with
    /// `audit`, if nothing it was made from changed since (`StoredZone.Owner.conditions`); the
    /// store's new revision, or nil when another change came first.
    func writeRRset(_ type: RRType, value: [UInt8], from read: StoredZone.Owner, audit: AuditLog.Entry) async throws
        -> Int64?
    /// Waits until what is served comes from `revision` or later; false after `timeout`.
    func waitServed(_ revision: Int64, timeout: Duration) async -> Bool
    /// Writes secondary zone `zone` (of `primaries`) as a transfer brought it (checked) into the
    /// store, as an import writes a zone; the store's revision after it.
    func writeTransferred(_ zone: Zone, primaries: [String]) async throws -> Int64
    /// Writes the RRsets an IXFR of secondary zone `origin` changed (each whole; empty: removed)
    /// at the primary's `serial`, if the store holds the zone at `before`: in one transaction, or
    /// as an import of them when they do not fit one; the store's revision after it, or nil when
    /// the store holds another serial (`writeTransferred` then writes the zone).
    func writeTransferredChange(
        _ origin: DNSName, _ sets: [(owner: DNSName, type: RRType, value: [UInt8])], serial: UInt32,
        from before: UInt32, primaries: [String]
    ) async throws -> Int64?
    /// Takes secondary zone `origin`'s records out of the store (its expire passed), keeping its
    /// declaration; the store's revision after it.
    func clearTransferred(_ origin: DNSName, primaries: [String]) async throws -> Int64
}

/// An operator's override as kept on disk (and in a fleet's store): its end in wall-clock time
/// (monotonic clocks restart with the host).
package struct KeptOverride: Codable, Equatable, Sendable {
    package var node: String
    package var kind: String
    package var until: Double?

    package init(node: String, kind: String, until: Double?) {
        self.node = node
        self.kind = kind
        self.until = until
    }
}

/// Where a fleet's overrides are kept (the store's follower).
package protocol SharedOverrides: Sendable {
    /// Writes `node`'s override (nil: takes it back), with its audit line.
    func putOverride(_ node: String, _ override: KeptOverride?, audit: AuditLog.Entry) async throws
}

/// What the store's follower serves into (`FleetServing` in a server).
package protocol ServedFromStore: Sendable {
    /// Reloads what is served from the store's snapshot; `zonesUnchanged`: its zone files are the
    /// ones served (only the geo section, registered nodes or tokens changed). Throws when the
    /// snapshot is refused (what was served goes on being served).
    func reloadFromStore(by: String, zonesUnchanged: Bool) async throws
    /// The snapshot's directory was renamed from `from` to `to`: zone files served from there are
    /// now read from here.
    func zoneFilesMoved(from: String, to: String) async
    /// The keys of `zones` changed in the state directory (the store brought them): read again.
    func keysFromStore(_ zones: Set<DNSName>) async
    /// Applies RRsets of zone `origin` changed in the store (each whole; nil: none left), with
    /// the zone's serial as the store derives it; throws when the change is refused.
    func applyFromStore(
        _ origin: DNSName, _ sets: [(name: DNSName, type: RRType, set: RRSet?)], serial: UInt32, revision: Int64
    ) async throws
}

/// Where a fleet's DNSSEC keys are kept (the store, through `FleetKeys`): what the server that
/// drives the fleet's rollovers writes a rollover's steps to.
package protocol SharedKeys: Sendable {
    /// Keeps `key` (its timing changed) for every server of the fleet.
    func put(_ key: DNSSECKey) async throws
}

/// Where the store's overrides are applied (OperatorChanges in a server).
package protocol OverridesFromStore: Sendable {
    /// `node`'s override as the store holds it now (nil: none).
    func applyShared(_ node: String, _ override: KeptOverride?) async
}
