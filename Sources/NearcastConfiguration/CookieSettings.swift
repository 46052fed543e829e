import NearcastBasics
import Yams

/// DNS Cookies (RFC 7873, server cookies as RFC 9018 makes them), on unless turned off:
///
/// ```yaml
/// cookies:
///   enabled: true
///   secret: 000102030405060708090a0b0c0d0e0f           # 16 octets in hex: the servers of a fleet share it
///   previous-secret: f0e0d0c0b0a090807060504030201000  # still accepted: for rolling a configured secret
///   secret-lifetime: 26h                               # without a configured secret: how often a new one is made
/// ```
///
/// Without `secret`, each server makes a random one at its start and a new one every
/// `secret-lifetime` (26 hours to 36 days, RFC 7873 §7.1), still accepting the one before. A fleet
/// behind one address (anycast, or clients that move between its servers) configures one secret for
/// all, so that every server takes every other's cookies; it is rolled by a reload that makes the
/// old one `previous-secret`.
public struct CookieSettings: Equatable, Sendable {
    public var enabled = true
    public var secret: [UInt8]?
    public var previousSecret: [UInt8]?
    /// Seconds between the secrets a server makes itself.
    public var secretLifetime = 26 * 3600

    public init() {}

    static let keys = ["enabled", "secret", "previous-secret", "secret-lifetime"]

    /// The `cookies:` mapping; every problem goes to `diags` with its line.
    static func parse(_ v: Node, fileName: String, diags: inout [Diagnostic]) -> CookieSettings {
        var out = CookieSettings()
        func fail(_ n: Node?, _ m: String) {
            diags.append(Diagnostic(file: fileName, line: n?.mark?.line ?? 0, message: m))
        }
        guard let m = v.mapping else {
            fail(v, "cookies must be a mapping (\(keys.joined(separator: ", ")))")
            return out
        }
        for (k, value) in m {
            let key = k.string ?? ""
            switch key {
            case "enabled":
                guard let b = value.bool else {
                    fail(value, "cookies enabled must be true or false")
                    continue
                }
                out.enabled = b
            case "secret", "previous-secret":
                guard let hex = value.string, let bytes = Self.hex(hex), bytes.count == 16 else {
                    fail(value, "cookies \(key) must be 16 octets in hex (32 hex digits)")
                    continue
                }
                if key == "secret" { out.secret = bytes } else { out.previousSecret = bytes }
            case "secret-lifetime":
                guard let s = Self.seconds(value.string ?? ""), (26 * 3600...36 * 86400).contains(s) else {
                    fail(value, "cookies secret-lifetime must be from 26h to 36d (RFC 7873 §7.1), such as 26h or 7d")
                    continue
                }
                out.secretLifetime = s
            default:
                fail(k, "unknown cookies key '\(key)' (known: \(keys.joined(separator: ", ")))")
            }
        }
        if out.previousSecret != nil && out.secret == nil {
            fail(v, "cookies previous-secret needs a secret")
        }
        return out
    }

    /// Bytes from hex digits (an optional 0x in front); nil if not hex.
    static func hex(_ text: String) -> [UInt8]? {
        let digits = Array((text.hasPrefix("0x") ? String(text.dropFirst(2)) : text).utf8)
        guard digits.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        for i in stride(from: 0, to: digits.count, by: 2) {
            guard let b = UInt8(String(decoding: digits[i..<(i + 2)], as: UTF8.self), radix: 16) else { return nil }
            out.append(b)
        }
        return out
    }

    /// Seconds from `90`, `90s`, `30m`, `26h` or `7d`.
    static func seconds(_ text: String) -> Int? {
        let units: [Character: Int] = ["s": 1, "m": 60, "h": 3600, "d": 86400]
        if let unit = text.last.flatMap({ units[$0] }) { return Int(text.dropLast()).map { $0 * unit } }
        return Int(text)
    }
}
