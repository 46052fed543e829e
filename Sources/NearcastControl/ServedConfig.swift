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

/// The config and zones served now, and the one place they change: reloads of the config and zone
/// files (SIGHUP, `POST /v1/reload`) and record changes through the API (`edit`), each audited.
///
/// A reload goes the way ARCHITECTURE §2 asks: the new
/// files are read and checked first, and a rejected reload leaves everything as it was; then the
/// fast path's names table (and geo maps) are written as a new generation switched in with one
/// write, and the slow path's responder is replaced whole. Each answer is the old data or the
/// new, never a mix.
///
/// A changed geo section (nodes, pools, geo names, the database or its file) is compiled anew,
/// off the actor's thread, before anything changes; nodes and pools that stay keep their health,
/// new ones start as at cold start, and the health monitor follows (geo names may be added where
/// there were none, or all removed). What only a restart applies (listen addresses, XDP, the API,
/// UDP size, the state directory) must be unchanged, or the reload is refused.
///
/// Reloads and record changes take turns (an await inside one, such as a geo compile, lets no
/// other change in). Its methods read, write and sync files: it runs on a thread of its own
/// (ThreadExecutor), not on the cooperative pool that health changes and API calls share.
package actor ServedConfig {
    private nonisolated let executor = ThreadExecutor(name: "nc-config")
    package nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    let load: @Sendable () throws(DiagnosticsError) -> NearcastConfig
    var running: NearcastConfig { didSet { secondaryPlaces = nil } }
    /// The zones served now, in the config's order.
    var zones: [Zone]
    /// The counters of the zones and nodes served, which the responders count their answers in.
    var counted: AnswerCounts.View?
    let live: LiveGeo
    let responders: ResponderSource
    /// The fast path's writer, when XDP is on.
    let writer: GenerationWriter?
    let monitor: HealthMonitor?
    let changes: OperatorChanges?
    let metrics: NearcastMetrics?
    let audit: AuditLog?
    /// A fleet's store, when the zones are shared (record changes go there).
    let shared: (any SharedZones)?
    /// DNS cookies' secrets (nil: cookies are off).
    let cookies: CookieRotation?
    /// Tells the zones' secondaries of their changes (NOTIFY).
    let notifier: ZoneNotifier?
    let logger: Logger
    /// The digest of the config and zone files as they were when what is served was read from them
    /// (the audit log's "before"; the files on disk may have been edited since).
    var servedDigest: String
    /// The zone files' stamps, write-backs and journals (ZoneFileBook; the write-back:
    /// ServedConfig+WriteBack.swift).
    var files: ZoneFileBook
    /// Reloads served so far that changed a zone (one that changed none, such as a fleet's
    /// registration, serves the zones it served): a write-back that one overtook is not written.
    var zonesReloaded = 0
    /// Each zone's recent changes, which IXFR out sends (`ZoneTransfers`): what `commit` and
    /// reloads changed, in memory.
    var histories: [DNSName: ZoneHistory] = [:]
    /// Secondary zones configured and not served now: never transferred yet, or expired
    /// (ServedConfig+Secondary.swift). Names in them are answered SERVFAIL.
    var unavailable: [ZoneSource] { didSet { secondaryPlaces = nil } }
    /// Where each secondary zone is, served (its index in `running.zones`) or not (in
    /// `unavailable`): made when first asked after either changes (`secondary`), as thousands of
    /// a catalog's members each ask many times.
    var secondaryPlaces: [DNSName: (served: Bool, index: Int)]?
    /// The refresh of the secondary zones, told of them after each reload (`attach`).
    var secondaries: SecondaryZones?
    /// Secondary zones transferred whole and waiting to be served for the first time, served in
    /// batches (FirstServeBatch; ServedConfig+Secondary.swift: `serveFirst`).
    var firstServes = FirstServeBatch()
    /// The zones signed here: their keys, and the signed copy of each that is served
    /// (ZoneSigning); `zones` holds their sources.
    var signing: ZoneSigning
    /// Reloads served so far: the signatures' refresh walks the zones again after one (keys may
    /// have come or changed).
    package private(set) var reloadCount = 0
    /// Turns: whether a change is under way, and the changes waiting for theirs.
    var busy = false
    var waiting: [CheckedContinuation<Void, Never>] = []

    package init(
        running: NearcastConfig, zones: [Zone], load: @escaping @Sendable () throws(DiagnosticsError) -> NearcastConfig,
        live: LiveGeo,
        responders: ResponderSource, writer: GenerationWriter?, monitor: HealthMonitor? = nil,
        changes: OperatorChanges? = nil,
        metrics: NearcastMetrics? = nil, audit: AuditLog? = nil, shared: (any SharedZones)? = nil,
        cookies: CookieRotation? = nil, notifier: ZoneNotifier? = nil, histories: [DNSName: ZoneHistory] = [:],
        unavailable: [ZoneSource] = [], signing: ZoneSigning = ZoneSigning(), logger: Logger
    ) {
        self.unavailable = unavailable
        self.signing = signing
        self.shared = shared
        self.notifier = notifier
        self.histories = histories
        self.cookies = cookies
        self.running = running
        self.zones = zones
        self.load = load
        self.live = live
        self.responders = responders
        self.writer = writer
        self.monitor = monitor
        self.changes = changes
        self.metrics = metrics
        self.audit = audit
        self.logger = logger
        servedDigest = Self.digest(running)
        files = ZoneFileBook(stamping: running.zones.map(\.path))
    }

    /// Has `secondaries` refresh the secondary zones configured, now and after each reload.
    package func attach(_ secondaries: SecondaryZones) async {
        self.secondaries = secondaries
        await secondaries.follow(secondarySources)
    }

    /// Waits until no other change is under way; `endTurn` lets the next one in.
    func takeTurn() async {
        guard busy else {
            busy = true
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }

    func endTurn() {
        if waiting.isEmpty { busy = false } else { waiting.removeFirst().resume() }
    }

    /// Reloads; `by` says who asked, for the log and the audit log. A reload that cannot be
    /// audited is refused. `zonesUnchanged`: the caller knows no zone file changed (a fleet's
    /// store changed nodes or the geo section): if the config names the same zone files, they are
    /// not read again (seconds at a million names), the zones served stay.
    package func reload(by: String, zonesUnchanged: Bool = false) async throws(ReloadError) -> ReloadReport {
        await takeTurn()
        defer { endTurn() }
        let started = ContinuousClock.now
        do {
            let before = servedDigest
            var after = before
            let report = try await apply(
                zonesUnchanged: zonesUnchanged,
                beforeSwitch: { (next, digest) throws(ReloadError) in
                    after = digest
                    do {
                        try audit?.record(
                            AuditLog.entry(
                                who: by, action: "reload", target: "config and zones",
                                detail: "\(next.zones.count) zone file\(next.zones.count == 1 ? "" : "s")",
                                before: before, after: after))
                    } catch {
                        throw .fastPath("the audit log cannot be written (\(error))")
                    }
                })
            servedDigest = after
            metrics?.countReload(seconds: report.seconds)
            logger.notice(
                "reloaded",
                metadata: [
                    "by": "\(by)", "zones": "\(report.zones)", "records": "\(report.records)",
                    "fast-path-written": "\(report.fastPathWritten.map(String.init) ?? "-")",
                    "geo-compiled": "\(report.geoCompiled)",
                    "rrsets-changed": "\(report.rrsetsChanged.map(String.init) ?? "all")",
                    "seconds": "\(ContinuousClock.now - started)",
                ])
            return report
        } catch {
            metrics?.countReload(seconds: nil)
            let unchanged = servedDigest
            try? audit?.record(
                AuditLog.entry(
                    who: by, action: "reload", target: "config and zones", detail: "\(error)", before: unchanged,
                    after: unchanged,
                    outcome: "refused"))
            logger.error("reload refused", metadata: ["by": "\(by)", "why": "\(error)"])
            throw error
        }
    }

    /// The SHA-256 of the files a config is made of (the config file, then each zone file).
    /// Blocking: it reads them all.
    static func digest(_ c: NearcastConfig) -> String {
        AuditLog.digest(ofFiles: [c.sourcePath].compactMap { $0 } + c.zones.map(\.path))
    }

    /// Reads the config and its zones and switches to them; `beforeSwitch` is given the new
    /// config and the digest of its files (`digest`), once all is checked.
    func apply(
        zonesUnchanged: Bool = false, beforeSwitch: (NearcastConfig, _ digest: String) throws(ReloadError) -> Void
    )
        async throws(ReloadError) -> ReloadReport
    {
        let started = ContinuousClock.now
        // Reading and parsing the files blocks: on a thread of its own, not the cooperative pool.
        // So is comparing them with the zones served (the turn is held: those stay served), and
        // the digest of the files read.
        let (load, served) = (load, zones)
        let servedFiles = zonesUnchanged ? running.zones.map { [$0.origin.description, $0.path] } : nil
        typealias Loaded = (
            NearcastConfig, ReloadedZones, read: Duration, compared: Duration, digest: String,
            unavailable: [ZoneSource],
            notes: [String], keys: [DNSName: [DNSSECKey]]
        )
        let loaded: Result<Loaded, DiagnosticsError>
        do {
            loaded = try await onOwnThread {
                Result { () throws(DiagnosticsError) -> Loaded in
                    let clock = ContinuousClock()
                    // Catalogs' members added, and catalogs made here written; secondary zones
                    // not transferred yet, or expired, are not read (SERVFAIL).
                    let catalogued: (config: NearcastConfig, notes: [String]) = try load().withCatalogs()
                    let (next, unavailable): (NearcastConfig, [ZoneSource]) = catalogued.config.servable()
                    let keys = try ZoneSigning.keys(next)
                    if let servedFiles, next.zones.map({ [$0.origin.description, $0.path] }) == servedFiles {
                        let kept = ReloadedZones(zones: served, changes: [], rrsetsChanged: 0)
                        return (
                            next, kept, clock.now - started, .zero, Self.digest(next), unavailable, catalogued.notes,
                            keys
                        )
                    }
                    let zones = try next.loadZones()
                    let read = clock.now
                    let compared = ReloadedZones.compare(served: served, loaded: zones)
                    return (
                        next, compared, read - started, clock.now - read, Self.digest(next), unavailable,
                        catalogued.notes, keys
                    )
                }
            }
        } catch {
            throw .invalid(
                DiagnosticsError([Diagnostic(file: running.sourcePath ?? "config", line: 0, message: "\(error)")]))
        }
        let next: NearcastConfig
        let reloaded: ReloadedZones
        let digest: String
        let nextUnavailable: [ZoneSource]
        let keys: [DNSName: [DNSSECKey]]
        switch loaded {
        case .success(let r):
            (next, reloaded, digest, nextUnavailable, keys) = (r.0, r.1, r.digest, r.unavailable, r.keys)
            for note in r.notes { logger.notice("catalog", metadata: ["note": "\(note)"]) }
            logger.info(
                reloaded.changes?.isEmpty == true && reloaded.unused.isEmpty && r.compared == .zero
                    ? "zones not read: the same files, unchanged" : "zones read",
                metadata: [
                    "zones": "\(reloaded.zones.count)", "read-seconds": "\(r.read.seconds)",
                    "compared-seconds": "\(r.compared.seconds)",
                    "rrsets-changed": "\(reloaded.rrsetsChanged.map(String.init) ?? "all")",
                ])
        case .failure(let error): throw .invalid(error)
        }
        defer { if !reloaded.unused.isEmpty { Retired.release(reloaded.unused, thenGiveBackMemory: true) } }
        let fixed = Self.restartOnlyChanges(from: running, to: next)
        if !fixed.isEmpty { throw .needsRestart(fixed) }
        var geo = GeoChange.none
        if !live.isCurrent(next.geo) {
            if next.geo.names.isEmpty {
                geo = .to(nil)
            } else if live.compilesLike(next.geo) {
                geo = .checks(next.geo)  // only nodes' checks changed: no compile
            } else {
                do { geo = .to(try await live.compile(next.geo)) } catch let e as DiagnosticsError {
                    throw .invalid(e)
                } catch {
                    let file = next.geo.databasePath ?? "geo"
                    throw .invalid(
                        DiagnosticsError([Diagnostic(file: file, line: 0, message: "geo compile: \(error)")]))
                }
            }
        }
        try beforeSwitch(next, digest)
        let wasUnavailable = unavailable
        let wasMembers = (running.zones + unavailable).filter { $0.memberOf != nil }
        unavailable = nextUnavailable
        // A new geo compile changes the records of the names it changes (a node's target, a geo
        // name's ranking) beside the geo maps it brings: those names are a change of their zones.
        var changes = reloaded.changes
        if case .to(let compiled) = geo, let c = changes {
            let names = GeoTable.namesChanged(from: live.current?.table, to: compiled?.table)
            changes = AnswerImage.Change.adding(names, to: c, zones: reloaded.zones)
        }
        // Zones unchanged (a registration, a geo section changed): what is let go shares them, and
        // is small; glibc's trim of a heap that holds a million names is not worth a registration.
        var report: ReloadReport
        do {
            report = try await switchTo(
                next, reloaded.zones, geo: geo, started: started, oneChange: reloaded.changes?.isEmpty == true,
                zoneChanges: changes, histories: Self.histories(histories, after: reloaded), keys: keys)
        } catch {
            unavailable = wasUnavailable
            throw error
        }
        await secondaries?.follow(secondarySources)
        await removeFormerMembers(wasMembers)
        report.rrsetsChanged = reloaded.rrsetsChanged
        if reloaded.changes?.isEmpty != true { zonesReloaded += 1 }
        files.restamp(running.zones.map(\.path))
        reloadCount += 1
        switch geo {
        case .none: break
        case .to(let compiled): await followGeo(compiled?.config, compiled: compiled)
        case .checks(let config): await followGeo(config, compiled: nil)
        }
        return report
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

    /// The zones' histories after a reload: each changed zone's change added (a zone changed in
    /// more RRsets than a history keeps begins anew, as do all when the set of zones changed).
    static func histories(_ histories: [DNSName: ZoneHistory], after reloaded: ReloadedZones)
        -> [DNSName: ZoneHistory]
    {
        guard let changes = reloaded.changes else { return [:] }
        var out = histories.filter { h in reloaded.zones.contains { $0.origin == h.key } }
        for c in changes where c.before.origin == c.after.origin {
            var h = out[c.after.origin] ?? ZoneHistory()
            if c.owners.count > h.recordLimit {
                h.clear()
            } else {
                let changeset = ZoneChangeset.between(c.before, c.after, owners: c.owners)
                // A change of geo names alone (a new compile) leaves the zone's data as it was.
                guard
                    changeset.removed.contains(where: { $0.type != .soa })
                        || changeset.added.contains(where: { $0.type != .soa })
                        || changeset.serialBefore != changeset.serialAfter
                else { continue }
                h.append(changeset)
            }
            out[c.after.origin] = h
        }
        return out
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

    /// After a changed geo section (`config`; nil: no geo names) is served, from a new compile or
    /// the one before: the health monitor checks its nodes and pools, and operators' overrides of
    /// nodes that are gone are no longer kept.
    func followGeo(_ config: GeoConfig?, compiled: LiveGeo.Compiled?) async {
        if let compiled {
            compiled.log(to: logger)
        } else if config == nil {
            logger.notice("no geo names any more")
        }
        let config = config ?? GeoConfig()
        await monitor?.reconfigure(nodes: HealthWiring.plan(config), pools: config.pools, observers: config.observers)
        await changes?.keepOnly(nodes: Set(config.nodes.map(\.id)))
    }

    /// The zones served, for the API.
    /// Secondary zones not served come last, with no serial or records.
    package func zoneList() async -> [ZoneSummary] {
        let statuses = await secondaries?.statuses() ?? [:]
        let by = await secondaries?.transferredBy()
        var list = zip(running.zones, zones).map { src, z in
            ZoneSummary(
                origin: z.origin.description, file: src.path, serial: z.serial, records: z.recordCount,
                secondary: src.isSecondary ? Self.status(src, statuses[src.origin], state: "served", by: by) : nil,
                catalog: src.catalog?.rawValue, memberOf: src.memberOf?.description)
        }
        for src in unavailable {
            let state = FileManager.default.fileExists(atPath: src.path) ? "expired" : "not transferred yet"
            list.append(
                ZoneSummary(
                    origin: src.origin.description, file: src.path, serial: 0, records: 0,
                    secondary: Self.status(src, statuses[src.origin], state: state, by: by),
                    catalog: src.catalog?.rawValue,
                    memberOf: src.memberOf?.description))
        }
        return list
    }

    static func status(_ source: ZoneSource, _ s: SecondaryZones.Status?, state: String, by: String?)
        -> SecondaryZoneStatus
    {
        SecondaryZoneStatus(
            state: state, primaries: source.primaries.map(\.description),
            lastRefresh: s?.lastRefresh ?? SecondaryRefreshRecord.read(forZoneFile: source.path)?.refreshed,
            nextRefresh: s?.nextRefresh, lastError: s?.lastError, transferredBy: by)
    }

    /// The zones served with their checksums (`Zone.checksum`), for the status: a walk over
    /// every record (about a second at 1M names), on a thread of its own, off this actor.
    package func zoneListWithChecksums() async -> [ZoneSummary] {
        var list = await zoneList()
        let served = zones
        let sums = (try? await onOwnThread(name: "nc-checksum", background: true) { served.map(\.checksum) }) ?? []
        for (i, sum) in sums.enumerated() where i < list.count { list[i].checksum = sum }
        return list
    }

    /// The index of the zone `origin` names (with or without its final dot, any letter case).
    func zoneIndex(_ origin: String) -> Int? {
        guard let name = try? DNSName(origin.hasSuffix(".") ? origin : origin + ".") else { return nil }
        return zones.firstIndex { $0.origin == name }
    }

    /// The records of zone `origin`, optionally of one name and type, as the API shows them.
    package func records(_ origin: String, name: String?, type: String?) throws(ZoneEditError) -> [RecordInput] {
        guard let i = zoneIndex(origin) else { throw .notFound("no zone \(origin) is served here") }
        let z = zones[i]
        let owner = try name.map { (n) throws(ZoneEditError) in try ZoneEditor.ownerName(n, origin: z.origin) }
        let rrtype = try type.map { (t) throws(ZoneEditError) -> RRType in
            guard let r = RRType(mnemonic: t) else { throw .invalid(field: "type", "'\(t)' is not a record type") }
            return r
        }
        var out: [RecordInput] = []
        // One name is looked up, not found among all (a zone may hold millions).
        for n in owner.map({ z.types(at: $0).isEmpty ? [] : [$0] }) ?? z.names {
            for t in [RRType.soa] + z.types(at: n).filter({ $0 != .soa }).sorted(by: { $0.rawValue < $1.rawValue })
            where rrtype == nil || t == rrtype {
                guard let set = z.rrset(n, t) else { continue }
                for r in set.rdatas {
                    out.append(
                        RecordInput(
                            name: n.description, type: t.description, ttl: set.ttl, data: ZoneText.rdata(r, type: t)))
                }
            }
        }
        return out
    }

    /// The version of the RRset of `name` and `type` in zone `origin`, which a change made for it
    /// names (`edit`'s `ifMatch`; HTTP ETag and If-Match): in a fleet's store, the revision its
    /// key was last written at (`r` and the number; `r0`: never written); on a server of its own,
    /// the zone's serial (`s` and the serial: any change of the zone changes it).
    package func version(_ origin: String, name: String, type: String) async throws(ZoneEditError) -> String {
        guard let i = zoneIndex(origin) else { throw .notFound("no zone \(origin) is served here") }
        let zoneOrigin = zones[i].origin
        guard let shared else { return Self.version(serial: zones[i].serial) }
        let owner = try ZoneEditor.ownerName(name, origin: zoneOrigin)
        guard let rrtype = RRType(mnemonic: type) else {
            throw .invalid(field: "type", "'\(type)' is not a record type")
        }
        do {
            let stored = try await shared.owner(zoneOrigin, owner)
            return Self.version(revision: stored.values[rrtype]?.modRevision ?? 0)
        } catch { throw .unavailable("the store cannot be read (\(error))") }
    }

    static func version(serial: UInt32) -> String { "s\(serial)" }
    static func version(revision: Int64) -> String { "r\(revision)" }

    /// Changes zone `origin` as `edit` says, by `by`: applied to the zone served now and checked
    /// where it reaches (`ZoneEditor`), audited, appended to the zone's journal (synced: durable
    /// from then on), then served. The zone file is written back later, once for all the changes
    /// of `zonefile-sync` seconds (ServedConfig+WriteBack.swift). A change that fails at any step
    /// leaves the journal and the served data as they were. Its cost grows with the change, not
    /// with the zone (docs/ARCHITECTURE.md §15): the fast path is written the records the change
    /// reaches, in its live generation.
    /// `ifMatch`: the version of the RRset (`version`) the change was made for; another now
    /// refuses it (`versionChanged`).
    package func edit(_ origin: String, _ edit: ZoneEditor.Edit, by: String, ifMatch: String? = nil)
        async throws(ZoneEditError) -> RecordChange
    {
        await takeTurn()
        let started = ContinuousClock.now
        guard let i = zoneIndex(origin) else {
            endTurn()
            throw .notFound("no zone \(origin) is served here")
        }
        let source = running.zones[i]
        if source.isSecondary {  // a fleet's too: its next transfer would undo the change
            endTurn()
            throw .conflict("zone \(source.origin) is a secondary, transferred from its primaries: change it there")
        }
        if signing.signs(source.origin), let (owner, type) = try? ZoneEditor.target(of: edit, origin: source.origin),
            ZoneSigner.replaces(type, at: owner, origin: source.origin)
        {
            endTurn()
            throw .conflict(
                "zone \(source.origin) is signed here: its \(type) records at \(owner) are the signer's, made from its keys and data"
            )
        }
        if let shared {  // it ends the turn itself, before it waits for the change to come back
            return try await editShared(
                shared, source.origin, index: i, edit, by: by, ifMatch: ifMatch, started: started)
        }
        defer { endTurn() }
        let zone = zones[i]
        if let ifMatch, ifMatch != Self.version(serial: zone.serial) {
            throw .versionChanged(
                "zone \(source.origin) is at version \(Self.version(serial: zone.serial)), the change was made for \(ifMatch): nothing was changed; read the records again"
            )
        }
        if zone.fromSeveralFiles {
            throw .conflict("zone \(source.origin) is read from several files ($INCLUDE): change its files and reload")
        }
        if source.catalog == .produce {
            throw .conflict(
                "zone \(source.origin) is a catalog made here of the zones served: add or remove zones in the config")
        }
        // Problems are reported against the zone as it would be after the change (not yet written).
        let (changed, change, changeset) = try ZoneEditor.apply(edit, to: zone, fileName: "\(source.path) as changed")
        var next = zones
        next[i] = changed
        do { try running.geo.check(against: next) } catch { throw .zone(error) }
        let action = Self.describe(edit)
        let block = ZoneJournal.block(changeset)
        do {
            try audit?.record(
                AuditLog.entry(
                    who: by, action: "record", target: source.origin.description, detail: action,
                    before: "serial \(changeset.serialBefore)", after: AuditLog.digest(Array(block.utf8))))
        } catch { throw .failed("the audit log cannot be written (\(error)): nothing was changed") }
        try await commit(i, changed, changeset, started: started)
        logger.notice(
            "zone changed",
            metadata: [
                "zone": "\(source.origin)", "by": "\(by)", "change": "\(action)", "serial": "\(change.serial)",
                "ms": "\((ContinuousClock.now - started).seconds * 1000)",
            ])
        return change
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
        scheduleWriteBack(source.path)
    }

    /// Serves the change of zone `origin` that a fleet's store brought (its watch, at
    /// `revision`): each of `sets` the whole RRset of its name and type now (nil: none), and the
    /// zone's serial `serial` (derived: docs/ARCHITECTURE.md §13). Checked where it reaches, as a
    /// change through the API is, journaled beside the store's snapshot of the zone (what a
    /// restart with etcd out of reach serves), and served: it costs what it changes, not a
    /// reread of the store. Not audited here: the server that wrote it audited it in the store.
    package func applyFromStore(
        _ origin: DNSName, _ sets: [(name: DNSName, type: RRType, set: RRSet?)], serial: UInt32, revision: Int64
    ) async throws(ZoneEditError) {
        await takeTurn()
        defer { endTurn() }
        let started = ContinuousClock.now
        guard let i = zones.firstIndex(where: { $0.origin == origin }) else {
            throw .notFound("no zone \(origin) is served here")
        }
        let changed: Zone
        let changeset: ZoneChangeset
        do {
            (changed, changeset) = try zones[i].replacing(sets, serial: serial, source: "store@\(revision) \(origin)")
        } catch { throw .zone(error) }
        guard !changeset.removed.isEmpty || !changeset.added.isEmpty else { return }
        var next = zones
        next[i] = changed
        do { try running.geo.check(against: next) } catch { throw .zone(error) }
        try await commit(i, changed, changeset, started: started)
        logger.info(
            "zone changed from the store",
            metadata: [
                "zone": "\(origin)", "revision": "\(revision)", "serial": "\(serial)", "rrsets": "\(sets.count)",
                "ms": "\((ContinuousClock.now - started).seconds * 1000)",
            ])
    }

    /// The zone files now at `to` that were at `from` (a directory renamed: the store's
    /// candidate snapshot, once served, becomes the snapshot): what is served reads from there.
    package func zoneFilesMoved(from: String, to: String) {
        func moved(_ path: String) -> String { path.hasPrefix(from + "/") ? to + path.dropFirst(from.count) : path }
        for i in running.zones.indices { running.zones[i].path = moved(running.zones[i].path) }
        files.move(moved)
    }

    /// A record change in a fleet's store (layout 2, docs/ARCHITECTURE.md §13): the owner's
    /// RRsets as the store holds them now put in the zone served, the change made and checked
    /// there as a file edit is, and the one RRset it changes written back in one transaction
    /// conditioned on what it was made from (`StoredZone.Owner.conditions`: a change to the same
    /// RRset meanwhile refuses this one, and says so; changes to other RRsets do not), with its
    /// audit line. The turn is held for the check and the write only: the store's change comes
    /// back through the watch and is served like any other, which this waits for.
    func editShared(
        _ shared: any SharedZones, _ origin: DNSName, index i: Int, _ edit: ZoneEditor.Edit, by: String,
        ifMatch: String?, started: ContinuousClock.Instant
    ) async throws(ZoneEditError) -> RecordChange {
        let written: Int64
        var change: RecordChange
        do {
            defer { endTurn() }
            let (owner, type) = try ZoneEditor.target(of: edit, origin: origin)
            let stored: StoredZone.Owner
            do { stored = try await shared.owner(origin, owner) } catch {
                throw .unavailable("the store cannot be read (\(error)): nothing was changed")
            }
            guard stored.meta?.state == .ready else {
                throw stored.meta == nil
                    ? .notFound("the store holds no zone \(origin)")
                    : .conflict(
                        "zone \(origin) is being imported into the store: nothing was changed; retry once it is")
            }
            let version = Self.version(revision: stored.values[type]?.modRevision ?? 0)
            if let ifMatch, ifMatch != version {
                throw .versionChanged(
                    "the \(type) records at \(owner) are at version \(version), the change was made for \(ifMatch): nothing was changed; read them again"
                )
            }
            // The zone served, its owner's RRsets as the store holds them now (the SOA's serial is
            // derived, not stored: the served one stays, unless the SOA is what changes).
            let base: Zone
            do throws(DiagnosticsError) {
                var sets: [(name: DNSName, type: RRType, set: RRSet?)] = []
                let types = Set(zones[i].types(at: owner)).union(stored.values.keys)
                for t in types where t != .soa || type == .soa { sets.append((owner, t, try stored.rrset(t))) }
                base = try zones[i].changing(sets, source: "store \(origin)")
            } catch { throw .zone(error) }
            let (zone, c, _) = try ZoneEditor.apply(edit, to: base, fileName: "store \(origin) as changed")
            var next = zones
            next[i] = zone
            do { try running.geo.check(against: next) } catch { throw .zone(error) }
            let before = stored.values[type]?.value ?? []
            let after = zone.rrset(owner, type).map(StoredZone.value) ?? []
            let entry = AuditLog.entry(
                who: by, action: "record", target: origin.description, detail: Self.describe(edit),
                before: AuditLog.digest(before), after: AuditLog.digest(after))
            let revision: Int64?
            do { revision = try await shared.writeRRset(type, value: after, from: stored, audit: entry) } catch {
                throw .unavailable("the store cannot be written (\(error)): nothing was changed")
            }
            guard let revision else {
                // What changed under it: the RRset (or, for a CNAME, the owner) at the revision it is at now.
                let now =
                    (try? await shared.owner(origin, owner)).map { "revision \($0.revision)" } ?? "a later revision"
                if ifMatch != nil {
                    throw .versionChanged(
                        "the \(type) records at \(owner) changed in the store while this change was made for version \(version) (read again at \(now)): nothing was changed; read them again"
                    )
                }
                throw .conflict(
                    "the \(type) records at \(owner) changed in the store while this change was made (read at revision \(stored.revision), read again at \(now)): nothing was changed; read them again and retry"
                )
            }
            try? audit?.record(entry)
            change = c
            change.serial = stored.serial(at: revision)
            written = revision
        }
        if !(await shared.waitServed(written, timeout: .seconds(5))) {
            logger.warning("a change written to the store is not served here yet", metadata: ["revision": "\(written)"])
        }
        logger.notice(
            "zone changed in the store",
            metadata: [
                "zone": "\(origin)", "by": "\(by)", "change": "\(Self.describe(edit))", "revision": "\(written)",
                "ms": "\((ContinuousClock.now - started).seconds * 1000)",
            ])
        return change
    }

    static func describe(_ edit: ZoneEditor.Edit) -> String {
        switch edit {
        case .add(let r): "add \(r.name) \(r.type) \(r.data)"
        case .delete(let n, let t, let d): "delete \(n) \(t)" + (d.map { " \($0)" } ?? "")
        case .replace(let n, let t, let r): "set \(n) \(t) " + r.data.joined(separator: ", ")
        }
    }

    /// The settings, by config key, that differ and only a restart applies.
    static func restartOnlyChanges(from a: NearcastConfig, to b: NearcastConfig) -> [String] {
        var out: [String] = []
        if a.listen != b.listen { out.append("listen") }
        if a.xdp != b.xdp { out.append("xdp") }
        if a.api != b.api { out.append("api") }
        if a.maxUDPPayload != b.maxUDPPayload { out.append("max-udp-payload") }
        if a.tcpIdleTimeout != b.tcpIdleTimeout { out.append("tcp-idle-timeout") }
        if a.stateDirectory != b.stateDirectory { out.append("state-dir") }
        if a.rrl != b.rrl { out.append("rrl") }
        if a.store != b.store { out.append("store") }
        if a.dnstap != b.dnstap { out.append("dnstap") }
        return out
    }
}

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

extension ServedConfig: ServedFromStore {
    package func reloadFromStore(by: String, zonesUnchanged: Bool) async throws {
        _ = try await reload(by: by, zonesUnchanged: zonesUnchanged)
    }

    /// The keys the store brought read as a reload reads them (a zone's first keys sign it;
    /// other keys are a rollover's step, taken by the refresh's round the reload asks for).
    package func keysFromStore(_ zones: Set<DNSName>) async {
        do { _ = try await reload(by: "store keys", zonesUnchanged: true) } catch {
            logger.error("the keys from the store are not served", metadata: ["why": "\(error)"])
        }
    }
}

/// The zones served answer the API's zone routes.
extension ServedConfig: ZoneDesk {}
