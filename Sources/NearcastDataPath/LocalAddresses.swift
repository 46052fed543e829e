import CNearcastABI
import Foundation
import NearcastBasics
import NearcastConfiguration

#if canImport(Glibc)
import Glibc
#endif

/// An address of this host a query may be sent to: 4 octets (IPv4) or 16 (IPv6), as on the wire.
public struct LocalAddress: Hashable, Sendable, CustomStringConvertible {
    public let octets: [UInt8]

    public init?(octets: [UInt8]) {
        guard octets.count == 4 || octets.count == 16 else { return nil }
        self.octets = octets
    }

    /// An address in text (`192.0.2.1`, `2001:db8::1`); nil for anything else.
    public init?(_ text: String) {
        guard let octets = AddressPrefix.address(text) else { return nil }
        self.octets = octets
    }

    public var isIPv6: Bool { octets.count == 16 }

    /// The program's key of this address (nc_local).
    var key: nc_local_key {
        var k = nc_local_key()
        k.family = isIPv6 ? 6 : 4
        withUnsafeMutableBytes(of: &k.addr) { for (i, b) in octets.enumerated() { $0[i] = b } }
        return k
    }

    init?(key: nc_local_key) {
        let count = key.family == 6 ? 16 : key.family == 4 ? 4 : 0
        self.init(octets: withUnsafeBytes(of: key.addr) { Array($0.prefix(count)) })
    }

    public var description: String { AddressPrefix.text(octets) }
}

/// The addresses XDP answers queries to (bpf/README.md, "Whose query it is"): those the daemon
/// listens on at the program's port, and for a wildcard listen (`0.0.0.0`, `::`) every address of
/// that family the host has, followed as they come and go (`HostAddressWatch`). A query to any
/// other address is another server's, or one the host forwards: the program passes it untouched.
public struct AnsweredAddresses: Sendable, Equatable {
    /// Addresses listened on one by one.
    public var listed: Set<LocalAddress>
    /// A wildcard listen of each family: all of the host's addresses of it.
    public var everyIPv4: Bool
    public var everyIPv6: Bool

    public init(listed: Set<LocalAddress> = [], everyIPv4: Bool = false, everyIPv6: Bool = false) {
        self.listed = listed
        self.everyIPv4 = everyIPv4
        self.everyIPv6 = everyIPv6
    }

    /// Whether the set follows the host's addresses.
    public var followsHost: Bool { everyIPv4 || everyIPv6 }

    /// The addresses answered, where the host has `host`.
    public func resolved(host: Set<LocalAddress>) -> Set<LocalAddress> {
        listed.union(host.filter { $0.isIPv6 ? everyIPv6 : everyIPv4 })
    }
}

/// The addresses of this host (of its network namespace), as getifaddrs(3) lists them.
public enum HostAddresses {
    /// Every interface's, or those of the interfaces named `interfaces`.
    public static func current(on interfaces: Set<String>? = nil) -> Set<LocalAddress> {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0 else { return [] }
        defer { freeifaddrs(list) }
        var out: Set<LocalAddress> = []
        var next = list
        while let entry = next {
            defer { next = entry.pointee.ifa_next }
            guard let sa = entry.pointee.ifa_addr,
                interfaces.map({ $0.contains(String(cString: entry.pointee.ifa_name)) }) ?? true
            else { continue }
            switch Int32(sa.pointee.sa_family) {
            case AF_INET:
                let a = sa.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr }
                if let address = LocalAddress(octets: withUnsafeBytes(of: a) { Array($0) }) { out.insert(address) }
            case AF_INET6:
                let a = sa.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee.sin6_addr }
                if let address = LocalAddress(octets: withUnsafeBytes(of: a) { Array($0) }) { out.insert(address) }
            default: continue
            }
        }
        return out
    }
}
