import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// An IPv4 or IPv6 prefix, `ADDRESS/LENGTH` (an address alone: the whole address): the rate
/// limiter's exempt prefixes, the networks an agent token may register addresses in, the
/// secondaries a zone may be transferred to.
public struct AddressPrefix: Hashable, Sendable, CustomStringConvertible {
    /// 4 or 16 octets.
    public var address: [UInt8]
    public var length: Int

    public init(address: [UInt8], length: Int) {
        self.address = address
        self.length = length
    }

    public init?(_ text: String) {
        let parts = text.split(separator: "/", maxSplits: 1).map(String.init)
        guard let first = parts.first, let a = Self.address(first) else { return nil }
        let length = parts.count == 2 ? Int(parts[1]) : a.count * 8
        guard let length, (0...(a.count * 8)).contains(length) else { return nil }
        self.init(address: a, length: length)
    }

    /// Whether `octets` (an address of the same family) lies within the prefix.
    public func contains(_ octets: [UInt8]) -> Bool {
        guard octets.count == address.count else { return false }
        for bit in 0..<length where (octets[bit / 8] ^ address[bit / 8]) & (0x80 >> UInt8(bit % 8)) != 0 {
            return false
        }
        return true
    }

    public var description: String { "\(Self.text(address))/\(length)" }

    /// An address in text (`192.0.2.1`, `2001:db8::1`) as its 4 or 16 octets; nil for anything else.
    public static func address(_ text: String) -> [UInt8]? {
        let v6 = text.contains(":")
        var a = [UInt8](repeating: 0, count: v6 ? 16 : 4)
        guard a.withUnsafeMutableBytes({ inet_pton(v6 ? AF_INET6 : AF_INET, text, $0.baseAddress) }) == 1 else {
            return nil
        }
        return a
    }

    /// An address's 4 or 16 octets in text.
    public static func text(_ octets: [UInt8]) -> String {
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        octets.withUnsafeBytes {
            _ = inet_ntop(octets.count == 16 ? AF_INET6 : AF_INET, $0.baseAddress, &text, socklen_t(text.count))
        }
        return String(cString: text)
    }
}
