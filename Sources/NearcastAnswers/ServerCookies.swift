import DNSWire
import NearcastBasics
import Synchronization

/// DNS Cookies (RFC 7873), with server cookies made as RFC 9018 says, so that every server of a
/// fleet that shares the secret takes the others' cookies: Version 1, three reserved octets, the
/// time in seconds, and SipHash-2-4 under the server secret of the client cookie, those eight
/// octets and the client's address. The XDP program checks and makes the same cookies
/// (bpf/include/cookie.h), so both paths send the same bytes.
///
/// A server cookie is valid when it has this shape, its hash is right under the current or the
/// previous secret, and its time is at most an hour old and at most five minutes ahead. A reply
/// echoes a valid one made under the current secret less than half an hour ago, and carries a new
/// one otherwise (RFC 9018 §4.3). A client with a valid server cookie has proved its address: it is
/// never rate limited (as Knot does).
///
/// The secrets are held here, one owner: the daemon rotates them (or sets the configured ones), and
/// every responder copy and the fast path read them.
public final class ServerCookies: Sendable {
    /// The secret cookies are made with, and the one before it, still accepted.
    public struct Secrets: Sendable, Equatable {
        public var current: [UInt8]
        public var previous: [UInt8]?

        public init(current: [UInt8], previous: [UInt8]? = nil) {
            precondition(current.count == 16 && (previous?.count ?? 16) == 16, "cookie secrets are 16 bytes")
            self.current = current
            self.previous = previous
        }
    }

    /// What a query's COOKIE option is.
    public enum Check: Sendable, Equatable {
        /// Not 8 or 16 to 40 octets (RFC 7873 §5.2.2): FORMERR.
        case malformed
        /// A client cookie alone: answered with a new server cookie.
        case clientOnly(client: [UInt8])
        /// A valid server cookie beside the client cookie; `echo`: the reply may carry it again.
        case valid(client: [UInt8], server: [UInt8], echo: Bool)
        /// A server cookie that is not valid (RFC 7873 §5.2.4): BADCOOKIE over UDP.
        case invalid(client: [UInt8])
    }

    /// Seconds a server cookie is valid for after its time, and before it.
    public static let validFor: Int32 = 3600
    public static let validAhead: Int32 = 300
    /// Seconds after its time a cookie is echoed rather than made anew.
    public static let echoFor: Int32 = 1800

    let state: Mutex<Secrets>

    public init(_ secrets: Secrets) { state = Mutex(secrets) }

    public var secrets: Secrets {
        get { state.withLock { $0 } }
        set { state.withLock { $0 = newValue } }
    }

    /// Makes `secret` the current one; the current one becomes the previous.
    public func rotate(to secret: [UInt8]) {
        state.withLock { $0 = Secrets(current: secret, previous: $0.current) }
    }

    /// Checks the data of a query's COOKIE option from `address` (4 or 16 octets) at `now`
    /// (seconds since 1970, as the cookie's 32 bits).
    public func check(_ data: [UInt8], address: [UInt8], now: UInt32) -> Check {
        guard data.count == 8 || (16...40).contains(data.count) else { return .malformed }
        let client = Array(data[0..<8])
        guard data.count > 8 else { return .clientOnly(client: client) }
        let server = Array(data[8...])
        guard server.count == 16, server[0] == 1 else { return .invalid(client: client) }
        let time = UInt32(server[4]) << 24 | UInt32(server[5]) << 16 | UInt32(server[6]) << 8 | UInt32(server[7])
        let ahead = Int32(bitPattern: time &- now)  // serial number arithmetic (RFC 1982)
        guard ahead >= -Self.validFor, ahead <= Self.validAhead else { return .invalid(client: client) }
        let s = secrets
        let hash = Array(server[8...])
        if Self.hash(client, Array(server[0..<8]), address, s.current) == hash {
            return .valid(client: client, server: server, echo: ahead > -Self.echoFor)
        }
        if let previous = s.previous, Self.hash(client, Array(server[0..<8]), address, previous) == hash {
            return .valid(client: client, server: server, echo: false)
        }
        return .invalid(client: client)
    }

    /// A new server cookie for `client` at `address`, made at `now` under the current secret.
    public func serverCookie(client: [UInt8], address: [UInt8], now: UInt32) -> [UInt8] {
        let head: [UInt8] = [
            1, 0, 0, 0, UInt8(now >> 24), UInt8(now >> 16 & 0xFF), UInt8(now >> 8 & 0xFF), UInt8(now & 0xFF),
        ]
        return head + Self.hash(client, head, address, secrets.current)
    }

    /// The COOKIE option of the reply to a query whose option checked as `check` (not malformed).
    public func replyOption(_ check: Check, address: [UInt8], now: UInt32) -> EDNSOption? {
        switch check {
        case .malformed: return nil
        case .valid(let client, let server, true): return EDNSOption(code: EDNSOption.cookieCode, data: client + server)
        case .valid(let client, _, false), .clientOnly(let client), .invalid(let client):
            return EDNSOption(
                code: EDNSOption.cookieCode, data: client + serverCookie(client: client, address: address, now: now))
        }
    }

    /// The Hash sub-field: SipHash-2-4 of client cookie | version | reserved | time | address,
    /// little-endian as the function gives it (RFC 9018 §4.4).
    static func hash(_ client: [UInt8], _ head: [UInt8], _ address: [UInt8], _ secret: [UInt8]) -> [UInt8] {
        let h = SipHash24.hash(client + head + address, key: secret)
        return (0..<8).map { UInt8(truncatingIfNeeded: h >> (8 * UInt64($0))) }
    }
}
