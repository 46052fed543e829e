/// Where the management API listens and whose tokens it takes (`api:` in the config, or
/// `nearcastd --api ADDR:PORT --api-tokens FILE`).
public struct APISettings: Hashable, Sendable {
    /// nil: no management API.
    public var listen: ListenAddress?
    /// The tokens file (`ROLE TOKEN` lines); nil: no token is valid, so only the liveness
    /// endpoint answers.
    public var tokensPath: String?

    public init(listen: ListenAddress? = nil, tokensPath: String? = nil) {
        self.listen = listen
        self.tokensPath = tokensPath
    }

    /// Loads the tokens this configuration names (none without a file).
    public func loadTokens() throws(DiagnosticsError) -> APITokens {
        guard let path = tokensPath else { return APITokens() }
        return try APITokens.load(path: path)
    }
}
