import Foundation
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
    let audit: AuditLog?
    let logger: Logger

    init(
        running: NearcastConfig, load: @escaping @Sendable () throws(DiagnosticsError) -> NearcastConfig, geo: GeoTable?,
        responders: ResponderSource, fastPath: FastPath?, metrics: NearcastMetrics? = nil, audit: AuditLog? = nil, logger: Logger
    ) {
        self.running = running
        self.load = load
        self.geo = geo
        self.responders = responders
        self.fastPath = fastPath
        self.metrics = metrics
        self.audit = audit
        self.logger = logger
    }

    /// Reloads; `by` says who asked, for the log and the audit log. A reload that cannot be
    /// audited is refused.
    func reload(by: String) throws(ReloadError) -> ReloadReport {
        let started = ContinuousClock.now
        do {
            let before = Self.digest(running)
            let report = try apply(beforeSwitch: { (next) throws(ReloadError) in
                do {
                    try audit?.record(
                        AuditLog.entry(
                            who: by, action: "reload", target: "config and zones", detail: "\(next.zones.count) zone files",
                            before: before, after: Self.digest(next)))
                } catch {
                    throw .fastPath("the audit log cannot be written (\(error))")
                }
            })
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
            let unchanged = Self.digest(running)
            try? audit?.record(
                AuditLog.entry(
                    who: by, action: "reload", target: "config and zones", detail: "\(error)", before: unchanged, after: unchanged,
                    outcome: "refused"))
            logger.error("reload refused", metadata: ["by": "\(by)", "why": "\(error)"])
            throw error
        }
    }

    /// The SHA-256 of the files a config is made of (the config file, then each zone file).
    static func digest(_ c: NearcastConfig) -> String {
        var bytes: [UInt8] = []
        for path in [c.sourcePath].compactMap({ $0 }) + c.zones.map(\.path) {
            bytes += Array(path.utf8) + [0] + Array(FileManager.default.contents(atPath: path) ?? Data()) + [0]
        }
        return AuditLog.digest(bytes)
    }

    func apply(beforeSwitch: (NearcastConfig) throws(ReloadError) -> Void = { _ in }) throws(ReloadError) -> ReloadReport {
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
        try beforeSwitch(next)
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
        if a.stateDirectory != b.stateDirectory { out.append("state-dir") }
        if !a.geo.isEquivalent(to: b.geo) { out.append("geo") }
        return out
    }
}
