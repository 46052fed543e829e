import Crypto
import Foundation
import NIOConcurrencyHelpers

/// Every change made through the management API (and every reload), one JSON line each, on disk
/// before the change is acknowledged (issue 6): who, what, when, and SHA-256 digests of the state
/// before and after, so the log can be checked against the state it describes.
public final class AuditLog: Sendable {
    public let path: String
    private let lock = NIOLock()

    public init(path: String) { self.path = path }

    /// One change.
    public struct Entry: Codable, Equatable, Sendable {
        /// When, ISO 8601 in UTC.
        public var time: String
        /// Who: the token's role and where it is declared (`file:line`), or `SIGHUP`.
        public var who: String
        /// What: e.g. `drain`, `undrain`, `reload`.
        public var action: String
        /// On what: a node id, `zones`.
        public var target: String
        /// Words on the change (the states before and after, an expiry).
        public var detail: String
        public var before: String
        public var after: String
        /// done, or refused with why.
        public var outcome: String
    }

    /// The SHA-256 of `bytes`, in hex: what `before` and `after` hold.
    public static func digest(_ bytes: some Sequence<UInt8>) -> String {
        SHA256.hash(data: Array(bytes)).map { String(format: "%02x", $0) }.joined()
    }

    /// Appends `entry` and waits for it to reach the disk.
    public func record(_ entry: Entry) throws(DurableFile.Failure) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let line = String(decoding: (try? encoder.encode(entry)) ?? Data(), as: UTF8.self)
        lock.lock()
        defer { lock.unlock() }
        try DurableFile.append(path, line: line)
    }

    /// An entry stamped now.
    public static func entry(
        who: String, action: String, target: String, detail: String, before: String, after: String,
        outcome: String = "done"
    ) -> Entry {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return Entry(
            time: f.string(from: Date()), who: who, action: action, target: target, detail: detail, before: before,
            after: after, outcome: outcome)
    }
}
