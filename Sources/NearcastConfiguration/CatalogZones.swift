import DNSWire
import Foundation
import NearcastBasics
import NearcastTransfer
import NearcastZones
import Yams

/// A zone's part in catalog zones (RFC 9432), its `catalog` key (ARCHITECTURE §17):
///
/// ```yaml
/// zones:
///   - origin: catalog.example.          # made here: the zones this server offers by transfer
///     catalog: produce
///     allow-transfer: ["192.0.2.53 key xfr.example."]
///     notify: ["192.0.2.53 key xfr.example."]
///   - origin: catalog.provider.example.  # followed here: each zone it lists is a secondary
///     catalog: consume                  # of the same primaries, kept in the state directory
///     primaries: ["192.0.2.1 key xfr.example."]
/// ```
public enum CatalogRole: String, Sendable, Hashable {
    /// A catalog this server makes of the zones it offers by transfer (those with an
    /// `allow-transfer`), so that a secondary following it (Knot's `catalog-role: interpret`,
    /// BIND's `catalog-zones`) serves each of them without a change of its config.
    case produce
    /// A catalog transferred from its primaries: each zone it lists is served here as a
    /// secondary of the same primaries, added and removed as the catalog changes.
    case consume

    /// The role `node` names for zone `origin` (nil: none); every problem goes to `diags`.
    static func parse(
        _ node: Node?, origin: DNSName, primaries: [TransferPeer], fileName: String, diags: inout [Diagnostic]
    ) -> CatalogRole? {
        guard let node else { return nil }
        func fail(_ message: String) {
            diags.append(Diagnostic(file: fileName, line: node.mark?.line ?? 0, message: message))
        }
        guard let role = node.string.flatMap(CatalogRole.init(rawValue:)) else {
            fail(
                "zone \(origin) catalog: 'produce' (a catalog made here) or 'consume' (one followed from its primaries)"
            )
            return nil
        }
        if role == .produce && !primaries.isEmpty {
            fail("zone \(origin) is a catalog made here (catalog: produce) and has primaries: it is one or the other")
        }
        if role == .consume && primaries.isEmpty {
            fail("zone \(origin) is a catalog followed here (catalog: consume) and has no primaries to follow it from")
        }
        return role
    }
}

extension NearcastConfig {
    /// This config as it is served with its catalogs: each catalog followed here that has been
    /// transferred adds the zones it lists as secondaries of its primaries (a zone the config
    /// names itself is served as the config says, and noted), and each catalog made here is
    /// written anew when the zones it lists changed, its serial raised. Returns the config and
    /// notes for the log. A catalog's file that does not read as one refuses the config.
    /// Blocking: it reads and writes the catalogs' files.
    public func withCatalogs(now: Int64 = Int64(Date().timeIntervalSince1970)) throws(DiagnosticsError) -> (
        config: NearcastConfig, notes: [String]
    ) {
        var out = self
        var notes: [String] = []
        var diags: [Diagnostic] = []
        for catalog in zones where catalog.catalog == .consume {
            guard FileManager.default.fileExists(atPath: catalog.path) else { continue }
            let listed: [DNSName]
            do { listed = try Self.catalogMembers(catalog) } catch {
                diags += error.diagnostics
                continue
            }
            let (members, said) = out.members(of: catalog, listing: listed)
            out.zones += members
            notes += said
        }
        for catalog in out.zones where catalog.catalog == .produce {
            let members = out.zones.filter { $0.catalog == nil && !$0.allowTransfer.isEmpty }.map(\.origin).sorted()
            do { try Self.writeCatalog(catalog, members: members, now: now) } catch { diags += error.diagnostics }
        }
        if !diags.isEmpty { throw DiagnosticsError(diags) }
        return (out, notes)
    }

    /// The zones to serve for catalog `catalog` (followed here) listing `listed`: each a secondary
    /// of the catalog's primaries and key, kept in the state directory, but for those this
    /// config's other zones have (its own entries, another catalog's members: noted, and left
    /// out) and those this catalog already has here.
    public func members(of catalog: ZoneSource, listing listed: [DNSName]) -> (
        sources: [ZoneSource], notes: [String]
    ) {
        guard let stateDirectory else { return ([], []) }
        var out: [ZoneSource] = []
        var notes: [String] = []
        let configured = Dictionary(zones.map { ($0.origin, $0) }, uniquingKeysWith: { a, _ in a })
        for member in listed {
            if let other = configured[member] {
                if other.memberOf != catalog.origin {
                    let says = other.memberOf.map { "catalog \($0)" } ?? other.declaredAt
                    notes.append("zone \(member), listed in catalog \(catalog.origin), is served as \(says) says")
                }
                continue
            }
            out.append(
                ZoneSource(
                    origin: member, path: SecondaryZoneFiles.path(of: member, in: stateDirectory),
                    declaredAt: catalog.declaredAt, primaries: catalog.primaries, memberOf: catalog.origin))
        }
        return (out, notes)
    }

    /// The members listed in catalog `source`'s file (with its journal's changes).
    static func catalogMembers(_ source: ZoneSource) throws(DiagnosticsError) -> [DNSName] {
        let zone = try ZoneJournal.replay(
            ZoneJournal.path(forZoneFile: source.path), onto: try Zone.load(path: source.path, origin: source.origin),
            file: source.path)
        switch CatalogZone.members(of: zone) {
        case .success(let members): return members
        case .failure(let problem):
            throw DiagnosticsError([Diagnostic(file: source.path, line: 0, message: problem.description)])
        }
    }

    /// Writes catalog `source` listing `members`, unless its file lists them already: at a serial
    /// after the one it had (the time now, as Knot's catalogs, or one more when that is not after).
    static func writeCatalog(_ source: ZoneSource, members: [DNSName], now: Int64) throws(DiagnosticsError) {
        var serial = UInt32(truncatingIfNeeded: now)
        if FileManager.default.fileExists(atPath: source.path) {
            let kept = try Zone.load(path: source.path, origin: source.origin)
            if case .success(let listed) = CatalogZone.members(of: kept), Set(listed) == Set(members) { return }
            if Int32(bitPattern: serial &- kept.serial) <= 0 { serial = kept.serial &+ 1 }
        }
        let fail = { (why: String) in
            DiagnosticsError([
                Diagnostic(file: source.path, line: 0, message: "catalog \(source.origin) cannot be written: \(why)")
            ])
        }
        let records: [ResourceRecord]
        do { records = try CatalogZone.records(origin: source.origin, members: members, serial: serial) } catch {
            throw fail("\(error)")
        }
        let text = ZoneText.render(origin: source.origin, records: records)
        do {
            try FileManager.default.createDirectory(
                atPath: (source.path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try DurableFile.replace(source.path, with: Array(text.utf8))
        } catch { throw fail("\(error)") }
    }
}
