import DNSWire
import NearcastBasics
import NearcastTSIG
import NearcastTransfer
import Yams

/// A zone's transfer keys in the config: who may transfer it out (`allow-transfer`, rules of an
/// address prefix, a key, or both), which secondaries are told of its changes (`notify`,
/// ADDRESS[:PORT] [key NAME]), and for a secondary zone, the primaries it is transferred from
/// (`primaries`, the same form; `tsig` names the key of those that name none).
///
/// ```yaml
/// zones:
///   - origin: example.net.
///     file: zones/example.net.zone
///     allow-transfer: ["192.0.2.53 key xfr.example.", "198.51.100.0/24"]
///     notify: ["192.0.2.53 key xfr.example."]
///   - origin: example.org.
///     primaries: ["192.0.2.1", "192.0.2.2:5353"]
///     tsig: xfr.example.
/// ```
struct ZoneTransferSettings {
    var allowTransfer: [TransferRule] = []
    var notify: [TransferPeer] = []
    var primaries: [TransferPeer] = []

    static let keys = ["allow-transfer", "notify", "primaries", "tsig"]

    /// The transfer keys of zone `origin`'s mapping `m`; every problem goes to `diags` with its line.
    static func parse(_ m: Node.Mapping, origin: DNSName, fileName: String, diags: inout [Diagnostic])
        -> ZoneTransferSettings
    {
        var out = ZoneTransferSettings()
        func fail(_ n: Node?, _ message: String) {
            diags.append(Diagnostic(file: fileName, line: n?.mark?.line ?? 0, message: message))
        }
        /// Each string of `key`'s list (or a single string) read by `read`.
        func each<T>(_ key: String, _ form: String, _ read: (String) -> Result<T, TransferRule.RuleError>) -> [T] {
            guard let v = m[key] else { return [] }
            var out: [T] = []
            for item in v.sequence.map(Array.init) ?? [v] {
                switch item.string.map(read) {
                case .success(let value): out.append(value)
                case .failure(let e): fail(item, "zone \(origin) \(key) '\(item.string ?? "?")': \(e)")
                case nil: fail(item, "zone \(origin) \(key): each entry is a string (\(form))")
                }
            }
            return out
        }
        out.allowTransfer = each("allow-transfer", "PREFIX, key NAME, or PREFIX key NAME", TransferRule.parse)
        out.notify = each("notify", "ADDRESS[:PORT] [key NAME]", TransferPeer.parse)
        out.primaries = each("primaries", "ADDRESS[:PORT] [key NAME]", TransferPeer.parse)
        if let t = m["tsig"] {
            if let text = t.string, let key = try? DNSName(text.hasSuffix(".") ? text : text + ".") {
                for i in out.primaries.indices where out.primaries[i].key == nil { out.primaries[i].key = key }
                if out.primaries.isEmpty {
                    fail(t, "zone \(origin) tsig: names the key of its primaries, and it has none")
                }
            } else {
                fail(t, "zone \(origin) tsig: a key's name (from the tsig section)")
            }
        }
        return out
    }

    /// The problems of keys that `keyring` does not have, against `zone` (where it was declared).
    static func unknownKeys(of zone: ZoneSource, in keyring: TSIGKeyring) -> [Diagnostic] {
        let (file, line) = SecondaryZoneFiles.declaration(zone)
        let named = zone.allowTransfer.compactMap(\.key) + (zone.notify + zone.primaries).compactMap(\.key)
        return Array(Set(named)).sorted { $0.description < $1.description }.filter {
            keyring.key(named: $0) == nil
        }.map {
            Diagnostic(
                file: file, line: line,
                message:
                    "zone \(zone.origin) names key \($0) (allow-transfer, notify, primaries, tsig), which the tsig section does not declare"
            )
        }
    }
}
