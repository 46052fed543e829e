/// EDNS(0) as carried by the OPT pseudo-record (RFC 6891).
public struct EDNS: Hashable, Sendable {
    /// The requestor's (or our) UDP payload size.
    public var udpPayloadSize: UInt16
    /// The upper eight bits of the 12-bit response code.
    public var extendedRCode: UInt8
    public var version: UInt8
    /// The DO bit (RFC 3225).
    public var dnssecOK: Bool
    /// The other 15 flag bits, as received (must be zero; echoed as zero).
    public var otherFlags: UInt16
    public var options: [EDNSOption]

    public init(
        udpPayloadSize: UInt16 = 1232, extendedRCode: UInt8 = 0, version: UInt8 = 0, dnssecOK: Bool = false,
        otherFlags: UInt16 = 0, options: [EDNSOption] = []
    ) {
        self.udpPayloadSize = udpPayloadSize
        self.extendedRCode = extendedRCode
        self.version = version
        self.dnssecOK = dnssecOK
        self.otherFlags = otherFlags
        self.options = options
    }

    /// The first ECS option, if any (unvalidated bytes).
    public var clientSubnetOption: EDNSOption? { options.first { $0.code == EDNSOption.clientSubnetCode } }
}

/// One EDNS option: code and raw data.
public struct EDNSOption: Hashable, Sendable {
    /// Name server identifier (RFC 5001).
    public static let nsidCode: UInt16 = 3
    public static let clientSubnetCode: UInt16 = 8
    public static let cookieCode: UInt16 = 10
    public static let extendedErrorCode: UInt16 = 15

    /// An Extended DNS Error option (RFC 8914) with an INFO-CODE and, optionally, EXTRA-TEXT.
    public static func extendedError(_ infoCode: ExtendedErrorCode, text: String = "") -> EDNSOption {
        EDNSOption(
            code: extendedErrorCode,
            data: [UInt8(infoCode.rawValue >> 8), UInt8(infoCode.rawValue & 0xFF)] + Array(text.utf8))
    }
    public var code: UInt16
    public var data: [UInt8]
    public init(code: UInt16, data: [UInt8]) {
        self.code = code
        self.data = data
    }
}

/// The EDNS Client Subnet option (RFC 7871 §6).
public struct ClientSubnet: Hashable, Sendable, CustomStringConvertible {
    /// Address family: 1 = IPv4, 2 = IPv6.
    public var family: UInt16
    public var sourcePrefixLength: UInt8
    public var scopePrefixLength: UInt8
    /// The address truncated to `sourcePrefixLength` bits (ceil(source/8) bytes).
    public var address: [UInt8]

    public init(family: UInt16, sourcePrefixLength: UInt8, scopePrefixLength: UInt8, address: [UInt8]) {
        self.family = family
        self.sourcePrefixLength = sourcePrefixLength
        self.scopePrefixLength = scopePrefixLength
        self.address = address
    }

    /// Why an ECS option is invalid; a server answers FORMERR (RFC 7871 §7.1.1).
    public enum Invalid: Error, Equatable, Sendable {
        case tooShort
        case unknownFamily(UInt16)
        case prefixTooLong, addressLengthMismatch, bitsBeyondPrefix,
            nonZeroScope
    }

    /// Validates and decodes an option's data as a query's ECS option.
    public init(queryOption data: [UInt8]) throws(Invalid) {
        guard data.count >= 4 else { throw .tooShort }
        family = UInt16(data[0]) << 8 | UInt16(data[1])
        sourcePrefixLength = data[2]
        scopePrefixLength = data[3]
        address = Array(data[4...])
        let maxBits: Int
        switch family {
        case 1: maxBits = 32
        case 2: maxBits = 128
        default: throw .unknownFamily(family)
        }
        guard Int(sourcePrefixLength) <= maxBits else { throw .prefixTooLong }
        guard scopePrefixLength == 0 else { throw .nonZeroScope }
        guard address.count == (Int(sourcePrefixLength) + 7) / 8 else { throw .addressLengthMismatch }
        let rem = Int(sourcePrefixLength) % 8
        if rem != 0, let last = address.last, last & (0xFF >> rem) != 0 { throw .bitsBeyondPrefix }
    }

    /// The option data (family, source, scope, address).
    public var optionData: [UInt8] {
        [UInt8(family >> 8), UInt8(family & 0xFF), sourcePrefixLength, scopePrefixLength] + address
    }

    public var option: EDNSOption { EDNSOption(code: EDNSOption.clientSubnetCode, data: optionData) }

    public var description: String {
        let full =
            family == 1
            ? address + Array(repeating: 0, count: 4 - address.count)
            : address + Array(repeating: 0, count: 16 - address.count)
        let text =
            family == 1
            ? IPv4Address(full[0], full[1], full[2], full[3]).description
            : (IPv6Address(bytes: full)?.description ?? "?")
        return "\(text)/\(sourcePrefixLength)/\(scopePrefixLength)"
    }
}

/// Extended DNS Error INFO-CODEs (RFC 8914 §4) that nearcast sends.
public enum ExtendedErrorCode: UInt16, Sendable {
    /// None of the others; the extra text says what.
    case other = 0
    /// The server cannot answer for the zone now: a secondary zone not yet transferred, or
    /// expired without a refresh.
    case notReady = 14
    /// The request is refused by policy (a zone transfer to a client its rules do not allow).
    case prohibited = 18
    /// The name is not in any zone we serve.
    case notAuthoritative = 20
    /// The query asks for something we do not do (another class, zone transfers).
    case notSupported = 21
}
