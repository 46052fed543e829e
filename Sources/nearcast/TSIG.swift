import ArgumentParser
import DNSWire
import NearcastConfiguration
import NearcastTSIG

/// `nearcast tsig ...`: transaction signature keys.
struct TSIG: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tsig", abstract: "TSIG keys (RFC 8945).", subcommands: [KeyGen.self])

    /// `nearcast tsig keygen NAME`: a new key in BIND's syntax, as `tsig-keygen` prints it.
    struct KeyGen: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "keygen",
            abstract: "Print a new TSIG key with a random secret, in BIND key syntax.",
            discussion: """
                Save it as a file and name that file under tsig: key-files: in the config; give the same \
                file to clients (dig -k FILE, nsupdate -k FILE, kdig -k FILE).
                """)

        @Argument(help: "The key's name, a domain name (e.g. xfr.example.).")
        var name: String

        @Option(name: [.short, .long], help: "hmac-sha256, hmac-sha384, hmac-sha512 or hmac-sha1.")
        var algorithm: String = TSIGAlgorithm.hmacSHA256.rawValue

        func run() throws {
            guard let alg = TSIGAlgorithm(name: algorithm) else {
                throw ValidationError(
                    "algorithm '\(algorithm)' is not supported (supported: \(TSIGAlgorithm.allCases.map(\.rawValue).joined(separator: ", ")))"
                )
            }
            let keyName: DNSName
            do { keyName = try DNSName(name.hasSuffix(".") ? name : name + ".") } catch {
                throw ValidationError("'\(name)' is not a domain name: \(error)")
            }
            print(TSIGKeyFile.text(for: .generate(name: keyName, algorithm: alg)), terminator: "")
        }
    }
}
