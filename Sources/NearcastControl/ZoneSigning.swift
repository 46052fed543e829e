import DNSWire
import Foundation
import Logging
import NearcastAnswers
import NearcastBasics
import NearcastConfiguration
import NearcastDNSSEC
import NearcastGeo
import NearcastTransfer
import NearcastZones

/// The zones this server signs (Sources/NearcastControl/README.md, "The daemon signs"): each primary zone
/// whose keys are in the state directory (`STATE-DIR/dnssec/ZONE/`). What the zone files, their
/// journals, the API and a fleet's store hold is the zone's data, its source; what is served, to
/// queries, to the fast path and to zone transfers, is its signed copy, kept beside the source
/// here. A zone is signed whole when it is first served with its keys (at the start, or once a
/// reload finds keys or other keys for it); from then on a change of the source re-signs what
/// the change reaches in the signed copy (`ZoneSigner.signChange`), never the zone.
///
/// A value: ServedConfig owns it, works on a copy during a change, and keeps the copy only once
/// the change is served, so a change refused leaves it as it was.
package struct ZoneSigning: Sendable {
    /// How long signatures are valid, and how far before now they start (clocks that lag).
    package var validity: Duration = .seconds(14 * 86400)
    package var inceptionOffset: Duration = .seconds(3600)

    /// A signed zone: its keys, the source it was signed from, and the signed copy.
    struct Copy: Sendable {
        /// The zone's keys, whatever their state.
        var keys: [DNSSECKey]
        /// The tags of the keys that signed it last.
        var signers: [UInt16]
        var source: Zone
        var signed: Zone
        /// The names answered online (geo names) that the signed copy's chain holds, by type.
        var online: [DNSName: Set<RRType>] = [:]
    }
    private(set) var copies: [DNSName: Copy] = [:]
    /// The signatures of the answers geo names make, one per daemon (a cache every responder
    /// shares; its signers are set as a change is served: `useOnlineSigners`).
    package let onlineSignatures = OnlineSignatures()
    /// The geo compile and signers whose variants were last signed ahead (`useOnlineSigners`).
    private var variantsSigned: (geo: UInt64, signers: [DNSName: [UInt16]])?
    /// The tags of the keys each zone's signed copy still has signatures of (the refresh's last
    /// walk over it): such a key stays published, whatever its timing says, until none is left.
    var inUse: [DNSName: Set<UInt16>] = [:]
    /// The signer of a zone with `keys` at `now`: the keys active then sign, the keys published
    /// then (and those whose signatures are still in the zone, `inUse`) are its DNSKEY RRset.
    static func signer(
        _ keys: [DNSSECKey], at now: Date, inUse: Set<UInt16>, _ inception: UInt32, _ expiration: UInt32
    ) -> ZoneSigner {
        let active = keys.filter { $0.timing.isActive(at: now) }
        let published = keys.filter { $0.timing.isPublished(at: now) || inUse.contains($0.keyTag) }
        return ZoneSigner(keys: active, published: published, inception: inception, expiration: expiration)
    }

    /// The keys of each zone signed here, with `origin`'s replaced by `keys`.
    func keys(with keys: [DNSSECKey], for origin: DNSName) -> [DNSName: [DNSSECKey]] {
        var all = copies.mapValues(\.keys)
        all[origin] = keys
        return all
    }

    /// The keys of each zone to sign: the primary zones of `config` whose keys the state directory
    /// holds (none without a state directory). Blocking: reads the key files.
    package static func keys(_ config: NearcastConfig) throws(DiagnosticsError) -> [DNSName: [DNSSECKey]] {
        guard let stateDirectory = config.stateDirectory else { return [:] }
        let store = DNSSECKeyStore(stateDirectory: stateDirectory)
        var out: [DNSName: [DNSSECKey]] = [:]
        for source in config.zones where !source.isSecondary {
            let keys = try store.keys(of: source.origin)
            if !keys.isEmpty { out[source.origin] = keys }
        }
        return out
    }

    package init() {}

    /// The signed copies served now, by zone.
    var signedCopies: [DNSName: Zone] { copies.mapValues(\.signed) }

    /// The names of `signed` whose earliest signature ends before `threshold` (seconds since
    /// 1970), soonest first. A walk over every name
    /// (a second at a million): on a thread of its own.
    ///
    /// Due too: a name signed by a key that no longer signs (a rollover's old key; soonest, as
    /// if its signatures had ended). With them, the tags of every key that signed something, and
    /// the largest TTL signed (RFC 7583's TTLsig).
    static func due(in signed: Zone, before threshold: UInt32, signers: Set<UInt16>) -> Due {
        var due: [(UInt32, DNSName)] = []
        var (inUse, largestTTL) = (Set<UInt16>(), UInt32(0))
        signed.forEachName(from: 0, to: signed.nameCount) { name, node in
            guard let sigs = node.sets.first(where: { $0.type == .rrsig }) else { return }
            var end = UInt32.max
            for rd in sigs.rdatas {
                guard let s = Signature(rd) else { continue }
                inUse.insert(s.keyTag)
                largestTTL = max(largestTTL, s.originalTTL)
                end = min(end, signers.contains(s.keyTag) ? s.expiration : 0)
            }
            if end < threshold { due.append((end, name)) }
        }
        due.sort { $0.0 < $1.0 }
        return Due(names: due.map(\.1), inUse: inUse, largestTTL: largestTTL)
    }

    /// What `due` found.
    struct Due: Sendable {
        var names: [DNSName]
        var inUse: Set<UInt16>
        var largestTTL: UInt32
    }

    /// Whether the apex of `signed` has a DNSKEY RRset other than `published`'s keys.
    static func keysDiffer(_ signed: Zone, _ published: [DNSSECKey]) -> Bool {
        let now = (signed.rrset(signed.origin, .dnskey)?.rdatas ?? []).compactMap { rd -> [UInt8]? in
            if case .unknown(let b) = rd { b } else { nil }
        }
        return Set(now) != Set(published.map(\.dnskeyRData))
    }

    /// Says how many variants the geo names' answers are, and how many were signed now.
    package static func logVariants(_ variants: Int, _ signed: Int, since: ContinuousClock.Instant, _ logger: Logger) {
        guard variants > 0 else { return }
        logger.info(
            "geo answers signed",
            metadata: [
                "variants": "\(variants)", "signed-now": "\(signed)",
                "seconds": "\((ContinuousClock.now - since).seconds)",
            ])
    }

    /// Whether zone `origin` is signed here.
    package func signs(_ origin: DNSName) -> Bool { copies[origin] != nil }

    /// What `serve` gives: the zones to serve (each signed zone's signed copy), the changes of
    /// them for the fast path (nil: a whole image), and each signed zone's changeset (what IXFR
    /// sends) when a change re-signed it, or nil when it was signed whole.
    package struct Served {
        package var zones: [Zone]
        package var changes: [AnswerImage.Change]?
        package var changesets: [DNSName: ZoneChangeset?] = [:]
        /// Zones signed until now and served unsigned from now on (their keys gone).
        package var unsigned: Set<DNSName> = []
        /// What signs each signed zone's geo answers.
        package var onlineSigners: [DNSName: OnlineSignatures.Signer] = [:]
    }

    /// The signer of the answers geo names make in zone `origin`, with the keys that sign its
    /// data now; each signature valid as the zone's are, from the time it is made.
    func onlineSigner(_ origin: DNSName, _ signer: ZoneSigner) -> OnlineSignatures.Signer {
        let (keys, validity, offset) = (signer.keys, validity.seconds, inceptionOffset.seconds)
        return OnlineSignatures.Signer(
            keyTags: keys.map(\.keyTag), renewBefore: UInt32(validity / 2),
            sign: { set in
                let t = Date().timeIntervalSince1970
                let now = ZoneSigner(keys: keys, inception: UInt32(t - offset), expiration: UInt32(t + validity))
                return try now.signatures(set, origin: origin)
            })
    }

    /// From now on the geo answers of the zones `served` signs are signed, and each variant the
    /// geo names of `geo` answer with now is signed ahead if it is not yet (when the compile or
    /// the signers changed since the last time). Blocking: a signature per new variant. Returns
    /// how many variants there are and how many were signed now (none, when there are no signed
    /// geo names any more); nil when nothing changed.
    package mutating func useOnlineSigners(_ served: Served, geo: GeoTable?) -> (variants: Int, signed: Int)? {
        onlineSignatures.use(served.onlineSigners)
        guard let geo, !served.onlineSigners.isEmpty else {
            defer { variantsSigned = nil }
            return variantsSigned == nil ? nil : (0, 0)
        }
        let tags = served.onlineSigners.mapValues(\.keyTags)
        if let last = variantsSigned, last.geo == geo.serial, last.signers == tags { return nil }
        variantsSigned = (geo.serial, tags)
        return onlineSignatures.sign(geo.answerVariants(), now: UInt32(Date().timeIntervalSince1970))
    }

    /// The zones to serve for the sources `zones`, signed with `keys` (nil: the keys as they
    /// were), and `changes` of the sources (nil: a whole image) made changes of the signed
    /// copies. `resign`: names of a zone to sign again though their data is unchanged (their
    /// signatures near their end). Blocking: a zone signed whole costs a signature per RRset.
    package mutating func serve(
        _ zones: [Zone], keys: [DNSName: [DNSSECKey]]? = nil, changes: [AnswerImage.Change]?,
        resign: [DNSName: Set<DNSName>] = [:], geo: GeoTable? = nil, now: Date = Date()
    ) throws -> Served {
        let keys = keys ?? copies.mapValues(\.keys)
        var changes = changes
        var served = Served(zones: [], changes: changes)
        let allOnline = geo?.onlineTypes ?? [:]
        var next: [DNSName: Copy] = [:]
        let t = now.timeIntervalSince1970
        let (inception, expiration) = (UInt32(t - inceptionOffset.seconds), UInt32(t + validity.seconds))
        for zone in zones {
            let k = keys[zone.origin] ?? []
            var signer = Self.signer(k, at: now, inUse: inUse[zone.origin] ?? [], inception, expiration)
            let online = allOnline.filter { $0.key.isSubdomain(of: zone.origin) }
            signer.online = online
            guard !signer.keys.isEmpty else {
                // Signed until now: what the fast path holds of it is of the signed copy.
                if copies[zone.origin] != nil {
                    served.changes = nil
                    served.unsigned.insert(zone.origin)
                }
                served.zones.append(zone)
                continue
            }
            let copy = copies[zone.origin]
            // The copy goes on being changed while a key that signed it is still published (its
            // signatures valid): a rollover's new key takes over name by name (the refresh's
            // rounds). Keys all replaced at once: the zone is signed whole anew.
            let sameKeys =
                copy.map { c in
                    c.signers.contains { tag in signer.published.contains { $0.keyTag == tag } }
                } ?? false
            var again = resign[zone.origin] ?? []
            var changed = changes?.firstIndex { $0.after.origin == zone.origin }
            if let copy, copy.online != online {
                // Geo names come or go (or answer other types): their places in the chain.
                for (name, types) in online where copy.online[name] != types { again.insert(name) }
                for name in copy.online.keys where online[name] == nil { again.insert(name) }
                if changed == nil, changes != nil {
                    changes!.append(AnswerImage.Change(before: zone, after: zone, owners: []))
                    served.changes?.append(changes!.last!)
                    changed = changes!.count - 1
                }
            }
            if let copy, sameKeys, zone.isUnchanged(from: copy.source), again.isEmpty {
                next[zone.origin] = Copy(
                    keys: k, signers: copy.signers, source: copy.source, signed: copy.signed, online: online)
                served.zones.append(copy.signed)
                // Names whose answers changed otherwise (geo names): as the signed copy has them.
                if let i = changed {
                    served.changes?[i] = AnswerImage.Change(
                        before: copy.signed, after: copy.signed, owners: changes![i].owners)
                }
            } else if let copy, sameKeys, let i = changed,
                changes![i].before.isUnchanged(from: copy.source) || zone.isUnchanged(from: copy.source)
            {
                let owners = changes![i].owners.union(again)
                let made = try signer.signChange(copy.signed, to: zone, owners: owners)
                next[zone.origin] = Copy(
                    keys: k, signers: signer.keys.map(\.keyTag), source: zone, signed: made.zone, online: online)
                served.zones.append(made.zone)
                served.changes?[i] = AnswerImage.Change(before: copy.signed, after: made.zone, owners: made.owners)
                served.changesets[zone.origin] = .some(
                    ZoneChangeset.between(copy.signed, made.zone, owners: made.owners))
            } else {
                let signed = try signer.signWhole(zone)
                next[zone.origin] = Copy(
                    keys: k, signers: signer.keys.map(\.keyTag), source: zone, signed: signed, online: online)
                served.zones.append(signed)
                served.changes = nil  // a zone signed whole: the image is made whole
                served.changesets[zone.origin] = .some(nil)
            }
        }
        for (origin, copy) in next {
            served.onlineSigners[origin] = onlineSigner(origin, Self.signer(copy.keys, at: now, inUse: [], 0, 0))
        }
        copies = next
        return served
    }

    /// The zones' histories (IXFR) after `served`: a signed zone's history is of its signed copy
    /// (the source's changesets lack the signatures), so it gains the signed changeset, or begins
    /// anew when the zone was signed whole; the other zones' are `histories` as they are.
    func histories(
        _ histories: [DNSName: ZoneHistory], before: [DNSName: ZoneHistory], after served: Served
    ) -> [DNSName: ZoneHistory] {
        var out = histories
        for origin in served.unsigned { out[origin] = ZoneHistory() }  // its history was of the copy
        for origin in copies.keys {
            guard let made = served.changesets[origin] else {
                out[origin] = before[origin]
                continue
            }
            var h = before[origin] ?? ZoneHistory()
            // (A change that keeps the serial, a fleet's refresh, is one IXFR cannot tell.)
            if let changeset = made, changeset.serialBefore != changeset.serialAfter,
                changeset.added.count + changeset.removed.count <= h.recordLimit
            {
                h.append(changeset)
            } else {
                h.clear()
            }
            out[origin] = h
        }
        return out
    }
}
