import ArgumentParser
import Logging
import NIOCore
import NearcastBasics
import NearcastConfiguration
import NearcastDaemon

/// `nearcastd`: the nearcast DNS daemon. Its options make the config; the daemon itself, its
/// parts started and run as one group, is `Daemon` (NearcastDaemon).
@main
struct Nearcastd: AsyncParsableCommand {
    /// This build's version, reported by `nearcast status`.
    static let version = Daemon.version

    static let configuration = CommandConfiguration(
        commandName: "nearcastd",
        abstract: "nearcast authoritative GeoDNS server.",
        discussion: """
            Serve zone files directly:
              nearcastd --zone example.net=example.net.zone --listen 127.0.0.1:53 --listen [::1]:53
            or from a YAML config:
              nearcastd --config /etc/nearcast/nearcast.yaml
            """,
        version: version
    )

    @Option(name: .long, help: ArgumentHelp("YAML configuration file.", valueName: "FILE"))
    var config: String?

    @Option(name: .long, help: ArgumentHelp("Serve a zone: ORIGIN=PATH (repeatable).", valueName: "ORIGIN=PATH"))
    var zone: [String] = []

    @Option(name: .long, help: ArgumentHelp("Listen on ADDR:PORT, UDP and TCP (repeatable).", valueName: "ADDR:PORT"))
    var listen: [String] = []

    @Option(
        name: .long,
        help: ArgumentHelp("Answer hot queries in XDP on IFACE (repeatable).", valueName: "IFACE[:native|:generic]"))
    var xdp: [String] = []

    @Option(
        name: .long,
        help: ArgumentHelp("bpffs directory for the pinned maps (default /sys/fs/bpf/nearcast).", valueName: "DIR"))
    var pinRoot: String?

    @Option(
        name: .long, help: ArgumentHelp("The compiled XDP program (default: next to nearcastd).", valueName: "PATH"))
    var bpfObject: String?

    @Flag(name: .long, help: "Leave the XDP program attached and its maps pinned when stopping.")
    var keepXdp = false

    @Option(
        name: .long,
        help: ArgumentHelp("Serve the management API on ADDR:PORT (e.g. 127.0.0.1:8053).", valueName: "ADDR:PORT"))
    var api: String?

    @Option(name: .long, help: ArgumentHelp("The management API's tokens: ROLE TOKEN lines.", valueName: "FILE"))
    var apiTokens: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Keep operators' overrides and the audit log here (e.g. /var/lib/nearcast).", valueName: "DIR"))
    var stateDir: String?

    @Option(
        name: .long,
        help: "Threads that answer DNS: UDP sockets per address, and TCP event loops (default: one per core).")
    var threads: Int = System.coreCount

    @Option(name: .long, help: "Log level: trace, debug, info, notice, warning, error, critical.")
    var logLevel: String = "info"

    func validate() throws {
        if config == nil && zone.isEmpty {
            throw ValidationError("give --config FILE, or at least one --zone ORIGIN=PATH")
        }
        if config == nil && listen.isEmpty { throw ValidationError("give at least one --listen ADDR:PORT") }
        for l in listen where ListenAddress(l) == nil {
            throw ValidationError("--listen '\(l)' is not ADDR:PORT (e.g. 127.0.0.1:53 or [::1]:53)")
        }
        for z in zone where !z.contains("=") { throw ValidationError("--zone '\(z)' is not ORIGIN=PATH") }
        if let a = api, ListenAddress(a) == nil {
            throw ValidationError("--api '\(a)' is not ADDR:PORT (e.g. 127.0.0.1:8053)")
        }
        for x in xdp where XDPSettings.Interface(x) == nil {
            throw ValidationError("--xdp '\(x)' is not IFACE, IFACE:native or IFACE:generic")
        }
        guard threads >= 1 else { throw ValidationError("--threads must be at least 1") }
        guard Logger.Level(rawValue: logLevel) != nil else {
            throw ValidationError("unknown --log-level '\(logLevel)'")
        }
    }

    /// The config from --config, with --zone and --listen added to it.
    func effectiveConfig() throws(DiagnosticsError) -> NearcastConfig {
        var cfg =
            try config.map { path throws(DiagnosticsError) in
                try NearcastConfig.load(path: path, stateDirectory: stateDir)
            } ?? NearcastConfig()
        for z in zone { cfg.zones.append(try ZoneSource(commandLine: z)) }
        cfg.listen += listen.compactMap(ListenAddress.init)
        cfg.xdp.interfaces += xdp.compactMap(XDPSettings.Interface.init)
        if let pinRoot { cfg.xdp.pinRoot = pinRoot }
        if let bpfObject { cfg.xdp.objectPath = bpfObject }
        if keepXdp { cfg.xdp.keepOnExit = true }
        if let api { cfg.api.listen = ListenAddress(api) }
        if let apiTokens { cfg.api.tokensPath = apiTokens }
        if let stateDir { cfg.stateDirectory = stateDir }
        if cfg.listen.isEmpty {
            throw DiagnosticsError([
                Diagnostic(
                    file: config ?? "command line", line: 0,
                    message: "no listen address: give --listen ADDR:PORT or 'listen:' in the config")
            ])
        }
        return cfg
    }

    func run() async throws {
        FreedMemory.trimHeapsAsTheyGo()
        LoggingSystem.bootstrap { label in
            var h = StreamLogHandler.standardError(label: label)
            h.logLevel = Logger.Level(rawValue: logLevel) ?? .info
            return h
        }
        let logger = Logger(label: "nearcastd")
        let daemon = Daemon(
            threads: threads, logger: logger,
            narrowPrivileges: { Capabilities.narrow(keepingFastPath: $0, logger: logger) },
            load: { [command = self] () throws(DiagnosticsError) in try command.effectiveConfig() })
        do {
            try await daemon.run()
        } catch Daemon.Exit.stoppedBeforeReady {
            throw ExitCode.success
        } catch Daemon.Exit.failed {
            throw ExitCode(1)
        } catch {
            // A part failed once running: the group stopped the others in order.
            logger.error("a part failed: the daemon stopped", metadata: ["error": "\(error)"])
            throw ExitCode(1)
        }
    }
}
