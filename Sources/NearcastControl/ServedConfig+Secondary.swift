import DNSWire
import NearcastConfiguration
import NearcastTSIG
import NearcastZones

/// The secondary zones in what is served: where each is (served, or `unavailable`: SERVFAIL), and
/// those transferred whole waiting for their first serve (`FirstServeBatch`). Their transfers
/// are served by `SecondaryServing`.
extension ServedConfig {
    /// Secondary zone `origin` as configured, the zone served (nil: not served), and the TSIG
    /// keys; nil when no secondary zone `origin` is configured.
    func secondary(_ origin: DNSName) -> (source: ZoneSource, zone: Zone?, keys: TSIGKeyring)? {
        if secondaryPlaces == nil {
            var places: [DNSName: (served: Bool, index: Int)] = [:]
            for (i, z) in unavailable.enumerated() { places[z.origin] = (false, i) }
            for (i, z) in running.zones.enumerated() where z.isSecondary { places[z.origin] = (true, i) }
            secondaryPlaces = places
        }
        guard let place = secondaryPlaces?[origin] else { return nil }
        return place.served
            ? (running.zones[place.index], zones[place.index], running.tsigKeys)
            : (unavailable[place.index], nil, running.tsigKeys)
    }

    /// The secondary zones configured, served or not.
    var secondarySources: [ZoneSource] { running.zones.filter(\.isSecondary) + unavailable }

    /// Adds `source`'s zone, transferred whole, to the zones waiting for their first serve; when
    /// their batch closes (`FirstServeBatch.join`). Not on a turn: a zone joins the batch while
    /// the last one's switch is under way.
    func joinFirstServe(_ source: ZoneSource, _ zone: Zone, window: Duration) -> ContinuousClock.Instant {
        firstServes.join(source, zone, window: window)
    }
}
