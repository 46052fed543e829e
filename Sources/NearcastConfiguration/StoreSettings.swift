import Foundation
import NearcastBasics
import Yams

/// Where a fleet keeps its shared state (issue 18): nothing (files, one server, as before), or an
/// etcd v3 cluster:
///
/// ```yaml
/// store:
///   etcd:
///     endpoints: [http://10.0.0.1:2379, http://10.0.0.2:2379]
///     prefix: /nearcast/            # every key of this fleet starts with it
///     username: nearcast            # optional: etcd's own users
///     password-file: etcd.password
///     tls: { ca: ca.pem, certificate: client.pem, key: client-key.pem }   # optional
///   server: ns1                     # this server's name in the fleet (default: the host name)
///   key-secret: fleet.secret        # optional: DNSSEC keys kept in the store, sealed with it
/// ```
public struct StoreSettings: Hashable, Sendable {
    public var etcd: EtcdSettings?
    /// This server's name among the fleet's servers: in audit lines, as a health observer and
    /// under `P servers/` (nil: the host name).
    public var server: String?
    /// The file of the secret that seals the fleet's DNSSEC keys in the store (nil: each server
    /// signs with the keys of its own state directory, and drives its own rollovers).
    public var keySecretFile: String?

    public init(etcd: EtcdSettings? = nil, server: String? = nil) {
        self.etcd = etcd
        self.server = server
    }

    /// This server's name in the fleet.
    public var serverName: String { server ?? ProcessInfo.processInfo.hostName }
}

/// How to reach the etcd cluster of a fleet.
public struct EtcdSettings: Hashable, Sendable {
    public var endpoints: [String]
    public var prefix: String = "/nearcast/"
    public var username: String?
    /// The file holding the user's password (kept out of the config).
    public var passwordFile: String?
    public var caFile: String?
    public var certificateFile: String?
    public var keyFile: String?

    public init(endpoints: [String]) { self.endpoints = endpoints }

    /// The password, read from its file (trailing newline dropped).
    public func password() throws(DiagnosticsError) -> String? {
        guard let passwordFile else { return nil }
        guard let data = FileManager.default.contents(atPath: passwordFile) else {
            throw DiagnosticsError([
                Diagnostic(file: passwordFile, line: 0, message: "etcd password file cannot be read")
            ])
        }
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .newlines)
    }

    static let knownKeys = ["endpoints", "prefix", "username", "password-file", "tls"]

    /// The `store` section.
    static func parseStore(_ v: Node, fileName: String, baseDirectory: String, diags: inout [Diagnostic])
        -> StoreSettings
    {
        func fail(_ node: Node?, _ m: String) {
            diags.append(Diagnostic(file: fileName, line: node?.mark?.line ?? 0, message: m))
        }
        guard let m = v.mapping, let etcdNode = m["etcd"] else {
            fail(v, "store must be { etcd: { endpoints: [...], prefix: /nearcast/ } } (no store section: files)")
            return StoreSettings()
        }
        var server: String?
        var keySecret: String?
        for (k, value) in m where k.string != "etcd" {
            if k.string == "key-secret" {
                guard let s = value.string, !s.isEmpty else {
                    fail(
                        value,
                        "store key-secret must be the path of the fleet's key secret (nearcast store secret FILE)")
                    continue
                }
                keySecret = resolvedPath(s, relativeTo: baseDirectory)
                if !FileManager.default.isReadableFile(atPath: keySecret!) {
                    fail(
                        value,
                        "store key-secret \(keySecret!) does not exist or cannot be read (nearcast store secret FILE makes one)"
                    )
                }
                continue
            }
            guard k.string == "server" else {
                fail(k, "unknown store key '\(k.string ?? "?")' (known: etcd, server, key-secret)")
                continue
            }
            guard let s = value.string, (1...63).contains(s.count),
                s.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-_.".contains($0)) })
            else {
                fail(value, "store server must be this server's name: letters, digits, '-', '_' and '.' (at most 63)")
                continue
            }
            server = s
        }
        guard let e = etcdNode.mapping else {
            fail(etcdNode, "store etcd must be a mapping (\(knownKeys.joined(separator: ", ")))")
            return StoreSettings()
        }
        func path(_ s: String) -> String { resolvedPath(s, relativeTo: baseDirectory) }
        var settings = EtcdSettings(endpoints: [])
        for (k, value) in e {
            switch k.string ?? "" {
            case "endpoints":
                for item in value.sequence.map(Array.init) ?? [value] {
                    guard let s = item.string, let url = URL(string: s), ["http", "https"].contains(url.scheme ?? ""),
                        url.host != nil, url.path.isEmpty || url.path == "/"
                    else {
                        fail(
                            item,
                            "store etcd endpoint '\(item.string ?? "?")' is not http://HOST:PORT or https://HOST:PORT")
                        continue
                    }
                    settings.endpoints.append(s)
                }
            case "prefix":
                guard let s = value.string, s.hasPrefix("/"), s.hasSuffix("/"), s.count > 1 else {
                    fail(value, "store etcd prefix must start and end with / (e.g. /nearcast/)")
                    continue
                }
                settings.prefix = s
            case "username":
                guard let s = value.string, !s.isEmpty else {
                    fail(value, "store etcd username must be a name")
                    continue
                }
                settings.username = s
            case "password-file":
                guard let s = value.string, !s.isEmpty else {
                    fail(value, "store etcd password-file must be a path")
                    continue
                }
                settings.passwordFile = path(s)
                if !FileManager.default.isReadableFile(atPath: path(s)) {
                    fail(value, "store etcd password-file \(path(s)) does not exist or cannot be read")
                }
            case "tls":
                guard let t = value.mapping else {
                    fail(value, "store etcd tls must be { ca: PEM file, certificate: PEM file, key: PEM file }")
                    continue
                }
                for (tk, tv) in t {
                    guard let name = tk.string, ["ca", "certificate", "key"].contains(name), let s = tv.string else {
                        fail(tk, "unknown store etcd tls key '\(tk.string ?? "?")' (known: ca, certificate, key)")
                        continue
                    }
                    if !FileManager.default.isReadableFile(atPath: path(s)) {
                        fail(tv, "store etcd tls \(name) \(path(s)) does not exist or cannot be read")
                    }
                    switch name {
                    case "ca": settings.caFile = path(s)
                    case "certificate": settings.certificateFile = path(s)
                    default: settings.keyFile = path(s)
                    }
                }
                if (settings.certificateFile == nil) != (settings.keyFile == nil) {
                    fail(value, "store etcd tls needs both certificate and key for a client certificate")
                }
            default:
                fail(k, "unknown store etcd key '\(k.string ?? "?")' (known: \(knownKeys.joined(separator: ", ")))")
            }
        }
        if settings.endpoints.isEmpty { fail(etcdNode, "store etcd needs at least one endpoint") }
        if settings.username == nil, settings.passwordFile != nil {
            fail(etcdNode, "store etcd password-file needs a username")
        }
        var out = StoreSettings(etcd: settings, server: server)
        out.keySecretFile = keySecret
        return out
    }
}
