import DNSWire
import NearcastBasics
import Synchronization

/// Response rate limiting (issue 19; the semantics of BIND's and Knot's RRL): responses are counted
/// per client prefix and response class, each with a token bucket of `rate` per second. A bucket
/// holds at most one second of credit and goes at most `window` seconds into debt, so a flood keeps
/// its prefix limited for `window` seconds after it stops. Over the limit a response is dropped, and
/// every `slip`-th one is sent as a minimal TC=1 reply instead (`Responder.truncatedReply(to:)`, the
/// fast path's own above its pass budget), so a real resolver behind the prefix
/// retries over TCP (which is never limited). The classes: a positive or NODATA answer, by its
/// name and type; an NXDOMAIN, by its zone; errors (REFUSED, FORMERR, SERVFAIL, NOTIMP…), one class.
public final class ResponseRateLimiter: Sendable {
    /// What is done with one response.
    public enum Verdict: Sendable, Equatable {
        case send
        /// Sent as a minimal TC=1 reply (`truncated(_:)`).
        case slip
        case drop
    }

    /// The limits, per second for each class (0: that class is not limited).
    public struct Limits: Sendable, Equatable {
        public var responses: Double
        public var nxdomains: Double
        public var errors: Double
        public var slip: Int
        public var ipv4Prefix: Int
        public var ipv6Prefix: Int
        public var window: Double
        /// Client prefixes never limited (address bytes, prefix length).
        public var exempt: [(address: [UInt8], length: Int)]
        /// Buckets kept at most; past that, those idle for a window are forgotten first.
        public var capacity: Int

        public init(
            responses: Double, nxdomains: Double? = nil, errors: Double? = nil, slip: Int = 2, ipv4Prefix: Int = 24,
            ipv6Prefix: Int = 56, window: Double = 15, exempt: [(address: [UInt8], length: Int)] = [],
            capacity: Int = 100_000
        ) {
            self.responses = responses
            self.nxdomains = nxdomains ?? responses
            self.errors = errors ?? responses
            self.slip = slip
            self.ipv4Prefix = ipv4Prefix
            self.ipv6Prefix = ipv6Prefix
            self.window = window
            self.exempt = exempt
            self.capacity = capacity
        }

        public static func == (a: Limits, b: Limits) -> Bool {
            a.responses == b.responses && a.nxdomains == b.nxdomains && a.errors == b.errors && a.slip == b.slip
                && a.ipv4Prefix == b.ipv4Prefix && a.ipv6Prefix == b.ipv6Prefix && a.window == b.window
                && a.capacity == b.capacity && a.exempt.map(\.address) == b.exempt.map(\.address)
                && a.exempt.map(\.length) == b.exempt.map(\.length)
        }
    }

    struct Key: Hashable {
        var prefix: [UInt8]
        var kind: UInt8
        var name: [UInt8]
        var type: UInt16
    }

    struct Bucket {
        var balance: Double
        var last: ContinuousClock.Instant
        var limited = 0
    }

    struct State {
        var buckets: [Key: Bucket] = [:]
        var slipped = 0
        var dropped = 0
    }

    public let limits: Limits
    /// The zone of a name (an NXDOMAIN's class); nil: the name itself.
    let zoneOf: @Sendable (DNSName) -> DNSName?
    let state = Mutex(State())

    public init(_ limits: Limits, zoneOf: @escaping @Sendable (DNSName) -> DNSName? = { _ in nil }) {
        self.limits = limits
        self.zoneOf = zoneOf
    }

    /// Responses slipped and dropped since the start.
    public var counts: (slipped: Int, dropped: Int) { state.withLock { ($0.slipped, $0.dropped) } }

    /// The verdict on `reply` (a whole reply, as the slow path sends it) to `client` (4 or 16
    /// address bytes) at `now`.
    public func verdict(_ reply: [UInt8], client: [UInt8], now: ContinuousClock.Instant = .now) -> Verdict {
        guard reply.count >= 12, let key = key(reply, client) else { return .send }
        let rcode = reply[3] & 0x0F
        let rate = rcode == 0 ? limits.responses : rcode == 3 ? limits.nxdomains : limits.errors
        guard rate > 0 else { return .send }
        return state.withLock { s in
            if s.buckets.count >= limits.capacity, s.buckets[key] == nil { Self.forgetIdle(&s, before: now, limits) }
            var b = s.buckets[key] ?? Bucket(balance: rate, last: now)
            b.balance = min(rate, b.balance + (now - b.last).seconds * rate) - 1
            b.last = now
            guard b.balance < 0 else {
                b.limited = 0
                s.buckets[key] = b
                return .send
            }
            b.balance = max(b.balance, -limits.window * rate)
            b.limited += 1
            s.buckets[key] = b
            if limits.slip > 0 && b.limited % limits.slip == 0 {
                s.slipped += 1
                return .slip
            }
            s.dropped += 1
            return .drop
        }
    }

    /// Makes room when the table is full: forgets the buckets idle for a window (their credit is
    /// back in full), and then, down to nine tenths of the capacity, any others. One sweep makes
    /// room for a tenth of the table, so a flood of new prefixes (forged sources) costs a sweep per
    /// tenth of the capacity, not one per response.
    static func forgetIdle(_ s: inout State, before now: ContinuousClock.Instant, _ limits: Limits) {
        let idle = s.buckets.filter { (now - $0.value.last).seconds > limits.window }.map(\.key)
        for k in idle { s.buckets[k] = nil }
        let keep = limits.capacity * 9 / 10
        if s.buckets.count > keep {
            for k in Array(s.buckets.keys.prefix(s.buckets.count - keep)) { s.buckets[k] = nil }
        }
    }

    /// The bucket's key: the client's prefix and the reply's class; nil when the client is exempt
    /// or the reply has no question to class it by.
    func key(_ reply: [UInt8], _ client: [UInt8]) -> Key? {
        let v4 = client.count == 4
        let bits = v4 ? limits.ipv4Prefix : limits.ipv6Prefix
        if limits.exempt.contains(where: {
            $0.address.count == client.count && Self.matches(client, $0.address, $0.length)
        }) {
            return nil
        }
        let prefix = Self.masked(client, bits)
        let rcode = reply[3] & 0x0F
        guard rcode == 0 || rcode == 3 else { return Key(prefix: prefix, kind: 2, name: [], type: 0) }
        guard let (name, type) = Self.question(reply) else { return nil }
        if rcode == 3 {
            let zone = zoneOf(name) ?? name
            return Key(prefix: prefix, kind: 1, name: zone.lowercased().wire, type: 0)
        }
        return Key(prefix: prefix, kind: 0, name: name.lowercased().wire, type: type)
    }

    /// A TC=1 reply made from `reply` alone: its header with TC set and its question, nothing
    /// else. The slow path sends `Responder.truncatedReply(to:)` instead, the fast path's TC=1
    /// reply byte for byte; this is for a query the responder cannot read again.
    public static func truncated(_ reply: [UInt8]) -> [UInt8] {
        guard reply.count >= 12, let end = questionEnd(reply) else { return reply }
        var out = Array(reply[0..<end])
        out[2] |= 0x02  // TC
        out[4] = 0
        out[5] = 1
        for i in 6..<12 { out[i] = 0 }
        return out
    }

    static func questionEnd(_ m: [UInt8]) -> Int? {
        guard m[4] == 0, m[5] == 1 else { return nil }
        var i = 12
        while i < m.count, m[i] != 0 {
            guard m[i] < 64 else { return nil }
            i += Int(m[i]) + 1
        }
        return i + 5 <= m.count ? i + 5 : nil
    }

    static func question(_ m: [UInt8]) -> (DNSName, UInt16)? {
        guard let end = questionEnd(m) else { return nil }
        var labels: [[UInt8]] = []
        var i = 12
        while m[i] != 0 {
            labels.append(Array(m[(i + 1)...(i + Int(m[i]))]))
            i += Int(m[i]) + 1
        }
        guard let name = try? DNSName(labels: labels) else { return nil }
        return (name, UInt16(m[end - 4]) << 8 | UInt16(m[end - 3]))
    }

    static func masked(_ a: [UInt8], _ bits: Int) -> [UInt8] {
        a.enumerated().map { i, b in
            let keep = max(0, min(8, bits - 8 * i))
            return keep == 8 ? b : b & ~(0xFF >> keep)
        }
    }

    static func matches(_ a: [UInt8], _ prefix: [UInt8], _ bits: Int) -> Bool {
        masked(a, bits) == masked(prefix, bits)
    }
}
