import DNSWire
import Foundation
import NearcastBasics

#if canImport(Glibc)
import Glibc
#endif

/// A key as BIND keeps it, in two files: `K<zone>+<alg>+<tag>.key` (the DNSKEY record) and
/// `.private` (`Private-key-format: v1.3`, the algorithm, the private key in base64), as
/// dnssec-keygen and ldns-keygen write them; so keys move between nearcast, BIND, ldns and
/// Knot's `keymgr import-bind`.
public enum DNSSECKeyFile {
    /// The `.private` file's text.
    /// Its timing fields are the key's (`KeyTiming`); a key with none is published and active
    /// from `created`.
    public static func privateText(_ key: DNSSECKey, created: Date = Date()) -> String {
        var t = key.timing
        if t == KeyTiming() { (t.publish, t.activate) = (created, created) }
        var text = """
            Private-key-format: v1.3
            Algorithm: \(key.algorithm.rawValue) (\(key.algorithm))
            PrivateKey: \(Data(key.privateBytes).base64EncodedString())
            Created: \(timestamp(created))

            """
        for (field, date) in [
            ("Publish", t.publish), ("Activate", t.activate), ("Inactive", t.inactive), ("Delete", t.delete),
        ] {
            if let date { text += "\(field): \(timestamp(date))\n" }
        }
        return text
    }

    /// A YYYYMMDDHHMMSS timestamp (UTC) as a date; nil when it is not one.
    static func date(_ text: String) -> Date? {
        guard text.count == 14, text.allSatisfy(\.isNumber) else { return nil }
        let d = Array(text).map { Int(String($0))! }
        func n(_ from: Int, _ count: Int) -> Int32 { Int32(d[from..<from + count].reduce(0) { $0 * 10 + $1 }) }
        var parts = tm()
        (parts.tm_year, parts.tm_mon, parts.tm_mday) = (n(0, 4) - 1900, n(4, 2) - 1, n(6, 2))
        (parts.tm_hour, parts.tm_min, parts.tm_sec) = (n(8, 2), n(10, 2), n(12, 2))
        let t = timegm(&parts)
        return t < 0 ? nil : Date(timeIntervalSince1970: TimeInterval(t))
    }

    /// The `.key` file's text: the DNSKEY record, after comments saying what it is.
    public static func publicText(_ key: DNSSECKey, created: Date = Date()) -> String {
        let role = key.flags & 1 == 1 ? "key-signing" : "zone-signing"
        return """
            ; This is a \(role) key, keyid \(key.keyTag), for \(key.zone)
            ; Created: \(timestamp(created))
            \(key.zone) IN DNSKEY \(key.flags) 3 \(key.algorithm.rawValue) \(Data(key.publicKey).base64EncodedString())

            """
    }

    /// YYYYMMDDHHMMSS in UTC, as BIND writes its timing fields.
    static func timestamp(_ date: Date) -> String {
        var t = time_t(date.timeIntervalSince1970)
        var parts = tm()
        gmtime_r(&t, &parts)
        return String(
            format: "%04d%02d%02d%02d%02d%02d", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1, Int(parts.tm_mday),
            Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec))
    }

    /// The key in `privateFile` (and its flags from the `.key` file beside it, when there is one;
    /// a combined key's otherwise), for `zone`. Each problem names the file and the line.
    public static func read(privateFile: String, zone: DNSName) throws(DiagnosticsError) -> DNSSECKey {
        func fail(_ file: String, _ line: Int, _ m: String) -> DiagnosticsError {
            DiagnosticsError([Diagnostic(file: file, line: line, message: m)])
        }
        guard let text = try? String(contentsOfFile: privateFile, encoding: .utf8) else {
            throw fail(privateFile, 0, "cannot read the file")
        }
        let publicFile = privateFile.hasSuffix(".private") ? String(privateFile.dropLast(8)) + ".key" : ""
        let publicText = try? String(contentsOfFile: publicFile, encoding: .utf8)
        return try parse(
            privateText: text, file: privateFile, publicText: publicText, publicFile: publicFile, zone: zone)
    }

    /// The key in a `.private` file's text (and its flags from the `.key` file's text, when there
    /// is one; a combined key's otherwise), for `zone`; problems name `file` and the line.
    public static func parse(
        privateText text: String, file privateFile: String, publicText: String?, publicFile: String, zone: DNSName
    ) throws(DiagnosticsError) -> DNSSECKey {
        func fail(_ file: String, _ line: Int, _ m: String) -> DiagnosticsError {
            DiagnosticsError([Diagnostic(file: file, line: line, message: m)])
        }
        var algorithm: DNSSECKey.Algorithm?
        var secret: (bytes: [UInt8], line: Int)?
        var timing = KeyTiming()
        for (i, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.trimmingCharacters(in: .whitespaces)
            guard let colon = line.firstIndex(of: ":") else { continue }
            let field = line[..<colon]
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            switch field {
            case "Algorithm":
                let number = value.split(separator: " ").first.map(String.init) ?? ""
                guard let a = DNSSECKey.Algorithm(name: number) else {
                    throw fail(
                        privateFile, i + 1,
                        "algorithm \(value) is not one nearcast signs with (13 ECDSAP256SHA256, 15 ED25519)")
                }
                algorithm = a
            case "PrivateKey":
                guard let d = Data(base64Encoded: value) else {
                    throw fail(privateFile, i + 1, "PrivateKey is not base64")
                }
                secret = (Array(d), i + 1)
            case "Publish", "Activate", "Inactive", "Delete":
                guard let date = date(value) else {
                    throw fail(privateFile, i + 1, "\(field) is not a time as YYYYMMDDHHMMSS")
                }
                switch field {
                case "Publish": timing.publish = date
                case "Activate": timing.activate = date
                case "Inactive": timing.inactive = date
                default: timing.delete = date
                }
            default: continue
            }
        }
        guard let algorithm else { throw fail(privateFile, 0, "no Algorithm: line") }
        guard let secret else { throw fail(privateFile, 0, "no PrivateKey: line") }
        var flags = DNSSECKey.csk
        if let publicText { flags = try publicFlags(publicText, file: publicFile, zone: zone) }
        do {
            var key = try DNSSECKey(zone: zone, algorithm: algorithm, flags: flags, privateBytes: secret.bytes)
            key.timing = timing
            return key
        } catch {
            throw fail(privateFile, secret.line, "PrivateKey is not a \(algorithm) private key: \(error)")
        }
    }

    /// The flags of the DNSKEY record in a `.key` file's text.
    static func publicFlags(_ text: String, file: String, zone: DNSName) throws(DiagnosticsError) -> UInt16 {
        for (i, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard let at = fields.firstIndex(where: { $0.uppercased() == "DNSKEY" }) else { continue }
            guard let owner = try? DNSName(String(fields[0])), owner == zone else {
                throw DiagnosticsError([
                    Diagnostic(file: file, line: i + 1, message: "the key is for \(fields[0]), not \(zone)")
                ])
            }
            guard at + 1 < fields.count, let flags = UInt16(fields[at + 1]) else {
                throw DiagnosticsError([Diagnostic(file: file, line: i + 1, message: "the DNSKEY record has no flags")])
            }
            return flags
        }
        throw DiagnosticsError([Diagnostic(file: file, line: 0, message: "no DNSKEY record")])
    }
}
