import DNSWire
import Foundation
import NearcastBasics

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
        /// A type, by mnemonic or `TYPEnnn`, as 16 bits (RRSIG's type covered).
        case type(String)
        /// A time as 32 bits: `YYYYMMDDHHmmSS` in UTC, or seconds since 1970 (RFC 4034 §3.2).
        case time(String)
        /// The types present, as window blocks to the end of the RDATA (RFC 4034 §4.1.2); may be empty.
        case bitmap
        /// A length byte, then that many bytes, written in base32hex without padding (NSEC3's next
        /// hashed owner, RFC 5155 §3.3).
        case hashed
        /// A certificate type by mnemonic or number, as 16 bits (RFC 4398 §2.1).
        case certType
        /// LOC's whole RDATA (RFC 1876 §3): latitude, longitude, altitude, then optionally size and
        /// horizontal and vertical precision.
        case location
        /// SVCB's and HTTPS's SvcParams, `key=value` to the end (RFC 9460 §2.1), sorted by key.
        case svcParams
    }

    static let layouts: [RRType: [Field]] = [
        .hinfo: [.string("cpu"), .string("os")],
        RRType(17): [.name("mailbox"), .name("text name")],  // RP
        RRType(18): [.u16("subtype"), .name("hostname")],  // AFSDB
        RRType(29): [.location],  // LOC
        RRType(35): [  // NAPTR
            .u16("order"), .u16("preference"), .string("flags"), .string("services"), .string("regexp"),
            .name("replacement"),
        ],
        .dname: [.name("target")],  // RFC 6672
        RRType(37): [.certType, .u16("key tag"), .u8("algorithm"), .base64("certificate")],  // CERT
        RRType(43): [.u16("key tag"), .u8("algorithm"), .u8("digest type"), .hex("digest")],  // DS
        RRType(46): [  // RRSIG
            .type("type covered"), .u8("algorithm"), .u8("labels"), .u32("original TTL"), .time("expiration"),
            .time("inception"), .u16("key tag"), .name("signer"), .base64("signature"),
        ],
        RRType(47): [.name("next name"), .bitmap],  // NSEC
        RRType(50): [  // NSEC3
            .u8("hash algorithm"), .u8("flags"), .u16("iterations"), .salt, .hashed, .bitmap,
        ],
        RRType(44): [.u8("algorithm"), .u8("fingerprint type"), .hex("fingerprint")],  // SSHFP
        RRType(48): [.u16("flags"), .u8("protocol"), .u8("algorithm"), .base64("public key")],  // DNSKEY
        RRType(51): [.u8("hash algorithm"), .u8("flags"), .u16("iterations"), .salt],  // NSEC3PARAM
        RRType(52): [.u8("usage"), .u8("selector"), .u8("matching type"), .hex("certificate data")],  // TLSA
        RRType(53): [.u8("usage"), .u8("selector"), .u8("matching type"), .hex("certificate data")],  // SMIMEA
        RRType(59): [.u16("key tag"), .u8("algorithm"), .u8("digest type"), .hex("digest")],  // CDS
        RRType(60): [.u16("flags"), .u8("protocol"), .u8("algorithm"), .base64("public key")],  // CDNSKEY
        RRType(61): [.base64("public key")],  // OPENPGPKEY
        RRType(62): [.u32("SOA serial"), .u16("flags"), .bitmap],  // CSYNC
        RRType(63): [.u32("serial"), .u8("scheme"), .u8("hash algorithm"), .hex("digest")],  // ZONEMD
        RRType(99): [.strings],  // SPF
        RRType(256): [.u16("priority"), .u16("weight"), .text("target")],  // URI
        RRType(64): [.u16("priority"), .name("target"), .svcParams],  // SVCB
        RRType(65): [.u16("priority"), .name("target"), .svcParams],  // HTTPS
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
                guard let bytes = RDataText.hexBytes(try rest(what)), !bytes.isEmpty else {
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
                    guard let bytes = RDataText.hexBytes(t.string), !bytes.isEmpty, bytes.count <= 255 else {
                        throw RDataTextError("\(type): salt '\(t.string)' must be hex (at most 255 bytes) or -")
                    }
                    out += [UInt8(bytes.count)] + bytes
                }
            case .text(let what): out += try RDataText.unescape(try next(what).text)
            case .type(let what):
                let t = try next(what)
                guard let v = RRType(mnemonic: t.string) else {
                    throw RDataTextError("\(type): \(what) '\(t.string)' is not a type")
                }
                out += [UInt8(v.rawValue >> 8), UInt8(v.rawValue & 0xFF)]
            case .time(let what):
                let t = try next(what)
                guard let v = time(t.string) else {
                    throw RDataTextError("\(type): \(what) '\(t.string)' is not YYYYMMDDHHmmSS or seconds")
                }
                out += [UInt8(v >> 24), UInt8((v >> 16) & 0xFF), UInt8((v >> 8) & 0xFF), UInt8(v & 0xFF)]
            case .bitmap:
                var types: [RRType] = []
                while i < tokens.count {
                    let t = try next("type")
                    guard let v = RRType(mnemonic: t.string) else {
                        throw RDataTextError("\(type): '\(t.string)' in the type bitmap is not a type")
                    }
                    types.append(v)
                }
                out += bitmap(types)
            case .hashed:
                let t = try next("next hashed owner")
                guard let bytes = base32hex(t.string), !bytes.isEmpty, bytes.count <= 255 else {
                    throw RDataTextError("\(type): next hashed owner '\(t.string)' is not base32hex")
                }
                out += [UInt8(bytes.count)] + bytes
            case .location:
                out += try Location.parse(tokens[i...].map(\.string), type: type)
                i = tokens.count
            case .svcParams:
                out += try SvcParams.parse(Array(tokens[i...]), type: type)
                i = tokens.count
            case .certType:
                let t = try next("certificate type")
                guard let v = UInt16(t.string) ?? certTypes.first(where: { $0.1 == t.string.uppercased() })?.0 else {
                    throw RDataTextError("\(type): certificate type '\(t.string)' is not a number or a mnemonic")
                }
                out += [UInt8(v >> 8), UInt8(v & 0xFF)]
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
                parts.append(Hex.uppercase(bytes[i...]))
                i = bytes.count
            case .base64:
                guard i < bytes.count else { return nil }
                parts.append(Data(bytes[i...]).base64EncodedString())
                i = bytes.count
            case .salt:
                guard let n = take(1), let s = take(Int(n.first!)) else { return nil }
                parts.append(s.isEmpty ? "-" : Hex.uppercase(s))
            case .text:
                parts.append(ZoneText.quoted(Array(bytes[i...])))
                i = bytes.count
            case .type:
                guard let b = take(2) else { return nil }
                parts.append("\(RRType(UInt16(b.first!) << 8 | UInt16(b.last!)))")
            case .time:
                guard let b = take(4) else { return nil }
                parts.append(timeText(b.reduce(UInt32(0)) { $0 << 8 | UInt32($1) }))
            case .bitmap:
                guard let types = types(Array(bytes[i...])) else { return nil }
                parts += types.map(\.description)
                i = bytes.count
            case .hashed:
                guard let n = take(1), n.first! > 0, let h = take(Int(n.first!)) else { return nil }
                parts.append(base32hexText(Array(h)))
            case .location:
                guard let text = Location.render(Array(bytes[i...])) else { return nil }
                parts.append(text)
                i = bytes.count
            case .svcParams:
                guard let params = SvcParams.render(Array(bytes[i...])) else { return nil }
                parts += params
                i = bytes.count
            case .certType:
                guard let b = take(2) else { return nil }
                let v = UInt16(b.first!) << 8 | UInt16(b.last!)
                parts.append(certTypes.first(where: { $0.0 == v })?.1 ?? "\(v)")
            }
        }
        return i == bytes.count ? parts.joined(separator: " ") : nil
    }

    /// Certificate types' mnemonics (RFC 4398 §2.1).
    static let certTypes: [(UInt16, String)] = [
        (1, "PKIX"), (2, "SPKI"), (3, "PGP"), (4, "IPKIX"), (5, "ISPKI"), (6, "IPGP"), (7, "ACPKIX"),
        (8, "IACPKIX"), (253, "URI"), (254, "OID"),
    ]

    /// A signature time: 14 digits as a UTC date and time, or a number of seconds (RFC 4034 §3.2).
    static func time(_ s: String) -> UInt32? {
        guard s.count == 14, s.allSatisfy(\.isASCII), s.allSatisfy(\.isNumber) else { return UInt32(s) }
        let d = Array(s)
        func n(_ a: Int, _ b: Int) -> Int { Int(String(d[a..<b]))! }
        var c = DateComponents()
        (c.year, c.month, c.day, c.hour, c.minute, c.second) = (
            n(0, 4), n(4, 6), n(6, 8), n(8, 10), n(10, 12), n(12, 14)
        )
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        guard let date = calendar.date(from: c),
            calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date) == c
        else { return nil }
        // Serial number arithmetic (RFC 1982): the low 32 bits of the seconds since 1970.
        return UInt32(truncatingIfNeeded: Int64(date.timeIntervalSince1970))
    }

    /// A signature time as 14 digits, UTC (as BIND, NSD and ldns write it).
    static func timeText(_ v: UInt32) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let c = calendar.dateComponents(
            [.year, .month, .day, .hour, .minute, .second], from: Date(timeIntervalSince1970: Double(v)))
        return String(format: "%04d%02d%02d%02d%02d%02d", c.year!, c.month!, c.day!, c.hour!, c.minute!, c.second!)
    }

    /// Types as window blocks (RFC 4034 §4.1.2): for each 256-type window in use, its number, the
    /// length of its bitmap, and the bitmap without trailing zero bytes.
    static func bitmap(_ types: [RRType]) -> [UInt8] {
        var windows: [UInt8: [UInt8]] = [:]
        for t in Set(types) {
            let (w, low) = (UInt8(t.rawValue >> 8), Int(t.rawValue & 0xFF))
            var bits = windows[w] ?? []
            if bits.count <= low / 8 { bits += [UInt8](repeating: 0, count: low / 8 + 1 - bits.count) }
            bits[low / 8] |= 0x80 >> UInt8(low % 8)
            windows[w] = bits
        }
        return windows.keys.sorted().flatMap { w in [w, UInt8(windows[w]!.count)] + windows[w]! }
    }

    /// The types of window blocks, in order; nil when they are not well formed.
    static func types(_ bytes: [UInt8]) -> [RRType]? {
        var out: [RRType] = []
        var i = 0
        var last = -1
        while i < bytes.count {
            guard i + 2 <= bytes.count else { return nil }
            let (w, n) = (Int(bytes[i]), Int(bytes[i + 1]))
            guard w > last, n >= 1, n <= 32, i + 2 + n <= bytes.count else { return nil }
            for (k, b) in bytes[(i + 2)..<(i + 2 + n)].enumerated() {
                for bit in 0..<8 where b & (0x80 >> UInt8(bit)) != 0 {
                    out.append(RRType(UInt16(w * 256 + k * 8 + bit)))
                }
            }
            last = w
            i += 2 + n
        }
        return out
    }

    static let base32hexDigits = Array("0123456789ABCDEFGHIJKLMNOPQRSTUV".utf8)

    /// Base32hex (RFC 4648 §7), any case, without padding, as bytes; nil when it is not.
    static func base32hex(_ s: String) -> [UInt8]? {
        var out: [UInt8] = []
        var buffer = 0
        var bits = 0
        for c in s.uppercased().utf8 {
            guard let v = base32hexDigits.firstIndex(of: c) else { return nil }
            buffer = buffer << 5 | v
            bits += 5
            if bits >= 8 {
                out.append(UInt8((buffer >> (bits - 8)) & 0xFF))
                bits -= 8
            }
            buffer &= (1 << bits) - 1
        }
        return buffer == 0 ? out : nil
    }

    /// Bytes in base32hex, upper case, without padding.
    static func base32hexText(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        var buffer = 0
        var bits = 0
        for b in bytes {
            buffer = buffer << 8 | Int(b)
            bits += 8
            while bits >= 5 {
                out.append(base32hexDigits[(buffer >> (bits - 5)) & 31])
                bits -= 5
            }
            buffer &= (1 << bits) - 1
        }
        if bits > 0 { out.append(base32hexDigits[(buffer << (5 - bits)) & 31]) }
        return String(decoding: out, as: UTF8.self)
    }

    /// LOC (RFC 1876): text and wire forms.
    enum Location {
        /// 2^31: the equator and the prime meridian on the wire; 100,000 m below the WGS 84
        /// spheroid is altitude 0.
        static let origin: Int64 = 1 << 31
        static let altitudeBase: Int64 = 10_000_000

        static func parse(_ t: [String], type: RRType) throws(RDataTextError) -> [UInt8] {
            var i = 0
            func fail(_ why: String) -> RDataTextError { RDataTextError("\(type): \(why)") }
            /// Degrees, optional minutes and seconds, then the hemisphere, in thousandths of a second.
            func angle(_ hemispheres: (String, String), max: Int64) throws(RDataTextError) -> Int64 {
                var parts: [String] = []
                while i < t.count, parts.count < 3, t[i].uppercased() != hemispheres.0,
                    t[i].uppercased() != hemispheres.1
                {
                    parts.append(t[i])
                    i += 1
                }
                guard i < t.count, !parts.isEmpty else {
                    throw fail("expected degrees [minutes [seconds]] and \(hemispheres.0) or \(hemispheres.1)")
                }
                let sign: Int64 = t[i].uppercased() == hemispheres.0 ? 1 : -1
                i += 1
                guard let d = Int64(parts[0]), d >= 0, d <= max else {
                    throw fail("degrees '\(parts[0])' out of 0-\(max)")
                }
                let m = parts.count > 1 ? Int64(parts[1]) : 0
                let sec = parts.count > 2 ? thousandths(parts[2]) : 0
                guard let m, m < 60, let sec, sec < 60_000 else { throw fail("minutes or seconds out of range") }
                let v = (d * 3600 + m * 60) * 1000 + sec
                guard v <= max * 3_600_000 else { throw fail("more than \(max) degrees") }
                return origin + sign * v
            }
            let lat = try angle(("N", "S"), max: 90)
            let lon = try angle(("E", "W"), max: 180)
            guard i < t.count, let alt = centimetres(t[i], signed: true) else {
                throw fail("expected an altitude in metres")
            }
            i += 1
            var precisions: [UInt8] = [0x12, 0x16, 0x13]  // 1 m, 10,000 m, 10 m
            for k in 0..<3 where i < t.count {
                guard let cm = centimetres(t[i], signed: false), cm <= 9_000_000_000 else {
                    throw fail("'\(t[i])' is not a size or precision in metres")
                }
                precisions[k] = precision(cm)
                i += 1
            }
            guard i == t.count else { throw fail("\(t.count - i) field\(t.count - i == 1 ? "" : "s") too many") }
            let a = alt + altitudeBase
            guard a >= 0, a <= Int64(UInt32.max) else { throw fail("altitude out of range") }
            func u32(_ v: Int64) -> [UInt8] { (0..<4).map { UInt8((v >> (24 - 8 * $0)) & 0xFF) } }
            return [0] + precisions + u32(lat) + u32(lon) + u32(a)
        }

        static func render(_ b: [UInt8]) -> String? {
            guard b.count == 16, b[0] == 0, b[1...3].allSatisfy({ $0 >> 4 <= 9 && $0 & 0xF <= 9 }) else { return nil }
            func u32(_ at: Int) -> Int64 { b[at..<(at + 4)].reduce(Int64(0)) { $0 << 8 | Int64($1) } }
            func angle(_ v: Int64, _ hemispheres: (String, String)) -> String {
                let a = abs(v - origin)
                return String(
                    format: "%lld %lld %lld.%03lld %@", a / 3_600_000, a / 60_000 % 60, a / 1000 % 60, a % 1000,
                    v >= origin ? hemispheres.0 : hemispheres.1)
            }
            func metres(_ cm: Int64) -> String {
                (cm < 0 ? "-" : "") + "\(abs(cm) / 100)"
                    + (abs(cm) % 100 == 0 ? "" : String(format: ".%02lld", abs(cm) % 100))
                    + "m"
            }
            func size(_ p: UInt8) -> Int64 { Int64(p >> 4) * Int64(pow(10, Double(p & 0xF))) }
            return [
                angle(u32(4), ("N", "S")), angle(u32(8), ("E", "W")), metres(u32(12) - altitudeBase),
                metres(size(b[1])),
                metres(size(b[2])), metres(size(b[3])),
            ].joined(separator: " ")
        }

        /// Seconds with up to three decimals, in thousandths.
        static func thousandths(_ s: String) -> Int64? {
            let parts = s.split(separator: ".", omittingEmptySubsequences: false)
            guard parts.count <= 2, let whole = Int64(parts[0]), whole >= 0 else { return nil }
            guard parts.count == 2 else { return whole * 1000 }
            let f = parts[1]
            guard f.count <= 3, f.allSatisfy(\.isNumber),
                let v = Int64(f.padding(toLength: 3, withPad: "0", startingAt: 0))
            else { return nil }
            return whole * 1000 + v
        }

        /// Metres with up to two decimals and an optional `m`, in centimetres.
        static func centimetres(_ s: String, signed: Bool) -> Int64? {
            var text = s.hasSuffix("m") || s.hasSuffix("M") ? String(s.dropLast()) : s
            var sign: Int64 = 1
            if signed, text.hasPrefix("-") {
                sign = -1
                text.removeFirst()
            }
            let parts = text.split(separator: ".", omittingEmptySubsequences: false)
            guard parts.count <= 2, !parts[0].isEmpty, parts[0].allSatisfy(\.isNumber), let whole = Int64(parts[0])
            else {
                return nil
            }
            guard parts.count == 2 else { return sign * whole * 100 }
            let f = parts[1]
            guard f.count <= 2, f.allSatisfy(\.isNumber),
                let v = Int64(f.padding(toLength: 2, withPad: "0", startingAt: 0))
            else { return nil }
            return sign * (whole * 100 + v)
        }

        /// A size in centimetres as RFC 1876's mantissa and power of ten, rounded down.
        static func precision(_ cm: Int64) -> UInt8 {
            var e = 0
            while e < 9, cm >= Int64(pow(10, Double(e + 1))) { e += 1 }
            let m = min(9, cm / Int64(pow(10, Double(e))))
            return UInt8(m << 4) | UInt8(e)
        }
    }

    /// SvcParams of SVCB and HTTPS (RFC 9460 §2.1, §7): text and wire forms.
    enum SvcParams {
        static let names: [(UInt16, String)] = [
            (0, "mandatory"), (1, "alpn"), (2, "no-default-alpn"), (3, "port"), (4, "ipv4hint"), (5, "ech"),
            (6, "ipv6hint"), (7, "dohpath"), (8, "ohttp"),
        ]

        static func key(_ name: String) -> UInt16? {
            if let k = names.first(where: { $0.1 == name.lowercased() }) { return k.0 }
            guard name.lowercased().hasPrefix("key"), let v = UInt16(name.dropFirst(3)), "key\(v)" == name.lowercased()
            else { return nil }
            return v
        }

        static func name(_ key: UInt16) -> String { names.first(where: { $0.0 == key })?.1 ?? "key\(key)" }

        static func parse(_ tokens: [RDataText.Token], type: RRType) throws(RDataTextError) -> [UInt8] {
            func fail(_ why: String) -> RDataTextError { RDataTextError("\(type): \(why)") }
            var params: [UInt16: [UInt8]] = [:]
            var i = 0
            while i < tokens.count {
                let t = tokens[i].string
                i += 1
                let (keyText, hasValue) = t.firstIndex(of: "=").map { (String(t[..<$0]), true) } ?? (t, false)
                guard let k = key(keyText) else { throw fail("'\(keyText)' is not a SvcParam key") }
                guard params[k] == nil else { throw fail("\(keyText) appears twice") }
                // `key="value"`: the tokenizer ends the unquoted part at the quote.
                var raw = t.firstIndex(of: "=").map { Array(t[t.index(after: $0)...].utf8) } ?? []
                if hasValue, raw.isEmpty, i < tokens.count, tokens[i].quoted {
                    raw = tokens[i].text
                    i += 1
                }
                params[k] = try value(k, name: keyText, raw: raw, hasValue: hasValue, fail: fail)
            }
            if let m = params[0] {
                let keys = stride(from: 0, to: m.count, by: 2).map { UInt16(m[$0]) << 8 | UInt16(m[$0 + 1]) }
                for k in keys where params[k] == nil { throw fail("mandatory names \(name(k)), which is not given") }
            }
            var out: [UInt8] = []
            for k in params.keys.sorted() {
                let v = params[k]!
                guard v.count <= 0xFFFF else { throw fail("\(name(k)) is too long") }
                out += [UInt8(k >> 8), UInt8(k & 0xFF), UInt8(v.count >> 8), UInt8(v.count & 0xFF)] + v
            }
            return out
        }

        /// A value list's items: split at commas not escaped, each item's escapes decoded.
        static func items(_ raw: [UInt8]) throws(RDataTextError) -> [[UInt8]] {
            var items: [[UInt8]] = []
            var current: [UInt8] = []
            var i = 0
            while i < raw.count {
                if raw[i] == UInt8(ascii: "\\"), i + 1 < raw.count {
                    current += raw[i...(i + 1)]
                    i += 2
                } else if raw[i] == UInt8(ascii: ",") {
                    items.append(try RDataText.unescape(current))
                    current = []
                    i += 1
                } else {
                    current.append(raw[i])
                    i += 1
                }
            }
            items.append(try RDataText.unescape(current))
            return items
        }

        static func value(
            _ k: UInt16, name: String, raw: [UInt8], hasValue: Bool, fail: (String) -> RDataTextError
        ) throws(RDataTextError) -> [UInt8] {
            let text = String(decoding: raw, as: UTF8.self)
            switch k {
            case 2, 8:
                guard !hasValue else { throw fail("\(name) takes no value") }
                return []
            default:
                guard hasValue, !raw.isEmpty || k >= 9 || k == 7 else { throw fail("\(name) needs a value") }
            }
            switch k {
            case 0:
                var keys: [UInt16] = []
                for item in try items(raw) {
                    let s = String(decoding: item, as: UTF8.self)
                    guard let v = key(s), v != 0 else { throw fail("mandatory: '\(s)' is not a key it may name") }
                    guard !keys.contains(v) else { throw fail("mandatory names \(s) twice") }
                    keys.append(v)
                }
                return keys.sorted().flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }
            case 1:
                var out: [UInt8] = []
                for item in try items(raw) {
                    guard !item.isEmpty, item.count <= 255 else { throw fail("alpn: an empty or too long protocol id") }
                    out += [UInt8(item.count)] + item
                }
                return out
            case 3:
                guard let p = UInt16(text) else { throw fail("port '\(text)' is not a number 0-65535") }
                return [UInt8(p >> 8), UInt8(p & 0xFF)]
            case 4:
                var out: [UInt8] = []
                for a in text.split(separator: ",", omittingEmptySubsequences: false) {
                    guard let v = IPv4Address(String(a)) else { throw fail("ipv4hint: '\(a)' is not an IPv4 address") }
                    out += v.array
                }
                return out
            case 5:
                guard let d = Data(base64Encoded: text) else { throw fail("ech is not base64") }
                return Array(d)
            case 6:
                var out: [UInt8] = []
                for a in text.split(separator: ",", omittingEmptySubsequences: false) {
                    guard let v = IPv6Address(String(a)) else { throw fail("ipv6hint: '\(a)' is not an IPv6 address") }
                    out += v.bytes
                }
                return out
            default:
                return try RDataText.unescape(raw)
            }
        }

        /// Each SvcParam as `key=value`; nil when the bytes are not well-formed SvcParams.
        static func render(_ b: [UInt8]) -> [String]? {
            var out: [String] = []
            var i = 0
            var last = -1
            while i < b.count {
                guard i + 4 <= b.count else { return nil }
                let k = UInt16(b[i]) << 8 | UInt16(b[i + 1])
                let n = Int(b[i + 2]) << 8 | Int(b[i + 3])
                guard Int(k) > last, i + 4 + n <= b.count else { return nil }
                let v = Array(b[(i + 4)..<(i + 4 + n)])
                guard let text = valueText(k, v) else { return nil }
                out.append(text.map { "\(name(k))=\($0)" } ?? name(k))
                last = Int(k)
                i += 4 + n
            }
            return out
        }

        /// A value in presentation form (nil inside: a key without a value); nil when malformed.
        static func valueText(_ k: UInt16, _ v: [UInt8]) -> String?? {
            switch k {
            case 0:
                guard v.count % 2 == 0, !v.isEmpty else { return nil }
                return .some(
                    stride(from: 0, to: v.count, by: 2).map { name(UInt16(v[$0]) << 8 | UInt16(v[$0 + 1])) }
                        .joined(separator: ","))
            case 1:
                var items: [String] = []
                var i = 0
                while i < v.count {
                    let n = Int(v[i])
                    guard n > 0, i + 1 + n <= v.count else { return nil }
                    items.append(escaped(Array(v[(i + 1)...(i + n)]), comma: true))
                    i += 1 + n
                }
                guard !items.isEmpty else { return nil }
                return .some(items.joined(separator: ","))
            case 2, 8: return v.isEmpty ? .some(nil) : nil
            case 3: return v.count == 2 ? .some("\(UInt16(v[0]) << 8 | UInt16(v[1]))") : nil
            case 4:
                guard !v.isEmpty, v.count % 4 == 0 else { return nil }
                return .some(
                    stride(from: 0, to: v.count, by: 4).map {
                        IPv4Address(v[$0], v[$0 + 1], v[$0 + 2], v[$0 + 3]).description
                    }
                    .joined(separator: ","))
            case 5: return .some(Data(v).base64EncodedString())
            case 6:
                guard !v.isEmpty, v.count % 16 == 0 else { return nil }
                let addresses = stride(from: 0, to: v.count, by: 16).compactMap {
                    IPv6Address(bytes: Array(v[$0..<($0 + 16)]))
                }
                return .some(addresses.map(\.description).joined(separator: ","))
            default: return .some(escaped(v, comma: false))
            }
        }

        /// Bytes as a value: printable ASCII as is (`"`, `\`, and with `comma` a comma, escaped),
        /// the rest as \DDD; in quotes when it holds a blank.
        static func escaped(_ v: [UInt8], comma: Bool) -> String {
            var s = ""
            for b in v {
                switch b {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"): s += "\\" + String(UnicodeScalar(b))
                case UInt8(ascii: ",") where comma: s += "\\,"
                case 0x21...0x7E: s.append(Character(UnicodeScalar(b)))
                default: s += "\\" + String(format: "%03d", Int(b))
                }
            }
            return s
        }
    }
}
