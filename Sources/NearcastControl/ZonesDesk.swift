import DNSWire
import Foundation
import NearcastAPIModel
import NearcastBasics
import NearcastConfiguration
import NearcastServer
import NearcastTransfer
import NearcastZones

/// The zones served as the API shows them (`/v1/zones`, their records, `nearcast zones`, the
/// dashboard's Zones table, the status and the metrics' zone series), read from what is served now
/// (`ServedConfig.now`) off its turn, with each secondary's refresh (`SecondaryZones.statuses`);
/// record changes go to `ZoneEdits`.
package struct ZonesDesk: ZoneDesk {
    let served: ServedConfig
    let edits: ZoneEdits
    let secondaries: SecondaryZones?

    package init(served: ServedConfig, edits: ZoneEdits, secondaries: SecondaryZones?) {
        self.served = served
        self.edits = edits
        self.secondaries = secondaries
    }

    /// The zones served; secondary zones not served come last, with no serial or records.
    package func zoneList() async -> [ZoneSummary] {
        Self.list(
            await served.now, statuses: await secondaries?.statuses() ?? [:], by: await secondaries?.transferredBy())
    }

    static func list(_ now: ServedConfig.Now, statuses: [DNSName: SecondaryZones.Status], by: String?)
        -> [ZoneSummary]
    {
        var list = zip(now.config.zones, now.zones).map { src, z in
            ZoneSummary(
                origin: z.origin.description, file: src.path, serial: z.serial, records: z.recordCount,
                secondary: src.isSecondary ? Self.status(src, statuses[src.origin], state: "served", by: by) : nil,
                catalog: src.catalog?.rawValue, memberOf: src.memberOf?.description)
        }
        for src in now.unavailable {
            let state = FileManager.default.fileExists(atPath: src.path) ? "expired" : "not transferred yet"
            list.append(
                ZoneSummary(
                    origin: src.origin.description, file: src.path, serial: 0, records: 0,
                    secondary: Self.status(src, statuses[src.origin], state: state, by: by),
                    catalog: src.catalog?.rawValue, memberOf: src.memberOf?.description))
        }
        return list
    }

    static func status(_ source: ZoneSource, _ s: SecondaryZones.Status?, state: String, by: String?)
        -> SecondaryZoneStatus
    {
        SecondaryZoneStatus(
            state: state, primaries: source.primaries.map(\.description),
            lastRefresh: s?.lastRefresh ?? SecondaryRefreshRecord.read(forZoneFile: source.path)?.refreshed,
            nextRefresh: s?.nextRefresh, lastError: s?.lastError, transferredBy: by)
    }

    /// The zones served with their checksums (`Zone.checksum`), for the status: a walk over
    /// every record (about a second at 1M names), on a thread of its own.
    package func zoneListWithChecksums() async -> [ZoneSummary] {
        let now = await served.now
        var list = Self.list(
            now, statuses: await secondaries?.statuses() ?? [:], by: await secondaries?.transferredBy())
        let zones = now.zones
        let sums = (try? await onOwnThread(name: "nc-checksum", background: true) { zones.map(\.checksum) }) ?? []
        for (i, sum) in sums.enumerated() where i < list.count { list[i].checksum = sum }
        return list
    }

    /// The records of zone `origin`, optionally of one name and type, as the API shows them.
    package func records(_ origin: String, name: String?, type: String?) async throws(ZoneEditError)
        -> [RecordInput]
    {
        let zones = await served.now.zones
        guard let i = ServedConfig.index(of: origin, in: zones) else {
            throw .notFound("no zone \(origin) is served here")
        }
        let z = zones[i]
        let owner = try name.map { (n) throws(ZoneEditError) in try ZoneEditor.ownerName(n, origin: z.origin) }
        let rrtype = try type.map { (t) throws(ZoneEditError) -> RRType in
            guard let r = RRType(mnemonic: t) else { throw .invalid(field: "type", "'\(t)' is not a record type") }
            return r
        }
        var out: [RecordInput] = []
        // One name is looked up, not found among all (a zone may hold millions).
        for n in owner.map({ z.types(at: $0).isEmpty ? [] : [$0] }) ?? z.names {
            for t in [RRType.soa] + z.types(at: n).filter({ $0 != .soa }).sorted(by: { $0.rawValue < $1.rawValue })
            where rrtype == nil || t == rrtype {
                guard let set = z.rrset(n, t) else { continue }
                for r in set.rdatas {
                    out.append(
                        RecordInput(
                            name: n.description, type: t.description, ttl: set.ttl, data: ZoneText.rdata(r, type: t)))
                }
            }
        }
        return out
    }

    package func edit(_ origin: String, _ edit: ZoneEditor.Edit, by: String, ifMatch: String?)
        async throws(ZoneEditError) -> RecordChange
    {
        try await edits.edit(origin, edit, by: by, ifMatch: ifMatch)
    }

    package func version(_ origin: String, name: String, type: String) async throws(ZoneEditError) -> String {
        try await edits.version(origin, name: name, type: type)
    }
}
