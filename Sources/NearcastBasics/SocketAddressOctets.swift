#if canImport(Glibc)
import Glibc
#endif

/// An address as 4 or 16 octets and a port, as the C socket calls take it: for the few places that
/// speak to a peer through a socket of their own (NOTIFY out, a transfer in), not through NIO.
public enum SocketAddressOctets {
    /// Calls `body` with the sockaddr of `address` (4 octets: IPv4, 16: IPv6) and `port`, and its
    /// length.
    public static func withSockaddr<T>(
        _ address: [UInt8], port: UInt16, _ body: (UnsafePointer<sockaddr>, socklen_t) -> T
    ) -> T {
        if address.count == 4 {
            var a = sockaddr_in()
            a.sin_family = sa_family_t(AF_INET)
            a.sin_port = port.bigEndian
            withUnsafeMutableBytes(of: &a.sin_addr) { $0.copyBytes(from: address) }
            return withUnsafePointer(to: &a) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    body($0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
        var a = sockaddr_in6()
        a.sin6_family = sa_family_t(AF_INET6)
        a.sin6_port = port.bigEndian
        withUnsafeMutableBytes(of: &a.sin6_addr) { $0.copyBytes(from: address) }
        return withUnsafePointer(to: &a) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                body($0, socklen_t(MemoryLayout<sockaddr_in6>.size))
            }
        }
    }
}
