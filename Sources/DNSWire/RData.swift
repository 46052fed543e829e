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
    /// Parses dotted-quad text: four decimal parts of at most three digits, each at most 255.
    public init?(_ text: String) {
        var text = text
        guard let b = text.withUTF8({ Self.parse($0[...]) }) else { return nil }
        bytes = b
    }

    /// `init(_:)` from the text's bytes.
    public init?(text: ArraySlice<UInt8>) {
        guard let b = text.withUnsafeBufferPointer({ Self.parse($0[...]) }) else { return nil }
        bytes = b
    }

    /// The dotted quad in `s`, read byte by byte (a zone file holds millions of them).
    static func parse(_ s: Slice<UnsafeBufferPointer<UInt8>>) -> (UInt8, UInt8, UInt8, UInt8)? {
        var parts: (UInt32, UInt32, UInt32, UInt32) = (0, 0, 0, 0)
        var part = 0
        var value: UInt32 = 0
        var digits = 0
        func store() -> Bool {
            guard digits > 0, value <= 255 else { return false }
            switch part {
            case 0: parts.0 = value
            case 1: parts.1 = value
            case 2: parts.2 = value
            default: parts.3 = value
            }
            return true
        }
        for c in s {
            if c == UInt8(ascii: ".") {
                guard part < 3, store() else { return nil }
                part += 1
                (value, digits) = (0, 0)
            } else if c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9") {
                guard digits < 3 else { return nil }
                value = value * 10 + UInt32(c - UInt8(ascii: "0"))
                digits += 1
            } else {
                return nil
            }
        }
        guard part == 3, store() else { return nil }
        return (UInt8(parts.0), UInt8(parts.1), UInt8(parts.2), UInt8(parts.3))
    }

    public var array: [UInt8] { [bytes.0, bytes.1, bytes.2, bytes.3] }
    public var description: String { "\(bytes.0).\(bytes.1).\(bytes.2).\(bytes.3)" }
    var word: UInt32 {
        UInt32(bytes.0) << 24 | UInt32(bytes.1) << 16 | UInt32(bytes.2) << 8 | UInt32(bytes.3)
    }
    public static func == (l: IPv4Address, r: IPv4Address) -> Bool { l.word == r.word }
    public func hash(into h: inout Hasher) { h.combine(word) }
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
        var text = text
        guard let b = text.withUTF8({ Self.parse($0) }) else { return nil }
        bytes = b
    }

    /// The address in `s`, read byte by byte: groups of one to four hex digits separated by `:`,
    /// at most one `::` standing for one or more zero groups, and a dotted IPv4 tail.
    static func parse(_ s: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        var out = [UInt8](repeating: 0, count: 16)
        var n = 0  // bytes written
        var gap = -1  // where `::` stands, in bytes written before it
        var i = 0
        let colon = UInt8(ascii: ":")
        if s.count >= 2 && s[0] == colon && s[1] == colon {
            gap = 0
            i = 2
        }
        while i < s.count {
            let start = i
            var value: UInt32 = 0
            var digits = 0
            while i < s.count, let h = hexValue(s[i]) {
                guard digits < 4 else { return nil }
                value = value << 4 | h
                digits += 1
                i += 1
            }
            if i < s.count && s[i] == UInt8(ascii: ".") {
                guard n + 4 <= 16, let v4 = IPv4Address.parse(s[start...]) else { return nil }
                (out[n], out[n + 1], out[n + 2], out[n + 3]) = v4
                n += 4
                break
            }
            guard digits > 0, n + 2 <= 16 else { return nil }
            out[n] = UInt8(value >> 8)
            out[n + 1] = UInt8(value & 0xFF)
            n += 2
            if i == s.count { break }
            guard s[i] == colon, i + 1 < s.count else { return nil }  // a lone trailing `:` too
            i += 1
            if s[i] == colon {
                guard gap < 0 else { return nil }
                gap = n
                i += 1
            }
        }
        if gap < 0 { return n == 16 ? out : nil }
        guard n < 16 else { return nil }  // `::` stands for at least one group
        let moved = n - gap
        for k in 0..<moved { out[16 - moved + k] = out[gap + k] }
        for k in gap..<(16 - moved) { out[k] = 0 }
        return out
    }

    static func hexValue(_ c: UInt8) -> UInt32? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): UInt32(c - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): UInt32(c - UInt8(ascii: "a") + 10)
        case UInt8(ascii: "A")...UInt8(ascii: "F"): UInt32(c - UInt8(ascii: "A") + 10)
        default: nil
        }
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
