import DNSWire

/// Where each piece of a fleet's shared state lives in etcd, under the fleet's prefix P
/// (docs/ARCHITECTURE.md §13 and the README give the same table):
///
/// | key | value |
/// |---|---|
/// | `P layout` | the layout's version, `2` |
/// | `P zones/ORIGIN/meta` | the zone's import: its state, checksum and serial's base (`StoredZone`) |
/// | `P zones/ORIGIN/rr/OWNER TYPE` | an RRset as master-file lines (`StoredZone`) |
/// | `P geo` | the geo section as YAML (nodes, pools, names, strategy settings) |
/// | `P overrides/NODE` | an operator's drain or force of NODE, with its expiry (JSON) |
/// | `P audit/TIME-SERVER-SEQ` | one audit line, never rewritten |
/// | `P tokens/SHA256` | an API token's role, by the token's SHA-256 |
/// | `P nodes/NODE` | a node that registered itself (JSON) |
/// | `P servers/SERVER` | a live server (under its lease) |
/// | `P health/SERVER/NODE` | SERVER's view of NODE (under SERVER's lease) |
/// | `P transferrer` | the server that transfers the fleet's secondary zones (under its lease) |
/// | `P dnssec/ORIGIN/ALG+TAG` | a zone's DNSSEC key, its private part sealed (`SealedKey`) |
/// | `P signer` | the server that drives the fleet's key rollovers (under its lease) |
public struct StoreLayout: Hashable, Sendable {
    /// The layout this build writes and reads.
    public static let version = "2"

    public let prefix: String

    public init(prefix: String) { self.prefix = prefix }

    public var layoutKey: String { prefix + "layout" }
    public var zones: String { prefix + "zones/" }
    public var geo: String { prefix + "geo" }
    public var overrides: String { prefix + "overrides/" }
    public var audit: String { prefix + "audit/" }
    public var tokens: String { prefix + "tokens/" }
    public var nodes: String { prefix + "nodes/" }
    public var servers: String { prefix + "servers/" }
    public var health: String { prefix + "health/" }
    public var transferrer: String { prefix + "transferrer" }
    public var dnssec: String { prefix + "dnssec/" }
    public var signer: String { prefix + "signer" }

    /// Where `zone`'s key of `algorithm` and `tag` is kept.
    public func dnssecKey(_ zone: DNSName, algorithm: UInt8, tag: UInt16) -> String {
        dnssecKeys(zone) + String(format: "%03d+%05d", algorithm, tag)
    }

    /// Where `zone`'s keys are kept (a prefix).
    public func dnssecKeys(_ zone: DNSName) -> String { dnssec + zone.lowercased().description + "/" }
}
