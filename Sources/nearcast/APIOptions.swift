import ArgumentParser
import Foundation
import NearcastConfiguration

/// How a command finds the daemon's management API and the token to present: `--api`, then
/// NEARCAST_API, then 127.0.0.1:8053; NEARCAST_TOKEN, else the first token of the right role in
/// `--token-file` (default /etc/nearcast/tokens, the daemon's own file, readable by root).
struct APIOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "The management API, https:// when it has TLS (default: $NEARCAST_API, else 127.0.0.1:8053).",
            valueName: "[https://]ADDR:PORT"))
    var api: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "A tokens file (ROLE TOKEN lines; default /etc/nearcast/tokens); $NEARCAST_TOKEN wins.", valueName: "FILE"))
    var tokenFile: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "With https://: the CA certificates (PEM) to trust instead of the system's, e.g. a private CA's.",
            valueName: "FILE"))
    var caFile: String?

    func validate() throws {
        if let f = caFile, !FileManager.default.isReadableFile(atPath: f) {
            throw ValidationError("--ca-file \(f): no such file, or it cannot be read")
        }
        if let a = api,
            ListenAddress(a.hasPrefix("https://") ? String(a.dropFirst(8)) : a).map({ !$0.isAnyPort }) != true
        {
            throw ValidationError("--api '\(a)' is not [https://]ADDR:PORT (e.g. 127.0.0.1:8053)")
        }
    }

    /// A client for calls that need at least `role`.
    func client(role: APIRole) throws -> APIClient {
        try client(choosing: { $0.role >= role }, need: "of role \(role) or above")
    }

    /// A client whose token (from the file) is the first that `choose` accepts; `need` says which
    /// one that is, when the file has none.
    func client(choosing choose: (APITokens.Entry) -> Bool, need: String) throws -> APIClient {
        let env = ProcessInfo.processInfo.environment
        var text = api ?? env["NEARCAST_API"] ?? "127.0.0.1:8053"
        let tls = text.hasPrefix("https://")
        if tls { text.removeFirst("https://".count) }
        guard let address = ListenAddress(text), !address.isAnyPort else {
            throw ValidationError("API address '\(text)' is not [https://]ADDR:PORT")
        }
        if let t = env["NEARCAST_TOKEN"], !t.isEmpty {
            return APIClient(address: address, token: t, tls: tls, caFile: caFile)
        }
        let path = tokenFile ?? "/etc/nearcast/tokens"
        guard FileManager.default.fileExists(atPath: path) else {
            if tokenFile != nil { throw APIClient.Failure(description: "\(path): no such tokens file") }
            return APIClient(address: address, token: nil, tls: tls, caFile: caFile)  // the API will say what it needs
        }
        let tokens: APITokens
        do { tokens = try APITokens.load(path: path) } catch { throw APIClient.Failure(description: error.description) }
        guard let entry = tokens.entries.first(where: choose) else {
            throw APIClient.Failure(description: "\(path) has no token \(need)")
        }
        return APIClient(address: address, token: entry.token, tls: tls, caFile: caFile)
    }
}
