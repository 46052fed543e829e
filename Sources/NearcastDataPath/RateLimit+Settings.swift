import NearcastConfiguration

extension RateLimit {
    /// XDP's limits from the config's `rrl` section; nil when they are off. XDP's answers are
    /// positive, NODATA or NXDOMAIN: two of the section's three limits are theirs (its errors
    /// are the slow path's).
    public init?(_ rrl: RRLSettings) {
        let nxdomains = rrl.nxdomainsPerSecond ?? rrl.responsesPerSecond
        guard rrl.responsesPerSecond != 0 || nxdomains != 0 else { return nil }
        self.init(
            rate: UInt32(rrl.responsesPerSecond), nxdomainRate: UInt32(nxdomains), slip: UInt32(rrl.slip),
            ipv4Prefix: UInt32(rrl.ipv4Prefix), ipv6Prefix: UInt32(rrl.ipv6Prefix), window: UInt32(rrl.window),
            exempt: rrl.exempt.map { ($0.address, $0.length) })
    }
}
