import BPFKit
import Foundation
import Logging
import NearcastAnswers
import NearcastBasics
import NearcastConfiguration
import NearcastGeo

#if canImport(Glibc)
import Glibc
#endif

/// The fast path as the daemon runs it: the program loaded with its maps pinned, configured, filled
/// with the answer image and attached to the interfaces.
///
/// Start-up takes over what a previous instance left (pinned maps, an attached program) without a
/// gap: the maps are reused and the program is replaced in one step (maps of another ABI version
/// are replaced by a new set instead: PinRoot). Stopping detaches and unpins,
/// unless the settings keep the fast path running without the daemon.
public final class XDPDeployment: Sendable {
    public let fastPath: FastPath
    public let settings: XDPSettings
    let attached: [(ifindex: Int32, mode: XDPAttachment.Mode, name: String)]
    let logger: Logger
    /// For a wildcard listen: the host's addresses followed into nc_local as they change.
    let addressWatch: HostAddressWatch?

    /// Why the fast path cannot start, in words an operator can act on.
    public struct SetupError: Error, CustomStringConvertible {
        public var description: String
    }

    /// Loads, fills and attaches the fast path, which answers queries to `answering` on `dnsPort`.
    public init(
        settings: XDPSettings, stream: AnswerImage.Stream, geo: GeoTable? = nil, dnsPort: UInt16,
        answering: AnsweredAddresses, udpPayload: UInt16, rateLimit: RateLimit? = nil,
        cookies: ServerCookies.Secrets? = nil, logger: Logger
    ) throws {
        self.settings = settings
        self.logger = logger
        let objectPath = try Self.locateObject(settings.objectPath)
        try PinRoot.prepare(settings.pinRoot)
        var interfaces: [(Int32, XDPAttachment.Mode, String)] = []
        for i in settings.interfaces {
            let index = try XDPAttachment.interfaceIndex(i.name)
            interfaces.append((index, XDPAttachment.Mode(rawValue: i.mode) ?? .native, i.name))
        }
        // Maps pinned by another ABI version would be misread, and geo maps too small cannot take
        // the geo data: a new set is made beside them and switched in with the program (PinRoot),
        // and theirs are let go.
        let geoNeeds = geo.map(GeoCapacity.needed(by:)) ?? GeoCapacity(ipv4Prefixes: 0, candidateLists: 0)
        let replacing = try PinRoot.replacementReason(settings.pinRoot, geo: geoNeeds)
        var pinDirectory = settings.pinRoot
        if let reason = replacing { pinDirectory = try PinRoot.staging(for: settings.pinRoot, because: reason) }
        // A start that fails before the new set is switched in drops it with its pins.
        var staged = replacing != nil
        defer { if staged { PinRoot.remove(pinDirectory) } }
        // The first generation's records made as the image's names are, on every core (nothing
        // else of the daemon's runs yet), and the names table sized from them, unless configured.
        let making = ContinuousClock.now
        let records = FastPath.records(stream, geo: geo, parts: ProcessInfo.processInfo.activeProcessorCount)
        let (needs, imageTooBig) = (records.needs, records.imageTooBig)
        logger.info(
            "answer image made",
            metadata: [
                "names": "\(needs.names)", "record-mib": "\(needs.recordBytes >> 20)",
                "seconds": "\((ContinuousClock.now - making).seconds)",
            ])
        let size = FastPath.tableSize(for: needs, capacity: settings.namesCapacity)
        let began = ContinuousClock.now
        let fp = try FastPath(
            objectPath: objectPath, pinDirectory: pinDirectory, capacity: size.capacity, arenaBytes: size.arenaBytes,
            geoCapacity: .sized(for: geo), verifyBeside: true)
        if let wanted = settings.namesCapacity, wanted != fp.capacity {
            logger.warning(
                "names-capacity applies once the pinned maps are removed: the pinned table keeps its size",
                metadata: [
                    "pinned-capacity": "\(fp.capacity)", "configured": "\(wanted)", "pin-root": "\(settings.pinRoot)",
                ])
        }
        let budget = PassBudget(
            rate: settings.passRate, burst: settings.passBurst, truncate: settings.overBudgetTruncates)
        try fp.configure(dnsPort: dnsPort, udpPayload: udpPayload, passBudget: budget)
        // The addresses XDP answers; for a wildcard listen the host's, watched from before they
        // are read so that none added meanwhile is missed, and each later set written after this
        // one, by the watch's thread alone.
        let watch = answering.followsHost ? try HostAddressWatch() : nil
        let answered = answering.resolved(host: watch?.initial ?? [])
        Self.answer(answered, fp, logger: logger, because: "start")
        watch?.start { [logger] now in
            Self.answer(answering.resolved(host: now), fp, logger: logger, because: "the host's addresses changed")
        }
        let onInterfaces = HostAddresses.current(on: Set(interfaces.map(\.2)))
        if answered.isDisjoint(with: onInterfaces) {
            logger.warning(
                "none of the addresses XDP answers queries to is on the interfaces it is attached to: unless their queries reach it there (an address on lo, as for direct server return), XDP answers nothing",
                metadata: [
                    "interfaces": "\(interfaces.map(\.2).joined(separator: " "))",
                    "hint": "listen on the interfaces' addresses, or on 0.0.0.0 / [::]",
                ])
        }
        try fp.configureRateLimit(rateLimit)
        try fp.configureCookies(cookies)
        let loaded = ContinuousClock.now
        // From the image when the records do not all fit (pinned maps of another size, or names
        // left out): `write` leaves out what does not fit.
        let table =
            try fp.writeFirst(records, geo: geo)
            ?? fp.write(stream.image(parts: ProcessInfo.processInfo.activeProcessorCount), geo: geo)
        let written = ContinuousClock.now
        try fp.programLoaded()
        let verified = ContinuousClock.now
        var done: [(Int32, XDPAttachment.Mode, String)] = []
        do {
            for (index, mode, name) in interfaces {
                let previous = try XDPAttachment.attachedProgramID(ifindex: index, mode: mode)
                try XDPAttachment.attach(fp.program, ifindex: index, mode: mode)
                done.append((index, mode, name))
                logger.info(
                    "XDP attached",
                    metadata: [
                        "interface": "\(name)", "mode": "\(mode.rawValue)",
                        "replaced-program": "\(previous.map(String.init) ?? "none")",
                    ])
            }
        } catch {
            // A failed start leaves nothing behind: detach from the interfaces done so far.
            for (index, mode, _) in done { try? XDPAttachment.detach(fp.program, ifindex: index, mode: mode) }
            try? fp.object.unpinMaps(under: pinDirectory)
            if error.errno == EOPNOTSUPP, let failed = interfaces.dropFirst(done.count).first,
                failed.1 == .native
            {
                throw SetupError(
                    description:
                        "\(failed.2) has no native XDP support in its driver: use --xdp \(failed.2):generic (or `\(failed.2):generic` in the config)"
                )
            }
            throw error
        }
        if let reason = replacing {
            // The program reading the new maps answers now: the new set takes the root's name.
            try PinRoot.switchIn(staging: pinDirectory, as: settings.pinRoot)
            staged = false
            try fp.object.pinsMoved(to: settings.pinRoot)
            logger.notice(
                "pinned maps replaced: the new program and maps were switched in together; counters start anew",
                metadata: ["why": "\(reason)", "pin-root": "\(settings.pinRoot)"])
        }
        if table.full + table.collisions > 0 {
            logger.warning(
                "some names do not fit the names table and are left to the slow path",
                metadata: [
                    "table-full": "\(table.full)", "hash-collisions": "\(table.collisions)",
                    "capacity": "\(fp.capacity)",
                    "hint": "raise xdp names-capacity",
                ])
        }
        if table.negativesLeftOut > 0 {
            logger.warning(
                "some zones' negative answers do not fit the fast path: their NODATA and NXDOMAIN are left to the slow path",
                metadata: [
                    "left-out": "\(table.negativesLeftOut)", "most": "\(FastPath.negativesMax - 1)",
                    "hint": "more zones than the fast path indexes, or raise xdp names-capacity (arena room)",
                ])
        }
        logger.info(
            "fast path ready",
            metadata: [
                "names": "\(table.entries)", "answers": "\(needs.answers)",
                "written": "\(table.written)", "too-big": "\(imageTooBig + table.tooBig)",
                "table-full": "\(table.full)", "hash-collisions": "\(table.collisions)", "capacity": "\(fp.capacity)",
                "table-mib": "\(fp.tableBytes >> 20)",
                "verifier-insns": "\(fp.verifiedInstructions.map(String.init) ?? "?")",
                "pin-root": "\(settings.pinRoot)",
                // The maps made; the image written into them while the program was verified; the
                // wait for the verifier after the write.
                "load-seconds": "\((loaded - began).seconds)", "write-seconds": "\((written - loaded).seconds)",
                "verifier-wait-seconds": "\((verified - written).seconds)",
            ])
        self.fastPath = fp
        self.attached = done
        self.addressWatch = watch  // (a start that fails lets it go, and its thread ends)
    }

    /// Writes the addresses XDP answers queries to, and says so (an operator who finds XDP
    /// answering nothing looks here first: a listen address not on the interfaces).
    static func answer(_ addresses: Set<LocalAddress>, _ fp: FastPath, logger: Logger, because: String) {
        do {
            let (answered, leftOut) = try fp.answer(queriesTo: addresses)
            logger.info(
                "XDP answers queries to",
                metadata: [
                    "addresses": "\(addresses.map(\.description).sorted().joined(separator: " "))",
                    "count": "\(answered)", "why": "\(because)",
                ])
            if leftOut > 0 {
                logger.warning(
                    "more addresses than XDP's table holds: queries to the rest are answered by the slow path",
                    metadata: ["left-to-the-slow-path": "\(leftOut)", "most": "\(FastPath.localMax)"])
            }
        } catch {
            // Queries to addresses not written are passed, and the slow path answers them.
            logger.error("cannot write the addresses XDP answers queries to", metadata: ["error": "\(error)"])
        }
    }

    /// The interfaces the program is attached to, with their modes (`eth0:native`).
    public var interfaceNames: [String] { attached.map { "\($0.name):\($0.mode.rawValue)" } }

    /// Detaches the program and removes the pins, unless `keepOnExit`.
    public func stop() {
        addressWatch?.stop()
        if settings.keepOnExit {
            logger.info("XDP left attached (keep-on-exit)", metadata: ["pin-root": "\(settings.pinRoot)"])
            return
        }
        for (index, mode, name) in attached {
            do { try XDPAttachment.detach(fastPath.program, ifindex: index, mode: mode) } catch {
                logger.warning("XDP detach failed", metadata: ["interface": "\(name)", "error": "\(error)"])
            }
        }
        do { try fastPath.object.unpinMaps(under: settings.pinRoot) } catch {
            logger.warning("unpin failed", metadata: ["error": "\(error)"])
        }
        logger.info("XDP detached")
    }

    /// The object file: the configured path, else next to the executable, else where `make install`
    /// puts it (PREFIX/lib/nearcast beside PREFIX/bin), else /usr/lib/nearcast.
    static func locateObject(_ configured: String?) throws -> String {
        let exe = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        let candidates =
            configured.map { [$0] } ?? [
                exe.appendingPathComponent("nearcast.bpf.o").path,
                exe.deletingLastPathComponent().appendingPathComponent("lib/nearcast/nearcast.bpf.o").path,
                "/usr/lib/nearcast/nearcast.bpf.o",
            ]
        for c in candidates where FileManager.default.fileExists(atPath: c) { return c }
        throw SetupError(
            description:
                "XDP program not found (looked at \(candidates.joined(separator: ", "))); build it with `make` or give --bpf-object PATH"
        )
    }
}
