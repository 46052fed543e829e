import DNSWire
import NearcastBasics
import NearcastTSIG

/// A server a zone is transferred with: a secondary told of the zone's changes by NOTIFY (RFC
/// 1996), or a primary the zone is transferred from. An address, a port (53 unless given) and
/// the TSIG key the messages are signed with, if any.
///
/// In the config, each is one string of a zone's `notify` or `primaries`: `192.0.2.53`,
/// `192.0.2.53:5353`, `[2001:db8::53]:53`, each optionally followed by `key NAME`.
public struct TransferPeer: Hashable, Sendable, CustomStringConvertible {
    /// 4 or 16 octets.
    public var address: [UInt8]
    public var port: UInt16
    public var key: DNSName?

    public init(address: [UInt8], port: UInt16 = 53, key: DNSName? = nil) {
        self.address = address
        self.port = port
        self.key = key
    }

    /// The target in `text`, or why it is not one.
    public static func parse(_ text: String) -> Result<TransferPeer, TransferRule.RuleError> {
        let words = text.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
        guard let first = words.first else { return .failure(.init(message: "a target names an address")) }
        var host = first
        var port: UInt16 = 53
        if first.hasPrefix("[") {
            guard let close = first.firstIndex(of: "]") else {
                return .failure(.init(message: "'\(first)' is not ADDRESS, ADDRESS:PORT or [IPv6]:PORT"))
            }
            host = String(first[first.index(after: first.startIndex)..<close])
            let rest = first[first.index(after: close)...]
            if !rest.isEmpty {
                guard rest.hasPrefix(":"), let p = UInt16(rest.dropFirst()), p > 0 else {
                    return .failure(.init(message: "'\(first)': the port is not a number from 1 to 65535"))
                }
                port = p
            }
        } else if first.filter({ $0 == ":" }).count == 1, let colon = first.firstIndex(of: ":") {
            host = String(first[..<colon])
            guard let p = UInt16(first[first.index(after: colon)...]), p > 0 else {
                return .failure(.init(message: "'\(first)': the port is not a number from 1 to 65535"))
            }
            port = p
        }
        guard let address = AddressPrefix.address(host) else {
            return .failure(.init(message: "'\(host)' is not an IPv4 or IPv6 address"))
        }
        var key: DNSName?
        if words.count > 1 {
            guard words.count == 3, words[1] == "key",
                let k = try? DNSName(words[2].hasSuffix(".") ? words[2] : words[2] + ".")
            else { return .failure(.init(message: "expected ADDRESS[:PORT] or 'ADDRESS[:PORT] key NAME'")) }
            key = k
        }
        return .success(TransferPeer(address: address, port: port, key: key))
    }

    public var description: String {
        let host = AddressPrefix.text(address)
        let at = address.count == 16 ? "[\(host)]:\(port)" : "\(host):\(port)"
        return key.map { "\(at) key \($0)" } ?? at
    }
}
