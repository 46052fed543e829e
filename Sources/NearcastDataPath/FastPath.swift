import BPFKit
import CNearcastABI
#if canImport(Glibc)
import Glibc
#endif
import DNSWire
import NearcastCore

/// The XDP program and its maps, seen from the control plane: load the object, set the program's
/// configuration, write the answer image, read the counters. The only place the ABI structs of
/// `nearcast_abi.h` are built or read; everything else sees Swift types.
public final class FastPath: Sendable {
    public let object: BPFObject
    public let program: BPFProgram
    /// The names maps by name-length class (32, 64, 128, 256 octets).
    let names: [Int: BPFMap]
    let config: BPFMap
    let stats: BPFMap

    /// The most section bytes one names-map entry holds.
    public static let sectionsCapacity = Int(NC_SECTIONS_MAX)
    /// The shared ABI's version, as compiled into this binary.
    public static let abiVersion = UInt32(NC_ABI_VERSION)

    /// Loads the object at `path` (through the verifier) and finds its maps, checking their layouts.
    /// With `pinDirectory` (on a bpffs), the maps are pinned there, and maps a previous instance
    /// pinned there are taken over, entries and counters included.
    public init(objectPath path: String, pinDirectory: String? = nil) throws(BPFError) {
        object = try BPFObject(path: path, pinMapsUnder: pinDirectory)
        program = try object.program("nearcast_xdp")
        var names: [Int: BPFMap] = [:]
        for (cls, name) in [(32, NC_MAP_NAMES_32), (64, NC_MAP_NAMES_64), (128, NC_MAP_NAMES_128), (256, NC_MAP_NAMES_256)] {
            names[cls] = try object.map(name, keySize: 4 + cls, valueSize: MemoryLayout<nc_answer>.size)
        }
        self.names = names
        config = try object.map(NC_MAP_CONFIG, keySize: 4, valueSize: MemoryLayout<nc_config>.size)
        stats = try object.map(NC_MAP_STATS, keySize: 4, valueSize: MemoryLayout<nc_stats>.size)
    }

    /// The ABI version recorded in the config map pinned under `pinDirectory` by an earlier
    /// instance, or nil when nothing is pinned there (or it never configured the program).
    public static func pinnedABIVersion(pinDirectory: String) throws(BPFError) -> UInt32? {
        let path = pinDirectory + "/" + NC_MAP_CONFIG
        guard access(path, F_OK) == 0 else { return nil }
        let map = try BPFMap.pinned(path, name: NC_MAP_CONFIG, keySize: 4, valueSize: MemoryLayout<nc_config>.size, perCPU: false)
        defer { close(map.fd) }
        guard let value = try map.lookup(key: bytes(of: UInt32(0)))?.first else { return nil }
        let c = value.withUnsafeBytes { $0.loadUnaligned(as: nc_config.self) }
        return c.abi_version == 0 ? nil : c.abi_version
    }

    /// Sets what the program answers: the UDP port, our EDNS payload size, and the pass budget
    /// (queries per second each CPU may hand to the slow path, 0 for none, and what happens above
    /// it); `enabled: false` passes all.
    public func configure(
        dnsPort: UInt16, udpPayload: UInt16, passBudget: PassBudget = PassBudget(), enabled: Bool = true
    ) throws(BPFError) {
        var c = nc_config()
        c.abi_version = Self.abiVersion
        c.dns_port = dnsPort
        c.udp_payload = udpPayload
        c.enabled = enabled ? 1 : 0
        c.pass_rate = passBudget.rate
        c.pass_burst = passBudget.burst
        c.over_budget = passBudget.truncate ? NC_OVER_BUDGET_TRUNCATE.rawValue : NC_OVER_BUDGET_DROP.rawValue
        try config.update(key: Self.bytes(of: UInt32(0)), value: Self.bytes(of: c))
    }

    /// Makes the names map hold exactly `image`: every entry is written (in place, so a query
    /// never misses a name that stays), then keys the image no longer has are deleted.
    /// - Returns: how many stale entries were deleted.
    @discardableResult
    public func write(_ image: AnswerImage) throws(BPFError) -> Int {
        var wanted: [Int: Set<[UInt8]>] = [:]
        var batches: [Int: (keys: [[UInt8]], values: [[UInt8]])] = [:]
        for e in image.entries {
            let (key, value) = Self.encode(e)
            let cls = Self.nameClass(e.name.count)
            batches[cls, default: ([], [])].keys.append(key)
            batches[cls, default: ([], [])].values.append(value)
            wanted[cls, default: []].insert(key)
        }
        for (cls, batch) in batches { try names[cls]!.updateBatch(keys: batch.keys, values: batch.values) }
        var deleted = 0
        for (cls, map) in names {
            for key in try map.keys() where !(wanted[cls]?.contains(key) ?? false) {
                try map.delete(key: key)
                deleted += 1
            }
        }
        return deleted
    }

    /// The name-length class (the names map) of a name of `length` octets (NC_NAME_CLASS).
    static func nameClass(_ length: Int) -> Int { length <= 32 ? 32 : length <= 64 ? 64 : length <= 128 ? 128 : 256 }

    /// The names-map key (cut to the name's class) and value of an image entry.
    static func encode(_ e: AnswerImage.Entry) -> ([UInt8], [UInt8]) {
        var key = nc_name_key()
        key.qtype = e.qtype
        key.len = UInt16(e.name.count)
        withUnsafeMutableBytes(of: &key.name) { buf in
            for (i, b) in e.name.enumerated() { buf[i] = b }
        }
        var value = nc_answer()
        value.flags = e.flags
        value.ancount = e.ancount
        value.nscount = e.nscount
        value.arcount = e.arcount
        value.len = UInt16(e.sections.count)
        value.csum = e.checksum
        withUnsafeMutableBytes(of: &value.sections) { buf in
            for (i, b) in e.sections.enumerated() { buf[i] = b }
        }
        return (Array(bytes(of: key).prefix(4 + nameClass(e.name.count))), bytes(of: value))
    }

    /// The verdict counters, summed over CPUs.
    public func statistics() throws(BPFError) -> FastPathStats {
        guard let perCPU = try stats.lookup(key: Self.bytes(of: UInt32(0))) else { return FastPathStats() }
        var total = FastPathStats()
        for bytes in perCPU {
            let s = bytes.withUnsafeBytes { $0.loadUnaligned(as: nc_stats.self) }
            total.answered += s.answered
            total.passNotDNS += s.pass_not_dns
            total.passShape += s.pass_shape
            total.passEDNS += s.pass_edns
            total.passMiss += s.pass_miss
            total.passTooBig += s.pass_too_big
            total.passNoRoom += s.pass_no_room
            total.dropMalformed += s.drop_malformed
            total.dropInternal += s.drop_internal
            total.limitTruncated += s.limit_truncated
            total.limitDropped += s.limit_dropped
        }
        return total
    }

    static func bytes<T>(of value: T) -> [UInt8] { withUnsafeBytes(of: value) { Array($0) } }
}

/// The XDP program's verdicts by reason (see `enum nc_reason`).
public struct FastPathStats: Equatable, Sendable {
    public var answered: UInt64 = 0
    public var passNotDNS: UInt64 = 0
    public var passShape: UInt64 = 0
    public var passEDNS: UInt64 = 0
    public var passMiss: UInt64 = 0
    public var passTooBig: UInt64 = 0
    public var passNoRoom: UInt64 = 0
    public var dropMalformed: UInt64 = 0
    public var dropInternal: UInt64 = 0
    public var limitTruncated: UInt64 = 0
    public var limitDropped: UInt64 = 0
    public init() {}
}

/// How many DNS queries per second each CPU's XDP may hand to the slow path, and what it does
/// above that: a minimal TC=1 reply (`truncate`) or a drop.
public struct PassBudget: Equatable, Sendable {
    /// Queries per second per CPU; 0 = no limit.
    public var rate: UInt32
    /// Bucket size: queries a CPU may pass at once above the rate.
    public var burst: UInt32
    public var truncate: Bool

    public init(rate: UInt32 = 0, burst: UInt32 = 0, truncate: Bool = true) {
        self.rate = rate
        self.burst = burst
        self.truncate = truncate
    }
}
