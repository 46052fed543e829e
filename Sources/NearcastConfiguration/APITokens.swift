import Crypto
import Foundation
import NearcastBasics

/// What a management API token may do. Read, write and admin each include the ones before them;
/// an agent stands apart.
public enum APIRole: Int, Comparable, Sendable, CaseIterable, CustomStringConvertible {
    /// A node's agent: posts health reports (for one node when declared `agent:ID`), nothing else.
    case agent = -1
    /// Read state and counters.
    case read
    /// Change zones, records, nodes.
    case write
    /// Everything, reloads included.
    case admin

    public init?(name: String) {
        guard let r = Self.allCases.first(where: { $0.description == name }) else { return nil }
        self = r
    }

    public var description: String {
        switch self {
        case .agent: "agent"
        case .read: "read"
        case .write: "write"
        case .admin: "admin"
        }
    }

    public static func < (a: Self, b: Self) -> Bool { a.rawValue < b.rawValue }
}

/// The bearer tokens of the management API, from a file of `ROLE TOKEN` lines (`#` comments):
///
///     # who and why
///     read  6c0f0b9d8a3e4f1c9b7a2d5e8f1a3c6b
///     admin 0d4e1a7b9c2f5e8a3b6d9c1f4a7e2b5d
///     agent:fra1 3b8e1d6a9c2f5b8e1a4d7c0f3a6e9b2d   # fra1's agent: its health reports only
///
/// Without a valid token the API refuses everything but its liveness endpoint.
public struct APITokens: Sendable {
    public struct Entry: Sendable, Equatable {
        public var role: APIRole
        public var token: String
        /// Where it was declared, `file:line`, for logs of who did what.
        public var source: String
        /// An agent token's node (`agent:ID`); nil: any node.
        public var node: String?

        public init(role: APIRole, token: String, source: String, node: String? = nil) {
            self.role = role
            self.token = token
            self.source = source
            self.node = node
        }

        /// Whether this token may post `node`'s health reports: its agent, or a write token.
        public func mayReport(for node: String) -> Bool {
            role == .agent ? self.node == nil || self.node == node : role >= .write
        }
    }

    public var entries: [Entry]
    /// A fleet's tokens, known by their SHA-256 (hex) only (`P tokens/SHA256`, ARCHITECTURE §13);
    /// their entries' `token` is empty.
    public var hashed: [String: Entry] = [:]

    public init(entries: [Entry] = [], hashed: [String: Entry] = [:]) {
        self.entries = entries
        self.hashed = hashed
    }

    /// A token's SHA-256 in hex: how a fleet's store keeps it.
    public static func digest(_ token: some StringProtocol) -> String {
        SHA256.hash(data: Array(token.utf8)).map { String(format: "%02x", $0) }.joined()
    }

    /// The tokens as a fleet's store keeps them: SHA-256 (hex) -> `ROLE[:NODE] SOURCE`.
    public var storeEntries: [String: String] {
        Dictionary(
            entries.map { e in (Self.digest(e.token), "\(e.role)\(e.node.map { ":\($0)" } ?? "") \(e.source)") },
            uniquingKeysWith: { a, _ in a })
    }

    /// A fleet's token as its store keeps it (`ROLE[:NODE] SOURCE`); nil when it is not one.
    public static func storeEntry(_ value: String) -> Entry? {
        let fields = value.split(separator: " ", maxSplits: 1).map(String.init)
        guard let first = fields.first else { return nil }
        let roleField = first.split(separator: ":", maxSplits: 1).map(String.init)
        guard let role = APIRole(name: roleField[0]), roleField.count == 1 || role == .agent else { return nil }
        return Entry(
            role: role, token: "", source: "store " + (fields.count > 1 ? fields[1] : "?"),
            node: roleField.count == 2 ? roleField[1] : nil)
    }

    /// The shortest token accepted: 128 bits in hex.
    public static let minimumLength = 32

    /// Parses `text` (the contents of `fileName`), reporting every bad line.
    public static func parse(_ text: String, fileName: String) throws(DiagnosticsError) -> APITokens {
        var entries: [Entry] = []
        var problems: [Diagnostic] = []
        for (i, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\r" }).map(String.init)
            if fields.isEmpty { continue }
            func fail(_ m: String) { problems.append(Diagnostic(file: fileName, line: i + 1, message: m)) }
            guard fields.count == 2 else {
                fail("expected ROLE TOKEN (two fields), found \(fields.count)")
                continue
            }
            let roleField = fields[0].split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false).map(
                String.init)
            guard let role = APIRole(name: roleField[0]) else {
                fail("unknown role '\(fields[0])' (known: read, write, admin, agent, agent:NODE)")
                continue
            }
            if roleField.count == 2 && (role != .agent || roleField[1].isEmpty) {
                fail("only an agent token names a node (agent:NODE), and the node id cannot be empty")
                continue
            }
            let token = fields[1]
            guard token.utf8.count >= minimumLength,
                token.unicodeScalars.allSatisfy({
                    $0.isASCII
                        && ($0.properties.isAlphabetic || ("0"..."9").contains($0)
                            || "-._~+/=".unicodeScalars.contains($0))
                })
            else {
                fail(
                    "a token is at least \(minimumLength) characters of A-Z a-z 0-9 - . _ ~ + / = (e.g. `openssl rand -hex 16`)"
                )
                continue
            }
            if entries.contains(where: { $0.token == token }) {
                fail("this token is already listed")
                continue
            }
            entries.append(
                Entry(
                    role: role, token: token, source: "\(fileName):\(i + 1)",
                    node: roleField.count == 2 ? roleField[1] : nil))
        }
        if !problems.isEmpty { throw DiagnosticsError(problems) }
        return APITokens(entries: entries)
    }

    /// Loads the tokens file at `path`.
    public static func load(path: String) throws(DiagnosticsError) -> APITokens {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            let why = FileManager.default.fileExists(atPath: path) ? "cannot be read" : "does not exist"
            throw DiagnosticsError([Diagnostic(file: path, line: 0, message: "tokens file \(why)")])
        }
        defer { try? handle.close() }
        guard let data = try? handle.readToEnd() ?? Data(), let text = String(data: data, encoding: .utf8) else {
            throw DiagnosticsError([
                Diagnostic(file: path, line: 0, message: "tokens file cannot be read as UTF-8 text")
            ])
        }
        return try parse(text, fileName: path)
    }

    /// The entry whose token equals `presented`, comparing in constant time: every token is
    /// compared in full, so the time taken does not tell how much of a guess was right.
    /// A fleet's tokens are looked up by the presented token's SHA-256.
    public func match(_ presented: some StringProtocol) -> Entry? {
        let p = Array(presented.utf8)
        var found: Entry?
        for e in entries where Self.constantTimeEqual(Array(e.token.utf8), p) { found = e }
        if found == nil, !hashed.isEmpty, !presented.isEmpty { found = hashed[Self.digest(presented)] }
        return found
    }

    static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        var diff = UInt(a.count ^ b.count)
        for i in 0..<max(a.count, b.count) {
            diff |= UInt((i < a.count ? a[i] : 0) ^ (i < b.count ? b[i] : 0))
        }
        return diff == 0
    }
}
