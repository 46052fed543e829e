import NearcastAnswers
import NearcastConfiguration

extension ResponseRateLimiter.Limits {
    /// The slow path's limits from the config's `rrl` section.
    public init(_ r: RRLSettings) {
        self.init(
            responses: Double(r.responsesPerSecond), nxdomains: r.nxdomainsPerSecond.map(Double.init),
            errors: r.errorsPerSecond.map(Double.init), slip: r.slip, ipv4Prefix: r.ipv4Prefix,
            ipv6Prefix: r.ipv6Prefix, window: Double(r.window), exempt: r.exempt.map { ($0.address, $0.length) })
    }
}
