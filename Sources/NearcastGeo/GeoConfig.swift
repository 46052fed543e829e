import DNSWire
import Foundation
import MaxMindDB
import NearcastBasics
import NearcastZones
import Yams

/// The `geo:` section of the config: the MaxMind database, the nodes, the pools and the geo names
/// (ARCHITECTURE §1, §5):
///
/// ```yaml
/// geo:
///   database: /var/lib/GeoIP/GeoLite2-City.mmdb
///   nodes:
///     - { id: fra1, ipv4: 192.0.2.10, ipv6: "2001:db8::10", latitude: 50.11, longitude: 8.68,
///         country: DE, region: HE, weight: 2, bias: 0 }
///   pools:
///     - { id: web, members: [fra1, par1, nyc1], min-ttl: 5, max-ttl: 300, settle: 30 }
///   names:
///     - { name: www.example.net., type: A, pool: web, answers: 2, ttl: 30, strategy: linear,
///         same-country-bonus: 0, same-region-bonus: 0, max-distance: 5000, depth: 8,
///         fallback: [fra1], all-down: fail-open }
///   observers: { down-when: 60% }   # a fleet's shared judgement (ObserversConfig)
/// ```
public struct GeoConfig: Sendable {
    /// The MaxMind City database (relative paths from the config file's directory).
    public var databasePath: String?
    public var nodes: [NodeConfig] = []
    public var pools: [PoolConfig] = []
    public var names: [GeoNameConfig] = []
    /// How a fleet's servers judge a node together.
    public var observers = ObserversConfig()

    public init() {}

    public var isEmpty: Bool { nodes.isEmpty && pools.isEmpty && names.isEmpty && databasePath == nil }

    /// Every discovery name's target names (`NODE.TARGETS`) and their node: the pool's members and
    /// the name's fallback nodes, with the discovery name's TTL.
    public var discoveryTargets: [DNSName: DiscoveryTarget] {
        var out: [DNSName: DiscoveryTarget] = [:]
        for g in names where g.type == .srv {
            let members = pools.first { $0.id == g.pool }?.members ?? []
            for id in members + (g.fallback ?? []) {
                if let t = g.target(of: id), out[t] == nil { out[t] = DiscoveryTarget(node: id, ttl: g.ttl) }
            }
        }
        return out
    }

    /// Checks the geo names against the loaded zones: each lies in a served zone, outside any
    /// delegation, and where the zone has no record of its type and no CNAME.
    public func check(against zones: [Zone]) throws(DiagnosticsError) {
        var d: [Diagnostic] = []
        let authority = Authority(zones: zones)
        lazy var discoveryTargets = self.discoveryTargets  // once, not once per discovery name
        for g in names {
            let (file, line) = Self.split(g.declaredAt)
            func fail(_ m: String) {
                d.append(Diagnostic(file: file, line: line, message: "geo name \(g.name) \(g.type): \(m)"))
            }
            guard let zone = authority.zone(for: g.name) else {
                fail("not inside any zone served here")
                continue
            }
            if zone.rrset(g.name, g.type) != nil {
                fail("zone \(zone.origin) has \(g.type) records there too: keep one or the other")
            }
            if zone.rrset(g.name, .cname) != nil {
                fail("zone \(zone.origin) has a CNAME there, which allows no other data")
            }
            if let targets = g.targets {
                if authority.zone(for: targets) == nil {
                    fail("targets \(targets) is not inside any zone served here")
                }
                for (t, _) in discoveryTargets where t.isSubdomain(of: targets) {
                    if let z = authority.zone(for: t), !z.types(at: t).isEmpty {
                        fail("target \(t) has records in zone \(z.origin): the target names are the nodes' own")
                    }
                }
            }
            var n = g.name
            while n != zone.origin && !n.isRoot {
                n = n.parent
                if n != zone.origin, zone.rrset(n, .ns) != nil {
                    fail("lies below the delegation \(n): another server answers it")
                }
            }
        }
        if !d.isEmpty { throw DiagnosticsError(d) }
    }

    static func split(_ declaredAt: String) -> (String, Int) {
        guard let colon = declaredAt.lastIndex(of: ":") else { return (declaredAt, 0) }
        return (String(declaredAt[..<colon]), Int(declaredAt[declaredAt.index(after: colon)...]) ?? 0)
    }

    /// Opens the configured database (nil when none is configured). Blocking: off event loops.
    public func openDatabase() throws(DiagnosticsError) -> MaxMindDatabase? {
        guard let path = databasePath else { return nil }
        do { return try MaxMindDatabase(path: path) } catch {
            throw DiagnosticsError([Diagnostic(file: path, line: 0, message: "geo database: \(error.reason)")])
        }
    }
}

/// One node: where the operator says it is (never geolocated from its address), its addresses,
/// capacity and bias.
public struct NodeConfig: Sendable, Equatable {
    public var id: String
    public var ipv4: [UInt8]?
    public var ipv6: [UInt8]?
    public var latitude: Double
    public var longitude: Double
    public var country: String?
    public var region: String?
    public var weight: Double = 1
    public var bias: Int = 0
    /// Its active checks (issue 5); none: always up.
    public var checks: [NodeCheckConfig] = []
    /// The state until the first checks complete: up (the default) or down.
    public var initiallyUp = true
    /// `file:line`, for messages.
    public var declaredAt: String

    /// The node as the policy ranks it.
    public var geoNode: GeoNode {
        GeoNode(
            id: id, latitude: latitude, longitude: longitude, country: country, region: region, weight: weight,
            bias: bias)
    }
}

/// A pool of nodes that geo names answer from. Its TTL follows health (ARCHITECTURE §6): while a member
/// is down or degraded, or changed state less than `settle` seconds ago, its names answer with at
/// most `minTTL`, so resolvers ask again soon while things move; once settled, with their own TTL
/// (at most `maxTTL`).
public struct PoolConfig: Sendable, Equatable {
    public var id: String
    public var members: [String]
    public var minTTL: UInt32 = 5
    public var maxTTL: UInt32?
    /// Seconds without a change of any member before the pool counts as settled.
    public var settle: Double = 30
    public var declaredAt: String

    public init(
        id: String, members: [String], minTTL: UInt32 = 5, maxTTL: UInt32? = nil, settle: Double = 30,
        declaredAt: String
    ) {
        self.id = id
        self.members = members
        self.minTTL = minTTL
        self.maxTTL = maxTTL
        self.settle = settle
        self.declaredAt = declaredAt
    }

    /// The cap on its names' TTLs: `minTTL` while unsettled, else `maxTTL` (none: UInt32.max).
    public func ttlCap(settled: Bool) -> UInt32 { settled ? maxTTL ?? .max : minTTL }
}

/// A discovery name's target: the node whose addresses it answers, and their TTL.
public struct DiscoveryTarget: Sendable, Equatable {
    public var node: String
    public var ttl: UInt32
}

/// What a geo name answers when every candidate of the client's class is down.
public enum AllDownPolicy: String, CaseIterable, Sendable {
    /// The top candidates anyway (the default: a guess beats no answer).
    case failOpen = "fail-open"
    /// NOERROR without records.
    case nodata
    case servfail
}

/// A name answered by proximity: up to `answers` addresses of the pool's nearest healthy nodes;
/// or, for a discovery name (type SRV: how joining nodes find their entry points), up to
/// `answers` SRV records of those nodes, nearest first (priority 0, 1, …), each naming the node's
/// target `NODE.TARGETS`, whose A and AAAA are the node's addresses.
public struct GeoNameConfig: Sendable, Equatable {
    public var name: DNSName
    /// A or AAAA.
    public var type: RRType
    public var pool: String
    public var answers: Int = 1
    public var ttl: UInt32 = 30
    public var policy = GeoPolicy()
    public var fallback: [String]?
    public var allDown: AllDownPolicy = .failOpen
    /// A discovery name (type SRV): the port its records give, and the domain under which each
    /// node's target name is (`NODE.TARGETS`, answering the node's addresses).
    public var port: UInt16 = 0
    public var targets: DNSName?
    public var declaredAt: String

    /// The target name of `node` for this discovery name.
    public func target(of node: String) -> DNSName? {
        // Read relative to the targets, not as text joined to theirs: a fleet's 5,000 nodes made
        // each compile print and read every target name again.
        node.hasSuffix(".") ? nil : targets.flatMap { try? DNSName(node, origin: $0) }
    }
}

extension GeoConfig {
    static let keys = ["database", "nodes", "pools", "names", "observers"]
    static let nodeKeys = [
        "id", "ipv4", "ipv6", "latitude", "longitude", "country", "region", "weight", "bias", "checks", "initial",
    ]
    static let checkKeys = [
        "type", "host", "port", "path", "status", "body", "name", "qtype", "rcode", "interval", "timeout", "rise",
        "fall", "stale-after", "verify",
        "server-name", "ca",
    ]
    static let poolKeys = ["id", "members", "min-ttl", "max-ttl", "settle"]
    static let nameKeys = [
        "name", "type", "pool", "answers", "ttl", "strategy", "same-country-bonus", "same-region-bonus", "max-distance",
        "depth",
        "fallback", "all-down", "port", "targets",
    ]

    /// Reads the `geo:` mapping; every problem goes to `diags` with its line.
    package static func parse(_ node: Node, fileName: String, baseDirectory: String, diags: inout [Diagnostic])
        -> GeoConfig
    {
        var d: [Diagnostic] = []
        func line(_ n: Node?) -> Int { n?.mark?.line ?? 0 }
        func fail(_ n: Node?, _ m: String) { d.append(Diagnostic(file: fileName, line: line(n), message: m)) }
        var geo = GeoConfig()
        guard let m = node.mapping else {
            fail(node, "geo must be a mapping (\(keys.joined(separator: ", ")))")
            diags += d
            return geo
        }
        for (k, v) in m {
            switch k.string ?? "" {
            case "database":
                guard let s = v.string, !s.isEmpty else {
                    fail(v, "geo database must be the path of a MaxMind City database")
                    continue
                }
                geo.databasePath = resolvedPath(s, relativeTo: baseDirectory)
            case "nodes":
                for item in list(v, "geo nodes", fail) {
                    if let n = parseNode(item, fileName, baseDirectory, fail) { geo.nodes.append(n) }
                }
            case "pools":
                for item in list(v, "geo pools", fail) {
                    if let p = parsePool(item, fileName, fail) { geo.pools.append(p) }
                }
            case "names":
                for item in list(v, "geo names", fail) {
                    if let n = parseName(item, fileName, fail) { geo.names.append(n) }
                }
            case "observers":
                geo.observers = ObserversConfig.parse(v, fail: fail)
            default:
                fail(k, "unknown geo key '\(k.string ?? "?")' (known: \(keys.joined(separator: ", ")))")
            }
        }
        if d.isEmpty { d += geo.crossCheck(fileName: fileName) }
        diags += d
        return geo
    }

    static func list(_ v: Node, _ what: String, _ fail: (Node?, String) -> Void) -> [Node] {
        guard let s = v.sequence else {
            fail(v, "\(what) must be a list")
            return []
        }
        return Array(s)
    }

    /// The mapping of a list item, with unknown keys reported.
    static func fields(_ item: Node, _ what: String, _ known: [String], _ fail: (Node?, String) -> Void) -> Node
        .Mapping?
    {
        guard let m = item.mapping else {
            fail(item, "each of \(what) must be a mapping")
            return nil
        }
        for (k, _) in m where !known.contains(k.string ?? "") {
            fail(k, "unknown key '\(k.string ?? "?")' in \(what) (known: \(known.joined(separator: ", ")))")
        }
        return m
    }

    package static func parseNode(
        _ item: Node, _ fileName: String, _ baseDirectory: String, _ fail: (Node?, String) -> Void
    )
        -> NodeConfig?
    {
        guard let m = fields(item, "geo nodes", nodeKeys, fail) else { return nil }
        guard let id = m["id"]?.string, Self.isIdentifier(id) else {
            fail(m["id"] ?? item, "a node needs an id of letters, digits, '-' and '_' (at most 32)")
            return nil
        }
        var ok = true
        func number(_ key: String, _ range: ClosedRange<Double>) -> Double? {
            Self.number(m, key, range, owner: "node \(id)", ok: &ok, fail)
        }
        let lat = number("latitude", -90...90)
        let lon = number("longitude", -180...180)
        if m["latitude"] == nil || m["longitude"] == nil {
            fail(
                item,
                "node \(id) needs latitude and longitude (where it is: nodes are never geolocated from their address)")
            ok = false
        }
        var node = NodeConfig(
            id: id, latitude: lat ?? 0, longitude: lon ?? 0, declaredAt: "\(fileName):\(item.mark?.line ?? 0)")
        if let n = m["ipv4"] {
            if let s = n.string, let a = Self.address(s, v6: false) {
                node.ipv4 = a
            } else {
                fail(n, "node \(id): ipv4 '\(n.string ?? "?")' is not an IPv4 address")
                ok = false
            }
        }
        if let n = m["ipv6"] {
            if let s = n.string, let a = Self.address(s, v6: true) {
                node.ipv6 = a
            } else {
                fail(n, "node \(id): ipv6 '\(n.string ?? "?")' is not an IPv6 address")
                ok = false
            }
        }
        if node.ipv4 == nil && node.ipv6 == nil {
            fail(item, "node \(id) needs an ipv4 or ipv6 address (what the geo names answer)")
            ok = false
        }
        if let n = m["country"] {
            if let s = n.string, s.count == 2, s.allSatisfy({ $0.isASCII && $0.isUppercase }) {
                node.country = s
            } else {
                fail(n, "node \(id): country must be an ISO 3166-1 code of two capital letters (e.g. DE)")
                ok = false
            }
        }
        if let n = m["region"] {
            if let s = n.string, !s.isEmpty, s.count <= 3 {
                node.region = s
            } else {
                fail(n, "node \(id): region must be an ISO 3166-2 subdivision code without the country (e.g. HE)")
                ok = false
            }
        }
        if let w = number("weight", 0.001...1_000_000) { node.weight = w }
        if let n = m["bias"] {
            if let b = n.int, (-99...99).contains(b) {
                node.bias = b
            } else {
                fail(n, "node \(id): bias must be a whole number from -99 to 99")
                ok = false
            }
        }
        if let n = m["initial"] {
            if let s = n.string, s == "up" || s == "down" {
                node.initiallyUp = s == "up"
            } else {
                fail(n, "node \(id): initial must be up or down (its state until the first checks complete)")
                ok = false
            }
        }
        if let n = m["checks"] {
            for item in list(n, "node \(id) checks", fail) {
                if let c = NodeCheckConfig.parse(item, node: node, baseDirectory: baseDirectory, fail) {
                    if c.kind == .report, node.checks.contains(where: { $0.kind == .report }) {
                        fail(item, "node \(id): one report check per node (its agent's reports)")
                        ok = false
                    }
                    node.checks.append(c)
                } else {
                    ok = false
                }
            }
        }
        return ok ? node : nil
    }

    static func parsePool(_ item: Node, _ fileName: String, _ fail: (Node?, String) -> Void) -> PoolConfig? {
        guard let m = fields(item, "geo pools", poolKeys, fail) else { return nil }
        guard let id = m["id"]?.string, Self.isIdentifier(id) else {
            fail(m["id"] ?? item, "a pool needs an id of letters, digits, '-' and '_' (at most 32)")
            return nil
        }
        guard let members = m["members"]?.sequence?.compactMap(\.string), !members.isEmpty else {
            fail(m["members"] ?? item, "pool \(id) needs members: a list of node ids")
            return nil
        }
        var pool = PoolConfig(id: id, members: members, declaredAt: "\(fileName):\(item.mark?.line ?? 0)")
        var ok = true
        let owner = "pool \(id)"
        for key in ["min-ttl", "max-ttl"] {
            guard let n = m[key] else { continue }
            guard let v = n.int, (0...86400).contains(v) else {
                fail(n, "\(owner): \(key) must be a whole number of seconds from 0 to 86400")
                ok = false
                continue
            }
            if key == "min-ttl" { pool.minTTL = UInt32(v) } else { pool.maxTTL = UInt32(v) }
        }
        if let v = Self.number(m, "settle", 0...86400, owner: owner, ok: &ok, fail) { pool.settle = v }
        if let max = pool.maxTTL, max < pool.minTTL {
            fail(m["max-ttl"] ?? item, "\(owner): max-ttl (\(max)) is below min-ttl (\(pool.minTTL))")
            ok = false
        }
        return ok ? pool : nil
    }

    static func parseName(_ item: Node, _ fileName: String, _ fail: (Node?, String) -> Void) -> GeoNameConfig? {
        guard let m = fields(item, "geo names", nameKeys, fail) else { return nil }
        guard let text = m["name"]?.string, let name = try? DNSName(text.hasSuffix(".") ? text : text + ".") else {
            fail(m["name"] ?? item, "a geo name needs a name (a domain name)")
            return nil
        }
        guard let t = m["type"]?.string?.uppercased(), ["A", "AAAA", "SRV"].contains(t) else {
            fail(m["type"] ?? item, "geo name \(name): type must be A, AAAA or SRV (a discovery name)")
            return nil
        }
        guard let pool = m["pool"]?.string else {
            fail(item, "geo name \(name) needs a pool")
            return nil
        }
        var g = GeoNameConfig(
            name: name, type: t == "A" ? .a : t == "AAAA" ? .aaaa : .srv, pool: pool,
            declaredAt: "\(fileName):\(item.mark?.line ?? 0)")
        var ok = true
        if g.type == .srv {
            if let p = m["port"]?.int, (1...65535).contains(p) {
                g.port = UInt16(p)
            } else {
                fail(
                    m["port"] ?? item,
                    "geo name \(name) SRV: port must be the port joining nodes connect to (1 to 65535)")
                ok = false
            }
            if let text = m["targets"]?.string, let d = try? DNSName(text.hasSuffix(".") ? text : text + ".") {
                g.targets = d
            } else {
                fail(
                    m["targets"] ?? item,
                    "geo name \(name) SRV: targets must be the domain under which each node's name is (e.g. nodes.example.net: fra1.nodes.example.net)"
                )
                ok = false
            }
        } else if let k = m["port"] != nil ? "port" : m["targets"] != nil ? "targets" : nil {
            fail(m[k], "geo name \(name) \(t): \(k) goes with type SRV (a discovery name)")
            ok = false
        }
        func int(_ key: String, _ range: ClosedRange<Int>, _ what: String) -> Int? {
            guard let n = m[key] else { return nil }
            guard let v = n.int, range.contains(v) else {
                fail(n, "geo name \(name): \(key) must be \(what) from \(range.lowerBound) to \(range.upperBound)")
                ok = false
                return nil
            }
            return v
        }
        func double(_ key: String, _ range: ClosedRange<Double>) -> Double? {
            Self.number(m, key, range, owner: "geo name \(name)", ok: &ok, fail)
        }
        if let v = int("answers", 1...8, "a number of addresses") { g.answers = v }
        if let v = int("ttl", 0...86400, "a number of seconds") { g.ttl = UInt32(v) }
        if let v = int("depth", 1...16, "a number of candidates") { g.policy.depth = v }
        if let v = double("same-country-bonus", 0...1) { g.policy.sameCountryBonus = v }
        if let v = double("same-region-bonus", 0...1) { g.policy.sameRegionBonus = v }
        if let v = double("max-distance", 1...20038) { g.policy.maxDistanceKm = v }
        if let n = m["strategy"] {
            if let s = n.string, let st = DistanceStrategy(rawValue: s) {
                g.policy.strategy = st
            } else {
                fail(
                    n,
                    "geo name \(name): strategy must be one of \(DistanceStrategy.allCases.map(\.rawValue).joined(separator: ", "))"
                )
                ok = false
            }
        }
        if let n = m["all-down"] {
            if let s = n.string, let a = AllDownPolicy(rawValue: s) {
                g.allDown = a
            } else {
                fail(
                    n,
                    "geo name \(name): all-down must be one of \(AllDownPolicy.allCases.map(\.rawValue).joined(separator: ", "))"
                )
                ok = false
            }
        }
        if let n = m["fallback"] {
            if let f = n.sequence?.compactMap(\.string), !f.isEmpty {
                g.fallback = f
            } else {
                fail(n, "geo name \(name): fallback must be a list of node ids")
                ok = false
            }
        }
        if g.answers > g.policy.depth {
            fail(
                m["answers"] ?? item, "geo name \(name): answers (\(g.answers)) cannot exceed depth (\(g.policy.depth))"
            )
            ok = false
        }
        return ok ? g : nil
    }

    /// The number at `key` of `m` when it is within `range`; otherwise reported (for `owner`) and
    /// `ok` cleared. nil when the key is absent.
    static func number(
        _ m: Node.Mapping, _ key: String, _ range: ClosedRange<Double>, owner: String, ok: inout Bool,
        _ fail: (Node?, String) -> Void
    ) -> Double? {
        guard let n = m[key] else { return nil }
        // A plain decimal read directly: Yams' own reading (sexagesimal and all) was a tenth of
        // a fleet's reload of 5,000 registered nodes' coordinates.
        let plain = n.scalar.flatMap { $0.style == .plain || $0.style == .any ? Double($0.string) : nil }
        guard let v = plain ?? n.float ?? n.int.map(Double.init), range.contains(v) else {
            fail(n, "\(owner): \(key) must be a number from \(range.lowerBound) to \(range.upperBound)")
            ok = false
            return nil
        }
        return v
    }

    /// What no single item shows: ids that repeat, members and pools that do not exist, nodes
    /// without the address family a name answers with.
    func crossCheck(fileName: String) -> [Diagnostic] {
        var d: [Diagnostic] = []
        func at(_ declaredAt: String, _ m: String) {
            let (file, line) = Self.split(declaredAt)
            d.append(Diagnostic(file: file, line: line, message: m))
        }
        var nodeByID: [String: NodeConfig] = [:]
        for n in nodes {
            if let first = nodeByID[n.id] {
                at(n.declaredAt, "node \(n.id) is defined twice (first at \(first.declaredAt))")
            }
            nodeByID[n.id] = nodeByID[n.id] ?? n
        }
        var poolByID: [String: PoolConfig] = [:]
        for p in pools {
            if let first = poolByID[p.id] {
                at(p.declaredAt, "pool \(p.id) is defined twice (first at \(first.declaredAt))")
            }
            poolByID[p.id] = poolByID[p.id] ?? p
            for m in p.members where nodeByID[m] == nil { at(p.declaredAt, "pool \(p.id): no node has the id '\(m)'") }
            if Set(p.members).count != p.members.count { at(p.declaredAt, "pool \(p.id) lists a member twice") }
        }
        var seen: [String: String] = [:]
        for g in names {
            let key = "\(g.name) \(g.type)"
            if let first = seen[key] { at(g.declaredAt, "geo name \(key) is defined twice (first at \(first))") }
            seen[key] = seen[key] ?? g.declaredAt
            guard let pool = poolByID[g.pool] else {
                at(g.declaredAt, "geo name \(key): no pool has the id '\(g.pool)'")
                continue
            }
            for m in pool.members {
                guard let n = nodeByID[m] else { continue }
                if g.type == .a && n.ipv4 == nil {
                    at(g.declaredAt, "geo name \(key): node \(m) of pool \(g.pool) has no ipv4 address")
                }
                if g.type == .aaaa && n.ipv6 == nil {
                    at(g.declaredAt, "geo name \(key): node \(m) of pool \(g.pool) has no ipv6 address")
                }
            }
            for f in g.fallback ?? [] where !pool.members.contains(f) {
                at(g.declaredAt, "geo name \(key): fallback node '\(f)' is not a member of pool \(g.pool)")
            }
        }
        if !names.isEmpty && databasePath == nil {
            d.append(
                Diagnostic(
                    file: fileName, line: 0,
                    message: "geo names need a database: geo: database: PATH (a MaxMind City database)"))
        }
        return d
    }

    static func isIdentifier(_ s: String) -> Bool {
        !s.isEmpty && s.count <= 32
            && s.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }
    }

    static func address(_ text: String, v6: Bool) -> [UInt8]? {
        var out = [UInt8](repeating: 0, count: v6 ? 16 : 4)
        let rc = out.withUnsafeMutableBytes { inet_pton(v6 ? AF_INET6 : AF_INET, text, $0.baseAddress) }
        return rc == 1 ? out : nil
    }
}

extension GeoConfig {
    /// Whether `other` differs from this at most in what only the health monitor uses (nodes'
    /// checks and cold-start state, pools' TTL settings: the monitor writes the caps they give;
    /// the observers' rule)
    /// and where things are declared: one compile serves both.
    public func compilesLike(_ other: GeoConfig) -> Bool {
        func strip(_ g: GeoConfig) -> GeoConfig {
            var g = g
            g.nodes = g.nodes.map {
                var n = $0
                n.checks = []
                n.initiallyUp = true
                return n
            }
            g.pools = g.pools.map { PoolConfig(id: $0.id, members: $0.members, declaredAt: $0.declaredAt) }
            g.observers = ObserversConfig()  // the monitor's alone, as checks are
            return g
        }
        return strip(self).isEquivalent(to: strip(other))
    }

    /// Whether `other` describes the same geo names, pools, nodes and database, wherever in the
    /// file they are written.
    public func isEquivalent(to other: GeoConfig) -> Bool {
        func nodes(_ g: GeoConfig) -> [NodeConfig] {
            g.nodes.map {
                var n = $0
                n.declaredAt = ""
                return n
            }
        }
        func pools(_ g: GeoConfig) -> [PoolConfig] {
            g.pools.map {
                var p = $0
                p.declaredAt = ""
                return p
            }
        }
        func names(_ g: GeoConfig) -> [GeoNameConfig] {
            g.names.map {
                var n = $0
                n.declaredAt = ""
                return n
            }
        }
        return databasePath == other.databasePath && nodes(self) == nodes(other) && pools(self) == pools(other)
            && names(self) == names(other) && observers == other.observers
    }
}
