import Foundation

/// A zone-signing key rollover by pre-publication (RFC 7583 §3.2), carried through its steps by
/// the server that signs: `nearcast dnssec roll` brings in a new ZSK, published now and not yet
/// active (`KeyTiming.awaitsSchedule`); `schedule` gives it its activation once it has been in
/// the DNSKEY RRset long enough for every resolver to have it (Ipub: the propagation delay and
/// the DNSKEY TTL), and the key it succeeds its end: inactive then, and removed once every
/// signature it made has been replaced and has expired from caches (Iret: the time to re-sign
/// the zone, the propagation delay, the zone's largest TTL). The times are written into the keys'
/// files, so a restart carries on where the rollover was.
public enum KeyRollover {
    /// The intervals of RFC 7583 §3.2.1 as they apply to a zone.
    public struct Intervals: Sendable {
        /// Dprp: how long a change of the zone takes to reach every server that serves it.
        public var propagation: TimeInterval
        /// TTLkey: the DNSKEY RRset's TTL.
        public var dnskeyTTL: TimeInterval
        /// TTLsig: the largest TTL of the zone's signatures.
        public var largestTTL: TimeInterval
        /// Dsgn: how long re-signing the whole zone with the new key takes.
        public var resign: TimeInterval

        public init(propagation: TimeInterval, dnskeyTTL: TimeInterval, largestTTL: TimeInterval, resign: TimeInterval)
        {
            (self.propagation, self.dnskeyTTL, self.largestTTL, self.resign) = (
                propagation, dnskeyTTL, largestTTL, resign
            )
        }

        /// Ipub: from publication to activation.
        public var publication: TimeInterval { propagation + dnskeyTTL }
        /// Iret: from the old key's last signature made to its removal.
        public var retirement: TimeInterval { resign + propagation + largestTTL }
    }

    /// `keys` with each new key waiting for its schedule given one, and the key it succeeds (the
    /// active ZSK of its algorithm with no end yet) its end; the keys changed, to be written.
    public static func schedule(_ keys: [DNSSECKey], at now: Date, _ intervals: Intervals) -> (
        keys: [DNSSECKey], changed: [DNSSECKey]
    ) {
        var keys = keys
        var changed: [Int] = []
        for i in keys.indices where keys[i].timing.awaitsSchedule {
            let activate = max(now, keys[i].timing.publish!) + intervals.publication
            keys[i].timing.activate = activate
            changed.append(i)
            for j in keys.indices
            where j != i && keys[j].isZSK && keys[j].algorithm == keys[i].algorithm && keys[j].timing.isActive(at: now)
                && keys[j].timing.inactive == nil
            {
                keys[j].timing.inactive = activate
                keys[j].timing.delete = activate + intervals.retirement
                changed.append(j)
            }
        }
        return (keys, Set(changed).sorted().map { keys[$0] })
    }

    /// The next time after `now` at which one of `keys` changes state (nil: none will).
    public static func nextEvent(_ keys: [DNSSECKey], after now: Date) -> Date? {
        keys.flatMap { $0.timing.events(after: now) }.min()
    }

    /// A new ZSK to succeed `keys`' active one: of its algorithm, published at `now`, its
    /// activation left to `schedule`. Nil, with the reason, when the zone has no active ZSK (a
    /// combined key cannot be rolled by pre-publication alone: its DS at the parent changes) or
    /// a rollover is under way.
    public static func successor(in keys: [DNSSECKey], at now: Date) -> Result<DNSSECKey, RolloverRefusal> {
        if keys.contains(where: { $0.timing.awaitsSchedule || ($0.timing.activate.map { $0 > now } ?? false) }) {
            return .failure(RolloverRefusal("a rollover is under way: a key is published and not active yet"))
        }
        guard let current = keys.first(where: { $0.isZSK && $0.timing.isActive(at: now) && $0.timing.inactive == nil })
        else {
            return .failure(
                RolloverRefusal(
                    "the zone has no active zone-signing key: a ZSK is rolled by pre-publication; a combined key's rollover changes the DS at the parent. Make a ZSK with `nearcast dnssec keygen ZONE --zsk` and the combined key signs the DNSKEY RRset only"
                ))
        }
        var key = DNSSECKey.generate(zone: current.zone, algorithm: current.algorithm, flags: DNSSECKey.zsk)
        key.timing = KeyTiming(publish: now)
        return .success(key)
    }

    public struct RolloverRefusal: Error, CustomStringConvertible {
        public let description: String
        init(_ d: String) { description = d }
    }
}
