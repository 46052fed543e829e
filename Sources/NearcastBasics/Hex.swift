/// Bytes written as hexadecimal, two digits each: digests in the audit log and the store's token
/// keys, RDATA in zone text (unknown types' in lowercase, RFC 3597; DS digests and the like in
/// uppercase, as zone files write them). Written from a table rather than with
/// `String(format:)`, which parses its format for every byte (about a tenth of a record change's
/// time went to the audit entry's digest so).
public enum Hex {
    public static func lowercase(_ bytes: some Sequence<UInt8>) -> String { write(bytes, lower) }
    public static func uppercase(_ bytes: some Sequence<UInt8>) -> String { write(bytes, upper) }

    private static func write(_ bytes: some Sequence<UInt8>, _ digits: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.underestimatedCount * 2)
        for b in bytes {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 0xF)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    private static let lower = Array("0123456789abcdef".utf8)
    private static let upper = Array("0123456789ABCDEF".utf8)
}
