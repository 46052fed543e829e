/// The RDATA of a record, decoded for the types nearcast serves and kept as raw bytes otherwise (RFC 3597).
public enum RData: Hashable, Sendable {
    case a(IPv4Address)
    case aaaa(IPv6Address)
    case ns(DNSName)
    case cname(DNSName)
    case ptr(DNSName)
    case soa(SOA)
    case mx(preference: UInt16, exchange: DNSName)
    /// One or more character-strings, each at most 255 octets.
    case txt([[UInt8]])
    case srv(priority: UInt16, weight: UInt16, port: UInt16, target: DNSName)
    case caa(flags: UInt8, tag: [UInt8], value: [UInt8])
    /// Any other type: the RDATA bytes as they are on the wire.
    case unknown([UInt8])

    /// The start-of-authority fields (RFC 1035 §3.3.13).
    public struct SOA: Hashable, Sendable {
        public var mname: DNSName
        public var rname: DNSName
        public var serial: UInt32
        public var refresh: UInt32
        public var retry: UInt32
        public var expire: UInt32
        public var minimum: UInt32
        public init(
            mname: DNSName, rname: DNSName, serial: UInt32, refresh: UInt32, retry: UInt32, expire: UInt32,
            minimum: UInt32
        ) {
            self.mname = mname
            self.rname = rname
            self.serial = serial
            self.refresh = refresh
            self.retry = retry
            self.expire = expire
            self.minimum = minimum
        }
    }

    /// Decodes uncompressed RDATA of `type` (e.g. from the RFC 3597 `\#` form); the bytes must be
    /// exactly the type's layout.
    public init(type: RRType, bytes: [UInt8]) throws(DNSWireError) {
        guard bytes.count <= 0xFFFF else { throw .unencodable("RDATA of \(bytes.count) bytes") }
        var r = WireReader([UInt8(bytes.count >> 8), UInt8(bytes.count & 0xFF)] + bytes)
        self = try r.rdata(type: type)
    }

    /// The domain name this RDATA points at, for additional-section processing and glue checks.
    public var target: DNSName? {
        switch self {
        case .ns(let n), .cname(let n), .ptr(let n): return n
        case .mx(_, let n): return n
        case .srv(_, _, _, let n): return n
        default: return nil
        }
    }
}

/// An IPv4 address in network order.
public struct IPv4Address: Hashable, Sendable, CustomStringConvertible {
    public var bytes: (UInt8, UInt8, UInt8, UInt8)
    public init(_ a: UInt8, _ b: UInt8, _ c: UInt8, _ d: UInt8) { bytes = (a, b, c, d) }
    public init?(_ text: String) {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var v: [UInt8] = []
        for p in parts {
            guard !p.isEmpty, p.count <= 3, p.allSatisfy({ $0.isASCII && $0.isNumber }), let n = UInt8(p) else {
                return nil
            }
            v.append(n)
        }
        bytes = (v[0], v[1], v[2], v[3])
    }
    public var array: [UInt8] { [bytes.0, bytes.1, bytes.2, bytes.3] }
    public var description: String { "\(bytes.0).\(bytes.1).\(bytes.2).\(bytes.3)" }
    public static func == (l: IPv4Address, r: IPv4Address) -> Bool { l.array == r.array }
    public func hash(into h: inout Hasher) { h.combine(array) }
}

/// An IPv6 address in network order.
public struct IPv6Address: Hashable, Sendable, CustomStringConvertible {
    public var bytes: [UInt8]
    public init?(bytes: [UInt8]) {
        guard bytes.count == 16 else { return nil }
        self.bytes = bytes
    }
    /// Parses RFC 4291 text, including `::` and an embedded dotted IPv4 tail.
    public init?(_ text: String) {
        var s = Substring(text)
        var tail: [UInt8] = []
        if let lastColon = s.lastIndex(of: ":"), s[s.index(after: lastColon)...].contains(".") {
            guard let v4 = IPv4Address(String(s[s.index(after: lastColon)...])) else { return nil }
            tail = v4.array
            s = s[...lastColon]
            if s.hasSuffix(":") && !s.hasSuffix("::") { s = s.dropLast() }
        }
        func groups(_ part: Substring) -> [UInt16]? {
            if part.isEmpty { return [] }
            var out: [UInt16] = []
            for g in part.split(separator: ":", omittingEmptySubsequences: false) {
                guard !g.isEmpty, g.count <= 4, let v = UInt16(g, radix: 16) else { return nil }
                out.append(v)
            }
            return out
        }
        let need = (16 - tail.count) / 2
        var words: [UInt16]
        if let r = s.firstRange(of: "::") {
            guard let head = groups(s[..<r.lowerBound]), let rest = groups(s[r.upperBound...]),
                !s[r.upperBound...].contains("::"), head.count + rest.count < need
            else { return nil }
            words = head + Array(repeating: 0, count: need - head.count - rest.count) + rest
        } else {
            guard let all = groups(s), all.count == need else { return nil }
            words = all
        }
        var b: [UInt8] = []
        for w in words { b += [UInt8(w >> 8), UInt8(w & 0xFF)] }
        self.bytes = b + tail
    }
    /// RFC 5952 text: lower case, the longest run of zero words compressed.
    public var description: String {
        var words: [UInt16] = []
        for i in stride(from: 0, to: 16, by: 2) { words.append(UInt16(bytes[i]) << 8 | UInt16(bytes[i + 1])) }
        var bestStart = -1
        var bestLen = 1
        var i = 0
        while i < 8 {
            if words[i] == 0 {
                var j = i
                while j < 8 && words[j] == 0 { j += 1 }
                if j - i > bestLen {
                    bestStart = i
                    bestLen = j - i
                }
                i = j
            } else {
                i += 1
            }
        }
        func hex(_ r: ArraySlice<UInt16>) -> String { r.map { String($0, radix: 16) }.joined(separator: ":") }
        if bestStart < 0 { return hex(words[...]) }
        return hex(words[..<bestStart]) + "::" + hex(words[(bestStart + bestLen)...])
    }
}
