import DNSWire
import Foundation
import NearcastBasics
import NearcastGeo
import NearcastTSIG
import NearcastTransfer
import NearcastZones
import Yams

/// Where a zone comes from: its origin and its master file; for a secondary zone, the primaries
/// it is transferred from, the file being where it is kept.
public struct ZoneSource: Hashable, Sendable {
    public var origin: DNSName
    public var path: String
    /// Where the zone was named (config file and line), for messages.
    public var declaredAt: String
    /// Who may transfer the zone out (`allow-transfer`); nobody when empty.
    public var allowTransfer: [TransferRule]
    /// The secondaries told of each change by NOTIFY (`notify`).
    public var notify: [TransferPeer]
    /// The primaries the zone is transferred from, in the order they are tried (`primaries`);
    /// none: the zone is this server's own, read from its file.
    public var primaries: [TransferPeer]
    /// The zone's part in catalog zones (`catalog`, RFC 9432): a catalog this server makes, or
    /// one it follows; nil: an ordinary zone.
    public var catalog: CatalogRole?
    /// The catalog this zone was listed in, for a member of a catalog followed here; nil: named
    /// in the config.
    public var memberOf: DNSName?

    public init(
        origin: DNSName, path: String, declaredAt: String, allowTransfer: [TransferRule] = [],
        notify: [TransferPeer] = [], primaries: [TransferPeer] = [], catalog: CatalogRole? = nil,
        memberOf: DNSName? = nil
    ) {
        self.catalog = catalog
        self.memberOf = memberOf
        self.origin = origin
        self.path = path
        self.declaredAt = declaredAt
        self.allowTransfer = allowTransfer
        self.notify = notify
        self.primaries = primaries
    }

    /// Whether the zone is a secondary: transferred from its primaries, kept in its file.
    public var isSecondary: Bool { !primaries.isEmpty }

    /// A zone named on the command line as ORIGIN=PATH (nearcastd's `--zone`), the origin made
    /// absolute if it is not.
    public init(commandLine text: String) throws(DiagnosticsError) {
        let parts = text.split(separator: "=", maxSplits: 1).map(String.init)
        guard parts.count == 2 else {
            throw DiagnosticsError([Diagnostic(file: "--zone", line: 0, message: "'\(text)' is not ORIGIN=PATH")])
        }
        do {
            self.init(
                origin: try DNSName(parts[0].hasSuffix(".") ? parts[0] : parts[0] + "."), path: parts[1],
                declaredAt: "--zone")
        } catch {
            throw DiagnosticsError([Diagnostic(file: "--zone", line: 0, message: "origin '\(parts[0])': \(error)")])
        }
    }
}

/// The daemon's configuration, read from YAML:
///
/// ```yaml
/// listen: ["127.0.0.1:53", "[::1]:53"]
/// zones:
///   - origin: example.net.
///     file: zones/example.net.zone   # relative to this file
/// api:
///   listen: 127.0.0.1:8053
///   tokens: tokens                   # ROLE TOKEN lines (see APITokens)
/// state-dir: /var/lib/nearcast       # overrides kept across restarts, and the audit log
/// identity: ns1.example.net          # said at id.server/hostname.bind (CHAOS) and as NSID;
///                                    # default: the host's name; "" says nothing
/// dnstap: { file: queries.fstrm }    # the slow path's queries and replies (DnstapSettings)
/// tsig:                              # keys that may sign queries (RFC 8945)
///   key-files: [keys.conf]           # BIND `key` statements (TSIGKeyFile)
///   keys:
///     - { name: xfr.example., algorithm: hmac-sha256, secret: BASE64 }
/// ```
public struct NearcastConfig: Sendable {
    public var listen: [ListenAddress] = []
    public var zones: [ZoneSource] = []
    /// Largest UDP reply, and the size advertised in our OPT.
    public var maxUDPPayload: UInt16 = 1232
    /// Seconds an idle TCP connection is kept open (RFC 7766 §6.2.3).
    public var tcpIdleTimeout: Int = 10
    /// Seconds after a change through the API before the zone's file is written back (the change
    /// is durable in the zone's journal at once): as Knot's `zonefile-sync`, so a stream of
    /// changes to a large zone rewrites its file once per period, not once per change.
    public var zonefileSync: Int = 10
    /// Seconds the signatures a zone signed here is given are valid (from an hour before they
    /// are made); each is made anew once less than half of that is left (docs/ARCHITECTURE.md
    /// §18). As Knot's `rrsig-lifetime`.
    public var signatureValidity: Int = 14 * 86_400
    /// Seconds a change of a zone signed here takes to reach every server that serves it (its
    /// secondaries): how long a key rollover waits beyond the TTLs (RFC 7583's Dprp). As Knot's
    /// `propagation-delay`.
    public var propagationDelay: Int = 3600
    /// The XDP fast path; off unless interfaces are named.
    public var xdp = XDPSettings()
    /// The management API; off unless an address is given.
    public var api = APISettings()
    /// Nodes, pools and geo names, and the MaxMind database (see GeoConfig).
    public var geo = GeoConfig()
    /// Where the daemon keeps what must outlive it: operators' overrides (`overrides.json`) and
    /// the audit log of changes (`audit.log`). None: changes through the API last until a restart.
    public var stateDirectory: String?
    /// The keys signed queries may use; from the `tsig` section and the key files it names.
    public var tsigKeys = TSIGKeyring()
    /// The fleet's shared store (StoreSettings); none: this server's files alone.
    public var store = StoreSettings()
    /// Response rate limiting (the slow path's UDP replies and XDP's answers).
    public var rrl = RRLSettings()
    /// DNS Cookies.
    public var cookies = CookieSettings()
    /// The slow path's query log in dnstap; off unless a socket or file is given.
    public var dnstap = DnstapSettings()
    /// This server's name, said when asked which server of a fleet answered: CHAOS TXT at
    /// id.server and hostname.bind (RFC 4892), and NSID (RFC 5001). The host's name unless
    /// configured; nil (`identity: ""`): neither is answered.
    public var identity: String? = NearcastConfig.hostName
    /// The file this config was read from, if any.
    public var sourcePath: String?

    /// gethostname(2); nil where it has none.
    public static var hostName: String? {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return nil }
        let name = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return name.isEmpty ? nil : name
    }

    public init() {}

    /// Reads and validates a config file. Every problem is reported with file and line.
    /// `stateDirectory`: the one the command line gives (nearcastd's `--state-dir`), over the
    /// config's; secondary zones are placed in it.
    public static func load(path: String, stateDirectory: String? = nil) throws(DiagnosticsError) -> NearcastConfig {
        guard let data = FileManager.default.contents(atPath: path) else {
            let why = FileManager.default.fileExists(atPath: path) ? "cannot be read" : "does not exist"
            throw DiagnosticsError([Diagnostic(file: path, line: 0, message: "config file \(why)")])
        }
        let dir = (path as NSString).deletingLastPathComponent
        var config = try parse(
            yaml: String(decoding: data, as: UTF8.self), fileName: path, baseDirectory: dir,
            stateDirectory: stateDirectory)
        config.sourcePath = path
        return config
    }

    static let knownKeys = [
        "listen", "zones", "max-udp-payload", "tcp-idle-timeout", "zonefile-sync", "signature-validity",
        "propagation-delay",
        "xdp", "api",
        "geo", "state-dir",
        "tsig", "store",
        "rrl", "cookies", "identity", "dnstap",
    ]
    static let knownAPIKeys = ["listen", "tokens", "tls"]
    static let knownXDPKeys = [
        "interfaces", "pin-root", "object", "keep-on-exit", "pass-rate", "pass-burst", "over-budget", "names-capacity",
    ]

    /// Parses config YAML; relative zone paths are taken from `baseDirectory`. `keys`: the TSIG
    /// keys its zones may name when it has no `tsig` section of its own (a fleet's snapshot,
    /// whose secondaries name keys each server's own config holds).
    public static func parse(
        yaml: String, fileName: String, baseDirectory: String, stateDirectory override: String? = nil,
        keys: TSIGKeyring? = nil
    ) throws(DiagnosticsError)
        -> NearcastConfig
    {
        var diags: [Diagnostic] = []
        func line(_ node: Node?) -> Int { (node?.mark?.line).map { $0 } ?? 0 }
        func fail(_ node: Node?, _ m: String) { diags.append(Diagnostic(file: fileName, line: line(node), message: m)) }

        let root: Node
        do {
            // No implicit typing of scalars (`Resolver.basic`): the config reads each value as the
            // type its key wants (`.int`, `.bool` parse the text), and the default resolver's
            // seven regular expressions, run for every key looked up, made a geo section of 5,000
            // nodes take 0.6 s to read (a fleet reads it at every registration).
            guard let r = try Yams.compose(yaml: yaml, .basic) else {
                throw DiagnosticsError([Diagnostic(file: fileName, line: 0, message: "config file is empty")])
            }
            root = r
        } catch let e as DiagnosticsError {
            throw e
        } catch let e as YamlError {
            throw DiagnosticsError([Diagnostic(file: fileName, line: yamlLine(e), message: "not valid YAML: \(e)")])
        } catch {
            throw DiagnosticsError([Diagnostic(file: fileName, line: 0, message: "not valid YAML: \(error)")])
        }
        guard let top = root.mapping else {
            throw DiagnosticsError([
                Diagnostic(file: fileName, line: line(root), message: "the config must be a mapping of keys")
            ])
        }
        var config = NearcastConfig()
        if let keys { config.tsigKeys = keys }
        for (k, v) in top {
            guard let key = k.string else {
                fail(k, "keys must be strings")
                continue
            }
            switch key {
            case "listen":
                let items = v.sequence.map(Array.init) ?? [v]
                for item in items {
                    guard let s = item.string, let a = ListenAddress(s) else {
                        fail(item, "listen: '\(item.string ?? "?")' is not ADDR:PORT (e.g. 127.0.0.1:53 or [::1]:53)")
                        continue
                    }
                    config.listen.append(a)
                }
            case "zones":
                guard let seq = v.sequence else {
                    fail(v, "zones must be a list of {origin, file}")
                    continue
                }
                for item in seq {
                    guard let m = item.mapping else {
                        fail(item, "each zone must be a mapping with 'origin' and 'file'")
                        continue
                    }
                    let known = ["origin", "file", "catalog"] + ZoneTransferSettings.keys
                    for (zk, _) in m where !known.contains(zk.string ?? "") {
                        fail(zk, "unknown zone key '\(zk.string ?? "?")' (known: \(known.joined(separator: ", ")))")
                    }
                    guard let o = m["origin"]?.string else {
                        fail(item, "zone is missing 'origin'")
                        continue
                    }
                    let origin: DNSName
                    do { origin = try DNSName(o.hasSuffix(".") ? o : o + ".") } catch {
                        fail(m["origin"], "origin '\(o)': \(error)")
                        continue
                    }
                    if config.zones.contains(where: { $0.origin == origin }) {
                        fail(item, "zone \(origin) is listed twice")
                        continue
                    }
                    let transfer = ZoneTransferSettings.parse(
                        m, origin: origin, fileName: fileName, diags: &diags)
                    let catalog = CatalogRole.parse(
                        m["catalog"], origin: origin, primaries: transfer.primaries, fileName: fileName, diags: &diags)
                    // A secondary's file is where it is kept, a catalog's made here where it is
                    // written; by default, in the state directory.
                    let f = m["file"]?.string
                    if f == nil && transfer.primaries.isEmpty && catalog != .produce {
                        fail(item, "zone \(o) is missing 'file' (or 'primaries', for a secondary zone)")
                        continue
                    }
                    let path = f.map { resolvedPath($0, relativeTo: baseDirectory) } ?? ""
                    config.zones.append(
                        ZoneSource(
                            origin: origin, path: path, declaredAt: "\(fileName):\(line(item))",
                            allowTransfer: transfer.allowTransfer, notify: transfer.notify,
                            primaries: transfer.primaries, catalog: catalog))
                }
            case "max-udp-payload":
                guard let n = v.int, (512...4096).contains(n) else {
                    fail(v, "max-udp-payload must be a number from 512 to 4096")
                    continue
                }
                config.maxUDPPayload = UInt16(n)
            case "tcp-idle-timeout":
                guard let n = v.int, (1...3600).contains(n) else {
                    fail(v, "tcp-idle-timeout must be a number of seconds from 1 to 3600")
                    continue
                }
                config.tcpIdleTimeout = n
            case "zonefile-sync":
                guard let n = v.int, (0...86_400).contains(n) else {
                    fail(v, "zonefile-sync must be a number of seconds from 0 (at once) to 86400")
                    continue
                }
                config.zonefileSync = n
            case "signature-validity":
                guard let n = v.int, (60...180 * 86_400).contains(n) else {
                    fail(v, "signature-validity must be a number of seconds from 60 to 15552000 (180 days)")
                    continue
                }
                config.signatureValidity = n
            case "propagation-delay":
                guard let n = v.int, (0...86_400).contains(n) else {
                    fail(v, "propagation-delay must be a number of seconds from 0 to 86400")
                    continue
                }
                config.propagationDelay = n
            case "identity":
                // A TXT character-string and an NSID hold it: 255 octets at most.
                guard let name = v.string, name.utf8.count <= 255 else {
                    fail(v, "identity must be a name of at most 255 octets (\"\" to say none)")
                    continue
                }
                config.identity = name.isEmpty ? nil : name
            case "state-dir":
                guard let d = v.string, !d.isEmpty else {
                    fail(v, "state-dir must be a directory path (e.g. /var/lib/nearcast)")
                    continue
                }
                config.stateDirectory = resolvedPath(d, relativeTo: baseDirectory)
            case "xdp":
                guard let m = v.mapping else {
                    fail(v, "xdp must be a mapping (interfaces, pin-root, object, keep-on-exit)")
                    continue
                }
                for (xk, xv) in m {
                    switch xk.string ?? "" {
                    case "interfaces":
                        for item in xv.sequence.map(Array.init) ?? [xv] {
                            guard let s = item.string, let i = XDPSettings.Interface(s) else {
                                fail(
                                    item,
                                    "xdp interface '\(item.string ?? "?")' is not IFACE, IFACE:native or IFACE:generic")
                                continue
                            }
                            config.xdp.interfaces.append(i)
                        }
                    case "pin-root":
                        guard let s = xv.string, s.hasPrefix("/") else {
                            fail(xv, "xdp pin-root must be an absolute path on a bpffs")
                            continue
                        }
                        config.xdp.pinRoot = s
                    case "object":
                        guard let s = xv.string else {
                            fail(xv, "xdp object must be a path")
                            continue
                        }
                        config.xdp.objectPath = resolvedPath(s, relativeTo: baseDirectory)
                    case "keep-on-exit":
                        guard let b = xv.bool else {
                            fail(xv, "xdp keep-on-exit must be true or false")
                            continue
                        }
                        config.xdp.keepOnExit = b
                    case "pass-rate", "pass-burst":
                        guard let n = xv.int, n >= 0, n <= 100_000_000 else {
                            fail(xv, "xdp \(xk.string!) must be a number of queries (0 to 100000000)")
                            continue
                        }
                        if xk.string == "pass-rate" {
                            config.xdp.passRate = UInt32(n)
                        } else {
                            config.xdp.passBurst = UInt32(n)
                        }
                    case "over-budget":
                        guard let s = xv.string, s == "truncate" || s == "drop" else {
                            fail(xv, "xdp over-budget must be truncate or drop")
                            continue
                        }
                        config.xdp.overBudgetTruncates = s == "truncate"
                    case "names-capacity":
                        guard let n = xv.int, n >= 16, n <= 16_000_000 else {
                            fail(xv, "xdp names-capacity must be a number of names (16 to 16000000)")
                            continue
                        }
                        config.xdp.namesCapacity = n
                    default:
                        fail(
                            xk, "unknown xdp key '\(xk.string ?? "?")' (known: \(knownXDPKeys.joined(separator: ", ")))"
                        )
                    }
                }
            case "geo":
                config.geo = GeoConfig.parse(v, fileName: fileName, baseDirectory: baseDirectory, diags: &diags)
            case "tsig":
                config.tsigKeys = parseTSIG(v, fileName: fileName, baseDirectory: baseDirectory, diags: &diags)
            case "rrl":
                config.rrl = RRLSettings.parse(v, fileName: fileName, diags: &diags)
            case "cookies":
                config.cookies = CookieSettings.parse(v, fileName: fileName, diags: &diags)
            case "dnstap":
                config.dnstap = DnstapSettings.parse(v, fileName: fileName, baseDirectory: baseDirectory, diags: &diags)
            case "store":
                config.store = EtcdSettings.parseStore(
                    v, fileName: fileName, baseDirectory: baseDirectory, diags: &diags)
            case "api":
                guard let m = v.mapping else {
                    fail(v, "api must be a mapping (\(knownAPIKeys.joined(separator: ", ")))")
                    continue
                }
                for (ak, av) in m {
                    switch ak.string ?? "" {
                    case "listen":
                        guard let s = av.string, let a = ListenAddress(s) else {
                            fail(av, "api listen: '\(av.string ?? "?")' is not ADDR:PORT (e.g. 127.0.0.1:8053)")
                            continue
                        }
                        config.api.listen = a
                    case "tokens":
                        guard let s = av.string, !s.isEmpty else {
                            fail(av, "api tokens must be the path of a tokens file")
                            continue
                        }
                        config.api.tokensPath = resolvedPath(s, relativeTo: baseDirectory)
                    case "tls":
                        guard let tm = av.mapping, let cert = tm["certificate"]?.string, let key = tm["key"]?.string,
                            tm.count == 2
                        else {
                            fail(av, "api tls must be { certificate: PEM file, key: PEM file }")
                            continue
                        }
                        var paths: [String] = []
                        for (what, f) in [("certificate", cert), ("key", key)] {
                            let path = resolvedPath(f, relativeTo: baseDirectory)
                            if !FileManager.default.isReadableFile(atPath: path) {
                                fail(tm[what], "api tls \(what) \(path) does not exist or cannot be read")
                            }
                            paths.append(path)
                        }
                        config.api.tlsCertificate = paths[0]
                        config.api.tlsKey = paths[1]
                    default:
                        fail(
                            ak, "unknown api key '\(ak.string ?? "?")' (known: \(knownAPIKeys.joined(separator: ", ")))"
                        )
                    }
                }
            default:
                fail(k, "unknown key '\(key)' (known: \(knownKeys.joined(separator: ", ")))")
            }
        }
        // A rule's key must be one the tsig section declares (which may come after the zones).
        for z in config.zones { diags += ZoneTransferSettings.unknownKeys(of: z, in: config.tsigKeys) }
        if let override { config.stateDirectory = override }
        diags += SecondaryZoneFiles.place(&config.zones, stateDirectory: config.stateDirectory)
        if !diags.isEmpty { throw DiagnosticsError(diags) }
        return config
    }

    /// The `tsig` section: keys given inline and key files in BIND syntax, one keyring.
    static func parseTSIG(_ v: Node, fileName: String, baseDirectory: String, diags: inout [Diagnostic]) -> TSIGKeyring
    {
        func fail(_ node: Node?, _ m: String) {
            diags.append(Diagnostic(file: fileName, line: node?.mark?.line ?? 0, message: m))
        }
        guard let m = v.mapping else {
            fail(v, "tsig must be a mapping (keys, key-files)")
            return TSIGKeyring()
        }
        var keys: [TSIGKey] = []
        for (k, value) in m {
            switch k.string ?? "" {
            case "keys":
                for item in value.sequence.map(Array.init) ?? [value] {
                    guard let km = item.mapping, let name = km["name"]?.string, let alg = km["algorithm"]?.string,
                        let secret = km["secret"]?.string, km.count == 3
                    else {
                        fail(item, "each tsig key is { name: NAME, algorithm: hmac-sha256, secret: BASE64 }")
                        continue
                    }
                    guard let algorithm = TSIGAlgorithm(name: alg) else {
                        let known = TSIGAlgorithm.allCases.map(\.rawValue).joined(separator: ", ")
                        fail(
                            km["algorithm"],
                            "tsig key \(name): algorithm '\(alg)' is not supported (supported: \(known))")
                        continue
                    }
                    guard let bytes = Data(base64Encoded: secret), !bytes.isEmpty else {
                        fail(km["secret"], "tsig key \(name): the secret is not base64")
                        continue
                    }
                    guard let keyName = try? DNSName(name.hasSuffix(".") ? name : name + ".") else {
                        fail(km["name"], "tsig key name '\(name)' is not a domain name")
                        continue
                    }
                    keys.append(
                        TSIGKey(
                            name: keyName, algorithm: algorithm, secret: Array(bytes),
                            source: "\(fileName):\(item.mark?.line ?? 0)"))
                }
            case "key-files":
                for item in value.sequence.map(Array.init) ?? [value] {
                    guard let f = item.string, !f.isEmpty else {
                        fail(item, "tsig key-files must be paths of files of BIND key statements")
                        continue
                    }
                    let path = resolvedPath(f, relativeTo: baseDirectory)
                    do { keys += try TSIGKeyFile.load(path: path) } catch { diags += error.diagnostics }
                }
            default:
                fail(k, "unknown tsig key '\(k.string ?? "?")' (known: keys, key-files)")
            }
        }
        do { return try TSIGKeyring(keys) } catch {
            // Reported where the second declaration is (a key's source is `file:line`).
            let source = error.key.source
            let colon = source.lastIndex(of: ":")
            diags.append(
                Diagnostic(
                    file: colon.map { String(source[..<$0]) } ?? fileName,
                    line: colon.flatMap { Int(source[source.index(after: $0)...]) } ?? 0, message: "\(error)"))
            return TSIGKeyring()
        }
    }

    static func yamlLine(_ e: YamlError) -> Int {
        switch e {
        case .scanner(_, _, let mark, _), .parser(_, _, let mark, _): return mark.line
        default: return 0
        }
    }

    /// Loads every zone, each with the changes its journal holds that its file does not yet
    /// (ZoneJournal), then checks the geo names against them; the problems of all zones are
    /// reported together.
    public func loadZones() throws(DiagnosticsError) -> [Zone] {
        var out: [Zone] = []
        var diags: [Diagnostic] = []
        for src in zones {
            do {
                let zone = try Zone.load(path: src.path, origin: src.origin)
                out.append(try ZoneJournal.replay(ZoneJournal.path(forZoneFile: src.path), onto: zone, file: src.path))
            } catch { diags += error.diagnostics }
        }
        if !diags.isEmpty { throw DiagnosticsError(diags) }
        try geo.check(against: out)
        return out
    }
}
