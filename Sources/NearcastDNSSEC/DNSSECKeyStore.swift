import DNSWire
import Foundation
import NearcastBasics

#if canImport(Glibc)
import Glibc
#endif

/// A server's DNSSEC keys, in its state directory: `dnssec/<zone>/` holds each key of the zone as
/// BIND's two files (`DNSSECKeyFile`), the directories 0700 and the files 0600, each written
/// whole or not at all (`DurableFile`).
public struct DNSSECKeyStore: Sendable {
    public let stateDirectory: String

    public init(stateDirectory: String) { self.stateDirectory = stateDirectory }

    /// The directory of `zone`'s keys.
    public func directory(of zone: DNSName) -> String {
        let name = zone.lowercased().description
        return stateDirectory + "/dnssec/" + (name == "." ? "root" : String(name.dropLast()))
    }

    /// The keys of `zone`, in the order of their tags; none when it has no directory.
    public func keys(of zone: DNSName) throws(DiagnosticsError) -> [DNSSECKey] {
        let dir = directory(of: zone)
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: dir) else { return [] }
        var keys: [DNSSECKey] = []
        for name in names.sorted() where name.hasSuffix(".private") {
            keys.append(try DNSSECKeyFile.read(privateFile: dir + "/" + name, zone: zone))
        }
        return keys.sorted { $0.keyTag < $1.keyTag }
    }

    /// Writes `key`'s files anew (its timing changed), whole or not at all.
    public func update(_ key: DNSSECKey, created: Date = Date()) throws {
        let base = directory(of: key.zone) + "/" + key.fileBase
        try DurableFile.replace(base + ".private", with: Array(DNSSECKeyFile.privateText(key, created: created).utf8))
    }

    /// Makes the zone's files of `key` hold these texts (a fleet's store brought them): written
    /// where they differ, whole or not at all; whether anything was written.
    public func put(_ key: DNSSECKey, privateText: String, publicText: String) throws -> Bool {
        try makeDirectory(of: key.zone)
        let base = directory(of: key.zone) + "/" + key.fileBase
        var wrote = false
        for (path, text) in [(base + ".key", publicText), (base + ".private", privateText)]
        where FileManager.default.contents(atPath: path) != Data(text.utf8) {
            try DurableFile.replace(path, with: Array(text.utf8))
            wrote = true
        }
        return wrote
    }

    /// The zone's directory (and the state directory's `dnssec/`) made where missing, 0700.
    func makeDirectory(of zone: DNSName) throws {
        let dir = directory(of: zone)
        for path in [stateDirectory, stateDirectory + "/dnssec", dir]
        where !FileManager.default.fileExists(atPath: path) {
            guard mkdir(path, 0o700) == 0 || errno == EEXIST else {
                throw DurableFile.Failure("cannot make the directory", path)
            }
        }
        chmod(dir, 0o700)
    }

    /// Keeps `key` with the zone's keys; the paths of its private and public files. A key of the
    /// same algorithm and tag already there is an error (a tag names a key in RRSIGs and DS).
    @discardableResult
    public func add(_ key: DNSSECKey, created: Date = Date()) throws -> (privateFile: String, publicFile: String) {
        try makeDirectory(of: key.zone)
        let base = directory(of: key.zone) + "/" + key.fileBase
        if FileManager.default.fileExists(atPath: base + ".private") {
            throw DiagnosticsError([
                Diagnostic(
                    file: base + ".private", line: 0,
                    message: "a key with tag \(key.keyTag) and algorithm \(key.algorithm) is there already")
            ])
        }
        try DurableFile.replace(base + ".key", with: Array(DNSSECKeyFile.publicText(key, created: created).utf8))
        try DurableFile.replace(base + ".private", with: Array(DNSSECKeyFile.privateText(key, created: created).utf8))
        return (base + ".private", base + ".key")
    }
}
