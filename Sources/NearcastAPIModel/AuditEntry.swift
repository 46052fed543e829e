/// One change made through the management API (or a reload), as the audit log keeps it and
/// `GET /v1/audit` returns it.
public struct AuditEntry: Codable, Equatable, Sendable {
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
    /// In a fleet, the server that took the change (its name in the store's audit lines); absent
    /// in a server's own log.
    public var server: String?

    public init(
        time: String, who: String, action: String, target: String, detail: String, before: String, after: String,
        outcome: String, server: String? = nil
    ) {
        self.time = time
        self.who = who
        self.action = action
        self.target = target
        self.detail = detail
        self.before = before
        self.after = after
        self.outcome = outcome
        self.server = server
    }
}
