import DNSWire
import EtcdClient
import Foundation
import NearcastBasics
import NearcastConfiguration
import NearcastZones
import Yams

/// What a fleet shares that a single server keeps in files: its zones and its geo section. It is
/// what `nearcast store import` puts into etcd from a config and its files, and what
/// `nearcast store export` writes back as files.
public struct FleetFiles: Equatable, Sendable {
    /// Each zone as a master file, by origin.
    public var zones: [DNSName: String]
    /// The geo section as YAML (nil: no geo names).
    public var geo: String?
    /// The nodes that registered themselves, by id (not files: what a server serves, not what
    /// `store export` writes).
    public var registered: [String: NodeRegistration] = [:]
    /// The management API's tokens, by SHA-256 (hex): `ROLE[:NODE] SOURCE` (APITokens.storeEntries).
    /// Imported from the config's tokens file; a server's snapshot keeps them, `store export` does
    /// not (a digest is no token).
    public var tokens: [String: String] = [:]
    /// Zones the store holds that are not to be served as they are, and why: an import under
    /// way, or keys that do not sum to the checksum their import wrote.
    public var unready: [DNSName: String] = [:]
    /// Where each zone's served serial counts from (of `zones` read from a store): what a
    /// follower derives the serial from as the zone's keys change after the read.
    public var serialBases: [DNSName: StoredZone.SerialBase] = [:]
    /// The fleet's secondary zones, by origin: their primaries (`ADDRESS[:PORT] [key NAME]`).
    /// Their records, once a transfer brought them into the store, are in `zones` too; until
    /// then a secondary is declared and not served (SERVFAIL), as a single server's is before
    /// its first transfer (ARCHITECTURE §17).
    public var secondaries: [DNSName: [String]] = [:]
    /// The zones of `unready` whose import is under way: nothing of theirs is served before it
    /// ends, so a follower lets their keys' changes pass until their meta says `ready`.
    public var importing: Set<DNSName> = []

    public init(zones: [DNSName: String] = [:], geo: String? = nil) {
        self.zones = zones
        self.geo = geo
    }

    /// These files without their zones' records (the geo section, registered nodes, tokens and
    /// the secondaries' declarations).
    public var withoutZones: FleetFiles {
        var out = self
        // (The secondaries' declarations stay: the snapshot's config names them, files or not.)
        (out.zones, out.unready, out.serialBases) = ([:], [:], [:])
        return out
    }

    /// The config at `path`, as the store's commands read it: a secondary zone needs no state
    /// directory there (its records are the fleet's transfers, not a file a server keeps), so any
    /// will do for where a single server would keep it.
    public static func config(at path: String) throws(DiagnosticsError) -> NearcastConfig {
        try NearcastConfig.load(path: path, stateDirectory: "/var/lib/nearcast")
    }

    /// The zones and geo section of the config at `path`, each zone checked as the daemon loads
    /// it and written in one piece ($INCLUDEs resolved); its secondary zones declared with their
    /// primaries (their records are the transfers', not a file's).
    public static func read(config path: String) throws(DiagnosticsError) -> FleetFiles {
        let config = try Self.config(at: path)
        var out = FleetFiles()
        var diags: [Diagnostic] = []
        for source in config.zones {
            if let role = source.catalog {
                let (file, line) = SecondaryZoneFiles.declaration(source)
                diags.append(
                    Diagnostic(
                        file: file, line: line,
                        message:
                            "zone \(source.origin): a catalog zone (catalog: \(role)) is a single server's; a fleet's store does not hold one"
                    ))
                continue
            }
            if source.isSecondary {
                out.secondaries[source.origin] = source.primaries.map(\.description)
                continue
            }
            do {
                let records = try ZoneFileParser.parse(path: source.path, origin: source.origin)
                _ = try Zone.build(origin: source.origin, records: records, sourceName: source.path)
                out.zones[source.origin] = ZoneText.render(origin: source.origin, records: records.map(\.record))
            } catch { diags += error.diagnostics }
        }
        if !diags.isEmpty { throw DiagnosticsError(diags) }
        out.tokens = try config.api.loadTokens().storeEntries
        // The geo section as written (parsed again by every server that reads it).
        if let text = try? String(contentsOfFile: path, encoding: .utf8), let root = try? Yams.compose(yaml: text),
            let geo = root.mapping?["geo"]
        {
            out.geo = try? Yams.serialize(node: geo)
        }
        return out
    }

    /// The files the store holds under `layout`'s prefix (from a range of it, at one revision).
    /// A zone whose import is under way, or whose keys do not sum to the checksum its import
    /// wrote, is not among `zones` but in `unready`: the server goes on serving what it had.
    public init(_ kvs: [KeyValue], layout: StoreLayout) throws(DiagnosticsError) {
        self.init()
        var diags: [Diagnostic] = []
        var zoneKeys: [DNSName: [KeyValue]] = [:]
        for kv in kvs {
            let key = kv.keyString
            if key.hasPrefix(layout.zones) {
                guard let origin = StoredZone.origin(ofKey: key, layout) else {
                    diags.append(
                        Diagnostic(
                            file: key, line: 0,
                            message:
                                "not a key of store layout \(StoreLayout.version) (a zone of layout 1? run nearcast store migrate)"
                        ))
                    continue
                }
                zoneKeys[origin, default: []].append(kv)
            } else if key == layout.geo {
                geo = String(decoding: kv.value, as: UTF8.self)
            } else if key.hasPrefix(layout.tokens) {
                tokens[String(key.dropFirst(layout.tokens.count))] = String(decoding: kv.value, as: UTF8.self)
            } else if key.hasPrefix(layout.nodes) {
                guard let r = NodeRegistration(stored: String(decoding: kv.value, as: UTF8.self)) else {
                    diags.append(Diagnostic(file: key, line: 0, message: "not a node registration (JSON with an id)"))
                    continue
                }
                registered[r.id] = r
            }
        }
        for (origin, keys) in zoneKeys {
            let read = StoredZone.Read(origin: origin, kvs: keys, layout: layout)
            // A secondary stays declared while a transfer is written in (an import under way).
            if let primaries = read.meta?.primaries { secondaries[origin] = primaries }
            guard read.isReady else {
                unready[origin] = "its import is under way"
                importing.insert(origin)
                continue
            }
            // Declared, not transferred yet (or expired): nothing to serve.
            if secondaries[origin] != nil && read.values.isEmpty { continue }
            do {
                let text = try read.text()
                if let why = Self.checksumProblem(read, text) {
                    unready[origin] = why
                } else {
                    zones[origin] = text
                    serialBases[origin] = read.serialBase
                }
            } catch { diags += error.diagnostics }
        }
        if !diags.isEmpty { throw DiagnosticsError(diags) }
    }

    /// Why a zone read right after its import (nothing written since) is not what the import
    /// wrote: its records' checksum is not the one the import stored; nil when it is, or when
    /// the zone has changed since (the checksum then says nothing).
    static func checksumProblem(_ read: StoredZone.Read, _ text: String) -> String? {
        guard read.revision == read.metaRevision, let stored = read.meta?.checksum else { return nil }
        guard let records = try? ZoneFileParser.parse(text: text, fileName: "store", origin: read.origin) else {
            return "its keys are not a zone"
        }
        let sum = Zone.checksum(of: records.lazy.map(\.record))
        return sum == stored ? nil : "its keys sum to checksum \(sum), its import wrote \(stored)"
    }

    /// Writes the files into `directory`: `zones/ORIGINzone` for each zone and a `nearcast.yaml`
    /// that names them (relative to it) and holds the geo section (`served`: the registered nodes
    /// and the tokens beside, as a server serves them). Each file is written whole
    /// (temporary file, then a rename).
    public func write(to directory: String, served: Bool = false) throws {
        try FileManager.default.createDirectory(atPath: directory + "/zones", withIntermediateDirectories: true)
        for (origin, text) in zones {
            try text.write(toFile: directory + "/" + Self.zoneFile(origin), atomically: true, encoding: .utf8)
        }
        try writeShared(to: directory, zones: Array(zones.keys), served: served)
    }

    /// Writes into `directory` the `nearcast.yaml` that names the files of `zones` (written
    /// already, or kept) and holds the geo section, and (`served`) the registered nodes and the
    /// tokens: what changes when
    /// the geo section, the registered nodes or the tokens change and no zone does.
    public func writeShared(to directory: String, zones origins: [DNSName], served: Bool) throws {
        var config = """
            # Written by `nearcast store export`: the zones and the geo section of a fleet's store.
            # Listen addresses, the API, XDP, the state directory and the tsig keys its secondary
            # zones name are each server's own: add them.
            zones:

            """
        for origin in Set(origins).union(secondaries.keys).sorted() {
            // A secondary's file is there once a transfer brought it; until then it is declared.
            let primaries = secondaries[origin].map {
                ", primaries: [" + $0.map { "\"\($0)\"" }.joined(separator: ", ") + "]"
            }
            config += "  - { origin: \(origin.lowercased()), file: \(Self.zoneFile(origin))\(primaries ?? "") }\n"
        }
        if origins.isEmpty && secondaries.isEmpty {
            config = config.replacingOccurrences(of: "zones:\n", with: "zones: []\n")
        }
        if let geo {
            let body = geo.trimmingCharacters(in: .newlines)
            config += "geo:\n" + body.split(separator: "\n").map { "  " + $0 + "\n" }.joined()
        }
        try config.write(toFile: directory + "/nearcast.yaml", atomically: true, encoding: .utf8)
        if served {
            let lines = tokens.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)\n" }.joined()
            try lines.write(toFile: directory + "/" + Self.tokensFile, atomically: true, encoding: .utf8)
            let nodes = registered.values.sorted { $0.id < $1.id }.map(\.json)
            try JSONEncoder().encode(nodes).write(
                to: URL(fileURLWithPath: directory + "/" + Self.registeredFile), options: .atomic)
        }
    }

    /// Where `write` puts zone `origin`, under its directory.
    public static func zoneFile(_ origin: DNSName) -> String { "zones/\(origin.lowercased())zone" }

    /// Where a server's snapshot keeps the registered nodes: a JSON array of their
    /// registrations, as the store keeps them (added to the geo section when the snapshot's
    /// config is read: `StoreSnapshot.config(over:)`).
    public static let registeredFile = "registered.json"

    /// Where a server's snapshot keeps the store's tokens: `SHA256 ROLE[:NODE] SOURCE` lines.
    public static let tokensFile = "tokens.sha256"

    /// The tokens a snapshot in `directory` keeps.
    public static func tokens(in directory: String) -> [String: String] {
        let text = (try? String(contentsOfFile: directory + "/" + tokensFile, encoding: .utf8)) ?? ""
        var out: [String: String] = [:]
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: " ", maxSplits: 1).map(String.init)
            if parts.count == 2 { out[parts[0]] = parts[1] }
        }
        return out
    }
}
