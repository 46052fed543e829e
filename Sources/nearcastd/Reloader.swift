import Logging
import NearcastCore
import NearcastDataPath
import NearcastServer

/// Reloads the config and zone files (SIGHUP, `POST /v1/reload`) the way DESIGN §2 asks: the new
/// files are read and checked first, and a rejected reload leaves everything as it was; then the
/// fast path's names table is written as a new generation switched in with one write, and the
/// slow path's responder is replaced whole. Each answer is the old data or the new, never a mix.
///
/// What only a restart applies (listen addresses, XDP, the API, UDP size, the geo section, whose
/// compile takes seconds) must be unchanged, or the reload is refused.
actor Reloader {
    let load: @Sendable () throws(DiagnosticsError) -> NearcastConfig
    var running: NearcastConfig
    let geo: GeoTable?
    let responders: ResponderSource
    let fastPath: FastPath?
    let metrics: NearcastMetrics?
    let logger: Logger

    init(
        running: NearcastConfig, load: @escaping @Sendable () throws(DiagnosticsError) -> NearcastConfig, geo: GeoTable?,
        responders: ResponderSource, fastPath: FastPath?, metrics: NearcastMetrics? = nil, logger: Logger
    ) {
        self.running = running
        self.load = load
        self.geo = geo
        self.responders = responders
        self.fastPath = fastPath
        self.metrics = metrics
        self.logger = logger
    }

    /// Reloads; `by` says who asked, for the log.
    func reload(by: String) throws(ReloadError) -> ReloadReport {
        let started = ContinuousClock.now
        do {
            let report = try apply()
            metrics?.countReload(seconds: report.seconds)
            logger.notice(
                "reloaded",
                metadata: [
                    "by": "\(by)", "zones": "\(report.zones)", "records": "\(report.records)",
                    "fast-path-written": "\(report.fastPathWritten.map(String.init) ?? "-")",
                    "seconds": "\(ContinuousClock.now - started)",
                ])
            return report
        } catch {
            metrics?.countReload(seconds: nil)
            logger.error("reload refused", metadata: ["by": "\(by)", "why": "\(error)"])
            throw error
        }
    }

    func apply() throws(ReloadError) -> ReloadReport {
        let started = ContinuousClock.now
        let next: NearcastConfig
        let zones: [Zone]
        do {
            next = try load()
            zones = try next.loadZones()
        } catch {
            throw .invalid(error)
        }
        let fixed = Self.restartOnlyChanges(from: running, to: next)
        if !fixed.isEmpty { throw .needsRestart(fixed) }
        let responder = Responder(authority: Authority(zones: zones), maxUDPPayload: next.maxUDPPayload, geo: geo)
        var written: FastPath.TableWrite?
        if let fastPath {
            let image = AnswerImage.build(responder: responder, maxSections: FastPath.sectionsCapacity)
            do { written = try fastPath.write(image, geo: geo, geoMapsWritten: true) } catch { throw .fastPath("\(error)") }
        }
        responders.replace(with: responder)
        running = next
        let d = ContinuousClock.now - started
        return ReloadReport(
            zones: zones.count, records: zones.map(\.recordCount).reduce(0, +), fastPathAnswers: written?.entries,
            fastPathWritten: written?.written, seconds: Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18)
    }

    /// The settings, by config key, that differ and only a restart applies.
    static func restartOnlyChanges(from a: NearcastConfig, to b: NearcastConfig) -> [String] {
        var out: [String] = []
        if a.listen != b.listen { out.append("listen") }
        if a.xdp != b.xdp { out.append("xdp") }
        if a.api != b.api { out.append("api") }
        if a.maxUDPPayload != b.maxUDPPayload { out.append("max-udp-payload") }
        if a.tcpIdleTimeout != b.tcpIdleTimeout { out.append("tcp-idle-timeout") }
        if !a.geo.isEquivalent(to: b.geo) { out.append("geo") }
        return out
    }
}
