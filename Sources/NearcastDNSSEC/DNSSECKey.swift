import Crypto
import DNSWire
import Foundation

/// A zone's signing key (RFC 4034 §2): ECDSA P-256 with SHA-256 (algorithm 13, the default) or
/// Ed25519 (algorithm 15), from swift-crypto. A combined signing key (CSK: flags 257, the SEP bit
/// set, it signs the DNSKEY RRset and everything else) unless made as a ZSK (flags 256).
public struct DNSSECKey: Sendable {
    /// The algorithms nearcast signs with (RFC 8624 §3.1: the recommended ones).
    public enum Algorithm: UInt8, CaseIterable, Sendable, CustomStringConvertible {
        case ecdsaP256SHA256 = 13
        case ed25519 = 15

        /// Its mnemonic, as BIND and ldns write it.
        public var description: String {
            switch self {
            case .ecdsaP256SHA256: "ECDSAP256SHA256"
            case .ed25519: "ED25519"
            }
        }

        /// From its number or mnemonic (either case).
        public init?(name: String) {
            if let n = UInt8(name), let a = Algorithm(rawValue: n) {
                self = a
                return
            }
            guard let a = Self.allCases.first(where: { $0.description.lowercased() == name.lowercased() }) else {
                return nil
            }
            self = a
        }
    }

    enum PrivateKey: @unchecked Sendable {
        case p256(P256.Signing.PrivateKey)
        case ed25519(Curve25519.Signing.PrivateKey)
    }

    public let zone: DNSName
    public let algorithm: Algorithm
    /// 257: a key-signing (or combined) key, whose DS the parent holds; 256: a zone-signing key.
    public let flags: UInt16
    let key: PrivateKey
    /// When it is published and signs (its file's timing fields).
    public var timing = KeyTiming()

    /// Whether it is a zone-signing key (the SEP bit clear): it signs the zone's data, and the
    /// key-signing or combined keys sign the DNSKEY RRset.
    public var isZSK: Bool { flags & 1 == 0 }

    /// Flags of a combined or key-signing key (ZONE and SEP), and of a zone-signing key (ZONE).
    public static let csk: UInt16 = 257
    public static let zsk: UInt16 = 256

    /// A new key for `zone`, from the system's random source.
    public static func generate(zone: DNSName, algorithm: Algorithm = .ecdsaP256SHA256, flags: UInt16 = csk)
        -> DNSSECKey
    {
        switch algorithm {
        case .ecdsaP256SHA256:
            DNSSECKey(zone: zone, algorithm: algorithm, flags: flags, key: .p256(P256.Signing.PrivateKey()))
        case .ed25519:
            DNSSECKey(zone: zone, algorithm: algorithm, flags: flags, key: .ed25519(Curve25519.Signing.PrivateKey()))
        }
    }

    init(zone: DNSName, algorithm: Algorithm, flags: UInt16, key: PrivateKey) {
        (self.zone, self.algorithm, self.flags, self.key) = (zone, algorithm, flags, key)
    }

    /// The key from its private bytes (the scalar of P-256, the seed of Ed25519). The scalar is a
    /// big-endian number, which BIND and ldns write without its leading zero bytes (OpenSSL's
    /// BN_bn2bin): one key in 256 has 31 bytes, and is the same key as those bytes padded to 32.
    init(zone: DNSName, algorithm: Algorithm, flags: UInt16, privateBytes: [UInt8]) throws {
        switch algorithm {
        case .ecdsaP256SHA256:
            let padded =
                privateBytes.count < 32
                ? [UInt8](repeating: 0, count: 32 - privateBytes.count) + privateBytes : privateBytes
            key = .p256(try P256.Signing.PrivateKey(rawRepresentation: padded))
        case .ed25519:
            key = .ed25519(try Curve25519.Signing.PrivateKey(rawRepresentation: privateBytes))
        }
        (self.zone, self.algorithm, self.flags) = (zone, algorithm, flags)
    }

    /// The private bytes, as BIND's private-key file holds them.
    var privateBytes: [UInt8] {
        switch key {
        case .p256(let k): Array(k.rawRepresentation)
        case .ed25519(let k): Array(k.rawRepresentation)
        }
    }

    /// The public key in DNSKEY form (RFC 6605 §4: X and Y; RFC 8080 §3: the 32 octets).
    public var publicKey: [UInt8] {
        switch key {
        case .p256(let k): Array(k.publicKey.rawRepresentation)
        case .ed25519(let k): Array(k.publicKey.rawRepresentation)
        }
    }

    /// The DNSKEY record's RDATA: flags, protocol 3, algorithm, public key.
    public var dnskeyRData: [UInt8] {
        [UInt8(flags >> 8), UInt8(flags & 0xFF), 3, algorithm.rawValue] + publicKey
    }

    /// The DNSKEY record.
    public var dnskey: ResourceRecord {
        ResourceRecord(name: zone, type: RRType(48), ttl: 3600, rdata: .unknown(dnskeyRData))
    }

    /// The key tag (RFC 4034 Appendix B).
    public var keyTag: UInt16 {
        var ac: UInt32 = 0
        for (i, b) in dnskeyRData.enumerated() { ac += i & 1 == 1 ? UInt32(b) : UInt32(b) << 8 }
        ac += (ac >> 16) & 0xFFFF
        return UInt16(ac & 0xFFFF)
    }

    /// The DS RDATA with a SHA-256 digest (RFC 4509): key tag, algorithm, digest type 2, the
    /// digest of the owner's canonical name and the DNSKEY RDATA.
    public var dsRData: [UInt8] {
        let digest = SHA256.hash(data: zone.lowercased().wire + dnskeyRData)
        return [UInt8(keyTag >> 8), UInt8(keyTag & 0xFF), algorithm.rawValue, 2] + Array(digest)
    }

    /// The DS record in presentation format, as `dnssec-dsfromkey` prints it.
    public var dsText: String {
        let hex = dsRData.dropFirst(4).map { String(format: "%02X", $0) }.joined()
        return "\(zone) IN DS \(keyTag) \(algorithm.rawValue) 2 \(hex)"
    }

    /// The signature of `data` (RFC 6605 §4: r and s, 32 octets each; RFC 8080 §4: 64 octets).
    public func sign(_ data: [UInt8]) throws -> [UInt8] {
        switch key {
        case .p256(let k): Array(try k.signature(for: data).rawRepresentation)
        case .ed25519(let k): Array(try k.signature(for: data))
        }
    }

    /// BIND's base name of the key's files: `K<zone>+<alg>+<tag>` (zone with its final dot).
    public var fileBase: String {
        "K\(zone.lowercased())+\(String(format: "%03d", Int(algorithm.rawValue)))+\(String(format: "%05d", Int(keyTag)))"
    }
}
