import DNSWire
import Foundation
import Logging
import NearcastAnswers
import NearcastBasics
import NearcastDNSSEC
import NearcastDataPath
import NearcastFleet
import NearcastGeo
import NearcastZones
import ServiceLifecycle

/// Signatures made anew before they end (Sources/NearcastControl/README.md, "Signatures refreshed"):
/// each signed zone's names whose earliest signature has less than half of `signature-validity`
/// left are signed again, soonest first, a batch at a time, each batch one change of the zone:
/// its serial goes up (journaled, as any change is), so secondaries take the new signatures by
/// IXFR. A zone signed whole at once has every signature end together; the batches spread
/// their renewal over minutes, so no change waits behind a zone re-signed whole.
extension ServedConfig {
    /// The most names one refresh signs again in a zone: about a second of signing on two cores.
    static let refreshBatch = 5_000

    /// One round of the refresh at `now`: for each signed zone, its keys read again (a rollover's
    /// new key comes so, and the times of its steps go back so), the rollover's next step
    /// scheduled, and the names due signed again. How long until the next round: two seconds
    /// while a zone has more names due than a round signs, else `refreshInterval` or the next
    /// step of a rollover if that comes sooner.
    package func refreshSignatures(now: Date = Date()) async -> Duration {
        let half = running.signatureValidity / 2
        let threshold = UInt32(clamping: Int(now.timeIntervalSince1970) + half)
        var wait = refreshInterval
        let store = running.stateDirectory.map(DNSSECKeyStore.init(stateDirectory:))
        for (origin, signed) in signing.signedCopies {
            var keys = signing.copies[origin]?.keys ?? []
            do {
                if let store { keys = try store.keys(of: origin) }
            } catch {
                logger.error("the zone's keys cannot be read", metadata: ["zone": "\(origin)", "why": "\(error)"])
            }
            let signers = Set(ZoneSigning.signer(keys, at: now, inUse: [], 0, 0).keys.map(\.keyTag))
            var (due, more): (ZoneSigning.Due, Bool)
            if let next = signing.fromBacklog(origin, signers: signers, batch: Self.refreshBatch) {
                (due, more) = next
            } else {
                guard
                    let found = try? await onOwnThread(
                        name: "nc-signing", background: true,
                        { ZoneSigning.due(in: signed, before: threshold, signers: signers) })
                else { continue }
                (due, more) = signing.walked(origin, found, signers: signers, batch: Self.refreshBatch)
            }
            // The keys published now: as their timing says, and any whose signatures are still
            // in the zone (as the last walk found them). The apex is due when its DNSKEY RRset
            // is not them.
            let published = ZoneSigning.signer(keys, at: now, inUse: due.inUse, 0, 0).published
            if ZoneSigning.keysDiffer(signed, published), !due.names.contains(origin) { due.names.append(origin) }
            // A rollover's next step, in the keys' files.
            let intervals = KeyRollover.Intervals(
                propagation: TimeInterval(running.propagationDelay), dnskeyTTL: TimeInterval(signed.soa.ttl),
                largestTTL: TimeInterval(due.largestTTL),
                resign: Double(signed.nameCount) / Double(Self.refreshBatch) * 3 + 10)
            // Scheduled by one server: alone, this one; in a fleet that keeps its keys, the one
            // that holds the signing duty, which writes the times to the store, whence every
            // server (this one too) takes them. The others sign with the times they are given.
            let (scheduled, changed) =
                drivesRollovers ? KeyRollover.schedule(keys, at: now, intervals) : (keys, [])
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
                    logger.error(
                        "a key's new times cannot be kept", metadata: ["key": "\(key.keyTag)", "why": "\(error)"])
                }
            }
            keys = scheduled
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
        await takeTurn()
        defer { endTurn() }
        guard let i = zones.firstIndex(where: { $0.origin == origin }), signing.signs(origin) else { return }
        let started = ContinuousClock.now
        let allKeys = signing.keys(with: keys, for: origin)
        do {
            let source = running.zones[i]
            if shared == nil && !zones[i].fromSeveralFiles && source.catalog != .produce {
                // A change of the serial alone, which re-signs the names due.
                let zone = zones[i]
                let (changed, changeset) = try zone.replacing(
                    [], serial: zone.serial &+ 1, source: "signature refresh \(origin)")
                try await commit(i, changed, changeset, started: started, resign: Set(names), keys: allKeys)
            } else {
                // A fleet's serial is the store's, and a zone read from several files, or a
                // catalog made here, is not written back: the signatures are made anew under
                // the serial they have.
                let zone = zones[i]
                _ = try await switchTo(
                    running, zones, started: started, oneChange: true,
                    zoneChanges: [.init(before: zone, after: zone, owners: [])], keys: allKeys,
                    resign: [origin: Set(names)])
            }
            logger.info(
                "signatures refreshed",
                metadata: [
                    "zone": "\(origin)", "names": "\(names.count)", "more-due": "\(more)",
                    "serial": "\(zones[i].serial)", "ms": "\((ContinuousClock.now - started).seconds * 1000)",
                ])
        } catch {
            logger.error("signatures not refreshed", metadata: ["zone": "\(origin)", "why": "\(error)"])
        }
    }

    /// From now on the fleet's keys are kept in its store (`keys`), and this server drives
    /// rollovers only once it holds the signing duty (`driveRollovers`).
    package func shareKeys(_ keys: any SharedKeys) {
        sharedKeys = keys
        drivesRollovers = false
    }

    /// Whether this server drives the fleet's key rollovers (it holds `P signer`), and which
    /// server does (nil: not known). Taking the duty asks for a round at once: a rollover
    /// begun meanwhile is scheduled without waiting for the next.
    package func driveRollovers(_ held: Bool, holder: String?) {
        if held && !drivesRollovers {
            logger.notice("now drives the fleet's key rollovers")
            refreshRequested = true
        } else if !held && drivesRollovers {
            logger.notice(
                "the fleet's key rollovers are driven by another server", metadata: ["holder": "\(holder ?? "-")"])
        }
        drivesRollovers = held
    }

    /// The fast path made to hold the signatures of the geo answers' variants kept now (none
    /// without `geo`), so XDP answers DO queries about geo names with them.
    package func writeGeoVariants(_ geo: GeoTable?) {
        guard let fastPath = writer?.fastPath else { return }
        let variants =
            geo.map {
                FastPath.geoSignatures(signing.onlineSignatures, geo: $0, now: UInt32(Date().timeIntervalSince1970))
            } ?? []
        do { try fastPath.writeGeoSignatures(variants) } catch {
            logger.error("signed geo answers not written to the fast path", metadata: ["why": "\(error)"])
        }
    }

    /// The variants the geo names answer with now signed ahead where they are not, or their
    /// signatures near their end, and the fast path given them: after a health change (whose new
    /// node sets the slow path signs as they are asked for meanwhile) and each refresh round.
    package func refreshGeoVariants() async {
        guard let geo = live.current?.table, !signing.copies.isEmpty else { return }
        let online = signing.onlineSignatures
        let made = try? await onOwnThread(name: "nc-signing", background: true) {
            online.sign(geo.answerVariants(), now: UInt32(Date().timeIntervalSince1970))
        }
        if let made, made.signed > 0 {
            logger.info(
                "geo answers signed", metadata: ["variants": "\(made.variants)", "signed-now": "\(made.signed)"])
        }
        // Those the slow path signed as they were asked too (the map is written where it changed).
        writeGeoVariants(geo)
    }

    /// Whether a health change asked for the geo variants to be looked at (and the request taken).
    nonisolated func takeVariantsRequest() -> Bool {
        variantsRequested.withLock { r in
            defer { r = false }
            return r
        }
    }

    /// Asks for the geo variants to be looked at (`refreshGeoVariants`) by the refresh's next
    /// second: a health change may make node sets no variant was signed for.
    package nonisolated func requestVariants() { variantsRequested.withLock { $0 = true } }

    /// How long the refresh waits between rounds: a twentieth of the validity, at most an hour.
    var refreshInterval: Duration { .seconds(min(running.signatureValidity / 20, 3600)) }

    /// Whether a reload asked for a round now (and the request taken). The round walks the
    /// zones again: a reload may have brought other names or keys.
    func takeRefreshRequest() -> Bool {
        defer { refreshRequested = false }
        if refreshRequested { signing.backlogs = [:] }
        return refreshRequested
    }
}

/// Runs the signatures' refresh (`ServedConfig.refreshSignatures`) until the daemon's group
/// shuts down: a round when the last one says, or at once after a reload.
package struct SignatureRefresh: Service {
    let served: ServedConfig

    package init(served: ServedConfig) { self.served = served }

    package func run() async {
        while true {
            let until = ContinuousClock.now + (await served.refreshSignatures())
            await served.refreshGeoVariants()
            // A second at a time, so that a reload's request for a round, or a health change's
            // for the geo variants, is taken at once.
            while ContinuousClock.now < until {
                guard (try? await cancelWhenGracefulShutdown({ try await Task.sleep(for: .seconds(1)) })) != nil
                else { return }
                if await served.takeRefreshRequest() { break }
                if served.takeVariantsRequest() { await served.refreshGeoVariants() }
            }
        }
    }
}
