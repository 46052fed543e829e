import Crypto
import DNSWire
import Foundation
import NearcastBasics

#if canImport(Glibc)
import Glibc
#endif

/// The secret a fleet's servers share to keep their DNSSEC keys in the store
/// (Sources/NearcastDNSSEC/README.md, "A fleet's keys"): 32 random bytes, base64 on one line of a file
/// (`store: { key-secret: FILE }`) that no one but its owner may read. The store never holds it.
public struct FleetKeySecret: Sendable {
    let key: SymmetricKey

    /// The secret as its file holds it.
    public let text: String

    public init?(text: String) {
        guard let bytes = Data(base64Encoded: text.trimmingCharacters(in: .whitespacesAndNewlines)),
            bytes.count == 32
        else { return nil }
        self.text = text.trimmingCharacters(in: .whitespacesAndNewlines)
        // Derived rather than used as it is: the file's bytes key nothing else this way.
        key = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: bytes), salt: Data("nearcast fleet dnssec keys".utf8),
            outputByteCount: 32)
    }

    /// A new secret.
    public static func generate() -> FleetKeySecret {
        FleetKeySecret(text: SymmetricKey(size: .bits256).withUnsafeBytes { Data($0).base64EncodedString() })!
    }

    /// The secret in `path`; refused when the file is missing, does not hold one, or may be read
    /// by its group or others.
    public static func load(path: String) throws(DiagnosticsError) -> FleetKeySecret {
        func fail(_ m: String) -> DiagnosticsError { DiagnosticsError([Diagnostic(file: path, line: 0, message: m)]) }
        var st = stat()
        guard stat(path, &st) == 0, let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw fail("the fleet's key secret cannot be read (make one with `nearcast store secret FILE`)")
        }
        guard st.st_mode & 0o077 == 0 else {
            throw fail(
                "the fleet's key secret may be read by others (mode \(String(st.st_mode & 0o777, radix: 8))): chmod 600 it"
            )
        }
        guard let secret = FleetKeySecret(text: text) else {
            throw fail("the fleet's key secret must be 32 bytes in base64 on one line")
        }
        return secret
    }
}

/// A DNSSEC key as a fleet's store keeps it: the public `.key` file's text in the clear (it is
/// the zone's DNSKEY record), and the `.private` file's text (the private key and the key's
/// timing) sealed with AES-256-GCM under the fleet's secret, the store key it is kept at as its
/// associated data, so a value moved to another zone's or fleet's key does not open.
public struct SealedKey: Codable, Equatable, Sendable {
    public var tag: UInt16
    public var algorithm: UInt8
    public var flags: UInt16
    /// The `.key` file's text.
    public var `public`: String
    /// Nonce, ciphertext and tag of the `.private` file's text, in base64.
    public var sealed: String

    /// `key` sealed to be kept at store key `at`.
    public static func seal(_ key: DNSSECKey, with secret: FleetKeySecret, at: String, created: Date = Date()) throws
        -> SealedKey
    {
        let text = DNSSECKeyFile.privateText(key, created: created)
        let box = try AES.GCM.seal(Data(text.utf8), using: secret.key, authenticating: Data(at.utf8))
        return SealedKey(
            tag: key.keyTag, algorithm: key.algorithm.rawValue, flags: key.flags,
            public: DNSSECKeyFile.publicText(key, created: created), sealed: box.combined!.base64EncodedString())
    }

    /// The value as the store keeps it (JSON).
    public var value: [UInt8] {
        let e = JSONEncoder()
        e.outputFormatting = .sortedKeys
        return Array(try! e.encode(self))
    }

    /// The value kept at store key `at`; nil when it is not one.
    public init?(value: [UInt8]) {
        guard let s = try? JSONDecoder().decode(SealedKey.self, from: Data(value)) else { return nil }
        self = s
    }

    init(tag: UInt16, algorithm: UInt8, flags: UInt16, public: String, sealed: String) {
        (self.tag, self.algorithm, self.flags, self.public, self.sealed) = (tag, algorithm, flags, `public`, sealed)
    }

    /// The `.private` file's text, opened with `secret`; nil when the secret is not the one it
    /// was sealed with, or the value was kept at another key or altered.
    public func privateText(with secret: FleetKeySecret, at: String) -> String? {
        guard let data = Data(base64Encoded: sealed), let box = try? AES.GCM.SealedBox(combined: data),
            let plain = try? AES.GCM.open(box, using: secret.key, authenticating: Data(at.utf8))
        else { return nil }
        return String(decoding: plain, as: UTF8.self)
    }

    /// The same key sealed under `new` instead of `old`, kept at store key `at`; nil when it
    /// does not open with `old`.
    public func resealed(from old: FleetKeySecret, to new: FleetKeySecret, at: String) throws -> SealedKey? {
        guard let text = privateText(with: old, at: at) else { return nil }
        let box = try AES.GCM.seal(Data(text.utf8), using: new.key, authenticating: Data(at.utf8))
        var out = self
        out.sealed = box.combined!.base64EncodedString()
        return out
    }

    /// The key, opened with `secret`, of `zone`, kept at store key `at`; each problem names `at`.
    public func open(with secret: FleetKeySecret, at: String, zone: DNSName) throws(DiagnosticsError) -> DNSSECKey {
        guard let text = privateText(with: secret, at: at) else {
            throw DiagnosticsError([
                Diagnostic(
                    file: at, line: 0,
                    message: "the key does not open with this server's key secret (another fleet's secret, or altered)")
            ])
        }
        let key = try DNSSECKeyFile.parse(privateText: text, file: at, publicText: `public`, publicFile: at, zone: zone)
        guard key.keyTag == tag else {
            throw DiagnosticsError([Diagnostic(file: at, line: 0, message: "the key's tag is not \(tag)")])
        }
        return key
    }
}
