import DNSWire
import Foundation

/// The presentation form of the types nearcast serves as they are, without reading them: their
/// RDATA is kept as wire bytes (`RData.unknown`), and each type's fields say how its text and its
/// bytes map onto each other (RFC 1035 §5.1 and each type's RFC). A type without a layout here
/// is written in the generic form (RFC 3597 §5). Names inside these RDATA are written out in full,
/// never compressed (RFC 3597 §4), as other servers send them.
enum RDataLayout {
    /// One field of a type's RDATA.
    enum Field {
        case u8(String)
        case u16(String)
        case u32(String)
        /// A domain name, relative names completed with the zone's origin.
        case name(String)
        /// A character-string: a length byte, then up to 255 bytes.
        case string(String)
        /// One or more character-strings, to the end (TXT's layout).
        case strings
        /// Hexadecimal to the end of the RDATA, in one or more tokens.
        case hex(String)
        /// Base64 to the end of the RDATA, in one or more tokens.
        case base64(String)
        /// A length byte, then that many bytes, written as hex or `-` for none (NSEC3PARAM's salt).
        case salt
        /// The rest of the RDATA as one quoted string, without a length byte (URI's target).
        case text(String)
    }

    static let layouts: [RRType: [Field]] = [
        .hinfo: [.string("cpu"), .string("os")],
        RRType(17): [.name("mailbox"), .name("text name")],  // RP
        RRType(18): [.u16("subtype"), .name("hostname")],  // AFSDB
        RRType(35): [  // NAPTR
            .u16("order"), .u16("preference"), .string("flags"), .string("services"), .string("regexp"),
            .name("replacement"),
        ],
        RRType(43): [.u16("key tag"), .u8("algorithm"), .u8("digest type"), .hex("digest")],  // DS
        RRType(44): [.u8("algorithm"), .u8("fingerprint type"), .hex("fingerprint")],  // SSHFP
        RRType(48): [.u16("flags"), .u8("protocol"), .u8("algorithm"), .base64("public key")],  // DNSKEY
        RRType(51): [.u8("hash algorithm"), .u8("flags"), .u16("iterations"), .salt],  // NSEC3PARAM
        RRType(52): [.u8("usage"), .u8("selector"), .u8("matching type"), .hex("certificate data")],  // TLSA
        RRType(53): [.u8("usage"), .u8("selector"), .u8("matching type"), .hex("certificate data")],  // SMIMEA
        RRType(59): [.u16("key tag"), .u8("algorithm"), .u8("digest type"), .hex("digest")],  // CDS
        RRType(60): [.u16("flags"), .u8("protocol"), .u8("algorithm"), .base64("public key")],  // CDNSKEY
        RRType(61): [.base64("public key")],  // OPENPGPKEY
        RRType(63): [.u32("serial"), .u8("scheme"), .u8("hash algorithm"), .hex("digest")],  // ZONEMD
        RRType(99): [.strings],  // SPF
        RRType(256): [.u16("priority"), .u16("weight"), .text("target")],  // URI
    ]

    /// The wire bytes of `tokens` for a type with a layout; nil when the type has none.
    static func parse(type: RRType, tokens: [RDataText.Token], origin: DNSName) throws(RDataTextError) -> [UInt8]? {
        guard let fields = layouts[type] else { return nil }
        var out: [UInt8] = []
        var i = 0
        func next(_ what: String) throws(RDataTextError) -> RDataText.Token {
            guard i < tokens.count else { throw RDataTextError("\(type): \(what) is missing") }
            defer { i += 1 }
            return tokens[i]
        }
        func rest(_ what: String) throws(RDataTextError) -> String {
            guard i < tokens.count else { throw RDataTextError("\(type): \(what) is missing") }
            defer { i = tokens.count }
            return tokens[i...].map(\.string).joined()
        }
        func number<T: FixedWidthInteger>(_ what: String, _: T.Type) throws(RDataTextError) -> T {
            let t = try next(what)
            guard let v = T(t.string) else {
                throw RDataTextError("\(type): \(what) '\(t.string)' is not a number 0-\(T.max)")
            }
            return v
        }
        for field in fields {
            switch field {
            case .u8(let what): out.append(try number(what, UInt8.self))
            case .u16(let what):
                let v = try number(what, UInt16.self)
                out += [UInt8(v >> 8), UInt8(v & 0xFF)]
            case .u32(let what):
                let v = try number(what, UInt32.self)
                out += [UInt8(v >> 24), UInt8((v >> 16) & 0xFF), UInt8((v >> 8) & 0xFF), UInt8(v & 0xFF)]
            case .name(let what):
                let t = try next(what)
                do { out += try DNSName(t.string, origin: origin).wire } catch {
                    throw RDataTextError("\(type): \(what) '\(t.string)': \(error)")
                }
            case .string(let what): out += try characterString(try next(what), what: "\(type) \(what)")
            case .strings:
                guard i < tokens.count else { throw RDataTextError("\(type): expected at least one character-string") }
                while i < tokens.count { out += try characterString(try next("string"), what: "\(type) string") }
            case .hex(let what):
                guard let bytes = hexBytes(try rest(what)), !bytes.isEmpty else {
                    throw RDataTextError("\(type): \(what) must be hexadecimal digits, an even number of them")
                }
                out += bytes
            case .base64(let what):
                guard let data = Data(base64Encoded: try rest(what)), !data.isEmpty else {
                    throw RDataTextError("\(type): \(what) is not base64")
                }
                out += Array(data)
            case .salt:
                let t = try next("salt")
                if t.string == "-" {
                    out.append(0)
                } else {
                    guard let bytes = hexBytes(t.string), !bytes.isEmpty, bytes.count <= 255 else {
                        throw RDataTextError("\(type): salt '\(t.string)' must be hex (at most 255 bytes) or -")
                    }
                    out += [UInt8(bytes.count)] + bytes
                }
            case .text(let what): out += try RDataText.unescape(try next(what).text)
            }
        }
        guard i == tokens.count else {
            throw RDataTextError("\(type): \(tokens.count - i) field\(tokens.count - i == 1 ? "" : "s") too many")
        }
        guard out.count <= 0xFFFF else { throw RDataTextError("\(type): RDATA of \(out.count) bytes") }
        return out
    }

    /// A token as one character-string on the wire: its length, then its bytes.
    static func characterString(_ t: RDataText.Token, what: String) throws(RDataTextError) -> [UInt8] {
        let s = try RDataText.unescape(t.text)
        guard s.count <= 255 else { throw RDataTextError("\(what) of \(s.count) bytes is longer than 255") }
        return [UInt8(s.count)] + s
    }

    /// The presentation form of `bytes` for a type with a layout; nil when the type has none or
    /// the bytes do not fit it (the caller then writes the generic form).
    static func render(type: RRType, bytes: [UInt8]) -> String? {
        guard let fields = layouts[type] else { return nil }
        var parts: [String] = []
        var i = 0
        func take(_ n: Int) -> ArraySlice<UInt8>? {
            guard i + n <= bytes.count else { return nil }
            defer { i += n }
            return bytes[i..<(i + n)]
        }
        for field in fields {
            switch field {
            case .u8:
                guard let b = take(1) else { return nil }
                parts.append("\(b.first!)")
            case .u16:
                guard let b = take(2) else { return nil }
                parts.append("\(UInt16(b.first!) << 8 | UInt16(b.last!))")
            case .u32:
                guard let b = take(4) else { return nil }
                parts.append("\(b.reduce(UInt32(0)) { $0 << 8 | UInt32($1) })")
            case .name:
                guard let (name, length) = DNSName.uncompressed(Array(bytes[i...])) else { return nil }
                i += length
                parts.append(name.description)
            case .string:
                guard let n = take(1), let s = take(Int(n.first!)) else { return nil }
                parts.append(ZoneText.quoted(Array(s)))
            case .strings:
                guard i < bytes.count else { return nil }
                while i < bytes.count {
                    guard let n = take(1), let s = take(Int(n.first!)) else { return nil }
                    parts.append(ZoneText.quoted(Array(s)))
                }
            case .hex:
                guard i < bytes.count else { return nil }
                parts.append(bytes[i...].map { ZoneText.hex($0).uppercased() }.joined())
                i = bytes.count
            case .base64:
                guard i < bytes.count else { return nil }
                parts.append(Data(bytes[i...]).base64EncodedString())
                i = bytes.count
            case .salt:
                guard let n = take(1), let s = take(Int(n.first!)) else { return nil }
                parts.append(s.isEmpty ? "-" : s.map { ZoneText.hex($0).uppercased() }.joined())
            case .text:
                parts.append(ZoneText.quoted(Array(bytes[i...])))
                i = bytes.count
            }
        }
        return i == bytes.count ? parts.joined(separator: " ") : nil
    }

    /// Hex digits (any case) as bytes; nil for an odd count or a non-hex character.
    static func hexBytes(_ s: String) -> [UInt8]? {
        let digits = Array(s.utf8)
        guard digits.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(digits.count / 2)
        for k in stride(from: 0, to: digits.count, by: 2) {
            guard let v = UInt8(String(decoding: digits[k...k + 1], as: UTF8.self), radix: 16) else { return nil }
            out.append(v)
        }
        return out
    }
}
