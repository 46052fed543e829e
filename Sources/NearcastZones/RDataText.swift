import DNSWire

/// Why a record's RDATA text is not valid.
struct RDataTextError: Error {
    var message: String
    init(_ m: String) { message = m }
}

/// Parses the presentation form of RDATA (RFC 1035 §5.1 and each type's RFC) into `RData`.
enum RDataText {
    typealias Token = MasterFileTokenizer.Token

    static func parse(type: RRType, tokens: [Token], origin: DNSName) throws(RDataTextError) -> RData {
        if let first = tokens.first, !first.quoted, first.string == "\\#" {
            return try generic(type: type, tokens: Array(tokens.dropFirst()))
        }
        func count(_ n: Int, _ layout: String) throws(RDataTextError) {
            guard tokens.count == n else {
                throw RDataTextError("expected \(layout), got \(tokens.count) field\(tokens.count == 1 ? "" : "s")")
            }
        }
        func name(_ t: Token) throws(RDataTextError) -> DNSName {
            do { return try DNSName(presentation: t.bytes, origin: origin) } catch {
                throw RDataTextError("name '\(t.string)': \(error)")
            }
        }
        func u16(_ t: Token, _ what: String) throws(RDataTextError) -> UInt16 {
            guard let v = UInt16(t.string) else {
                throw RDataTextError("\(what) '\(t.string)' is not a number 0-65535")
            }
            return v
        }
        func u32(_ t: Token, _ what: String, ttlUnits: Bool = false) throws(RDataTextError) -> UInt32 {
            if let v = UInt32(t.string) { return v }
            if ttlUnits, let v = ZoneFileParser.ttl(t.string) { return v }
            throw RDataTextError("\(what) '\(t.string)' is not a number 0-4294967295")
        }
        switch type {
        case .a:
            try count(1, "an IPv4 address")
            guard let a = IPv4Address(text: tokens[0].bytes) else {
                throw RDataTextError("'\(tokens[0].string)' is not an IPv4 address")
            }
            return .a(a)
        case .aaaa:
            try count(1, "an IPv6 address")
            guard let a = IPv6Address(tokens[0].string) else {
                throw RDataTextError("'\(tokens[0].string)' is not an IPv6 address")
            }
            return .aaaa(a)
        case .ns:
            try count(1, "a name server name")
            return .ns(try name(tokens[0]))
        case .cname:
            try count(1, "a target name")
            return .cname(try name(tokens[0]))
        case .ptr:
            try count(1, "a target name")
            return .ptr(try name(tokens[0]))
        case .mx:
            try count(2, "preference and exchange")
            return .mx(preference: try u16(tokens[0], "preference"), exchange: try name(tokens[1]))
        case .srv:
            try count(4, "priority, weight, port and target")
            return .srv(
                priority: try u16(tokens[0], "priority"), weight: try u16(tokens[1], "weight"),
                port: try u16(tokens[2], "port"), target: try name(tokens[3]))
        case .soa:
            try count(7, "mname rname serial refresh retry expire minimum")
            return .soa(
                .init(
                    mname: try name(tokens[0]), rname: try name(tokens[1]), serial: try u32(tokens[2], "serial"),
                    refresh: try u32(tokens[3], "refresh", ttlUnits: true),
                    retry: try u32(tokens[4], "retry", ttlUnits: true),
                    expire: try u32(tokens[5], "expire", ttlUnits: true),
                    minimum: try u32(tokens[6], "minimum", ttlUnits: true)))
        case .txt:
            guard !tokens.isEmpty else { throw RDataTextError("expected at least one character-string") }
            var strings: [[UInt8]] = []
            for t in tokens {
                let s = try unescape(t.text)
                guard s.count <= 255 else {
                    throw RDataTextError("character-string of \(s.count) bytes is longer than 255 (split it)")
                }
                strings.append(s)
            }
            return .txt(strings)
        case .caa:
            try count(3, "flags, tag and value")
            guard let flags = UInt8(tokens[0].string) else {
                throw RDataTextError("flags '\(tokens[0].string)' is not a number 0-255")
            }
            let tag = tokens[1].text
            guard !tag.isEmpty, tag.count <= 255,
                tag.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x7A) })
            else { throw RDataTextError("tag '\(tokens[1].string)' must be 1-255 letters and digits") }
            return .caa(flags: flags, tag: tag, value: try unescape(tokens[2].text))
        default:
            if let bytes = try RDataLayout.parse(type: type, tokens: tokens, origin: origin) { return .unknown(bytes) }
            throw RDataTextError("type \(type) must be written in the generic form: \\# LENGTH HEX")
        }
    }

    /// RFC 3597 §5: `\# <length> <hex…>`; for known types the bytes are decoded and checked.
    static func generic(type: RRType, tokens: [Token]) throws(RDataTextError) -> RData {
        guard let lenTok = tokens.first, let len = Int(lenTok.string), len >= 0, len <= 65535 else {
            throw RDataTextError("\\# must be followed by the RDATA length in bytes")
        }
        let hex = tokens.dropFirst().map(\.string).joined()
        guard hex.utf8.count % 2 == 0 else { throw RDataTextError("\\# hex data has an odd number of digits") }
        guard let bytes = hexBytes(hex) else { throw RDataTextError("\\# data '\(hex)' is not hex") }
        guard bytes.count == len else {
            throw RDataTextError("\\# says \(len) bytes but \(bytes.count) are given")
        }
        // Decoded by the wire reader, so known types are held typed and validated; a type kept as
        // bytes must fit its fields (RFC 3597 §5: the generic form of a known type is that type).
        let rdata: RData
        do { rdata = try RData(type: type, bytes: bytes) } catch {
            throw RDataTextError("\\# data is not valid \(type) RDATA: \(error)")
        }
        if case .unknown = rdata, RDataLayout.layouts[type] != nil, RDataLayout.render(type: type, bytes: bytes) == nil
        {
            throw RDataTextError("\\# data is not valid \(type) RDATA: it does not fit the type's fields")
        }
        return rdata
    }

    /// Decodes `\X` and `\DDD` escapes of a character-string.
    static func unescape(_ text: [UInt8]) throws(RDataTextError) -> [UInt8] {
        var out: [UInt8] = []
        var i = 0
        while i < text.count {
            let c = text[i]
            guard c == UInt8(ascii: "\\") else {
                out.append(c)
                i += 1
                continue
            }
            guard i + 1 < text.count else { throw RDataTextError("string ends with a lone backslash") }
            let n = text[i + 1]
            if n >= 0x30 && n <= 0x39 {
                guard i + 3 < text.count, (0x30...0x39).contains(text[i + 2]), (0x30...0x39).contains(text[i + 3])
                else {
                    throw RDataTextError("\\DDD escape needs three digits")
                }
                let v = Int(n - 0x30) * 100 + Int(text[i + 2] - 0x30) * 10 + Int(text[i + 3] - 0x30)
                guard v <= 255 else { throw RDataTextError("escape \\\(v) is above 255") }
                out.append(UInt8(v))
                i += 4
            } else {
                out.append(n)
                i += 2
            }
        }
        return out
    }

    /// Hex digits (any case) as bytes; nil for an odd count or anything but a hex digit (a sign
    /// included, which `UInt8(_:radix:)` would take).
    static func hexBytes(_ s: String) -> [UInt8]? {
        let digits = Array(s.utf8)
        guard digits.count % 2 == 0 else { return nil }
        func value(_ c: UInt8) -> UInt8? {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
            default: return nil
            }
        }
        var out: [UInt8] = []
        out.reserveCapacity(digits.count / 2)
        for k in stride(from: 0, to: digits.count, by: 2) {
            guard let h = value(digits[k]), let l = value(digits[k + 1]) else { return nil }
            out.append(h << 4 | l)
        }
        return out
    }
}
