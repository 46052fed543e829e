import DNSWire
import Foundation
import Logging
import NearcastAPIModel
import NearcastAnswers
import NearcastBasics
import NearcastConfiguration
import NearcastDNSSEC
import NearcastDataPath
import NearcastFleet
import NearcastGeo
import NearcastHealth
import NearcastServer
import NearcastStore
import NearcastTransfer
import NearcastZones
import Synchronization

/// What is served now (the config, the zones, the zones signed here and their histories, the
/// secondary zones waiting to be served) and the one way it changes: `switchTo`, which writes the
/// fast path first and then replaces the slow path's responder whole, so each answer is the old
/// data or the new, never a mix; and `commit`, a zone's change made durable in its journal and
/// then switched to (docs/ARCHITECTURE.md §15 draws the path).
///
/// It decides no change itself: each has an owner that runs it on a turn of its own here
/// (`withTurn`), and an await inside one (a geo compile, a store's write) lets no other change in:
/// reloads (`ZoneReloads`), record changes (`ZoneEdits`), transfers in (`SecondaryServing`),
/// signatures made anew (`SignatureRefresh`), zone files written back (`ZoneWriteBack`). Its
/// methods read, write and sync files: it runs on a thread of its own (ThreadExecutor), not on
/// the cooperative pool that health changes and API calls share.
package actor ServedConfig {
    private nonisolated let executor = ThreadExecutor(name: "nc-config")
    package nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    var running: NearcastConfig { didSet { secondaryPlaces = nil } }
    /// The zones served now, in the config's order.
    var zones: [Zone]
    /// The counters of the zones and nodes served, which the responders count their answers in.
    var counted: AnswerCounts.View?
    let live: LiveGeo
    let responders: ResponderSource
    /// The fast path's writer, when XDP is on.
    let writer: GenerationWriter?
    let metrics: NearcastMetrics?
    /// DNS cookies' secrets (nil: cookies are off).
    let cookies: CookieRotation?
    /// Tells the zones' secondaries of their changes (NOTIFY).
    let notifier: ZoneNotifier?
    /// Writes the zone files back after their changes (nil: they are not).
    let writeBack: ZoneWriteBack?
    let logger: Logger
    /// The digest of the config and zone files as they were when what is served was read from them
    /// (the audit log's "before"; the files on disk may have been edited since).
    var servedDigest: String
    /// The zone files' stamps and journals (ZoneFileBook).
    var files: ZoneFileBook
    /// Reloads served so far that changed a zone (one that changed none, such as a fleet's
    /// registration, serves the zones it served): a write-back that one overtook is not written.
    var zonesReloaded = 0
    /// Each zone's recent changes, which IXFR out sends (`ZoneTransfers`): what `commit` and
    /// reloads changed, in memory.
    var histories: [DNSName: ZoneHistory] = [:]
    /// Secondary zones configured and not served now: never transferred yet, or expired
    /// (`SecondaryServing`). Names in them are answered SERVFAIL.
    var unavailable: [ZoneSource] { didSet { secondaryPlaces = nil } }
    /// Where each secondary zone is, served (its index in `running.zones`) or not (in
    /// `unavailable`): made when first asked after either changes (`secondary`), as thousands of
    /// a catalog's members each ask many times.
    var secondaryPlaces: [DNSName: (served: Bool, index: Int)]?
    /// Secondary zones transferred whole and waiting to be served for the first time, served in
    /// batches (FirstServeBatch; `SecondaryServing.serveFirst`).
    var firstServes = FirstServeBatch()
    /// The zones signed here: their keys, and the signed copy of each that is served
    /// (ZoneSigning); `zones` holds their sources.
    var signing: ZoneSigning
    /// Reloads served so far: the signatures' refresh walks the zones again after one (keys may
    /// have come or changed).
    package internal(set) var reloadCount = 0
    /// Turns: whether a change is under way, and the changes waiting for theirs.
    var busy = false
    var waiting: [CheckedContinuation<Void, Never>] = []

    /// Serves `first` (`histories`: its zones' recent changes, `signing`: the keys and signed
    /// copies of the zones signed here), answered by `responders` and, with XDP, `writer`.
    package init(
        serving first: Now, histories: [DNSName: ZoneHistory] = [:], signing: ZoneSigning = ZoneSigning(),
        live: LiveGeo, responders: ResponderSource, writer: GenerationWriter?, metrics: NearcastMetrics? = nil,
        cookies: CookieRotation? = nil, notifier: ZoneNotifier? = nil, writeBack: ZoneWriteBack? = nil,
        logger: Logger
    ) {
        (running, zones, unavailable) = (first.config, first.zones, first.unavailable)
        self.histories = histories
        self.signing = signing
        self.live = live
        self.responders = responders
        self.writer = writer
        self.metrics = metrics
        self.cookies = cookies
        self.notifier = notifier
        self.writeBack = writeBack
        self.logger = logger
        servedDigest = Self.digest(first.config)
        files = ZoneFileBook(stamping: first.config.zones.map(\.path))
    }

    /// Waits until no other change is under way; `endTurn` lets the next one in.
    private func takeTurn() async {
        guard busy else {
            busy = true
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }

    private func endTurn() {
        if waiting.isEmpty { busy = false } else { waiting.removeFirst().resume() }
    }

    /// Runs `body` on a turn of its own, isolated here: the owners of changes (`ZoneEdits`,
    /// `ZoneReloads`, `SecondaryServing`, `SignatureRefresh`, `ZoneWriteBack`) read and change what
    /// is served through it, and through nothing else.
    func withTurn<T: Sendable, Failure: Error>(
        _ body: @Sendable (isolated ServedConfig) async throws(Failure) -> T
    ) async throws(Failure) -> T {
        await takeTurn()
        defer { endTurn() }
        return try await body(self)
    }

    /// What is served now, as values (each zone shared with what is served, not copied).
    package struct Now: Sendable {
        package var config: NearcastConfig
        package var zones: [Zone]
        /// Secondary zones configured and not served (never transferred, or expired).
        package var unavailable: [ZoneSource]

        package init(config: NearcastConfig, zones: [Zone], unavailable: [ZoneSource]) {
            (self.config, self.zones, self.unavailable) = (config, zones, unavailable)
        }
    }

    package var now: Now { Now(config: running, zones: zones, unavailable: unavailable) }

    /// The index in `zones` of the zone `origin` names (with or without its final dot, any
    /// letter case).
    static func index(of origin: String, in zones: [Zone]) -> Int? {
        guard let name = try? DNSName(origin.hasSuffix(".") ? origin : origin + ".") else { return nil }
        return zones.firstIndex { $0.origin == name }
    }

    /// Checks the geo section against the zones served with zone `i` replaced by `zone`.
    func checkGeo(replacing i: Int, with zone: Zone) throws(ZoneEditError) {
        var next = zones
        next[i] = zone
        do { try running.geo.check(against: next) } catch { throw .zone(error) }
    }

    /// The SHA-256 of the files a config is made of (the config file, then each zone file).
    /// Blocking: it reads them all.
    static func digest(_ c: NearcastConfig) -> String {
        AuditLog.digest(ofFiles: [c.sourcePath].compactMap { $0 } + c.zones.map(\.path))
    }

    /// Tells the secondaries of each zone of `zones` whose serial is not the one it had in `before`
    /// (or that is new) of its change (NOTIFY, the zone's `notify` in `config`).
    func notifySecondaries(_ config: NearcastConfig, of zones: [Zone], before: [Zone]) {
        guard let notifier else { return }
        var served: [DNSName: UInt32] = [:]
        for z in before { served[z.origin] = z.serial }
        for (i, zone) in zones.enumerated() where i < config.zones.count {
            let targets: [TransferPeer] = config.zones[i].notify
            if targets.isEmpty || served[zone.origin] == zone.serial { continue }
            let soa: ResourceRecord = zone.soa.records()[0]
            notifier.notify(
                ZoneNotifier.Request(origin: zone.origin, soa: soa, targets: targets, keys: config.tsigKeys))
        }
    }

    /// What a reload does to the geo data: nothing; serve a new compile (nil: no geo names); or
    /// keep the compile for a geo section whose nodes' checks alone changed.
    enum GeoChange {
        case none
        case to(LiveGeo.Compiled?)
        case checks(GeoConfig)
    }

    /// Serves `zones` (and the geo change) from now on: the fast path first, then the slow path.
    /// `zoneChanges`: what changed of the zones served, each a zone's change (none: nothing did),
    /// whose records the fast path is written in its live generation; nil: the names table and
    /// geo maps as a new generation. `oneChange`: the zones are those served now with a change
    /// applied (or none), sharing all else; otherwise what they replace is a whole, and the
    /// memory it held is given back to the system once it is let go.
    func switchTo(
        _ config: NearcastConfig, _ zones: [Zone], geo change: GeoChange = .none, started: ContinuousClock.Instant,
        oneChange: Bool = false, zoneChanges: [AnswerImage.Change]? = nil, histories: [DNSName: ZoneHistory]? = nil,
        keys: [DNSName: [DNSSECKey]]? = nil, resign: [DNSName: Set<DNSName>] = [:]
    )
        async throws(ReloadError) -> ReloadReport
    {
        // The zones signed here are served as their signed copies (`zones` are their sources),
        // and their histories are of those.
        var signing = self.signing
        signing.validity = .seconds(config.signatureValidity)
        let signed: ZoneSigning.Served
        var geo = live.current?.table
        if case .to(let compiled) = change { geo = compiled?.table }
        do { signed = try signing.serve(zones, keys: keys, changes: zoneChanges, resign: resign, geo: geo) } catch {
            throw .invalid(
                DiagnosticsError([
                    Diagnostic(file: running.stateDirectory ?? "dnssec", line: 0, message: "zones not signed: \(error)")
                ]))
        }
        for (origin, changeset) in signed.changesets where changeset == nil {
            // New keys, or a change that could not be signed where it reaches: worth knowing at
            // a million names, where it takes minutes.
            logger.notice("zone signed whole", metadata: ["zone": "\(origin)"])
        }
        let histories = signing.histories(histories ?? self.histories, before: self.histories, after: signed)
        let oneChange = oneChange && (zoneChanges == nil || signed.changes != nil)
        // A record change keeps the zones and nodes: their counters too (made anew, they would cost
        // each change a lookup per zone).
        let sameSet = oneChange && { if case .none = change { true } else { false } }()
        if !sameSet || counted == nil { counted = metrics?.answers.view(zones, geo) }
        var responder = Responder(
            serving: config, zones: signed.zones, geo: geo, cookies: cookies?.cookies, counts: counted,
            histories: histories, unavailable: unavailable)
        responder.onlineSignatures = signing.onlineSignatures
        var written: FastPath.TableWrite?
        if let writer {
            do {
                if let zoneChanges = signed.changes {
                    written = try await writer.write(responder: responder, geo: geo, changes: zoneChanges)
                } else {
                    written = try await writer.write(responder: responder, geo: geo)
                }
            } catch {
                throw .fastPath("\(error)")
            }
        }
        var retired: LiveGeo.Compiled?
        switch change {
        case .none: break
        case .to(let compiled): retired = live.switchTo(compiled)
        case .checks(let config): live.keepCompile(for: config)
        }
        let variantsStarted = ContinuousClock.now
        if let (variants, made) = signing.useOnlineSigners(signed, geo: geo) {
            ZoneSigning.logVariants(variants, made, since: variantsStarted, logger)
            writeGeoVariants(geo)
        }
        let oldResponder = responders.replace(with: responder)
        if oneChange && retired == nil {
            // It shares all but the changed RRsets with the one served now: letting it go here
            // costs microseconds. A thread for each change (hundreds a second) would cost more,
            // and with XDP on, their allocations spread over every malloc arena left RSS growing
            // with the changes (about 4 KB a change at 1M names).
            _ = consume oldResponder
        } else {
            Retired.release(retired, oldResponder, thenGiveBackMemory: !oneChange)
        }
        cookies?.apply(config.cookies)  // a configured secret the config changed
        running = config
        let before = self.zones
        self.zones = zones
        self.signing = signing
        self.histories = histories
        notifySecondaries(config, of: zones, before: before)
        let d = ContinuousClock.now - started
        return ReloadReport(
            zones: zones.count, records: zones.map(\.recordCount).reduce(0, +), fastPathAnswers: written?.entries,
            fastPathWritten: written?.written, geoCompiled: { if case .to = change { true } else { false } }(),
            seconds: d.seconds)
    }

    /// Serves zone `i` as `changed`, made from the zone served by `changeset`: the changeset
    /// appended to the zone file's journal and synced (durable from then on), then served, the
    /// fast path written the records it reaches, and the file written back later. A failure
    /// leaves the journal and what is served as they were. The caller holds the turn.
    func commit(
        _ i: Int, _ changed: Zone, _ changeset: ZoneChangeset, started: ContinuousClock.Instant,
        resign: Set<DNSName> = [], keys: [DNSName: [DNSSECKey]]? = nil
    )
        async throws(ZoneEditError)
    {
        let source = running.zones[i]
        let zone = zones[i]
        var next = zones
        next[i] = changed
        let journal = ZoneJournal.path(forZoneFile: source.path)
        if !files.isWhole(journal) {
            do { try ZoneJournal.dropCutShortTail(journal, origin: source.origin) } catch {
                throw .failed("the zone's journal cannot be written (\(error)): nothing was changed")
            }
            files.noteWhole(journal)
        }
        let journalSize = FileStamp(journal)?.size
        // A new journal begins with the file it applies to, as it was read or written here.
        let base = journalSize == nil ? files.stamp(of: source.path)?.mark(serial: changeset.serialBefore) : nil
        do { try ZoneJournal.append(changeset, to: journal, after: base) } catch {
            throw .failed("the zone's journal cannot be written (\(error)): nothing was changed")
        }
        do {
            let owners = Set((changeset.removed + changeset.added).map(\.name))
            var histories = self.histories
            histories[source.origin, default: ZoneHistory()].append(changeset)
            _ = try await switchTo(
                running, next, started: started, oneChange: true,
                zoneChanges: [AnswerImage.Change(before: zone, after: changed, owners: owners)], histories: histories,
                keys: keys, resign: resign.isEmpty ? [:] : [source.origin: resign])
        } catch {
            // As it was: the old data is still served, and the journal must not replay the change.
            if let journalSize { truncate(journal, off_t(journalSize)) } else { unlink(journal) }
            throw .failed("\(error)")
        }
        await writeBack?.schedule(source.path, sync: .seconds(running.zonefileSync), of: self)
    }

    /// The zone files now at `to` that were at `from` (a directory renamed: the store's
    /// candidate snapshot, once served, becomes the snapshot): what is served reads from there.
    package func zoneFilesMoved(from: String, to: String) {
        func moved(_ path: String) -> String { path.hasPrefix(from + "/") ? to + path.dropFirst(from.count) : path }
        for i in running.zones.indices { running.zones[i].path = moved(running.zones[i].path) }
        files.move(moved)
    }
}
