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
        /// An agent token's pools (`pools=a,b`): a node it registers may join these alone; nil: any.
        public var pools: [String]?
        /// An agent token's networks (`nets=192.0.2.0/24,2001:db8::/32`): a node it registers has
        /// its addresses in them; nil: any.
        public var networks: [AddressPrefix]?

        public init(
            role: APIRole, token: String, source: String, node: String? = nil, pools: [String]? = nil,
            networks: [AddressPrefix]? = nil
        ) {
            self.role = role
            self.token = token
            self.source = source
            self.node = node
            self.pools = pools
            self.networks = networks
        }

        /// Why this token may not register a node in `pools` at `addresses` (4 or 16 octets each);
        /// nil when it may. Only an agent token's scopes narrow it.
        public func refusal(registering pools: [String], at addresses: [[UInt8]]) -> String? {
            if let allowed = self.pools, let p = pools.first(where: { !allowed.contains($0) }) {
                return "this agent token may register nodes in pools \(allowed.joined(separator: ", ")) only, not \(p)"
            }
            if let networks, let a = addresses.first(where: { a in !networks.contains { $0.contains(a) } }) {
                return
                    "this agent token may register addresses in \(networks.map(\.description).joined(separator: ", ")) only, not \(AddressPrefix.text(a))"
            }
            return nil
        }

        struct ScopeError: Error {
            var message: String
        }

        /// Reads one scope, `pools=a,b` or `nets=CIDR,CIDR`, into the entry.
        mutating func scope(_ option: String) throws(ScopeError) {
            let kv = option.split(separator: "=", maxSplits: 1).map(String.init)
            let values = kv.count == 2 ? kv[1].split(separator: ",").map(String.init) : []
            guard kv.count == 2, !values.isEmpty else {
                throw ScopeError(message: "an agent token's scope is pools=POOL,… or nets=PREFIX,…; found '\(option)'")
            }
            switch kv[0] {
            case "pools": pools = values
            case "nets":
                var prefixes: [AddressPrefix] = []
                for v in values {
                    guard let p = AddressPrefix(v) else {
                        throw ScopeError(message: "nets: '\(v)' is not a prefix such as 192.0.2.0/24 or 2001:db8::/32")
                    }
                    prefixes.append(p)
                }
                networks = prefixes
            default:
                throw ScopeError(message: "unknown scope '\(kv[0])' (known: pools, nets)")
            }
        }

        /// The role field with the scopes, as the store keeps it: `agent:NODE;pools=a,b;nets=…`.
        var scopedRole: String {
            var out = "\(role)\(node.map { ":\($0)" } ?? "")"
            if let pools { out += ";pools=" + pools.joined(separator: ",") }
            if let networks { out += ";nets=" + networks.map(\.description).joined(separator: ",") }
            return out
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
        Hex.lowercase(SHA256.hash(data: Array(token.utf8)))
    }

    /// The tokens as a fleet's store keeps them: SHA-256 (hex) -> `ROLE[:NODE][;pools=…][;nets=…] SOURCE`
    /// (a server that does not know the scopes cannot read the role, and refuses the token).
    public var storeEntries: [String: String] {
        Dictionary(
            entries.map { e in (Self.digest(e.token), "\(e.scopedRole) \(e.source)") }, uniquingKeysWith: { a, _ in a })
    }

    /// A fleet's token as its store keeps it (`storeEntries`); nil when it is not one.
    public static func storeEntry(_ value: String) -> Entry? {
        let fields = value.split(separator: " ", maxSplits: 1).map(String.init)
        guard let first = fields.first else { return nil }
        var parts = first.split(separator: ";").map(String.init)
        guard !parts.isEmpty else { return nil }
        let roleField = parts.removeFirst().split(separator: ":", maxSplits: 1).map(String.init)
        guard let role = APIRole(name: roleField[0]), roleField.count == 1 || role == .agent else { return nil }
        var entry = Entry(
            role: role, token: "", source: "store " + (fields.count > 1 ? fields[1] : "?"),
            node: roleField.count == 2 ? roleField[1] : nil)
        for part in parts {
            guard role == .agent, (try? entry.scope(part)) != nil else { return nil }
        }
        return entry
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
            guard fields.count >= 2 else {
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
            // An agent token's scopes between its role and the token: pools=a,b nets=CIDR,CIDR.
            var scoped = Entry(role: role, token: "", source: "")
            var scopeProblem: String?
            for option in fields.dropFirst().dropLast() {
                guard role == .agent else {
                    scopeProblem = "only an agent token takes scopes (pools=…, nets=…); found '\(option)'"
                    break
                }
                do { try scoped.scope(option) } catch { scopeProblem = error.message }
                if scopeProblem != nil { break }
            }
            if let scopeProblem {
                fail(scopeProblem)
                continue
            }
            let token = fields[fields.count - 1]
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
                    node: roleField.count == 2 ? roleField[1] : nil, pools: scoped.pools, networks: scoped.networks))
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
