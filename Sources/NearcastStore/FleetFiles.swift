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

    public init(zones: [DNSName: String] = [:], geo: String? = nil) {
        self.zones = zones
        self.geo = geo
    }

    /// The geo section as a server serves it: with the registered nodes in it.
    public var servedGeo: String? {
        geo.map { NodeRegistration.merge(Array(registered.values), into: $0) }
    }

    /// The zones and geo section of the config at `path`, each zone checked as the daemon loads
    /// it and written in one piece ($INCLUDEs resolved).
    public static func read(config path: String) throws(DiagnosticsError) -> FleetFiles {
        let config = try NearcastConfig.load(path: path)
        var out = FleetFiles()
        var diags: [Diagnostic] = []
        for source in config.zones {
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

    /// The writes that make the store hold exactly these files: the layout's version, every zone,
    /// the geo section, the tokens; zones, a geo section and tokens the files do not have are
    /// deleted (`current`: the store's zones and tokens).
    public func operations(_ layout: StoreLayout, replacing current: [KeyValue]) -> [EtcdOperation] {
        var ops: [EtcdOperation] = [.put(Array(layout.layoutKey.utf8), Array(StoreLayout.version.utf8))]
        let wanted = Set(zones.keys.map { layout.zone($0) })
        for kv in current where kv.keyString.hasPrefix(layout.zones) && !wanted.contains(kv.keyString) {
            ops.append(.delete(kv.key))
        }
        for (origin, text) in zones.sorted(by: { $0.key < $1.key }) {
            ops.append(.put(Array(layout.zone(origin).utf8), Array(text.utf8)))
        }
        if let geo {
            ops.append(.put(Array(layout.geo.utf8), Array(geo.utf8)))
        } else {
            ops.append(.delete(Array(layout.geo.utf8)))
        }
        for kv in current where kv.keyString.hasPrefix(layout.tokens) {
            if tokens[String(kv.keyString.dropFirst(layout.tokens.count))] == nil { ops.append(.delete(kv.key)) }
        }
        for (digest, entry) in tokens.sorted(by: { $0.key < $1.key }) {
            ops.append(.put(Array((layout.tokens + digest).utf8), Array(entry.utf8)))
        }
        return ops
    }

    /// The files the store holds under `layout`'s prefix (from a range of it).
    public init(_ kvs: [KeyValue], layout: StoreLayout) throws(DiagnosticsError) {
        self.init()
        var diags: [Diagnostic] = []
        for kv in kvs {
            let key = kv.keyString
            if key.hasPrefix(layout.zones) {
                let name = String(key.dropFirst(layout.zones.count))
                guard let origin = try? DNSName(name) else {
                    diags.append(Diagnostic(file: key, line: 0, message: "'\(name)' is not a zone origin"))
                    continue
                }
                zones[origin] = String(decoding: kv.value, as: UTF8.self)
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
        if !diags.isEmpty { throw DiagnosticsError(diags) }
    }

    /// Writes the files into `directory`: `zones/ORIGINzone` for each zone and a `nearcast.yaml`
    /// that names them (relative to it) and holds the geo section (`served`: with the registered
    /// nodes in it, as a server serves it). Each file is written whole (temporary file, then a
    /// rename).
    public func write(to directory: String, served: Bool = false) throws {
        let fm = FileManager.default
        try fm.createDirectory(atPath: directory + "/zones", withIntermediateDirectories: true)
        var config = """
            # Written by `nearcast store export`: the zones and the geo section of a fleet's store.
            # Listen addresses, the API, XDP and the state directory are each server's own: add them.
            zones:

            """
        for (origin, text) in zones.sorted(by: { $0.key < $1.key }) {
            let file = "zones/\(origin.lowercased())zone"
            try text.write(toFile: directory + "/" + file, atomically: true, encoding: .utf8)
            config += "  - { origin: \(origin.lowercased()), file: \(file) }\n"
        }
        if zones.isEmpty { config = config.replacingOccurrences(of: "zones:\n", with: "zones: []\n") }
        if let geo = served ? servedGeo : geo {
            let body = geo.trimmingCharacters(in: .newlines)
            config += "geo:\n" + body.split(separator: "\n").map { "  " + $0 + "\n" }.joined()
        }
        try config.write(toFile: directory + "/nearcast.yaml", atomically: true, encoding: .utf8)
        if served {
            let lines = tokens.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)\n" }.joined()
            try lines.write(toFile: directory + "/" + Self.tokensFile, atomically: true, encoding: .utf8)
        }
    }

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
