import DNSWire

/// The fields of a TSIG record (RFC 8945 §4.2).
public struct TSIGRecord: Hashable, Sendable {
    /// The owner: the key's name.
    public var keyName: DNSName
    public var algorithm: DNSName
    /// Seconds since 1970, 48 bits on the wire.
    public var timeSigned: UInt64
    public var fudge: UInt16
    public var mac: [UInt8]
    public var originalID: UInt16
    public var error: TSIGError
    public var otherData: [UInt8]

    public init(
        keyName: DNSName, algorithm: DNSName, timeSigned: UInt64, fudge: UInt16, mac: [UInt8], originalID: UInt16,
        error: TSIGError, otherData: [UInt8]
    ) {
        self.keyName = keyName
        self.algorithm = algorithm
        self.timeSigned = timeSigned
        self.fudge = fudge
        self.mac = mac
        self.originalID = originalID
        self.error = error
        self.otherData = otherData
    }

    /// The TSIG record `rr`; nil when it is not one or its RDATA does not read as one (the
    /// message is then corrupt: FORMERR, §5.2).
    public init?(_ rr: ResourceRecord) {
        guard rr.type == .tsig, rr.rrClass == .any, rr.ttl == 0, case .unknown(let d) = rr.rdata,
            let (algorithm, n) = DNSName.uncompressed(d), d.count >= n + 10
        else { return nil }
        var i = n
        func u16(_ at: Int) -> UInt16 { UInt16(d[at]) << 8 | UInt16(d[at + 1]) }
        let time = (0..<6).reduce(UInt64(0)) { $0 << 8 | UInt64(d[i + $1]) }
        let fudge = u16(i + 6)
        let macSize = Int(u16(i + 8))
        i += 10
        guard d.count >= i + macSize + 6 else { return nil }
        let mac = Array(d[i..<(i + macSize)])
        i += macSize
        let otherLength = Int(u16(i + 4))
        guard d.count == i + 6 + otherLength else { return nil }
        self.init(
            keyName: rr.name, algorithm: algorithm, timeSigned: time, fudge: fudge, mac: mac, originalID: u16(i),
            error: TSIGError(rawValue: u16(i + 2)), otherData: Array(d[(i + 6)...]))
    }

    /// The record's RDATA.
    public var rdata: [UInt8] {
        var d = algorithm.lowercased().wire
        d += Self.time48(timeSigned)
        d += [UInt8(fudge >> 8), UInt8(fudge & 0xFF), UInt8(mac.count >> 8), UInt8(mac.count & 0xFF)]
        d += mac
        d += [
            UInt8(originalID >> 8), UInt8(originalID & 0xFF), UInt8(error.rawValue >> 8), UInt8(error.rawValue & 0xFF),
        ]
        d += [UInt8(otherData.count >> 8), UInt8(otherData.count & 0xFF)] + otherData
        return d
    }

    /// The whole record as it goes last in a message: owner uncompressed, class ANY, TTL 0.
    public var wire: [UInt8] {
        let d = rdata
        return keyName.lowercased().wire + [0, 250, 0, 255, 0, 0, 0, 0, UInt8(d.count >> 8), UInt8(d.count & 0xFF)] + d
    }

    /// The TSIG variables a MAC covers (§4.3.3): the names in canonical form, the class and TTL,
    /// the times, the error and the other data.
    func variables() -> [UInt8] {
        var v = keyName.lowercased().wire + [0, 255, 0, 0, 0, 0] + algorithm.lowercased().wire
        v += Self.time48(timeSigned) + [UInt8(fudge >> 8), UInt8(fudge & 0xFF)]
        v += [UInt8(error.rawValue >> 8), UInt8(error.rawValue & 0xFF)]
        v += [UInt8(otherData.count >> 8), UInt8(otherData.count & 0xFF)] + otherData
        return v
    }

    /// The timers a later message of a stream covers instead of all the variables (§5.3.1).
    var timers: [UInt8] { Self.time48(timeSigned) + [UInt8(fudge >> 8), UInt8(fudge & 0xFF)] }

    /// `message` with this record appended last and ARCOUNT one more.
    func appended(to message: [UInt8]) -> [UInt8] {
        var out = message
        let arCount = (UInt16(out[10]) << 8 | UInt16(out[11])) &+ 1
        out[10] = UInt8(arCount >> 8)
        out[11] = UInt8(arCount & 0xFF)
        return out + wire
    }

    /// `message` with its ID replaced by `id` (a MAC covers the original ID).
    static func withID(_ message: [UInt8], _ id: UInt16) -> [UInt8] {
        var out = message
        out[0] = UInt8(id >> 8)
        out[1] = UInt8(id & 0xFF)
        return out
    }

    /// A MAC as a digest covers it: its length, then its octets.
    static func lengthPrefixed(_ mac: [UInt8]) -> [UInt8] { [UInt8(mac.count >> 8), UInt8(mac.count & 0xFF)] + mac }

    static func time48(_ t: UInt64) -> [UInt8] { (0..<6).map { UInt8(truncatingIfNeeded: t >> (40 - 8 * UInt64($0))) } }
}

/// The TSIG record's Error field (RFC 8945 §3, the DNS RCODE registry).
public struct TSIGError: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    /// No error: the signature verified.
    public static let verified = TSIGError(rawValue: 0)
    /// The MAC does not verify.
    public static let badSig = TSIGError(rawValue: 16)
    /// The key, or its algorithm, is not known.
    public static let badKey = TSIGError(rawValue: 17)
    /// Time Signed is outside the fudge of the server's clock.
    public static let badTime = TSIGError(rawValue: 18)
    /// The MAC is shorter than local policy allows.
    public static let badTrunc = TSIGError(rawValue: 22)

    public var description: String {
        switch self {
        case .verified: "NOERROR"
        case .badSig: "BADSIG"
        case .badKey: "BADKEY"
        case .badTime: "BADTIME"
        case .badTrunc: "BADTRUNC"
        default: "TSIG error \(rawValue)"
        }
    }
}
