import Crypto
import DNSWire

/// The MAC algorithms of transaction signatures (RFC 8945 §6), by the names BIND and Knot give them
/// in key files. HMAC-SHA1 is kept for old clients; HMAC-MD5 is not offered.
public enum TSIGAlgorithm: String, CaseIterable, Sendable {
    case hmacSHA1 = "hmac-sha1"
    case hmacSHA256 = "hmac-sha256"
    case hmacSHA384 = "hmac-sha384"
    case hmacSHA512 = "hmac-sha512"

    /// The algorithm named `text` (any letter case, with or without the final dot).
    public init?(name text: String) {
        let t = text.lowercased()
        guard let a = Self(rawValue: t.hasSuffix(".") ? String(t.dropLast()) : t) else { return nil }
        self = a
    }

    /// The algorithm whose domain name a TSIG record carries.
    public init?(name: DNSName) {
        guard let a = Self.allCases.first(where: { $0.name == name }) else { return nil }
        self = a
    }

    /// The name in a TSIG record's Algorithm Name field.
    public var name: DNSName {
        // The names are constants of the protocol, so they always parse.
        try! DNSName(rawValue + ".")
    }

    /// Bytes of the whole MAC, and of a key that tsig-keygen would make for it.
    public var macLength: Int {
        switch self {
        case .hmacSHA1: 20
        case .hmacSHA256: 32
        case .hmacSHA384: 48
        case .hmacSHA512: 64
        }
    }

    /// The shortest MAC a message may carry (RFC 8945 §5.2.2.1): half the hash, and never under
    /// 10 octets.
    public var shortestMAC: Int { max(10, macLength / 2) }

    /// The HMAC of `data` under `secret`.
    public func mac(_ data: [UInt8], secret: [UInt8]) -> [UInt8] {
        let key = SymmetricKey(data: secret)
        switch self {
        case .hmacSHA1: return Array(HMAC<Insecure.SHA1>.authenticationCode(for: data, using: key))
        case .hmacSHA256: return Array(HMAC<SHA256>.authenticationCode(for: data, using: key))
        case .hmacSHA384: return Array(HMAC<SHA384>.authenticationCode(for: data, using: key))
        case .hmacSHA512: return Array(HMAC<SHA512>.authenticationCode(for: data, using: key))
        }
    }
}

/// A shared secret that signs transactions: its name (the TSIG record's owner), its algorithm and
/// the secret's bytes.
public struct TSIGKey: Hashable, Sendable {
    public var name: DNSName
    public var algorithm: TSIGAlgorithm
    public var secret: [UInt8]
    /// Where it was declared (`file:line`), for messages.
    public var source: String

    public init(name: DNSName, algorithm: TSIGAlgorithm, secret: [UInt8], source: String = "") {
        self.name = name.lowercased()
        self.algorithm = algorithm
        self.secret = secret
        self.source = source
    }

    /// A new key with a random secret as long as the algorithm's MAC, as tsig-keygen makes them.
    public static func generate(name: DNSName, algorithm: TSIGAlgorithm) -> TSIGKey {
        var rng = SystemRandomNumberGenerator()  // getrandom(2) on Linux: fit for secrets
        return TSIGKey(
            name: name, algorithm: algorithm,
            secret: (0..<algorithm.macLength).map { _ in UInt8.random(in: 0...255, using: &rng) })
    }
}

/// The keys the server knows, by name. A key name is declared once.
public struct TSIGKeyring: Sendable, Equatable {
    public private(set) var keys: [DNSName: TSIGKey] = [:]

    public init() {}

    /// The keyring of `keys`; the error names the first key declared twice.
    public init(_ keys: [TSIGKey]) throws(TSIGKeyringError) {
        for k in keys {
            if let first = self.keys[k.name] { throw TSIGKeyringError(key: k, firstDeclaredAt: first.source) }
            self.keys[k.name] = k
        }
    }

    public var isEmpty: Bool { keys.isEmpty }

    public func key(named name: DNSName) -> TSIGKey? { keys[name] }
}

/// A key name declared twice.
public struct TSIGKeyringError: Error, CustomStringConvertible {
    public var key: TSIGKey
    public var firstDeclaredAt: String
    public var description: String { "TSIG key \(key.name) is declared twice (first at \(firstDeclaredAt))" }
}
