import NearcastBasics

/// Where the management API listens and whose tokens it takes (`api:` in the config, or
/// `nearcastd --api ADDR:PORT --api-tokens FILE`).
public struct APISettings: Hashable, Sendable {
    /// nil: no management API.
    public var listen: ListenAddress?
    /// The tokens file (`ROLE TOKEN` lines); nil: no token is valid, so only the liveness
    /// endpoint answers.
    public var tokensPath: String?
    /// TLS (`tls: { certificate: PEM, key: PEM }`): the server's certificate chain and private key
    /// files; nil: plain HTTP (fine on 127.0.0.1, the default address).
    public var tlsCertificate: String?
    public var tlsKey: String?

    public init(
        listen: ListenAddress? = nil, tokensPath: String? = nil, tlsCertificate: String? = nil, tlsKey: String? = nil
    ) {
        self.listen = listen
        self.tokensPath = tokensPath
        self.tlsCertificate = tlsCertificate
        self.tlsKey = tlsKey
    }

    /// Loads the tokens this configuration names (none without a file).
    public func loadTokens() throws(DiagnosticsError) -> APITokens {
        guard let path = tokensPath else { return APITokens() }
        return try APITokens.load(path: path)
    }
}
