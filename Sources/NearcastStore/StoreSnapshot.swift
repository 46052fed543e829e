import DNSWire
import Foundation
import NearcastBasics
import NearcastConfiguration
import NearcastGeo
import Synchronization

/// The last good contents of a fleet's store, kept in the server's state directory (as
/// `nearcast store export` writes them, plus the revision), so that a server that restarts while
/// etcd is out of reach still serves what it served. Replaced whole: written beside, then renamed.
public struct StoreSnapshot: Sendable {
    /// `STATE-DIR/store`.
    public let directory: String

    public init(stateDirectory: String) { directory = stateDirectory + "/store" }

    public init(directory: String) { self.directory = directory }

    /// The config file of the snapshot (its zones and geo section).
    public var configPath: String { directory + "/nearcast.yaml" }

    /// The store's revision the snapshot was read at, or nil when there is none.
    public var revision: Int64? {
        (try? String(contentsOfFile: directory + "/revision", encoding: .utf8)).flatMap {
            Int64($0.trimmingCharacters(in: .whitespacesAndNewlines))
        }
    }

    /// Replaces the snapshot with `files` read at `revision`.
    public func write(_ files: FleetFiles, revision: Int64) throws {
        let next = StoreSnapshot(directory: directory + ".next")
        try next.writeInPlace(files, revision: revision)
        try replace(with: next)
    }

    /// Replaces the snapshot with `other` (a directory beside it, renamed into place).
    public func replace(with other: StoreSnapshot) throws {
        let fm = FileManager.default
        let old = directory + ".old"
        try? fm.removeItem(atPath: old)
        if fm.fileExists(atPath: directory) { try fm.moveItem(atPath: directory, toPath: old) }
        try fm.moveItem(atPath: other.directory, toPath: directory)
        try? fm.removeItem(atPath: old)
    }

    /// Writes `files` read at `revision` into the directory as it is (for a candidate no one
    /// reads while it is written).
    public func writeInPlace(_ files: FleetFiles, revision: Int64) throws {
        try? FileManager.default.removeItem(atPath: directory)
        try files.write(to: directory, served: true)
        try "\(revision)\n".write(toFile: directory + "/revision", atomically: true, encoding: .utf8)
    }

    /// The snapshot's files that are not zones (its config, with the geo section, and its tokens),
    /// as they were before `replaceShared`.
    public struct Shared: Sendable {
        var config: Data?
        var tokens: Data?
        var registered: Data?
    }

    /// Replaces the snapshot's geo section, registered nodes and tokens with `files`' (whose
    /// zones are not read), naming the zone files it keeps (`zones`); what they were, for `restore`.
    public func replaceShared(_ files: FleetFiles, zones: [DNSName]) throws -> Shared {
        let fm = FileManager.default
        let kept = Shared(
            config: fm.contents(atPath: configPath),
            tokens: fm.contents(atPath: directory + "/" + FleetFiles.tokensFile),
            registered: fm.contents(atPath: registeredPath))
        try files.writeShared(to: directory, zones: zones, served: true)
        return kept
    }

    /// Puts back what `replaceShared` replaced (its change was refused).
    public func restore(_ kept: Shared) throws {
        if let c = kept.config { try c.write(to: URL(fileURLWithPath: configPath), options: .atomic) }
        if let t = kept.tokens {
            try t.write(to: URL(fileURLWithPath: directory + "/" + FleetFiles.tokensFile), options: .atomic)
        }
        if let r = kept.registered { try r.write(to: URL(fileURLWithPath: registeredPath), options: .atomic) }
    }

    /// `local` (this server's own settings) serving the snapshot's zones and geo section, with
    /// its registered nodes (`registered`: as the caller holds them, the snapshot's file not read
    /// again). Paths in the geo section (the database) are taken from the local config's
    /// directory, as if the section were written there; the zones are the snapshot's files.
    public func config(
        over local: NearcastConfig, registered: [NodeRegistration]? = nil
    ) throws(DiagnosticsError) -> NearcastConfig {
        guard let data = FileManager.default.contents(atPath: configPath) else {
            throw DiagnosticsError([
                Diagnostic(file: configPath, line: 0, message: "the store's snapshot cannot be read")
            ])
        }
        let base = local.sourcePath.map { ($0 as NSString).deletingLastPathComponent } ?? ""
        // Its secondaries' keys are this server's own (the store holds no secret).
        var shared = try NearcastConfig.parse(
            yaml: String(decoding: data, as: UTF8.self), fileName: configPath, baseDirectory: base,
            keys: local.tsigKeys)
        for i in shared.zones.indices {
            shared.zones[i].path = directory + "/zones/" + (shared.zones[i].path as NSString).lastPathComponent
        }
        var merged = local
        merged.zones = shared.zones
        // (Nodes registered before the geo section was taken away are not served without it.)
        merged.geo =
            shared.geo.isEmpty
            ? shared.geo : shared.geo.registering(NodeRegistration.nodes(registered ?? self.registered()))
        return merged
    }

    /// The snapshot's registered nodes file.
    var registeredPath: String { directory + "/" + FleetFiles.registeredFile }

    /// The registrations the snapshot keeps (none when it has no such file: one written before
    /// they were kept apart had them in its geo section). Each is parsed once while it stays
    /// registered (`parsed`): a fleet reads them all at every registration.
    func registered() -> [NodeRegistration] {
        guard let data = FileManager.default.contents(atPath: registeredPath),
            let jsons = try? JSONDecoder().decode([String].self, from: data)
        else { return [] }
        let known = Self.parsed.withLock { $0 }
        var now: [String: NodeRegistration] = [:]
        for json in jsons { now[json] = known[json] ?? NodeRegistration(stored: json) }
        Self.parsed.withLock { $0 = now }
        return jsons.compactMap { now[$0] }
    }

    /// The registrations read last, by their JSON.
    private static let parsed = Mutex<[String: NodeRegistration]>([:])
}
