import MaxMindDB

/// A pool of nodes that serve one service, with the policy that ranks them (ARCHITECTURE §1, §5).
public struct GeoPool: Hashable, Sendable {
    public var id: String
    public var nodes: [GeoNode]
    public var policy: GeoPolicy
    /// The order for clients whose location is unknown; nil: by weight.
    public var fallback: [String]?

    public init(id: String, nodes: [GeoNode], policy: GeoPolicy = GeoPolicy(), fallback: [String]? = nil) {
        self.id = id
        self.nodes = nodes
        self.policy = policy
        self.fallback = fallback
    }
}

/// A client prefix and the location class of every address in it. The prefix length is the ECS
/// scope answered for it.
public struct ClassPrefix: Hashable, Sendable {
    /// The address, left-aligned in 128 bits (an IPv4 address in the top 32).
    public var address: UInt128
    public var length: Int
    public var locationClass: Int

    public init(address: UInt128, length: Int, locationClass: Int) {
        self.address = address
        self.length = length
        self.locationClass = locationClass
    }

    /// Picks the spill-over node for the clients of this prefix (GeoTable.answer; the XDP program
    /// reads it from the LPM map): a hash of the prefix, so each prefix stays with one node while
    /// the prefixes of a class spread.
    public var seed: UInt32 {
        var h =
            UInt64(truncatingIfNeeded: address >> 64) ^ (UInt64(truncatingIfNeeded: address) &* 0xff51_afd7_ed55_8ccd)
            ^ UInt64(length)
        h ^= h >> 33
        h = h &* 0xc4ce_b9fe_1a85_ec53
        h ^= h >> 33
        return UInt32(truncatingIfNeeded: h)
    }
}

/// An IPv6 prefix whose addresses the database locates by an IPv4 address inside them: the 32
/// bits after the prefix (6to4 `2002::/16`, Teredo `2001::/32`, IPv4-mapped `::ffff:0:0/96`, and
/// `::/96`, as MaxMind's trees alias them). Only whole-byte prefixes up to /96 are kept.
public struct GeoAlias: Hashable, Sendable {
    /// The prefix, left-aligned in 128 bits.
    public var address: UInt128
    public var length: Int

    public init(address: UInt128, length: Int) {
        self.address = address
        self.length = length
    }

    /// The IPv4 address inside `address` (16 bytes; `aligned`: the same, left-aligned), when this
    /// prefix covers it.
    public func ipv4(in address: [UInt8], aligned: UInt128) -> [UInt8]? {
        guard address.count == 16, length % 8 == 0, length <= 96,
            GeoCompiler.contains(ClassPrefix(address: self.address, length: length, locationClass: 0), aligned)
        else { return nil }
        return Array(address[(length / 8)..<(length / 8 + 4)])
    }
}

/// What the geo compiler makes of a MaxMind database and the pools: the location classes and the
/// prefixes that map client addresses to them, IPv4 and IPv6 apart, and the IPv6 prefixes looked
/// up as IPv4.
public struct GeoImage: Sendable {
    /// Class 0: an unknown location (no record, one without coordinates, or a block the database
    /// does not cover); the others in the order first met. Each is one candidate list per pool,
    /// in `pools` order.
    public var classes: [[[String]]]
    public var pools: [String]
    public var ipv4: [ClassPrefix]
    public var ipv6: [ClassPrefix]
    /// The database's aliases of its IPv4 space, checked before `ipv6`.
    public var aliases: [GeoAlias]
    /// The most aliases kept (the fast path has room for as many; MaxMind's trees have four).
    public static let maxAliases = 8
    public var report: Report

    /// The figures the compile reports (issue 4): what went in and what came out.
    public struct Report: Hashable, Sendable {
        public var networks = 0
        /// Blocks the database has no record for, before and after merging (the after counts
        /// include the merged ones).
        public var uncovered = 0
        public var uncoveredAfter = 0
        /// IPv6 prefixes looked up by the IPv4 address inside them.
        public var aliases = 0
        public var locations = 0
        public var classes = 0
        public var ipv4Before = 0
        public var ipv6Before = 0
        public var ipv4After = 0
        public var ipv6After = 0
    }

    /// Where a client address falls: its class, the length of the prefix that matched (the ECS
    /// scope; nil when nothing covers the address) and that prefix's spill-over seed.
    public struct Match: Hashable, Sendable {
        public var locationClass: Int
        public var length: Int?
        public var seed: UInt32
    }

    /// The match of `address` (4 or 16 bytes), as the fast path finds it: an aliased IPv6 address
    /// by its IPv4 address (the scope counts the alias's bits too), any other by longest prefix.
    public func match(_ address: [UInt8]) -> Match {
        let aligned = GeoCompiler.leftAligned(address)
        for alias in aliases {
            guard let v4 = alias.ipv4(in: address, aligned: aligned) else { continue }
            let (c, p) = lookup(v4)
            return Match(locationClass: c, length: p.map { alias.length + $0.length }, seed: p?.seed ?? 0)
        }
        let (c, p) = lookup(address)
        return Match(locationClass: c, length: p?.length, seed: p?.seed ?? 0)
    }

    /// The class of `address` (4 or 16 bytes) by longest prefix in its family's table, and the
    /// prefix that matched; class 0 and no prefix when nothing covers it. What the LPM maps answer.
    public func lookup(_ address: [UInt8]) -> (locationClass: Int, prefix: ClassPrefix?) {
        let table = address.count == 4 ? ipv4 : ipv6
        let a = GeoCompiler.leftAligned(address)
        // Prefixes are disjoint and sorted: the one that covers `a` is the last starting at or before it.
        var lo = 0
        var hi = table.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if table[mid].address <= a { lo = mid + 1 } else { hi = mid }
        }
        guard lo > 0 else { return (0, nil) }
        let p = table[lo - 1]
        return GeoCompiler.contains(p, a) ? (p.locationClass, p) : (0, nil)
    }
}

/// The geo compiler (ARCHITECTURE §2, §5): every network of the database -> its location -> per pool,
/// the ranked candidate list -> location classes (equal lists across all pools) -> adjacent
/// networks of one class merged into the widest prefix that covers exactly them.
public enum GeoCompiler {
    /// Compiles `database` for `pools`. `progress` is called now and then with the networks done.
    public static func compile(
        database: MaxMindDatabase, pools: [GeoPool], progress: ((Int) -> Void)? = nil
    ) throws -> GeoImage {
        var classes: [[[String]]] = [pools.map { rank($0, nil) }]
        var classOf: [[[String]]: Int] = [classes[0]: 0]
        var byLocation: [GeoLocation: Int] = [:]
        var v4: [ClassPrefix] = []
        var v6: [ClassPrefix] = []
        var gaps4: [ClassPrefix] = []
        var gaps6: [ClassPrefix] = []
        var aliases: [GeoAlias] = []
        var report = GeoImage.Report()
        try database.walk { entry in
            let network: IPNetwork
            let location: GeoLocation
            switch entry {
            case .ipv4Alias(let n):
                // Whole bytes up to /96 (MaxMind's are /16, /32 and /96): the fast path reads the
                // IPv4 address at a byte offset. Any other stays unlocated, in both paths.
                if n.prefixLength % 8 == 0, n.prefixLength <= 96, aliases.count < GeoImage.maxAliases {
                    aliases.append(GeoAlias(address: leftAligned(n.address), length: n.prefixLength))
                }
                return
            case .uncovered(let n):
                // Answered as an unknown location, with this block as the ECS scope: merged with
                // neighbouring gaps only, so a scope never reaches past the gap into a network.
                let p = ClassPrefix(address: leftAligned(n.address), length: n.prefixLength, locationClass: 0)
                if n.isIPv4 { gaps4.append(p) } else { gaps6.append(p) }
                report.uncovered += 1
                return
            case .located(let n, let l): (network, location) = (n, l)
            }
            report.networks += 1
            if report.networks % 20_000 == 0 { progress?(report.networks) }
            let c: Int
            if let known = byLocation[location] {
                c = known
            } else {
                let key = location.hasCoordinates ? pools.map { rank($0, location) } : classes[0]
                if let k = classOf[key] {
                    c = k
                } else {
                    c = classes.count
                    classes.append(key)
                    classOf[key] = c
                }
                byLocation[location] = c
            }
            let p = ClassPrefix(address: leftAligned(network.address), length: network.prefixLength, locationClass: c)
            if network.isIPv4 { v4.append(p) } else { v6.append(p) }
        }
        report.locations = byLocation.count
        report.classes = classes.count
        report.ipv4Before = v4.count
        report.ipv6Before = v6.count
        let (mergedGaps4, mergedGaps6) = (merge(gaps4), merge(gaps6))
        report.uncoveredAfter = mergedGaps4.count + mergedGaps6.count
        let merged4 = interleave(merge(v4), mergedGaps4)
        let merged6 = interleave(merge(v6), mergedGaps6)
        report.ipv4After = merged4.count
        report.ipv6After = merged6.count
        report.aliases = aliases.count
        return GeoImage(
            classes: classes, pools: pools.map(\.id), ipv4: merged4, ipv6: merged6, aliases: aliases, report: report)
    }

    static func rank(_ pool: GeoPool, _ location: GeoLocation?) -> [String] {
        pool.policy.rank(pool.nodes, for: location, fallback: pool.fallback).map(\.id)
    }

    /// Merges sorted, disjoint prefixes: two halves of one parent with the same class become the
    /// parent, again and again, so each run of one class ends as the fewest prefixes that cover
    /// exactly it.
    static func merge(_ prefixes: [ClassPrefix]) -> [ClassPrefix] {
        var out: [ClassPrefix] = []
        out.reserveCapacity(prefixes.count)
        for p in prefixes {
            out.append(p)
            while out.count >= 2 {
                let b = out[out.count - 1]
                let a = out[out.count - 2]
                guard a.length == b.length, a.length > 0, a.locationClass == b.locationClass else { break }
                let bit = UInt128(1) << (128 - a.length)
                // a must be the left half (its bit clear) and b the right half of the same parent.
                guard a.address & bit == 0, b.address == a.address | bit else { break }
                out.removeLast(2)
                out.append(ClassPrefix(address: a.address, length: a.length - 1, locationClass: a.locationClass))
            }
        }
        return out
    }

    /// Two sorted lists of prefixes, disjoint from each other, as one sorted list.
    static func interleave(_ a: [ClassPrefix], _ b: [ClassPrefix]) -> [ClassPrefix] {
        var out: [ClassPrefix] = []
        out.reserveCapacity(a.count + b.count)
        var i = 0
        var j = 0
        while i < a.count || j < b.count {
            if j == b.count || (i < a.count && a[i].address < b[j].address) {
                out.append(a[i])
                i += 1
            } else {
                out.append(b[j])
                j += 1
            }
        }
        return out
    }

    /// 4 or 16 address bytes as a 128-bit number, left-aligned.
    static func leftAligned(_ bytes: [UInt8]) -> UInt128 {
        var v: UInt128 = 0
        for b in bytes { v = v << 8 | UInt128(b) }
        return v << (128 - 8 * bytes.count)
    }

    static func contains(_ p: ClassPrefix, _ a: UInt128) -> Bool {
        let mask: UInt128 = p.length == 0 ? 0 : ~UInt128(0) << (128 - p.length)
        return a & mask == p.address & mask
    }
}
