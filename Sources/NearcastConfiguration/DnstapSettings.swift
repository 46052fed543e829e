import NearcastBasics
import Yams

/// The slow path's query log in dnstap (https://dnstap.info), off unless a destination is given:
///
/// ```yaml
/// dnstap:
///   socket: /run/nearcast/dnstap.sock   # a collector listening there (fstrm_capture, dnstap, vector), or
///   file: /var/log/nearcast/dnstap.fstrm  # a Frame Streams file, read by `dnstap-read`
///   queries: true                       # AUTH_QUERY messages (default true)
///   responses: true                     # AUTH_RESPONSE messages (default true)
/// ```
///
/// Restart-only: the log is opened at the start. Every message carries the config's `identity`
/// and the daemon's version, as Knot's and BIND's do.
public struct DnstapSettings: Equatable, Sendable {
    /// Where to: a Unix socket or a file; nil: no log.
    public enum Destination: Equatable, Sendable {
        case socket(String)
        case file(String)
    }

    public var destination: Destination?
    public var queries = true
    public var responses = true

    public init() {}

    static let keys = ["socket", "file", "queries", "responses"]

    /// The `dnstap:` mapping; every problem goes to `diags` with its line.
    static func parse(_ v: Node, fileName: String, baseDirectory: String, diags: inout [Diagnostic]) -> DnstapSettings {
        var out = DnstapSettings()
        func fail(_ n: Node?, _ m: String) {
            diags.append(Diagnostic(file: fileName, line: n?.mark?.line ?? 0, message: m))
        }
        guard let m = v.mapping else {
            fail(v, "dnstap must be a mapping (\(keys.joined(separator: ", ")))")
            return out
        }
        for (k, value) in m {
            let key = k.string ?? ""
            switch key {
            case "socket", "file":
                guard let path = value.string, !path.isEmpty else {
                    fail(value, "dnstap \(key) must be a path")
                    continue
                }
                guard out.destination == nil else {
                    fail(k, "dnstap takes a socket or a file, not both")
                    continue
                }
                let resolved = resolvedPath(path, relativeTo: baseDirectory)
                out.destination = key == "socket" ? .socket(resolved) : .file(resolved)
            case "queries", "responses":
                guard let b = value.bool else {
                    fail(value, "dnstap \(key) must be true or false")
                    continue
                }
                if key == "queries" { out.queries = b } else { out.responses = b }
            default:
                fail(k, "unknown dnstap key '\(key)' (known: \(keys.joined(separator: ", ")))")
            }
        }
        if out.destination == nil {
            fail(v, "dnstap needs a socket or a file to write to")
        } else if !out.queries && !out.responses {
            fail(v, "dnstap logs nothing with both queries and responses false: remove the section instead")
        }
        return out
    }
}
