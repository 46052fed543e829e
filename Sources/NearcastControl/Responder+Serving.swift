import DNSWire
import NearcastAnswers
import NearcastConfiguration
import NearcastGeo
import NearcastServer
import NearcastTransfer
import NearcastZones

/// The slow path's responder and the answers' counters for a config served (`ServedConfig.switchTo`,
/// and the daemon's first responder).
extension Responder {
    /// The responder for `config`: its zones, its UDP size, its TSIG keys, and the geo table.
    package init(
        serving config: NearcastConfig, zones: [Zone], geo: GeoTable?, cookies: ServerCookies?,
        counts: AnswerCounts.View?, histories: [DNSName: ZoneHistory] = [:], unavailable: [ZoneSource] = []
    ) {
        let origins: Set<DNSName> = Set(unavailable.map(\.origin))
        self.init(
            authority: Authority(zones: zones, unavailable: origins), maxUDPPayload: config.maxUDPPayload, geo: geo,
            keys: config.tsigKeys, cookies: cookies, identity: config.identity)
        self.counts = counts
        let secondaries: [ZoneSource] = (config.zones + unavailable).filter(\.isSecondary)
        transfers = ZoneTransfers(
            rules: Dictionary(config.zones.map { ($0.origin, $0.allowTransfer) }, uniquingKeysWith: { a, _ in a }),
            histories: histories,
            primaries: Dictionary(secondaries.map { ($0.origin, $0.primaries) }, uniquingKeysWith: { a, _ in a }))
    }
}

extension AnswerCounts {
    /// The counters of `zones` and of `geo`'s nodes.
    package func view(_ zones: [Zone], _ geo: GeoTable?) -> View {
        view(zones: zones.map(\.origin), nodes: geo?.allNodes.map(\.id) ?? [])
    }
}
