import Foundation
import NearcastBasics
import Yams

/// Response rate limiting (issue 19), as operators know it from BIND and Knot:
///
/// ```yaml
/// rrl:
///   responses-per-second: 20     # per client prefix and answer (name and type); 0: off
///   nxdomains-per-second: 20     # per client prefix and zone (default: responses-per-second)
///   errors-per-second: 20        # per client prefix (default: responses-per-second)
///   slip: 2                      # every 2nd limited response a TC=1 reply, the others dropped (0: drop all)
///   ipv4-prefix: 24
///   ipv6-prefix: 56
///   window: 15                   # seconds a flood keeps its prefix limited after it stops
///   exempt: [192.0.2.0/24, "2001:db8::/32"]
/// ```
///
/// The slow path limits its UDP replies (TCP never); the XDP fast path its answers, per CPU, with
/// responses-per-second and nxdomains-per-second (it sends no errors). A client whose query carries
/// a valid server cookie (`cookies:`) has proved its address and is never limited.
public struct RRLSettings: Equatable, Sendable {
    public var responsesPerSecond = 0
    public var nxdomainsPerSecond: Int?
    public var errorsPerSecond: Int?
    public var slip = 2
    public var ipv4Prefix = 24
    public var ipv6Prefix = 56
    public var window = 15
    /// Prefixes never limited: address bytes and length.
    public var exempt: [Exempt] = []

    public typealias Exempt = AddressPrefix

    public init() {}

    public var enabled: Bool {
        responsesPerSecond > 0 || (nxdomainsPerSecond ?? 0) > 0 || (errorsPerSecond ?? 0) > 0
    }

    static let keys = [
        "responses-per-second", "nxdomains-per-second", "errors-per-second", "slip", "ipv4-prefix", "ipv6-prefix",
        "window", "exempt",
    ]

    /// The `rrl:` mapping; every problem goes to `diags` with its line.
    static func parse(_ v: Node, fileName: String, diags: inout [Diagnostic]) -> RRLSettings {
        var out = RRLSettings()
        func fail(_ n: Node?, _ m: String) {
            diags.append(Diagnostic(file: fileName, line: n?.mark?.line ?? 0, message: m))
        }
        guard let m = v.mapping else {
            fail(v, "rrl must be a mapping (\(keys.joined(separator: ", ")))")
            return out
        }
        for (k, value) in m {
            let key = k.string ?? ""
            func int(_ range: ClosedRange<Int>, _ what: String) -> Int? {
                guard let n = value.int, range.contains(n) else {
                    fail(value, "rrl \(key) must be \(what) from \(range.lowerBound) to \(range.upperBound)")
                    return nil
                }
                return n
            }
            switch key {
            case "responses-per-second":
                if let n = int(0...1_000_000, "a number of responses") { out.responsesPerSecond = n }
            case "nxdomains-per-second":
                if let n = int(0...1_000_000, "a number of responses") { out.nxdomainsPerSecond = n }
            case "errors-per-second": if let n = int(0...1_000_000, "a number of responses") { out.errorsPerSecond = n }
            case "slip":
                if let n = int(0...10, "every how many limited responses one is a TC=1 reply (0: none),") {
                    out.slip = n
                }
            case "ipv4-prefix": if let n = int(1...32, "a prefix length") { out.ipv4Prefix = n }
            case "ipv6-prefix": if let n = int(1...128, "a prefix length") { out.ipv6Prefix = n }
            case "window": if let n = int(1...3600, "a number of seconds") { out.window = n }
            case "exempt":
                for item in value.sequence.map(Array.init) ?? [value] {
                    guard let s = item.string, let e = Self.prefix(s) else {
                        fail(
                            item,
                            "rrl exempt '\(item.string ?? "?")' is not a prefix such as 192.0.2.0/24 or 2001:db8::/32")
                        continue
                    }
                    out.exempt.append(e)
                }
            default:
                fail(k, "unknown rrl key '\(key)' (known: \(keys.joined(separator: ", ")))")
            }
        }
        return out
    }

    /// `ADDRESS/LENGTH` (or an address alone: the whole address).
    static func prefix(_ text: String) -> Exempt? { AddressPrefix(text) }
}
