/// One resource record: owner, type, class, TTL and RDATA.
public struct ResourceRecord: Hashable, Sendable, CustomStringConvertible {
    public var name: DNSName
    public var type: RRType
    public var rrClass: RRClass
    public var ttl: UInt32
    public var rdata: RData

    public init(name: DNSName, type: RRType, rrClass: RRClass = .in, ttl: UInt32, rdata: RData) {
        self.name = name
        self.type = type
        self.rrClass = rrClass
        self.ttl = ttl
        self.rdata = rdata
    }

    /// Zone-file style text, e.g. `www.example.net. 300 IN A 192.0.2.1`.
    public var description: String { "\(name) \(ttl) \(rrClass) \(type) \(rdata.presentation(type: type))" }
}

/// The question of a message.
public struct DNSQuestion: Hashable, Sendable, CustomStringConvertible {
    public var name: DNSName
    public var type: RRType
    public var qclass: RRClass
    public init(name: DNSName, type: RRType, qclass: RRClass = .in) {
        self.name = name
        self.type = type
        self.qclass = qclass
    }
    public var description: String { "\(name) \(qclass) \(type)" }
}

extension RData {
    /// Presentation format of the RDATA (RFC 1035 §5.1; RFC 3597 `\#` form for unknown types).
    public func presentation(type: RRType) -> String {
        func quoted(_ s: [UInt8]) -> String {
            var out = "\""
            for b in s {
                switch b {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"): out += "\\" + String(UnicodeScalar(b))
                case 0x20...0x7E: out += String(UnicodeScalar(b))
                default: out += "\\" + format3(b)
                }
            }
            return out + "\""
        }
        switch self {
        case .a(let a): return a.description
        case .aaaa(let a): return a.description
        case .ns(let n), .cname(let n), .ptr(let n): return n.description
        case .soa(let s):
            return "\(s.mname) \(s.rname) \(s.serial) \(s.refresh) \(s.retry) \(s.expire) \(s.minimum)"
        case .mx(let p, let n): return "\(p) \(n)"
        case .txt(let strings): return strings.map(quoted).joined(separator: " ")
        case .srv(let p, let w, let port, let t): return "\(p) \(w) \(port) \(t)"
        case .caa(let f, let tag, let value): return "\(f) \(String(decoding: tag, as: UTF8.self)) \(quoted(value))"
        case .unknown(let bytes):
            let hex = bytes.map {
                String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16)
            }
            return "\\# \(bytes.count)" + (bytes.isEmpty ? "" : " " + hex.joined())
        }
    }
}
