import DNSWire
import Foundation
import Logging
import NearcastBasics
import NearcastDNSSEC
import NearcastFleet
import ServiceLifecycle

/// Signatures made anew before they end, and key rollovers driven (Sources/NearcastControl/README.md,
/// "Signatures refreshed"): each signed zone's names whose earliest signature has less than half
/// of `signature-validity` left are signed again, soonest first, a batch at a time, each batch one
/// change of the zone (`resign`): its serial goes up (journaled, as any change is), so
/// secondaries take the new signatures by IXFR. A zone signed whole at once has every signature
/// end together; the batches spread their renewal over minutes, so no change waits behind a zone
/// re-signed whole.
///
/// It owns what the refresh keeps between rounds (the names found due past a round's batch,
/// whether this server drives the rollovers) and reads what is served from `served` (its signed
/// copies, their keys); what is served changes only through `served`. A reload (seen by
/// `ServedConfig.reloadCount`) asks for a round at once, as keys may have come; a health change
/// (seen by `HealthWriteLog.changes`) for the geo answers' variants to be looked at.
package actor SignatureRefresh: Service {
    let served: ServedConfig
    /// Where the fleet's keys are kept (nil: each server keeps its own, and drives its own
    /// rollovers).
    let sharedKeys: (any SharedKeys)?
    /// Whether the zones are a fleet's (their serials are the store's).
    let zonesShared: Bool
    let healthWrites: HealthWriteLog?
    let logger: Logger
    /// Whether this server drives the rollovers of the zones it signs: alone always, in a fleet
    /// that keeps its keys while it holds `P signer` (`driveRollovers`).
    var drivesRollovers: Bool
    var backlogs = SignatureBacklogs()
    /// A round is wanted now (the signing duty taken).
    var roundWanted = false

    /// The most names one refresh signs again in a zone: about a second of signing on two cores.
    static let batch = 5_000

    package init(
        served: ServedConfig, sharedKeys: (any SharedKeys)?, zonesShared: Bool, healthWrites: HealthWriteLog?,
        logger: Logger
    ) {
        self.served = served
        self.sharedKeys = sharedKeys
        self.zonesShared = zonesShared
        self.healthWrites = healthWrites
        self.logger = logger
        drivesRollovers = sharedKeys == nil
    }

    /// Runs until the daemon's group shuts down: a round when the last one says, or at once
    /// after a reload.
    package func run() async {
        var reloads = await served.reloadCount
        var healthChanges = healthWrites?.changes ?? 0
        while true {
            let until = ContinuousClock.now + (await round())
            await served.refreshGeoVariants()
            // A second at a time, so that a reload, or a health change, is taken at once.
            while ContinuousClock.now < until {
                guard (try? await cancelWhenGracefulShutdown({ try await Task.sleep(for: .seconds(1)) })) != nil
                else { return }
                let nowReloads = await served.reloadCount
                if nowReloads != reloads || roundWanted {
                    // The round walks the zones again: a reload may have brought other names or keys.
                    (reloads, roundWanted) = (nowReloads, false)
                    backlogs = SignatureBacklogs()
                    break
                }
                if let changes = healthWrites?.changes, changes != healthChanges {
                    healthChanges = changes
                    await served.refreshGeoVariants()
                }
            }
        }
    }

    /// One round at `now`: for each signed zone, its keys read again (a rollover's new key comes
    /// so, and the times of its steps go back so), the rollover's next step scheduled, and the
    /// names due signed again. How long until the next round: two seconds while a zone has more
    /// names due than a round signs, else a twentieth of the validity (at most an hour) or the
    /// next step of a rollover if that comes sooner.
    package func round(now: Date = Date()) async -> Duration {
        let view = await served.signingView()
        let threshold = UInt32(clamping: Int(now.timeIntervalSince1970) + view.validity / 2)
        var wait = Duration.seconds(min(view.validity / 20, 3600))
        let store = view.stateDirectory.map(DNSSECKeyStore.init(stateDirectory:))
        for zone in view.zones {
            let origin = zone.origin
            var keys = zone.keys
            do {
                if let store { keys = try store.keys(of: origin) }
            } catch {
                logger.error("the zone's keys cannot be read", metadata: ["zone": "\(origin)", "why": "\(error)"])
            }
            let signers = Set(ZoneSigning.signer(keys, at: now, inUse: [], 0, 0).keys.map(\.keyTag))
            var (due, more): (ZoneSigning.Due, Bool)
            if let next = backlogs.next(origin, signers: signers, batch: Self.batch) {
                (due, more) = next
            } else {
                let signed = zone.signed
                guard
                    let found = try? await onOwnThread(
                        name: "nc-signing", background: true,
                        { ZoneSigning.due(in: signed, before: threshold, signers: signers) })
                else { continue }
                (due, more) = backlogs.walked(origin, found, signers: signers, batch: Self.batch)
                await served.keysInUse(origin, found.inUse)
            }
            // The keys published now: as their timing says, and any whose signatures are still
            // in the zone (as the last walk found them). The apex is due when its DNSKEY RRset
            // is not them.
            let published = ZoneSigning.signer(keys, at: now, inUse: due.inUse, 0, 0).published
            if ZoneSigning.keysDiffer(zone.signed, published), !due.names.contains(origin) {
                due.names.append(origin)
            }
            let intervals = KeyRollover.Intervals(
                propagation: TimeInterval(view.propagationDelay), dnskeyTTL: TimeInterval(zone.signed.soa.ttl),
                largestTTL: TimeInterval(due.largestTTL),
                resign: Double(zone.signed.nameCount) / Double(Self.batch) * 3 + 10)
            keys = await scheduleRollover(origin, keys, at: now, intervals, store: store)
            if let next = KeyRollover.nextEvent(keys, after: now) {
                wait = min(wait, .seconds(max(1, next.timeIntervalSince(now) + 0.5)))
            }
            guard !due.names.isEmpty else { continue }
            if more { wait = .seconds(2) }
            await resign(origin, due.names, keys: keys, more: more)
        }
        return wait
    }

    /// Signs `names` of zone `origin` again, with `keys`, in one change of the zone.
    func resign(_ origin: DNSName, _ names: [DNSName], keys: [DNSSECKey], more: Bool) async {
        let (logger, zonesShared) = (self.logger, self.zonesShared)
        await served.withTurn { s in
            guard let i = s.zones.firstIndex(where: { $0.origin == origin }), s.signing.signs(origin) else { return }
            let started = ContinuousClock.now
            let allKeys = s.signing.keys(with: keys, for: origin)
            do {
                let source = s.running.zones[i]
                let zone = s.zones[i]
                if !zonesShared && !zone.fromSeveralFiles && source.catalog != .produce {
                    // A change of the serial alone, which re-signs the names due.
                    let (changed, changeset) = try zone.replacing(
                        [], serial: zone.serial &+ 1, source: "signature refresh \(origin)")
                    try await s.commit(i, changed, changeset, started: started, resign: Set(names), keys: allKeys)
                } else {
                    // A fleet's serial is the store's, and a zone read from several files, or a
                    // catalog made here, is not written back: the signatures are made anew under
                    // the serial they have.
                    _ = try await s.switchTo(
                        s.running, s.zones, started: started, oneChange: true,
                        zoneChanges: [.init(before: zone, after: zone, owners: [])], keys: allKeys,
                        resign: [origin: Set(names)])
                }
                logger.info(
                    "signatures refreshed",
                    metadata: [
                        "zone": "\(origin)", "names": "\(names.count)", "more-due": "\(more)",
                        "serial": "\(s.zones[i].serial)", "ms": "\((ContinuousClock.now - started).seconds * 1000)",
                    ])
            } catch {
                logger.error("signatures not refreshed", metadata: ["zone": "\(origin)", "why": "\(error)"])
            }
        }
    }

    /// A rollover's next step of zone `origin`'s `keys`, in the keys' files; the keys with it.
    /// Scheduled by one server: alone, this one; in a fleet that keeps its keys, the one that
    /// holds the signing duty, which writes the times to the store, whence every server (this
    /// one too) takes them. The others sign with the times they are given.
    func scheduleRollover(
        _ origin: DNSName, _ keys: [DNSSECKey], at now: Date, _ intervals: KeyRollover.Intervals,
        store: DNSSECKeyStore?
    ) async -> [DNSSECKey] {
        guard drivesRollovers else { return keys }
        let (scheduled, changed) = KeyRollover.schedule(keys, at: now, intervals)
        for key in changed {
            do {
                if let sharedKeys { try await sharedKeys.put(key) }
                try store?.update(key)
                logger.notice(
                    "key rollover scheduled",
                    metadata: [
                        "zone": "\(origin)", "key": "\(key.keyTag)",
                        "activate": "\(key.timing.activate.map { "\($0)" } ?? "-")",
                        "inactive": "\(key.timing.inactive.map { "\($0)" } ?? "-")",
                        "delete": "\(key.timing.delete.map { "\($0)" } ?? "-")",
                    ])
            } catch {
                logger.error("a key's new times cannot be kept", metadata: ["key": "\(key.keyTag)", "why": "\(error)"])
            }
        }
        return scheduled
    }

    /// Whether this server drives the fleet's key rollovers (it holds `P signer`), and which
    /// server does (nil: not known). Taking the duty asks for a round at once: a rollover
    /// begun meanwhile is scheduled without waiting for the next.
    package func driveRollovers(_ held: Bool, holder: String?) {
        if held && !drivesRollovers {
            logger.notice("now drives the fleet's key rollovers")
            roundWanted = true
        } else if !held && drivesRollovers {
            logger.notice(
                "the fleet's key rollovers are driven by another server", metadata: ["holder": "\(holder ?? "-")"])
        }
        drivesRollovers = held
    }
}

/// What the refresh's last walk over a zone found due past the batch it signed, soonest first:
/// the next rounds take their batches from it rather than walk the zone again (a second a walk at
/// a million names, two hundred walks in one renewal). Kept with the signers, the keys in use and
/// the largest TTL the walk saw; other signers walk again.
struct SignatureBacklogs {
    struct Backlog {
        var names: ArraySlice<DNSName>
        var signers: Set<UInt16>
        var inUse: Set<UInt16>
        var largestTTL: UInt32
    }
    var backlogs: [DNSName: Backlog] = [:]

    /// The next `batch` names of zone `origin` due for signatures, from its backlog when it has
    /// one for `signers`, and whether more are due after them; nil when the zone must be walked.
    mutating func next(_ origin: DNSName, signers: Set<UInt16>, batch: Int) -> (due: ZoneSigning.Due, more: Bool)? {
        guard var backlog = backlogs[origin], backlog.signers == signers else { return nil }
        let names = Array(backlog.names.prefix(batch))
        backlog.names = backlog.names.dropFirst(batch)
        backlogs[origin] = backlog.names.isEmpty ? nil : backlog
        return (
            ZoneSigning.Due(names: names, inUse: backlog.inUse, largestTTL: backlog.largestTTL),
            !backlog.names.isEmpty
        )
    }

    /// What a walk of zone `origin` found due (`ZoneSigning.due`), its first `batch` names, the
    /// rest kept as the zone's backlog; and whether more are due after them.
    mutating func walked(_ origin: DNSName, _ found: ZoneSigning.Due, signers: Set<UInt16>, batch: Int)
        -> (due: ZoneSigning.Due, more: Bool)
    {
        var due = found
        let rest = due.names.dropFirst(batch)
        backlogs[origin] =
            rest.isEmpty
            ? nil : Backlog(names: rest, signers: signers, inUse: found.inUse, largestTTL: due.largestTTL)
        due.names = Array(due.names.prefix(batch))
        return (due, !rest.isEmpty)
    }
}
