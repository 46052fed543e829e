/// A bounds-checked cursor over a DNS message. Every read either succeeds or throws; nothing reads out of bounds.
struct WireReader {
    let bytes: [UInt8]
    var offset: Int = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var remaining: Int { bytes.count - offset }

    mutating func need(_ n: Int) throws(DNSWireError) {
        if n > bytes.count - offset { throw .truncated(offset: offset, needed: n) }
    }

    mutating func u8() throws(DNSWireError) -> UInt8 {
        try need(1)
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func u16() throws(DNSWireError) -> UInt16 {
        try need(2)
        defer { offset += 2 }
        return UInt16(bytes[offset]) << 8 | UInt16(bytes[offset + 1])
    }

    /// The next two bytes as a number, not read; nil when fewer are left.
    func peekU16() -> UInt16? {
        remaining >= 2 ? UInt16(bytes[offset]) << 8 | UInt16(bytes[offset + 1]) : nil
    }

    /// An RDATA of no bytes (its length, 0, read): RFC 2136's RRsets and names of class ANY or
    /// NONE, which hold no record.
    mutating func emptyRData() throws(DNSWireError) -> RData {
        guard try u16() == 0 else { throw .badRData(type: 0, offset: offset - 2, reason: "not empty") }
        return .unknown([])
    }

    mutating func u32() throws(DNSWireError) -> UInt32 {
        try need(4)
        defer { offset += 4 }
        return UInt32(bytes[offset]) << 24 | UInt32(bytes[offset + 1]) << 16 | UInt32(bytes[offset + 2]) << 8
            | UInt32(bytes[offset + 3])
    }

    mutating func take(_ n: Int) throws(DNSWireError) -> [UInt8] {
        try need(n)
        defer { offset += n }
        return Array(bytes[offset..<(offset + n)])
    }

    /// Reads a possibly compressed name. Pointers must point strictly backwards (before the
    /// label that holds them), which rules out loops; the expanded name must fit in 255 octets.
    mutating func name() throws(DNSWireError) -> DNSName {
        var out: [UInt8] = []
        out.reserveCapacity(32)
        var pos = offset
        var jumped = false
        var limit = offset  // a pointer must point before the start of the label sequence it ends
        let start = offset
        while true {
            guard pos < bytes.count else { throw .truncated(offset: pos, needed: 1) }
            let len = bytes[pos]
            switch len & 0xC0 {
            case 0x00:
                if len == 0 {
                    out.append(0)
                    if !jumped { offset = pos + 1 }
                    if out.count > 255 { throw .nameTooLong(offset: start) }
                    return DNSName(uncheckedWire: out)
                }
                let n = Int(len)
                guard pos + 1 + n <= bytes.count else { throw .truncated(offset: pos + 1, needed: n) }
                out.append(len)
                out.append(contentsOf: bytes[(pos + 1)...(pos + n)])
                if out.count > 255 { throw .nameTooLong(offset: start) }
                pos += 1 + n
            case 0xC0:
                guard pos + 1 < bytes.count else { throw .truncated(offset: pos, needed: 2) }
                let target = Int(len & 0x3F) << 8 | Int(bytes[pos + 1])
                guard target < limit else { throw .badPointer(offset: pos) }
                if !jumped { offset = pos + 2 }
                jumped = true
                limit = target
                pos = target
            default:
                throw .badLabelType(offset: pos)
            }
        }
    }
}
