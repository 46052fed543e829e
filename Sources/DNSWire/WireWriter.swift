/// Builds a DNS message with name compression (RFC 1035 §4.1.4).
///
/// Compression matches suffixes case-insensitively, so an answer's owner points at the question
/// and is echoed in the client's case, as other authoritative servers do.
public struct WireWriter {
    public private(set) var bytes: [UInt8] = []
    private var offsets: [DNSName: UInt16] = [:]

    public init(capacity: Int = 512) { bytes.reserveCapacity(capacity) }

    public var count: Int { bytes.count }

    public mutating func u8(_ v: UInt8) { bytes.append(v) }
    public mutating func u16(_ v: UInt16) {
        bytes.append(UInt8(v >> 8))
        bytes.append(UInt8(v & 0xFF))
    }
    public mutating func u32(_ v: UInt32) {
        bytes.append(UInt8(v >> 24))
        bytes.append(UInt8((v >> 16) & 0xFF))
        bytes.append(UInt8((v >> 8) & 0xFF))
        bytes.append(UInt8(v & 0xFF))
    }
    public mutating func append(_ b: [UInt8]) { bytes.append(contentsOf: b) }

    /// Overwrites a 16-bit field written earlier (e.g. RDLENGTH, counts).
    public mutating func patch16(at offset: Int, _ v: UInt16) {
        bytes[offset] = UInt8(v >> 8)
        bytes[offset + 1] = UInt8(v & 0xFF)
    }

    /// Writes a name; with `compress`, reuses any suffix written before and remembers new ones.
    public mutating func name(_ name: DNSName, compress: Bool) {
        let wire = name.wire
        var i = 0
        while wire[i] != 0 {
            let suffix = i == 0 ? name : DNSName(uncheckedWire: Array(wire[i...]))
            if compress, let ptr = offsets[suffix] {
                u16(0xC000 | ptr)
                return
            }
            if bytes.count < 0x4000 && offsets[suffix] == nil { offsets[suffix] = UInt16(bytes.count) }
            let n = Int(wire[i])
            bytes.append(contentsOf: wire[i...(i + n)])
            i += n + 1
        }
        bytes.append(0)
    }
}
