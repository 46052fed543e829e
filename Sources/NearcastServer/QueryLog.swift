import CDnstap
import NIOCore
import NearcastConfiguration

#if canImport(Glibc)
import Glibc
#endif

/// The slow path's queries and replies in dnstap (Sources/NearcastServer/README.md, "The query log"):
/// AUTH_QUERY and AUTH_RESPONSE messages in Frame Streams, written by fstrm's I/O thread to a
/// file or a collector's Unix socket, as Knot, BIND and NSD write them. Logging never waits: a
/// message goes to a lock-free queue, and one that finds the queue full is dropped and counted
/// (`dropped`). What XDP answers is not in it (ARCHITECTURE §4 says why); its counters are.
public final class QueryLog: @unchecked Sendable {
    // The C log is safe from every thread at once (one multiple-producer queue); `close` is
    // called once, after the listeners have stopped.
    private let log: OpaquePointer
    let queries: Bool
    let responses: Bool

    public enum OpenError: Error, CustomStringConvertible {
        case cannotOpen(String)
        public var description: String { if case .cannotOpen(let why) = self { why } else { "" } }
    }

    /// Opens the log `settings` name; each message carries `identity` and `version`.
    public init(_ settings: DnstapSettings, identity: String?, version: String) throws(OpenError) {
        let (path, socket): (String, Int32) =
            switch settings.destination {
            case .socket(let p): (p, 1)
            case .file(let p): (p, 0)
            case nil: throw .cannotOpen("dnstap has no socket or file")
            }
        var why = [CChar](repeating: 0, count: 256)
        guard let log = ncdt_open(path, socket, identity ?? "", version, &why, why.count) else {
            throw .cannotOpen("dnstap: " + String(cString: why))
        }
        self.log = log
        queries = settings.queries
        responses = settings.responses
    }

    /// One side of an exchange: an address as 4 or 16 bytes, and a port.
    struct Endpoint {
        var address: [UInt8]
        var port: UInt16

        init(address: [UInt8], port: UInt16) {
            self.address = address
            self.port = port
        }

        init?(_ a: SocketAddress?) {
            switch a {
            case .v4(let v4)?:
                address = withUnsafeBytes(of: v4.address.sin_addr.s_addr) { Array($0) }
                port = UInt16(bigEndian: v4.address.sin_port)
            case .v6(let v6)?:
                address = withUnsafeBytes(of: v6.address.sin6_addr) { Array($0) }
                port = UInt16(bigEndian: v6.address.sin6_port)
            default: return nil
            }
        }
    }

    /// Nanoseconds since the Unix epoch: when a query arrived, or a reply was made.
    static func now() -> UInt64 {
        var t = timespec()
        clock_gettime(CLOCK_REALTIME, &t)
        return UInt64(t.tv_sec) * 1_000_000_000 + UInt64(t.tv_nsec)
    }

    /// Logs `query`, which `client` sent to `server` at `arrived`, and `reply` (nil: none was
    /// sent, as when rate limiting dropped it).
    func record(
        query: [UInt8], reply: [UInt8]?, client: Endpoint, server: Endpoint, tcp: Bool, arrived: UInt64
    ) {
        guard client.address.count == server.address.count else { return }
        client.address.withUnsafeBufferPointer { c in
            server.address.withUnsafeBufferPointer { s in
                if queries {
                    query.withUnsafeBufferPointer { q in
                        _ = ncdt_log(
                            log, NCDT_AUTH_QUERY, c.baseAddress, s.baseAddress, c.count, client.port, server.port,
                            tcp ? 1 : 0, q.baseAddress, q.count, arrived, 0)
                    }
                }
                if responses, let reply {
                    let made = Self.now()
                    reply.withUnsafeBufferPointer { r in
                        _ = ncdt_log(
                            log, NCDT_AUTH_RESPONSE, c.baseAddress, s.baseAddress, c.count, client.port, server.port,
                            tcp ? 1 : 0, r.baseAddress, r.count, arrived, made)
                    }
                }
            }
        }
    }

    /// Messages dropped so far because the writer fell behind.
    public var dropped: UInt64 { ncdt_dropped(log) }

    /// Writes out what is queued and closes the file or socket. Called once, when nothing logs any more.
    public func close() { ncdt_close(log) }
}
