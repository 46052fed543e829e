/// SipHash-2-4 (Aumasson and Bernstein, "SipHash: a fast short-input PRF", 2012): a keyed 64-bit
/// hash of a short message, as DNS server cookies use it (RFC 9018 §4.4). The XDP program computes
/// the same (bpf/include/cookie.h); both are checked against the paper's test vectors.
public enum SipHash24 {
    /// The hash of `message` under the 16-byte `key`.
    public static func hash(_ message: [UInt8], key: [UInt8]) -> UInt64 {
        precondition(key.count == 16, "a SipHash key is 16 bytes")
        let k0 = word(key, 0)
        let k1 = word(key, 8)
        var v0: UInt64 = 0x736f_6d65_7073_6575 ^ k0
        var v1: UInt64 = 0x646f_7261_6e64_6f6d ^ k1
        var v2: UInt64 = 0x6c79_6765_6e65_7261 ^ k0
        var v3: UInt64 = 0x7465_6462_7974_6573 ^ k1
        func round() {
            v0 = v0 &+ v1
            v1 = rotl(v1, 13)
            v1 ^= v0
            v0 = rotl(v0, 32)
            v2 = v2 &+ v3
            v3 = rotl(v3, 16)
            v3 ^= v2
            v0 = v0 &+ v3
            v3 = rotl(v3, 21)
            v3 ^= v0
            v2 = v2 &+ v1
            v1 = rotl(v1, 17)
            v1 ^= v2
            v2 = rotl(v2, 32)
        }
        func compress(_ m: UInt64) {
            v3 ^= m
            round()
            round()
            v0 ^= m
        }
        let whole = message.count / 8 * 8
        for at in stride(from: 0, to: whole, by: 8) { compress(word(message, at)) }
        var last = UInt64(truncatingIfNeeded: message.count) << 56
        for (i, b) in message[whole...].enumerated() { last |= UInt64(b) << (8 * UInt64(i)) }
        compress(last)
        v2 ^= 0xFF
        for _ in 0..<4 { round() }
        return v0 ^ v1 ^ v2 ^ v3
    }

    @inline(__always) static func rotl(_ x: UInt64, _ b: UInt64) -> UInt64 { (x << b) | (x >> (64 - b)) }

    /// The little-endian word at `at`.
    @inline(__always) static func word(_ bytes: [UInt8], _ at: Int) -> UInt64 {
        var w: UInt64 = 0
        for i in 0..<8 { w |= UInt64(bytes[at + i]) << (8 * UInt64(i)) }
        return w
    }
}
