import AsyncHTTPClient
import EtcdClient
import Foundation
import NIOSSL
import NearcastBasics
import NearcastConfiguration

/// A connection to a fleet's etcd, as its `store` settings describe it.
public final class FleetStoreConnection: Sendable {
    public let etcd: EtcdClient
    public let layout: StoreLayout
    let http: HTTPClient

    /// Connects nothing yet: the first call does (TLS and the user as `settings` say).
    public init(_ settings: EtcdSettings) throws {
        var tls: TLSConfiguration?
        if settings.caFile != nil || settings.certificateFile != nil {
            var t = TLSConfiguration.makeClientConfiguration()
            if let ca = settings.caFile { t.trustRoots = .file(ca) }
            if let cert = settings.certificateFile, let key = settings.keyFile {
                t.certificateChain = try NIOSSLCertificate.fromPEMFile(cert).map { .certificate($0) }
                t.privateKey = .file(key)
            }
            tls = t
        }
        http = HTTPClient(
            eventLoopGroupProvider: .singleton, configuration: HTTPClient.Configuration(tlsConfiguration: tls))
        etcd = EtcdClient(
            endpoints: settings.endpoints, http: http, username: settings.username, password: try settings.password())
        layout = StoreLayout(prefix: settings.prefix)
    }

    /// Closes the connection.
    public func close() async { try? await http.shutdown() }

    /// Makes the store hold `files`: every write in transactions of at most 100 operations
    /// (etcd's default limit is 128), the first one conditioned on the layout key not having
    /// changed since the store was read. Returns the store's revision after the last.
    public func importFiles(_ files: FleetFiles) async throws -> Int64 {
        let (revision0, zones) = try await etcd.range(prefix: Array(layout.zones.utf8))
        let (_, tokens) = try await etcd.range(prefix: Array(layout.tokens.utf8), revision: revision0)
        let current = zones + tokens
        let (_, layoutKV) = try await etcd.get(Array(layout.layoutKey.utf8), revision: revision0)
        if let v = layoutKV?.value, String(decoding: v, as: UTF8.self) != StoreLayout.version {
            throw FleetStoreError.layout(String(decoding: v, as: UTF8.self))
        }
        let ops = files.operations(layout, replacing: current)
        var revision: Int64 = 0
        var first = true
        for start in stride(from: 0, to: ops.count, by: 100) {
            let chunk = Array(ops[start..<min(start + 100, ops.count)])
            let compares: [EtcdCompare] =
                first ? [.modRevision(Array(layout.layoutKey.utf8), equals: layoutKV?.modRevision ?? 0)] : []
            let r = try await etcd.txn(compares, success: chunk)
            guard r.succeeded else { throw FleetStoreError.changedMeanwhile }
            revision = r.revision
            first = false
        }
        return revision
    }

    /// The zones and geo section the store holds now (not its tokens: a digest is no token).
    public func exportFiles() async throws -> FleetFiles {
        var files = try await served().files
        files.tokens = [:]
        return files
    }

    /// What a server serves from the store, read at one revision: the layout's version, the
    /// zones, the geo section, the registered nodes and the API's tokens. Not the rest (health
    /// views, audit lines, overrides), which grow with the fleet and are read by those who need them.
    public func served() async throws -> (revision: Int64, files: FleetFiles) {
        let (revision, zones) = try await etcd.range(prefix: Array(layout.zones.utf8))
        let (_, nodes) = try await etcd.range(prefix: Array(layout.nodes.utf8), revision: revision)
        let (_, tokens) = try await etcd.range(prefix: Array(layout.tokens.utf8), revision: revision)
        let (_, geo) = try await etcd.get(Array(layout.geo.utf8), revision: revision)
        let (_, version) = try await etcd.get(Array(layout.layoutKey.utf8), revision: revision)
        if let v = version?.value, String(decoding: v, as: UTF8.self) != StoreLayout.version {
            throw FleetStoreError.layout(String(decoding: v, as: UTF8.self))
        }
        return (revision, try FleetFiles(zones + nodes + tokens + [geo].compactMap { $0 }, layout: layout))
    }
}

/// Why the store cannot be written.
public enum FleetStoreError: Error, CustomStringConvertible {
    case layout(String)
    case changedMeanwhile

    public var description: String {
        switch self {
        case .layout(let v): "the store holds layout version \(v); this nearcast writes version \(StoreLayout.version)"
        case .changedMeanwhile: "the store changed while it was being written; nothing was changed, run it again"
        }
    }
}
