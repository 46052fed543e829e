/// A resource record TYPE (RFC 1035 §3.2.2). Unknown values are kept as they are (RFC 3597).
public struct RRType: RawRepresentable, Hashable, Sendable, Comparable, CustomStringConvertible {
    public var rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }
    public init(_ v: UInt16) { self.rawValue = v }

    public static let a = RRType(1)
    public static let ns = RRType(2)
    public static let cname = RRType(5)
    public static let soa = RRType(6)
    public static let ptr = RRType(12)
    public static let hinfo = RRType(13)
    public static let mx = RRType(15)
    public static let txt = RRType(16)
    public static let aaaa = RRType(28)
    public static let srv = RRType(33)
    public static let dname = RRType(39)
    public static let opt = RRType(41)
    public static let ds = RRType(43)
    public static let rrsig = RRType(46)
    public static let nsec = RRType(47)
    public static let dnskey = RRType(48)
    public static let nsec3 = RRType(50)
    public static let nsec3param = RRType(51)
    public static let svcb = RRType(64)
    public static let https = RRType(65)
    public static let tsig = RRType(250)
    public static let ixfr = RRType(251)
    public static let axfr = RRType(252)
    public static let mailb = RRType(253)
    public static let maila = RRType(254)
    public static let any = RRType(255)
    public static let caa = RRType(257)

    static let mnemonics: [(String, RRType)] = [
        ("A", .a), ("NS", .ns), ("CNAME", .cname), ("SOA", .soa), ("PTR", .ptr), ("HINFO", .hinfo), ("MX", .mx),
        ("TXT", .txt), ("RP", RRType(17)), ("AFSDB", RRType(18)), ("AAAA", .aaaa), ("LOC", RRType(29)), ("SRV", .srv),
        ("NAPTR", RRType(35)), ("CERT", RRType(37)), ("DNAME", .dname), ("OPT", .opt), ("DS", .ds),
        ("SSHFP", RRType(44)),
        ("RRSIG", .rrsig), ("NSEC", .nsec), ("DNSKEY", .dnskey), ("NSEC3", .nsec3),
        ("NSEC3PARAM", .nsec3param), ("TLSA", RRType(52)), ("SMIMEA", RRType(53)),
        ("CDS", RRType(59)), ("CDNSKEY", RRType(60)), ("OPENPGPKEY", RRType(61)), ("CSYNC", RRType(62)),
        ("ZONEMD", RRType(63)), ("SVCB", .svcb), ("HTTPS", .https),
        ("SPF", RRType(99)), ("TSIG", .tsig), ("IXFR", .ixfr), ("AXFR", .axfr), ("MAILB", .mailb), ("MAILA", .maila),
        ("ANY", .any),
        ("URI", RRType(256)), ("CAA", .caa),
    ]

    /// `mnemonics` by name and by type, for zone files of millions of records.
    static let byMnemonic = [String: RRType](uniqueKeysWithValues: mnemonics)
    static let names = [RRType: String](mnemonics.map { ($0.1, $0.0) }, uniquingKeysWith: { first, _ in first })

    /// Parses a mnemonic (`AAAA`) or the RFC 3597 form (`TYPE65280`), case-insensitively.
    public init?(mnemonic: String) {
        if let hit = RRType.byMnemonic[mnemonic] ?? RRType.byMnemonic[mnemonic.uppercased()] {
            self = hit
            return
        }
        let up = mnemonic.uppercased()
        if up.hasPrefix("TYPE"), let v = UInt16(up.dropFirst(4)) {
            self.init(v)
            return
        }
        return nil
    }

    /// `init(mnemonic:)` from a token's bytes: a zone file names a type in each of its millions
    /// of records, and a mnemonic of up to 7 letters is found by an integer of them, no String made.
    public init?(mnemonic bytes: ArraySlice<UInt8>) {
        if let key = Mnemonic.key(bytes), let hit = RRType.byKey[key] {
            self = hit
            return
        }
        self.init(mnemonic: String(decoding: bytes, as: UTF8.self))
    }

    static let byKey = [UInt64: RRType](
        uniqueKeysWithValues: mnemonics.compactMap { m, t in Mnemonic.key(Array(m.utf8)[...]).map { ($0, t) } })

    /// True for meta and query types (RFC 6895 §3.1): 128–255 and OPT; they never appear as data.
    public var isMetaType: Bool { (rawValue >= 128 && rawValue <= 255) || self == .opt }

    public var description: String {
        RRType.names[self] ?? "TYPE\(rawValue)"
    }

    public static func < (lhs: RRType, rhs: RRType) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// A resource record CLASS. Only IN carries data in nearcast.
public struct RRClass: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }
    public init(_ v: UInt16) { self.rawValue = v }
    public static let `in` = RRClass(1)
    public static let ch = RRClass(3)
    public static let hs = RRClass(4)
    public static let none = RRClass(254)
    public static let any = RRClass(255)

    /// Parses `IN`, `CH`, `HS`, `ANY` or `CLASS123`, case-insensitively.
    public init?(mnemonic: String) {
        switch mnemonic.uppercased() {
        case "IN": self = .in
        case "CH": self = .ch
        case "HS": self = .hs
        case "ANY": self = .any
        case let up where up.hasPrefix("CLASS"):
            guard let v = UInt16(up.dropFirst(5)) else { return nil }
            self.init(v)
        default: return nil
        }
    }

    /// `init(mnemonic:)` from a token's bytes. The token after an owner is most often a type
    /// (A, MX), which is told from a class without a String made of it.
    public init?(mnemonic bytes: ArraySlice<UInt8>) {
        switch Mnemonic.key(bytes) {
        case Self.keyIN: self = .in
        case Self.keyCH: self = .ch
        case Self.keyHS: self = .hs
        case Self.keyANY: self = .any
        default:
            guard bytes.count > 5 else { return nil }  // CLASSnnn
            self.init(mnemonic: String(decoding: bytes, as: UTF8.self))
        }
    }

    private static let (keyIN, keyCH, keyHS, keyANY) = (
        Mnemonic.key(Array("IN".utf8)[...]), Mnemonic.key(Array("CH".utf8)[...]), Mnemonic.key(Array("HS".utf8)[...]),
        Mnemonic.key(Array("ANY".utf8)[...])
    )

    public var description: String {
        switch self {
        case .in: return "IN"
        case .ch: return "CH"
        case .hs: return "HS"
        case .any: return "ANY"
        default: return "CLASS\(rawValue)"
        }
    }
}

/// A response code, including the extended codes carried in OPT (RFC 6891 §6.1.3).
public struct RCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }
    public init(_ v: UInt16) { self.rawValue = v }
    public static let noError = RCode(0)
    public static let formErr = RCode(1)
    public static let servFail = RCode(2)
    public static let nxDomain = RCode(3)
    public static let notImp = RCode(4)
    public static let refused = RCode(5)
    /// A name that should not exist does: a DNAME substitution too long for a name (RFC 6672 §2.2).
    public static let yxDomain = RCode(6)
    /// RFC 2136 §2.2: a name that should exist does not hold the RRset asked for, or one that
    /// should not does; an update's name outside the zone of its zone section.
    public static let yxRRSet = RCode(7)
    public static let nxRRSet = RCode(8)
    public static let notAuth = RCode(9)
    public static let notZone = RCode(10)
    public static let badVers = RCode(16)
    /// A server cookie that is not valid (RFC 7873 §8).
    public static let badCookie = RCode(23)

    public var description: String {
        switch rawValue {
        case 0: return "NOERROR"
        case 1: return "FORMERR"
        case 2: return "SERVFAIL"
        case 3: return "NXDOMAIN"
        case 4: return "NOTIMP"
        case 5: return "REFUSED"
        case 6: return "YXDOMAIN"
        case 7: return "YXRRSET"
        case 8: return "NXRRSET"
        case 9: return "NOTAUTH"
        case 10: return "NOTZONE"
        case 16: return "BADVERS"
        case 23: return "BADCOOKIE"
        default: return "RCODE\(rawValue)"
        }
    }
}

/// The OPCODE of a message header (4 bits).
public struct Opcode: RawRepresentable, Hashable, Sendable {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue & 0x0F }
    public static let query = Opcode(rawValue: 0)
    public static let notify = Opcode(rawValue: 4)
    /// A dynamic update (RFC 2136).
    public static let update = Opcode(rawValue: 5)
}

/// Type and class mnemonics read from bytes.
enum Mnemonic {
    /// The mnemonic in `bytes` as an integer, its letters in upper case and its length in the top
    /// octet; nil when it is longer than 7 octets.
    static func key(_ bytes: ArraySlice<UInt8>) -> UInt64? {
        guard bytes.count <= 7 else { return nil }
        var k = UInt64(bytes.count) << 56
        var shift: UInt64 = 0
        for c in bytes {
            k |= UInt64(c >= UInt8(ascii: "a") && c <= UInt8(ascii: "z") ? c - 0x20 : c) << shift
            shift += 8
        }
        return k
    }
}
