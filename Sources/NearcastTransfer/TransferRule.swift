import DNSWire
import NearcastBasics

/// One entry of a zone's `allow-transfer`: who may transfer it out (AXFR, IXFR). A rule names an
/// address prefix, a TSIG key, or both, and allows a request that comes from an address in the
/// prefix and is signed with the key (its signature verified), as NSD's `provide-xfr` and Knot's
/// ACLs do. A zone with no rules is transferred to nobody.
///
/// In the config, each rule is one string: `192.0.2.0/24`, `key xfr.example.`, or both,
/// `192.0.2.0/24 key xfr.example.`.
public struct TransferRule: Hashable, Sendable, CustomStringConvertible {
    public var prefix: AddressPrefix?
    public var key: DNSName?

    public init(prefix: AddressPrefix?, key: DNSName?) {
        self.prefix = prefix
        self.key = key
    }

    /// The rule in `text`, or why it is not one.
    public static func parse(_ text: String) -> Result<TransferRule, RuleError> {
        let words = text.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
        var prefix: AddressPrefix?
        var key: DNSName?
        var i = 0
        if let first = words.first, first != "key" {
            guard let p = AddressPrefix(first) else {
                return .failure(RuleError(message: "'\(first)' is not an address or ADDRESS/LENGTH"))
            }
            prefix = p
            i = 1
        }
        if i < words.count {
            guard words[i] == "key", i + 2 == words.count else {
                return .failure(RuleError(message: "expected PREFIX, 'key NAME' or 'PREFIX key NAME'"))
            }
            let name = words[i + 1]
            guard let n = try? DNSName(name.hasSuffix(".") ? name : name + ".") else {
                return .failure(RuleError(message: "'\(name)' is not a key name"))
            }
            key = n
        }
        guard prefix != nil || key != nil else {
            return .failure(RuleError(message: "a rule names an address prefix, a key, or both"))
        }
        return .success(TransferRule(prefix: prefix, key: key))
    }

    /// Why a rule's text is not one.
    public struct RuleError: Error, CustomStringConvertible {
        public var message: String
        public var description: String { message }
    }

    /// Whether a request from `address` (4 octets for IPv4, an IPv4-mapped IPv6 address given as
    /// the IPv4 address it is), signed with `signer` (verified; nil: unsigned), is allowed.
    public func allows(address: [UInt8], signer: DNSName?) -> Bool {
        if let key, key != signer { return false }
        return prefix?.contains(address) ?? true
    }

    public var description: String {
        switch (prefix, key) {
        case (let p?, let k?): "\(p) key \(k)"
        case (let p?, nil): "\(p)"
        case (nil, let k?): "key \(k)"
        case (nil, nil): "nobody"
        }
    }
}
