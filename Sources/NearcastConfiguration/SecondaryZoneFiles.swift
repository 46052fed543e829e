import DNSWire
import Foundation
import NearcastBasics

/// Where a secondary zone is kept, and what is known of its last refresh (ARCHITECTURE §17).
///
/// A secondary zone is kept in its file (its `file`, or `secondary/ORIGIN.zone` in the state
/// directory), written from each transfer in as a zone changed through the API is (journal, then
/// write-back), so that a restart serves it before its first refresh. Beside it, its refresh
/// record (`FILE.refresh`) says when a primary last answered and the SOA's expire then: a zone
/// whose expire has passed without a refresh is not served (SERVFAIL, RFC 1035 §3.3.13), across
/// restarts and reloads too.
public enum SecondaryZoneFiles {
    /// Each secondary zone of `zones` that names no file, and each catalog made here that names
    /// none, gets its place in `stateDirectory`; without a state directory, that is a problem
    /// reported against its declaration, as is a catalog followed here (its members are kept there).
    static func place(_ zones: inout [ZoneSource], stateDirectory: String?) -> [Diagnostic] {
        var diags: [Diagnostic] = []
        for i in zones.indices where zones[i].path.isEmpty || zones[i].catalog == .consume {
            guard let stateDirectory else {
                let (file, line) = declaration(zones[i])
                let message =
                    zones[i].catalog == .consume
                    ? "zone \(zones[i].origin) is a catalog followed here: set state-dir, where its member zones are kept"
                    : zones[i].catalog == .produce
                        ? "zone \(zones[i].origin) is a catalog made here with no 'file': set state-dir, where it is then kept, or give it a file"
                        : "zone \(zones[i].origin) is a secondary with no 'file': set state-dir, where it is then kept, or give it a file"
                diags.append(Diagnostic(file: file, line: line, message: message))
                continue
            }
            if zones[i].path.isEmpty {
                zones[i].path =
                    zones[i].catalog == .produce
                    ? path(of: zones[i].origin, in: stateDirectory, folder: "catalog")
                    : path(of: zones[i].origin, in: stateDirectory)
            }
        }
        return diags
    }

    /// Where the state directory keeps secondary zone `origin` (`folder`: or a catalog made here).
    public static func path(of origin: DNSName, in stateDirectory: String, folder: String = "secondary") -> String {
        // A label may hold a "/" (escaped in the zone's text): not a directory here.
        let name =
            origin.isRoot
            ? "root" : String(origin.description.lowercased().dropLast()).replacingOccurrences(of: "/", with: "%2f")
        return (stateDirectory as NSString).appendingPathComponent("\(folder)/\(name).zone")
    }

    /// The file and line a zone was declared at.
    public static func declaration(_ zone: ZoneSource) -> (String, Int) {
        let colon = zone.declaredAt.lastIndex(of: ":") ?? zone.declaredAt.endIndex
        return (String(zone.declaredAt[..<colon]), Int(zone.declaredAt[colon...].dropFirst()) ?? 0)
    }
}

/// When a secondary zone was last refreshed from a primary (an answer, whether or not it brought
/// a change), and the expire of its SOA then: kept beside the zone's file (`SecondaryZoneFiles`).
public struct SecondaryRefreshRecord: Codable, Equatable, Sendable {
    /// Seconds since 1970.
    public var refreshed: Int64
    /// The SOA's expire, in seconds.
    public var expire: UInt32
    /// The serial the primary had.
    public var serial: UInt32

    public init(refreshed: Int64, expire: UInt32, serial: UInt32) {
        self.refreshed = refreshed
        self.expire = expire
        self.serial = serial
    }

    /// The record kept beside zone file `path`.
    public static func path(forZoneFile path: String) -> String { path + ".refresh" }

    /// The record beside zone file `path`; nil when there is none or it does not read.
    public static func read(forZoneFile path: String) -> SecondaryRefreshRecord? {
        guard let data = FileManager.default.contents(atPath: Self.path(forZoneFile: path)) else { return nil }
        return try? JSONDecoder().decode(SecondaryRefreshRecord.self, from: data)
    }

    /// Writes the record beside zone file `path`, replacing the one there at once.
    public func write(forZoneFile path: String) throws(DurableFile.Failure) {
        let data = (try? JSONEncoder().encode(self)) ?? Data()
        try DurableFile.replace(Self.path(forZoneFile: path), with: Array(data))
    }

    /// Whether the zone's expire has passed since the refresh, at `now` (seconds since 1970).
    public func hasExpired(now: Int64) -> Bool { now >= refreshed + Int64(expire) }
}

extension NearcastConfig {
    /// This config with the zones that can be served now, and the secondary zones that cannot:
    /// those whose file does not exist yet (never transferred), and those whose expire has
    /// passed since their last refresh (`SecondaryRefreshRecord`). A secondary zone whose file
    /// has no refresh record (one placed there by hand) is served, and refreshed soon; its
    /// refresh counts its expire from the file's modification time.
    public func servable(now: Int64 = Int64(Date().timeIntervalSince1970)) -> (
        config: NearcastConfig, unavailable: [ZoneSource]
    ) {
        var out = self
        var unavailable: [ZoneSource] = []
        out.zones = zones.filter { z in
            guard z.isSecondary else { return true }
            let kept =
                FileManager.default.fileExists(atPath: z.path)
                && SecondaryRefreshRecord.read(forZoneFile: z.path)?.hasExpired(now: now) != true
            if !kept { unavailable.append(z) }
            return kept
        }
        return (out, unavailable)
    }
}
