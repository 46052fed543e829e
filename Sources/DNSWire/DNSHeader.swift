/// The fixed 12-byte message header (RFC 1035 §4.1.1). Section counts are derived when writing.
public struct DNSHeader: Hashable, Sendable {
    public var id: UInt16 = 0
    public var qr = false
    public var opcode: Opcode = .query
    public var aa = false
    public var tc = false
    public var rd = false
    public var ra = false
    /// The reserved Z bit (must be zero in queries; echoed as zero).
    public var z = false
    public var ad = false
    public var cd = false
    /// The low four bits of the response code.
    public var rcodeLow: UInt8 = 0

    public init() {}

    /// The flags word (second 16 bits of the header).
    public var flags: UInt16 {
        get {
            var f: UInt16 = 0
            if qr { f |= 0x8000 }
            f |= UInt16(opcode.rawValue) << 11
            if aa { f |= 0x0400 }
            if tc { f |= 0x0200 }
            if rd { f |= 0x0100 }
            if ra { f |= 0x0080 }
            if z { f |= 0x0040 }
            if ad { f |= 0x0020 }
            if cd { f |= 0x0010 }
            f |= UInt16(rcodeLow & 0x0F)
            return f
        }
        set {
            qr = newValue & 0x8000 != 0
            opcode = Opcode(rawValue: UInt8((newValue >> 11) & 0x0F))
            aa = newValue & 0x0400 != 0
            tc = newValue & 0x0200 != 0
            rd = newValue & 0x0100 != 0
            ra = newValue & 0x0080 != 0
            z = newValue & 0x0040 != 0
            ad = newValue & 0x0020 != 0
            cd = newValue & 0x0010 != 0
            rcodeLow = UInt8(newValue & 0x000F)
        }
    }

    /// Reads just the header from the first 12 bytes; used to answer FORMERR when the rest is malformed.
    public init(wire: some Collection<UInt8>) throws(DNSWireError) {
        guard wire.count >= 12 else { throw .truncated(offset: 0, needed: 12) }
        var it = wire.makeIterator()
        let b0 = it.next()!
        let b1 = it.next()!
        let b2 = it.next()!
        let b3 = it.next()!
        id = UInt16(b0) << 8 | UInt16(b1)
        flags = UInt16(b2) << 8 | UInt16(b3)
    }
}
