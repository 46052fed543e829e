import DNSWire
import Logging
import NearcastBasics
import NearcastConfiguration
import NearcastServer
import NearcastTSIG
import NearcastTransfer
import NearcastZones
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// What the refresher of secondary zones asks of the zones served (`SecondaryServing`).
package protocol TransferredZones: Sendable {
    /// The secondary zones configured, served or not.
    func secondarySources() async -> [ZoneSource]
    /// Secondary zone `origin` as configured, and the zone served (nil: not served: never
    /// transferred, or expired); nil when no secondary zone `origin` is configured.
    func secondary(_ origin: DNSName) async -> (source: ZoneSource, zone: Zone?, keys: TSIGKeyring)?
    /// Serves what a transfer of `origin` from `primary` brought, checked first; returns the zone
    /// served after it. A transfer that does not check keeps the zone served as it was.
    func applyTransfer(_ origin: DNSName, _ outcome: TransferIn.Outcome, from primary: String)
        async throws(ZoneEditError) -> Zone
    /// Stops serving `origin`, whose expire has passed without a refresh: answered SERVFAIL.
    func expireSecondary(_ origin: DNSName) async
}

/// The secondary zones' refresh (RFC 1035 §4.3.5, RFC 1996): for each, a task that transfers it
/// from its primaries when its SOA's refresh is due, when a primary sends a NOTIFY, and at once
/// when it is not served yet; tries again after the SOA's retry when no primary answers; and
/// stops serving it once the SOA's expire has passed since the last refresh. An IXFR from the
/// serial served is asked first (the primary answers the changes, the SOA alone, or the whole
/// zone); an AXFR when the zone is not served, or when the IXFR fails. Each refresh is recorded
/// beside the zone's file (`SecondaryRefreshRecord`), so that a restart keeps the expire.
///
/// The zones configured come from the zones served: read when it is made, given after each reload
/// (`follow`), and read again after a transfer of a catalog (its members). Transfers block:
/// each runs on a thread of its own (`onOwnThread`), off the cooperative pool.
package actor SecondaryZones {
    /// One zone's refresh: its task and how to wake it.
    final class Refresh: Sendable {
        let source: ZoneSource
        let wake: AsyncStream<Void>.Continuation
        let notified = Atomic<Bool>(false)
        let task = Mutex<Task<Void, Never>?>(nil)
        /// What `nearcast zones` shows: the last refresh, the next one, the last error.
        let status = Mutex(Status())

        init(source: ZoneSource, wake: AsyncStream<Void>.Continuation) {
            self.source = source
            self.wake = wake
        }
    }

    /// What is known of a zone's refresh.
    package struct Status: Sendable, Equatable {
        /// Seconds since 1970 of the last answer from a primary.
        package var lastRefresh: Int64?
        /// Seconds since 1970 of the next refresh planned.
        package var nextRefresh: Int64?
        package var lastError: String?
        package var serial: UInt32?
    }

    /// Bounds of the SOA's timers, as Knot's `refresh-min-interval` and `retry-min-interval` keep
    /// a zone's SOA from making its secondary ask every second (or a primary's flood of
    /// NOTIFY from making it transfer without pause).
    package struct Bounds: Sendable {
        package var minimum: Duration = .seconds(2)
        package var maximum: Duration = .seconds(86_400)
        /// The retry of a zone not served yet (no SOA to read it from).
        package var firstRetry: Duration = .seconds(10)
        package var transferTimeout: Duration = .seconds(120)
        /// The least time between the starts of two transfers a NOTIFY asks for: a flood of them
        /// (or of forged ones) is ten refreshes a second at most, not one each; a primary's
        /// stream of changes is still taken as it comes.
        package var notifyInterval: Duration = .milliseconds(100)
        /// Transfers in running at once (`TransferInQueue`).
        package var transfersAtOnce = 10
        package init() {}
    }

    let zones: any TransferredZones
    let bounds: Bounds
    /// The transfers running at once, for every zone together.
    let queue: TransferInQueue
    let logger: Logger
    var refreshes: [DNSName: Refresh] = [:]
    var stopped = false
    /// The zones configured (`follow`), refreshed while `held`.
    var configured: [ZoneSource] = []
    /// Whether this server transfers the secondary zones: always a single server; in a fleet, the
    /// one holding `P transferrer` (`FleetDuty`), the others serving what the store brings.
    var held: Bool
    let fleet: Bool
    /// In a fleet, the server that transfers the zones, as last known (nil: not known).
    var holder: String?
    /// Reads the NOTIFY the listeners accepted (until `stop`).
    var inbox: Task<Void, Never>?

    /// `fleet`: a fleet's server, which transfers the zones only while it holds the duty (`hold`),
    /// and then refreshes each at once (the last refresh may have been another server's).
    /// `notifies`: the zones the listeners accepted a NOTIFY for, each refreshed at once
    /// (`notified`), read until `stop`.
    package init(
        zones: any TransferredZones, notifies: NotifyInbox? = nil, bounds: Bounds = Bounds(), fleet: Bool = false,
        logger: Logger
    ) async {
        self.zones = zones
        self.bounds = bounds
        self.fleet = fleet
        self.held = !fleet
        self.logger = logger
        queue = TransferInQueue(limit: bounds.transfersAtOnce)
        if let notifies {
            inbox = Task { for await origin in notifies.zones { self.notified(origin) } }
        }
        follow(await zones.secondarySources())
    }

    /// Follows the secondary zones configured now: after a catalog's transfer, which may have
    /// changed its members.
    func followServed() async { follow(await zones.secondarySources()) }

    /// Refreshes the secondary zones of `sources` from now on (those that were and are not any
    /// more stop; one whose primaries changed starts anew).
    package func follow(_ sources: [ZoneSource]) {
        configured = sources
        refreshWanted()
    }

    /// Whether this server transfers the zones from now on: a fleet's server that took the duty
    /// refreshes every zone at once (it may have been nobody's for a while); one that lost it
    /// stops, a transfer under way not served.
    package func hold(_ held: Bool, holder: String? = nil) {
        self.holder = holder
        guard held != self.held else { return }
        self.held = held
        logger.notice(
            held
                ? "this server now transfers the fleet's secondary zones"
                : "this server no longer transfers the fleet's secondary zones",
            metadata: ["zones": "\(configured.filter(\.isSecondary).count)"])
        refreshWanted()
    }

    /// Runs a refresh for each secondary configured, while held, and no other.
    func refreshWanted() {
        guard !stopped else { return }
        let sources = held ? configured : []
        let wanted = Dictionary(sources.filter(\.isSecondary).map { ($0.origin, $0) }, uniquingKeysWith: { a, _ in a })
        for (origin, r) in refreshes where wanted[origin].map({ !sameRefresh($0, r.source) }) ?? true {
            r.task.withLock { $0?.cancel() }
            r.wake.finish()
            refreshes[origin] = nil
        }
        for (origin, source) in wanted where refreshes[origin] == nil {
            let (stream, wake) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
            let r = Refresh(source: source, wake: wake)
            refreshes[origin] = r
            let zones = self.zones
            let bounds = self.bounds
            let logger = self.logger
            let queue = self.queue
            let fleet = self.fleet
            r.task.withLock {
                $0 = Task {
                    await Self.run(
                        r, wakes: stream, zones: zones, bounds: bounds, queue: queue, fleet: fleet, refresher: self,
                        logger: logger)
                }
            }
        }
    }

    /// Whether a zone's refresh goes on as it is when its declaration becomes `b`: the same, or,
    /// in a fleet, the same primaries (its file moves with each read of the store, and is not
    /// where a fleet's refresh is kept).
    func sameRefresh(_ a: ZoneSource, _ b: ZoneSource) -> Bool {
        fleet ? a.primaries == b.primaries : a == b
    }

    /// A NOTIFY of zone `origin` was accepted (from one of its primaries): it is refreshed now.
    package func notified(_ origin: DNSName) {
        guard let r = refreshes[origin] else { return }
        r.notified.store(true, ordering: .sequentiallyConsistent)
        r.wake.yield()
    }

    /// In a fleet, the server that transfers the secondary zones, as last known; nil for a single
    /// server, or while it is not known.
    package func transferredBy() -> String? { fleet ? holder : nil }

    /// Each secondary zone's refresh status, by origin.
    package func statuses() -> [DNSName: Status] { refreshes.mapValues { $0.status.withLock { $0 } } }

    /// Stops every refresh. A transfer under way is not waited for (a primary that does not
    /// answer would hold the stop until the transfer's deadline): its thread ends at that
    /// deadline, and what it brought is not served.
    package func stop() async {
        stopped = true
        inbox?.cancel()
        let all = Array(refreshes.values)
        refreshes = [:]
        for r in all {
            r.task.withLock { $0?.cancel() }
            r.wake.finish()
        }
    }

    /// One zone's loop: wait until a refresh is due (or a NOTIFY, or expire), do it, plan the next.
    /// `fleet`: the zone is a fleet's, refreshed by whichever server holds the duty: its first
    /// refresh is at once, and its refresh is kept in memory (the server that took the duty may
    /// have no record of the last; its expire runs from when it took it).
    static func run(
        _ r: Refresh, wakes: AsyncStream<Void>, zones: any TransferredZones, bounds: Bounds, queue: TransferInQueue,
        fleet: Bool = false, refresher: SecondaryZones, logger: Logger
    ) async {
        let origin = r.source.origin
        var record = fleet ? nil : SecondaryRefreshRecord.read(forZoneFile: r.source.path)
        var nextRefresh = ContinuousClock.now
        var lastAttempt: ContinuousClock.Instant?
        var timer: Task<Void, Never>?
        defer { timer?.cancel() }
        var iterator = wakes.makeAsyncIterator()
        // A zone served with no record of its last refresh (its file put there by hand, or the
        // record lost) was last refreshed when its file was written, as far as anyone knows: its
        // expire runs from then, not from never.
        if record == nil, let state = await zones.secondary(origin), let zone = state.zone,
            let written = fleet ? Self.now() : FileStamp(r.source.path)?.modified
        {
            record = SecondaryRefreshRecord(refreshed: written, expire: Self.timers(zone).expire, serial: zone.serial)
        }
        // A served zone is refreshed when its last refresh says; any other now.
        if !fleet, let record, let state = await zones.secondary(origin), let zone = state.zone {
            let since = Duration.seconds(max(0, Self.now() - record.refreshed))
            let refresh = Self.bounded(.seconds(Int64(Self.timers(zone).refresh)), bounds)
            if since < refresh { nextRefresh = ContinuousClock.now + (refresh - since) }
        }
        while !Task.isCancelled {
            let now = ContinuousClock.now
            if r.notified.exchange(false, ordering: .sequentiallyConsistent) {
                // A NOTIFY is taken at once, but not sooner than `notifyInterval` after the last
                // transfer began.
                nextRefresh = min(nextRefresh, lastAttempt.map { max(now, $0 + bounds.notifyInterval) } ?? now)
            }
            if now >= nextRefresh {
                lastAttempt = now
                guard let state = await zones.secondary(origin) else { return }
                let outcome = await refresh(
                    r.source, state: state, zones: zones, bounds: bounds, queue: queue, logger: logger)
                switch outcome {
                case .success(let zone):
                    let t = Self.timers(zone)
                    let fresh = SecondaryRefreshRecord(refreshed: Self.now(), expire: t.expire, serial: zone.serial)
                    do { if !fleet { try fresh.write(forZoneFile: r.source.path) } } catch {
                        logger.error(
                            "secondary zone's refresh not recorded", metadata: ["zone": "\(origin)", "why": "\(error)"])
                    }
                    record = fresh
                    nextRefresh = ContinuousClock.now + Self.bounded(.seconds(Int64(t.refresh)), bounds)
                    r.status.withLock {
                        $0.lastRefresh = fresh.refreshed
                        $0.lastError = nil
                        $0.serial = zone.serial
                    }
                    // A catalog's transfer may have changed its members: followed from now on.
                    if r.source.catalog == .consume { await refresher.followServed() }
                case .failure(let why):
                    let retry = state.zone.map { Self.bounded(.seconds(Int64(Self.timers($0).retry)), bounds) }
                    nextRefresh = ContinuousClock.now + (retry ?? bounds.firstRetry)
                    r.status.withLock { $0.lastError = why.description }
                }
            }
            // Expire: a zone served whose last refresh is older than its SOA's expire.
            var expireAt: ContinuousClock.Instant?
            if let record, let state = await zones.secondary(origin), state.zone != nil {
                let left = record.refreshed + Int64(record.expire) - Self.now()
                if left <= 0 {
                    logger.error(
                        "secondary zone expired: no primary answered within its SOA's expire; answered SERVFAIL until one does",
                        metadata: ["zone": "\(origin)", "expire": "\(record.expire)"])
                    await zones.expireSecondary(origin)
                } else {
                    expireAt = ContinuousClock.now + .seconds(left)
                }
            }
            let due = min(nextRefresh, expireAt ?? nextRefresh)
            r.status.withLock { $0.nextRefresh = Self.now() + Int64((due - ContinuousClock.now).seconds.rounded(.up)) }
            timer?.cancel()
            let wake = r.wake
            timer = Task {
                try? await Task.sleep(until: due)
                if !Task.isCancelled { wake.yield() }
            }
            guard await iterator.next() != nil else { return }
        }
    }

    /// One refresh of `source` from its primaries, in order, until one answers: the zone served
    /// after it, or why none did.
    static func refresh(
        _ source: ZoneSource, state: (source: ZoneSource, zone: Zone?, keys: TSIGKeyring), zones: any TransferredZones,
        bounds: Bounds, queue: TransferInQueue, logger: Logger
    ) async -> Result<Zone, TransferIn.Failure> {
        var why: [String] = []
        for primary in source.primaries {
            let key = primary.key.flatMap { state.keys.key(named: $0) }
            if primary.key != nil && key == nil {
                why.append("\(primary): its key is not in the tsig section")
                continue
            }
            // IXFR from the serial served; AXFR when none is, or when the IXFR fails.
            var serials: [UInt32?] = [nil]
            if let zone = state.zone { serials.insert(zone.serial, at: 0) }
            for serial in serials {
                let started = ContinuousClock.now
                do {
                    // The transfer itself waits its turn (`queue`); serving what it brought does not.
                    await queue.take()
                    let fetched = try? await onOwnThread(name: "nc-xfr-in") {
                        Result { () throws(TransferIn.Failure) -> TransferIn.Outcome in
                            try TransferIn.fetch(
                                source.origin, from: primary.address, port: primary.port, key: key, serial: serial,
                                timeout: bounds.transferTimeout)
                        }
                    }
                    queue.release()
                    guard let fetched else { throw TransferIn.Failure("its thread could not be started") }
                    let outcome = try fetched.get()
                    // Stopped meanwhile (the daemon, or a reload that changed the zone's primaries).
                    if Task.isCancelled { return .failure(TransferIn.Failure("stopped")) }
                    let served = try await zones.applyTransfer(source.origin, outcome, from: "\(primary)")
                    logger.info(
                        "secondary zone refreshed",
                        metadata: [
                            "zone": "\(source.origin)", "primary": "\(primary)",
                            "asked": serial == nil ? "AXFR" : "IXFR",
                            "got": "\(Self.describe(outcome))", "serial": "\(served.serial)",
                            "ms": "\(Int((ContinuousClock.now - started).seconds * 1000))",
                        ])
                    return .success(served)
                } catch {
                    let kind = serial == nil ? "AXFR" : "IXFR"
                    why.append("\(kind) from \(primary): \(error)")
                    logger.warning(
                        "secondary zone not refreshed",
                        metadata: [
                            "zone": "\(source.origin)", "primary": "\(primary)", "asked": "\(kind)", "why": "\(error)",
                        ])
                }
            }
        }
        return .failure(TransferIn.Failure(why.joined(separator: "; ")))
    }

    static func describe(_ outcome: TransferIn.Outcome) -> String {
        switch outcome {
        case .upToDate: "up to date"
        case .zone(let records, _): "the whole zone (\(records.count) records)"
        case .changes(let c): "\(c.count) change\(c.count == 1 ? "" : "s")"
        }
    }

    /// The SOA's refresh, retry and expire of `zone`.
    static func timers(_ zone: Zone) -> (refresh: UInt32, retry: UInt32, expire: UInt32) {
        guard case .soa(let s) = zone.soa.rdatas.first else { return (3600, 600, 604_800) }
        return (s.refresh, s.retry, s.expire)
    }

    static func bounded(_ d: Duration, _ b: Bounds) -> Duration { min(max(d, b.minimum), b.maximum) }

    static func now() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec)
    }
}
