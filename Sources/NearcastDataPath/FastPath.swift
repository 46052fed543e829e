import BPFKit
import CNearcastABI
import DNSWire
import Foundation
import NearcastAPIModel
import NearcastAnswers
import NearcastBasics
import NearcastGeo
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The XDP program and its maps, seen from the control plane: load the object, set the program's
/// configuration, write the answer image into the names table, read the counters. The only place
/// the ABI structs of `nearcast_abi.h` are built or read; everything else sees Swift types.
public final class FastPath: Sendable {
    /// The maps (pinned, when asked, under the pin directory).
    public let object: BPFObject
    /// The program, loaded against `object`'s maps: with `verifyBeside`, only once `programLoaded`
    /// has returned (before, this waits for the load, and a load that failed is a bug here).
    public var program: BPFProgram {
        do { return try loaded.wait().program } catch { preconditionFailure("FastPath.program: \(error)") }
    }
    private let loaded: ProgramLoad
    /// The names table: the arena of records, the slots, and where each negative answer is (all
    /// three mapped into this process).
    let names: BPFMap
    let arena: BPFMappedArray
    let slots: BPFMap
    let slotWords: BPFMappedArray
    let negatives: BPFMap
    let negativeWords: BPFMappedArray
    let config: BPFMap
    let stats: BPFMap
    /// The geo maps (FastPath+Geo.swift), one generation per slot or half (NC_GEO_GENERATIONS):
    /// prefixes per family (IPv4 an array, IPv6 an LPM trie), candidate lists and nodes as map-in-maps, with the templates of their inner
    /// maps; each pool's TTL state as an array of two halves.
    let geo4: BPFMap
    let geo6: BPFMap
    let cands: BPFMap
    let nodes: BPFMap
    let geo4Inner: BPFMapTemplate
    /// The /16 spans over each generation's IPv4 prefixes, a half per generation, and the compile
    /// (`GeoTable.serial`, 0 for none) each half was last written for: nil until this process
    /// writes it (a pinned map may hold a previous instance's). Written through the mapping.
    let geo4Spans: BPFMap
    let geo4SpanWords: BPFMappedArray
    let spansWritten = Mutex<[UInt64?]>([nil, nil])
    let geo6Inner: BPFMapTemplate
    let candsInner: BPFMapTemplate
    /// Each generation's nodes map (made by this process; a slot may still hold a previous
    /// instance's until this one writes that generation).
    let nodeMaps: [BPFOwnedMap]
    let pools: BPFMap
    /// The IPv6 prefixes each generation's compile looks up as IPv4 (nc_geo_alias).
    let aliases: BPFMap
    /// Response rate limiting: its settings (one entry) and the exempt prefixes.
    let rrlConfig: BPFMap
    let rrlExempt: BPFMap
    /// DNS Cookies: the secrets and the wall clock (one entry).
    let cookie: BPFMap
    /// The addresses the program answers queries to (nc_local).
    let local: BPFMap
    /// The signatures of signed geo answers' variants (nc_geo_sigs, FastPath+GeoSignatures.swift),
    /// and what was written there, by key (its value's hash): a lock of its own, so that a write
    /// of thousands never holds up a health change's.
    let geoSignatures: BPFMap
    let geoSignaturesWritten = Mutex<[[UInt8]: Int]>([:])
    let table: NamesTable
    /// What the answers went to (nc_stats' by type, nc_by_zone, nc_by_node).
    let tally: AnswerTally
    /// The size of every inner map of nc_geo4 and nc_cands, fixed when those maps were made.
    public let geoCapacity: GeoCapacity
    /// What was last written: the program's settings (the live generation included) and the live
    /// generation's entries. Held only for map writes of a few entries and the switch, never across
    /// a long write or a grace period, so a health change never waits behind a reload
    /// (ARCHITECTURE §11).
    let state: Mutex<State>
    /// Set while a `write` is under way: writes of generations are one at a time (GenerationWriter
    /// makes them so); two at once would be a bug, caught here rather than as a torn table.
    let writing = Atomic<Bool>(false)
    /// Geo maps of compiles that no generation uses any more, kept until `drainRetired` has
    /// emptied them.
    let retired = Mutex<[GeoMaps]>([])

    struct State {
        var settings: nc_config
        var live: NamesTable.LiveRecords
        /// The index of each anchor's negative answer (its name), the same from write to write so
        /// that the records naming it stay as they are.
        var negativeIndex: [[UInt8]: UInt16] = [:]
        /// The zone (lower-cased wire name) of each negative answer's index: what the program's
        /// counts by zone stand for.
        var negativeZones: [UInt16: [UInt8]] = [:]
        /// For each generation, the geo maps whose node indexes its counts by node are of: those it
        /// answered with when it was last live.
        var geoCounted: [GeoMaps?] = [nil, nil]
        /// The arena's free space for changes written into the live generation (FastPath+Apply.swift):
        /// made with each generation (or at the first change, for maps taken over).
        var space: NamesTable.ArenaSpace?
        /// Names whose records have NXDOMAIN cleared because a name below them is left out of the
        /// live generation (`layout`): a change that writes them again keeps it cleared, or XDP
        /// would answer the name left out NXDOMAIN.
        var nxdomainCleared: Set<[UInt8]> = []
        /// Names the live generation left out (a full table, hash collisions, no arena room):
        /// while there are any, a change is written as a whole generation (`apply` declines it).
        var leftOut = 0
        /// Whether `apply` replaced records since the last grace period: the next whole generation,
        /// which may write where they were, waits one first.
        var replacedSinceGracePeriod = false
        /// The live generation's geo maps (nil: no geo names).
        var geo: GeoMaps?
        /// The geo nodes: index within a half of the nodes map and the value written there.
        var nodes: [String: (index: UInt32, value: nc_node)] = [:]
        /// The pools: index within a half of the pools map and the TTL cap written there.
        var pools: [String: (index: UInt32, cap: UInt32)] = [:]
        /// The health board the live generation follows (that of its geo table).
        var health: GeoTable.HealthView?
    }

    /// The most section bytes one names-table entry holds.
    public static let sectionsCapacity = Int(NC_SECTIONS_MAX)
    /// The shared ABI's version, as compiled into this binary.
    public static let abiVersion = UInt32(NC_ABI_VERSION)
    /// Names the names table holds unless configured or sized otherwise.
    public static let defaultCapacity = Int(NC_NAMES_CAPACITY)
    /// Arena bytes a table is given per name when nothing better is known (see `needs`).
    public static let defaultBytesPerName = 256

    /// Names (records) the names table holds.
    public var capacity: Int { table.capacity }

    /// Waits for the program's load (`verifyBeside`) and throws what it threw.
    public func programLoaded() throws(BPFError) { _ = try loaded.wait() }

    /// The instructions the verifier processed, once the program is loaded.
    public var verifiedInstructions: Int? { try? loaded.wait().object.verifiedInstructions }

    /// Whether the arena holds `bytes` as the record at `ref` (LiveRecords reads records there).
    var holds: NamesTable.LiveRecords.Holds { { [arena] ref, bytes in arena.holds(bytes, at: Int(ref - 1) * 8) } }
    /// Kernel memory of the names table: the arena and both generations of slots.
    public var tableBytes: Int { table.arenaBytes + 2 * table.slotCount * 8 }

    /// Loads the object at `path` (through the verifier) and finds its maps, checking their layouts.
    /// The names table holds `capacity` names in an arena of `arenaBytes` (nil: `capacity` ×
    /// `defaultBytesPerName`), rounded up to whole pages.
    /// With `pinDirectory` (on a bpffs), the maps are pinned there, and maps a previous instance
    /// pinned there are taken over, entries and counters included; a pinned names table keeps its
    /// size (`capacity` and `arenaBytes` apply to a new one), and so do pinned geo maps
    /// (`geoCapacity` likewise). The maps are made first and the program is loaded against them
    /// (`ProgramLoad`); with `verifyBeside`, on a thread of its own while this returns, so that
    /// the verifier runs while the caller writes the maps: `programLoaded()` waits for it.
    public init(
        objectPath path: String, pinDirectory: String? = nil, capacity: Int = FastPath.defaultCapacity,
        arenaBytes: Int? = nil, geoCapacity: GeoCapacity = .minimum, verifyBeside: Bool = false
    ) throws(BPFError) {
        var table = NamesTable(
            capacity: capacity,
            pages: NamesTable.pages(forRecordBytes: arenaBytes ?? capacity * Self.defaultBytesPerName))
        var geoSize = geoCapacity
        if let dir = pinDirectory {
            if let pinned = try Self.pinnedTable(pinDirectory: dir) { table = pinned }
            if let pinned = try Self.pinnedGeoCapacity(pinDirectory: dir) { geoSize = pinned }
        }
        object = try BPFObject(
            path: path, pinMapsUnder: pinDirectory,
            maxEntries: [NC_MAP_NAMES: UInt32(table.pages), NC_MAP_SLOTS: UInt32(2 * table.slotCount)],
            innerMapEntries: [
                NC_MAP_GEO4: UInt32(geoSize.ipv4Prefixes), NC_MAP_CANDS: UInt32(geoSize.candidateLists),
            ], programs: false)
        loaded = try ProgramLoad(path: path, program: "nearcast_xdp", maps: object, beside: verifyBeside)
        names = try object.map(NC_MAP_NAMES, keySize: 4, valueSize: MemoryLayout<nc_arena_page>.size)
        arena = try BPFMappedArray(names)
        slots = try object.map(NC_MAP_SLOTS, keySize: 4, valueSize: 8)
        slotWords = try BPFMappedArray(slots)
        negatives = try object.map(NC_MAP_NEGATIVES, keySize: 4, valueSize: 8)
        negativeWords = try BPFMappedArray(negatives)
        config = try object.map(NC_MAP_CONFIG, keySize: 4, valueSize: MemoryLayout<nc_config>.size)
        stats = try object.map(NC_MAP_STATS, keySize: 4, valueSize: MemoryLayout<nc_stats>.size)
        geo4 = try object.map(NC_MAP_GEO4, keySize: 4, valueSize: 4)
        geo6 = try object.map(NC_MAP_GEO6, keySize: 4, valueSize: 4)
        cands = try object.map(NC_MAP_CANDS, keySize: 4, valueSize: 4)
        geo4Inner = try object.innerMapTemplate(NC_MAP_GEO4, keySize: 4, valueSize: IPv4PrefixArray.prefixSize)
        geo4Spans = try object.map(NC_MAP_GEO4_SPANS, keySize: 4, valueSize: IPv4PrefixArray.spanSize)
        geo4SpanWords = try BPFMappedArray(geo4Spans)
        geo6Inner = try object.innerMapTemplate(
            NC_MAP_GEO6, keySize: MemoryLayout<nc_geo6_key>.size, valueSize: MemoryLayout<nc_geo_class>.size)
        candsInner = try object.innerMapTemplate(NC_MAP_CANDS, keySize: 4, valueSize: MemoryLayout<nc_cands>.size)
        nodes = try object.map(NC_MAP_NODES, keySize: 4, valueSize: 4)
        let nodesInner = try object.innerMapTemplate(NC_MAP_NODES, keySize: 4, valueSize: MemoryLayout<nc_node>.size)
        // Arrays are inlined by the verifier at the template's size: each must have exactly it.
        nodeMaps = try (0..<Int(NC_GEO_GENERATIONS)).map { _ throws(BPFError) in
            try BPFOwnedMap(like: nodesInner, name: NC_MAP_NODES, maxEntries: Int(NC_NODES_MAX))
        }
        pools = try object.map(NC_MAP_POOLS, keySize: 4, valueSize: MemoryLayout<nc_pool>.size)
        aliases = try object.map(NC_MAP_ALIASES, keySize: 4, valueSize: MemoryLayout<nc_geo_alias>.size)
        rrlConfig = try object.map(NC_MAP_RRL_CONFIG, keySize: 4, valueSize: MemoryLayout<nc_rrl_config>.size)
        rrlExempt = try object.map(
            NC_MAP_RRL_EXEMPT, keySize: MemoryLayout<nc_rrl_exempt_key>.size, valueSize: 4)
        cookie = try object.map(NC_MAP_COOKIE, keySize: 4, valueSize: MemoryLayout<nc_cookie_config>.size)
        local = try object.map(NC_MAP_LOCAL, keySize: MemoryLayout<nc_local_key>.size, valueSize: 1)
        geoSignatures = try object.map(
            NC_MAP_GEO_SIGS, keySize: MemoryLayout<nc_geo_sig_key>.size, valueSize: MemoryLayout<nc_geo_sig>.size)
        tally = try AnswerTally(object: object)
        self.table = table
        self.geoCapacity = geoSize
        var state = try Self.readState(
            config: config, slots: slotWords, negatives: negativeWords, arena: arena, table: table)
        state.settings.geo4_capacity = UInt32(geoSize.ipv4Prefixes)
        state.settings.cands_capacity = UInt32(geoSize.candidateLists)
        self.state = Mutex(state)
    }

    /// The geo capacity recorded in the config map pinned under `pinDirectory` by an earlier
    /// instance of this ABI version, which its pinned geo maps were made with; nil when there is
    /// none (nothing pinned, another version, or never configured).
    public static func pinnedGeoCapacity(pinDirectory: String) throws(BPFError) -> GeoCapacity? {
        let path = pinDirectory + "/" + NC_MAP_CONFIG
        guard access(path, F_OK) == 0, try pinnedABIVersion(pinDirectory: pinDirectory) == abiVersion else {
            return nil
        }
        let map = try BPFMap.pinned(
            path, name: NC_MAP_CONFIG, keySize: 4, valueSize: MemoryLayout<nc_config>.size, perCPU: false)
        defer { close(map.fd) }
        guard let value = try map.lookup(key: bytes(of: UInt32(0)))?.first else { return nil }
        let c = value.withUnsafeBytes { $0.loadUnaligned(as: nc_config.self) }
        guard c.geo4_capacity > 0, c.cands_capacity > 0 else { return nil }
        return GeoCapacity(ipv4Prefixes: Int(c.geo4_capacity), candidateLists: Int(c.cands_capacity))
    }

    /// The size of the names table pinned under `pinDirectory` by an earlier instance of this ABI
    /// version, or nil when there is none: its arena's pages, and its capacity as recorded in the
    /// config map (or, before the first write recorded it, as many as its slots were made for).
    static func pinnedTable(pinDirectory: String) throws(BPFError) -> NamesTable? {
        let (arenaPath, slotsPath) = (pinDirectory + "/" + NC_MAP_NAMES, pinDirectory + "/" + NC_MAP_SLOTS)
        guard access(arenaPath, F_OK) == 0, access(slotsPath, F_OK) == 0,
            try pinnedABIVersion(pinDirectory: pinDirectory) ?? abiVersion == abiVersion
        else { return nil }
        let arena = try BPFMap.pinned(
            arenaPath, name: NC_MAP_NAMES, keySize: 4, valueSize: MemoryLayout<nc_arena_page>.size, perCPU: false)
        defer { close(arena.fd) }
        let slots = try BPFMap.pinned(slotsPath, name: NC_MAP_SLOTS, keySize: 4, valueSize: 8, perCPU: false)
        defer { close(slots.fd) }
        var capacity = slots.maxEntries / 4
        if access(pinDirectory + "/" + NC_MAP_CONFIG, F_OK) == 0 {
            let config = try BPFMap.pinned(
                pinDirectory + "/" + NC_MAP_CONFIG, name: NC_MAP_CONFIG, keySize: 4,
                valueSize: MemoryLayout<nc_config>.size, perCPU: false)
            defer { close(config.fd) }
            if let value = try config.lookup(key: bytes(of: UInt32(0)))?.first {
                let c = value.withUnsafeBytes { $0.loadUnaligned(as: nc_config.self) }
                if c.names_capacity > 0 { capacity = Int(c.names_capacity) }
            }
        }
        let table = NamesTable(capacity: capacity, pages: arena.maxEntries)
        return 2 * table.slotCount == slots.maxEntries ? table : nil
    }

    /// What the maps hold now: a previous instance's settings and live records (those its slots
    /// and its negative answers' indexes point at) when they were taken over, so that a new
    /// generation never overwrites what queries read; else a fresh state.
    static func readState(
        config: BPFMap, slots: BPFMappedArray, negatives: BPFMappedArray, arena: BPFMappedArray, table: NamesTable
    ) throws(BPFError) -> State {
        var fresh = nc_config()
        fresh.abi_version = abiVersion
        fresh.slot_mask = UInt32(table.slotCount - 1)
        fresh.names_capacity = UInt32(table.capacity)
        guard let value = try config.lookup(key: bytes(of: UInt32(0)))?.first else {
            return State(settings: fresh, live: .init())
        }
        let c = value.withUnsafeBytes { $0.loadUnaligned(as: nc_config.self) }
        guard c.abi_version == abiVersion, c.slot_mask == fresh.slot_mask, c.generation < 2 else {
            return State(settings: fresh, live: .init())
        }
        var state = State(settings: c, live: .init())
        func record(_ ref: UInt32) -> NamesTable.Entry? { Self.record(at: ref, in: arena) }
        let base = Int(c.generation) * table.slotCount
        let words = slots.read(at: base * 8, length: table.slotCount * 8)
        words.withUnsafeBytes { w in
            for s in 0..<table.slotCount {
                let ref = UInt32(truncatingIfNeeded: w.load(fromByteOffset: s * 8, as: UInt64.self))
                if let e = record(ref) { state.live.insert(e, ref: ref) }
            }
        }
        let half = Int(c.generation) * negativesMax
        let refs = negatives.read(at: half * 8, length: negativesMax * 8)
        refs.withUnsafeBytes { w in
            for i in 1..<negativesMax {
                let ref = UInt32(truncatingIfNeeded: w.load(fromByteOffset: i * 8, as: UInt64.self))
                guard let e = record(ref) else { continue }
                state.live.insert(e, ref: ref)
                state.negativeIndex[NamesTable.recordName(e.bytes)] = UInt16(i)
            }
        }
        return state
    }

    /// Negative answers a generation may have (nc_negatives holds a half of them per generation).
    static let negativesMax = Int(NC_NEGATIVES_MAX)

    /// The ABI version recorded in the config map pinned under `pinDirectory` by an earlier
    /// instance, or nil when nothing is pinned there (or it never configured the program).
    public static func pinnedABIVersion(pinDirectory: String) throws(BPFError) -> UInt32? {
        let path = pinDirectory + "/" + NC_MAP_CONFIG
        guard access(path, F_OK) == 0 else { return nil }
        // Any value size: the version is the first field in every ABI, and a layout of another
        // version is what this is asked to recognise.
        let map = try BPFMap.pinned(path, name: NC_MAP_CONFIG, keySize: 4, valueSize: nil, perCPU: false)
        defer { close(map.fd) }
        guard let value = try map.lookup(key: bytes(of: UInt32(0)))?.first, value.count >= 4 else { return nil }
        let version = value.withUnsafeBytes { $0.loadUnaligned(as: UInt32.self) }
        return version == 0 ? nil : version
    }

    /// Sets what the program answers: the UDP port, our EDNS payload size, and the pass budget
    /// (queries per second each CPU may hand to the slow path, 0 for none, and what happens above
    /// it); `enabled: false` passes all. The names table's live generation stays as it is.
    public func configure(
        dnsPort: UInt16, udpPayload: UInt16, passBudget: PassBudget = PassBudget(), enabled: Bool = true
    ) throws(BPFError) {
        try state.withLock { (s: inout State) throws(BPFError) in
            var c = s.settings
            c.abi_version = Self.abiVersion
            c.dns_port = dnsPort
            c.udp_payload = udpPayload
            c.enabled = enabled ? 1 : 0
            c.pass_rate = passBudget.rate
            c.pass_burst = passBudget.burst
            c.over_budget = passBudget.truncate ? NC_OVER_BUDGET_TRUNCATE.rawValue : NC_OVER_BUDGET_DROP.rawValue
            try config.update(key: Self.bytes(of: UInt32(0)), value: Self.bytes(of: c))
            s.settings = c
        }
    }

    /// Makes the program answer only queries to `addresses` (nc_local, and the first few of each
    /// family in nc_config: `AnsweredAddresses`): those the map holds and `addresses` does not are
    /// removed, and the others added (pinned maps taken over may hold a previous instance's).
    /// Until an address is added, its queries go to the slow path, which answers them the same:
    /// so past the map's NC_LOCAL_MAX the rest are left to it, and said in the result.
    @discardableResult
    public func answer(queriesTo addresses: Set<LocalAddress>) throws(BPFError) -> (answered: Int, leftOut: Int) {
        // Under the state lock: nc_config is written whole, and two writers (the start, a watch
        // of the host's addresses) never interleave their differences.
        try state.withLock { (s: inout State) throws(BPFError) in
            let held = Set(
                try local.keys().compactMap { k in
                    k.withUnsafeBytes { LocalAddress(key: $0.loadUnaligned(as: nc_local_key.self)) }
                })
            // The new ones into the map first, then the config (whose counts may send queries
            // to the map), then the gone ones out of the map: a query never meets a count that
            // the map does not yet hold.
            var answered = held.intersection(addresses)
            var leftOut = 0
            for new in addresses.subtracting(held).sorted(by: { $0.octets.lexicographicallyPrecedes($1.octets) }) {
                guard answered.count < Self.localMax else {
                    leftOut += 1
                    continue
                }
                try local.update(key: Self.bytes(of: new.key), value: [1])
                answered.insert(new)
            }
            var c = s.settings
            Self.inline(answered, into: &c)
            try config.update(key: Self.bytes(of: UInt32(0)), value: Self.bytes(of: c))
            s.settings = c
            for gone in held.subtracting(addresses) { try local.delete(key: Self.bytes(of: gone.key)) }
            return (answered.count, leftOut)
        }
    }

    /// nc_config's addresses: each family's in place while there are at most NC_LOCAL_INLINE,
    /// else a count that sends its queries to nc_local.
    static func inline(_ addresses: Set<LocalAddress>, into c: inout nc_config) {
        let most = Int(NC_LOCAL_INLINE)
        let v4 = addresses.filter { !$0.isIPv6 }.map(\.octets).sorted { $0.lexicographicallyPrecedes($1) }
        let v6 = addresses.filter(\.isIPv6).map(\.octets).sorted { $0.lexicographicallyPrecedes($1) }
        c.local4_count = UInt32(min(v4.count, most + 1))
        c.local6_count = UInt32(min(v6.count, most + 1))
        withUnsafeMutableBytes(of: &c.local4) { b in
            b.initializeMemory(as: UInt8.self, repeating: 0)
            for (i, a) in v4.prefix(most).enumerated() {
                b.baseAddress!.advanced(by: 4 * i).copyMemory(from: a, byteCount: 4)
            }
        }
        withUnsafeMutableBytes(of: &c.local6) { b in
            b.initializeMemory(as: UInt8.self, repeating: 0)
            for (i, a) in v6.prefix(most).enumerated() {
                b.baseAddress!.advanced(by: 16 * i).copyMemory(from: a, byteCount: 16)
            }
        }
    }

    /// Addresses nc_local holds at most.
    static let localMax = Int(NC_LOCAL_MAX)

    /// Limits the rate of the answers XDP sends (nil or rate 0: not at all), as the slow path's
    /// ResponseRateLimiter limits its replies: `struct nc_rrl_config`. The exempt prefixes replace
    /// those written before.
    public func configureRateLimit(_ limit: RateLimit?) throws(BPFError) {
        var c = nc_rrl_config()
        if let limit {
            c.rate = limit.rate
            c.slip = limit.slip
            c.v4_prefix = limit.ipv4Prefix
            c.v6_prefix = limit.ipv6Prefix
            c.window = limit.window
            c.nxdomain_rate = limit.nxdomainRate
            // The time an answer takes of its bucket, so that the program does not divide.
            c.interval_ns = limit.rate == 0 ? 0 : UInt32(max(NC_TOKEN / UInt64(limit.rate), 1))
            c.nxdomain_interval_ns = limit.nxdomainRate == 0 ? 0 : UInt32(max(NC_TOKEN / UInt64(limit.nxdomainRate), 1))
            c.seed = UInt64.random(in: 0...UInt64.max)  // SystemRandomNumberGenerator: getrandom(2)
            c.exempt = limit.exempt.isEmpty ? 0 : 1
        }
        for key in try rrlExempt.keys() { try rrlExempt.delete(key: key) }
        for (address, length) in limit?.exempt ?? [] {
            var k = nc_rrl_exempt_key()
            let v6 = address.count == 16
            k.prefixlen = UInt32(v6 ? length : length + 96)
            let full = v6 ? address : [UInt8](repeating: 0, count: 10) + [0xFF, 0xFF] + address
            withUnsafeMutableBytes(of: &k.addr) { b in for (i, x) in full.enumerated() { b[i] = x } }
            try rrlExempt.update(key: Self.bytes(of: k), value: Self.bytes(of: UInt32(1)))
        }
        try rrlConfig.update(key: Self.bytes(of: UInt32(0)), value: Self.bytes(of: c))
    }

    /// Makes the program check and make DNS cookies with `secrets` (nil: it ignores COOKIE options,
    /// as the slow path without cookies does), and sets its wall clock: call it again now and then
    /// (a minute apart, say) so that the clock follows the system's adjustments.
    public func configureCookies(_ secrets: ServerCookies.Secrets?) throws(BPFError) {
        var c = nc_cookie_config()
        if let secrets {
            // SipHash's k0 and k1: the secret's two little-endian words, as the program reads them.
            func words(_ b: [UInt8]) -> (UInt64, UInt64) {
                b.withUnsafeBytes {
                    (
                        UInt64(littleEndian: $0.loadUnaligned(as: UInt64.self)),
                        UInt64(littleEndian: $0.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
                    )
                }
            }
            (c.secret.0, c.secret.1) = words(secrets.current)
            if let previous = secrets.previous {
                (c.previous.0, c.previous.1) = words(previous)
                c.has_previous = 1
            }
            c.enabled = 1
        }
        c.clock_offset_ns = Self.realtimeMinusMonotonicNanoseconds()
        try cookie.update(key: Self.bytes(of: UInt32(0)), value: Self.bytes(of: c))
    }

    /// CLOCK_REALTIME minus CLOCK_MONOTONIC (what bpf_ktime_get_ns reads), in nanoseconds: the
    /// smaller of a few readings taken between two monotonic ones, so a preemption between the
    /// clocks does not skew it.
    static func realtimeMinusMonotonicNanoseconds() -> Int64 {
        func ns(_ clock: clockid_t) -> Int64 {
            var ts = timespec()
            clock_gettime(clock, &ts)
            return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
        }
        var best: (spread: Int64, offset: Int64) = (.max, 0)
        for _ in 0..<5 {
            let m0 = ns(CLOCK_MONOTONIC)
            let r = ns(CLOCK_REALTIME)
            let m1 = ns(CLOCK_MONOTONIC)
            if m1 - m0 < best.spread { best = (m1 - m0, r - (m0 + (m1 - m0) / 2)) }
        }
        return best.offset
    }

    /// What a write of the names table did.
    public struct TableWrite: Equatable, Sendable {
        /// Names (records) in the new generation.
        public var entries = 0
        /// Of those, the ones written (new or changed); the rest were kept where they were.
        public var written = 0
        /// Names left to the slow path because the table is full.
        public var full = 0
        /// Names left to the slow path by a hash collision (no slot near their home).
        public var collisions = 0
        /// Answers left to the slow path because their name's record could not hold them.
        public var tooBig = 0
        /// Negative answers (a zone's, or an anchor's) left out: no index left in nc_negatives, or
        /// no room in the arena; the NODATA and NXDOMAIN of their names are the slow path's.
        public var negativesLeftOut = 0
        /// Of the names (in `full`) and negative answers left out, those that found no room in the
        /// arena beside the generation this one replaced: room that generation's records free once
        /// it is switched out, which a second generation of the same image takes (`write`).
        public var noRoom = 0

        /// This write, the second generation of an image whose `first` found no room for every
        /// name: its records written count with the first's.
        public func completing(_ first: TableWrite) -> TableWrite {
            var both = self
            both.written += first.written
            return both
        }
    }

    /// The names table for `image` and `geo`'s names, as the daemon sizes one: room for a quarter
    /// more names than they have (or `capacity` names, when given), and arena for that many
    /// records and a quarter more, for changes written beside the records they replace. A whole
    /// generation that changes more records than that room holds takes a second generation
    /// (`write`); an arena for all of them at once would be 2.5 times the records
    /// (docs/ARCHITECTURE.md §10).
    public static func tableSize(for image: AnswerImage, geo: GeoTable?, capacity: Int? = nil) -> (
        capacity: Int, arenaBytes: Int
    ) {
        tableSize(for: needs(image, geo: geo), capacity: capacity)
    }

    /// The names table for what `needs` counted, as `tableSize(for:geo:capacity:)` sizes it.
    public static func tableSize(for needs: TableNeeds, capacity: Int? = nil) -> (capacity: Int, arenaBytes: Int) {
        let capacity = capacity ?? max(defaultCapacity, needs.names + needs.names / 4)
        let perName = needs.names == 0 ? defaultBytesPerName : max(64, needs.recordBytes / needs.names + 8)
        return (capacity, capacity * perName + capacity * perName / 4)
    }

    /// What a names table must hold for an image: its names (records), their answers, and the
    /// bytes their records take.
    public struct TableNeeds: Sendable {
        public var names = 0
        public var answers = 0
        public var recordBytes = 0
    }

    /// What a names table must hold for `image` and `geo`'s names. Counted on every core: on one,
    /// 50 ms of a start at 1M names, with the other core idle.
    public static func needs(_ image: AnswerImage, geo: GeoTable?) -> TableNeeds {
        @Sendable func padded(_ n: Int) -> Int { (n + 7) & ~7 }
        let parts = ParallelWork.map(image.names, parts: ProcessInfo.processInfo.activeProcessorCount, smallest: 65536)
        {
            names in
            var part = TableNeeds(names: names.count)
            for n in names {
                let answers = n.answers.count + n.signedAnswers.count
                part.answers += answers
                part.recordBytes += 8 + padded(n.name.count) + padded(4 * (answers + n.geoTypes.count + 1))
                part.recordBytes += n.answers.reduce(0) { $0 + 16 + padded($1.sections.count) }
                part.recordBytes += n.signedAnswers.reduce(0) { $0 + 16 + padded($1.sections.count) }
                part.recordBytes += n.geoTypes.count * (16 + MemoryLayout<nc_geo_name>.size)
                for sections in [n.negative?.sections, n.negative?.signed?.sections].compactMap({ $0 }) {
                    part.recordBytes += 16 + MemoryLayout<nc_nx_head>.size + padded(sections.count)
                }
            }
            return part
        }
        return parts.reduce(into: TableNeeds()) {
            $0.names += $1.names
            $0.answers += $1.answers
            $0.recordBytes += $1.recordBytes
        }
    }

    /// Makes the names table and the geo maps hold `image` and `geo`, atomically (ARCHITECTURE
    /// §11): `prepare` then `switchTo`, at once. Blocking work, seconds for a whole GeoLite2-City:
    /// call it from a thread of its own, one write at a time (`GenerationWriter` runs the two halves
    /// on two threads). Names that found no arena room beside the live generation's records (more
    /// changed at once than the arena has room for) are written by a second generation of the same
    /// image, once the first has freed what it replaced; meanwhile the slow path answers them.
    @discardableResult
    public func write(_ image: AnswerImage, geo: GeoTable? = nil) throws(BPFError) -> TableWrite {
        let first = try switchTo(try prepare(image, geo: geo))
        guard first.noRoom > 0 else { return first }
        return try switchTo(try prepare(image, geo: geo)).completing(first)
    }

    /// A generation written beside the live one and not yet switched to (`prepare`): until the
    /// switch, no query reads it, and no other write may begin.
    public struct Prepared: Sendable {
        let generation: UInt32
        let previous: UInt32
        let maps: GeoMaps?
        let liveMaps: GeoMaps?
        let geo: GeoTable?
        let plan: NamesTable.Plan
        let negativeIndex: [[UInt8]: UInt16]
        let negativeZones: [UInt16: [UInt8]]
        /// The arena's free space once the generation is live, for changes into it (made here,
        /// on the bulk's thread, so that the first change does not wait for it).
        let space: NamesTable.ArenaSpace
        /// State.nxdomainCleared, for this generation.
        let nxdomainCleared: Set<[UInt8]>
    }

    /// The bulk of a write, which no query sees: new and changed answers are written at indexes
    /// the live generation does not use, and the other generation's slots and geo map slots are
    /// written whole. The geo prefix and candidate maps are built anew (beside the live ones, which
    /// go on answering meanwhile) only for a geo table of a compile not yet written; otherwise the
    /// new generation shares the live ones. Seconds of CPU and kernel time for a whole
    /// GeoLite2-City, holding no lock: fit for a thread that yields to everything else.
    public func prepare(_ image: AnswerImage, geo: GeoTable? = nil) throws(BPFError) -> Prepared {
        guard writing.compareExchange(expected: false, desired: true, ordering: .acquiring).exchanged else {
            preconditionFailure("FastPath.prepare called while another write is under way")
        }
        do {
            return try prepareUnderWay(image, geo: geo)
        } catch {
            writing.store(false, ordering: .releasing)
            throw error
        }
    }

    private func prepareUnderWay(_ image: AnswerImage, geo: GeoTable?) throws(BPFError) -> Prepared {
        // Records `apply` replaced may still be read by a run that began before it: none is, after this.
        if state.withLock({ $0.replacedSinceGracePeriod }) {
            try BPFGracePeriod.wait()
            state.withLock { $0.replacedSinceGracePeriod = false }
        }
        // Only writes change these, and this is the only write under way: read once, used unlocked.
        let (live, settings, liveGeo, negativeIndex) = state.withLock {
            ($0.live, $0.settings, $0.geo, $0.negativeIndex)
        }
        var maps: GeoMaps?
        var names = image.names
        var geoAnswers: [Int: [NamesTable.Answer]] = [:]
        if let geo {
            maps = liveGeo?.serial == geo.serial ? liveGeo : try buildGeoMaps(geo)
            geoAnswers = Self.geoAnswers(geo, names: &names)
        }
        let negatives = Self.negativeAnswers(names, index: negativeIndex)
        // A first generation is written as it is made, each record where it goes (`freshPlan`).
        var layout = Self.slotting(names, table: table)
        let sources = RecordSources(
            names: names, geo: geoAnswers, negatives: negatives.index, unflagged: layout.unflagged)
        let fresh =
            live.count == 0 ? freshPlan(sources, negatives: negatives.records.map(\.entry), layout: &layout) : nil
        if fresh == nil { layout = Self.withRecords(layout, sources) }

        // The other generation, which no query reads until the switch: the records it adds (in
        // arena space the live one does not use), its slots, its negative answers' places, its geo
        // slots. The negative answers first: one that finds no room leaves its names to the slow path.
        func makePlan() -> NamesTable.Plan {
            table.plan(
                unslotted: negatives.records.map(\.entry), layout.placed, kept: layout.kept, live: live, holds: holds,
                parts: ProcessInfo.processInfo.activeProcessorCount)
        }
        var plan = fresh ?? makePlan()
        while !plan.noRoom.isEmpty {
            // Out of arena: those names are left out too, and the flags around them cleared.
            let records = plan.noRoom.filter { $0 >= negatives.records.count }.map { $0 - negatives.records.count }
            layout = Self.layout(
                names, geo: geoAnswers, negatives: negatives.index, table: table, leaveOut: layout.leftOut(records))
            plan = makePlan()
            if plan.noRoom.allSatisfy({ $0 < negatives.records.count }) { break }
        }
        plan.full = layout.full
        plan.collisions = layout.collisions
        plan.tooBig = layout.tooBig
        return try prepared(
            plan, negatives: negatives, noRoom: layout.noRoom, settings: settings, maps: maps, liveMaps: liveGeo,
            geo: geo, nxdomainCleared: Set(layout.unflagged.map { names[$0].name }))
    }

    /// The generation after the live one, its records in `plan`: written (the records the plan
    /// did not write in place, its slots, its negative answers' places, its geo slots), not yet
    /// switched to.
    func prepared(
        _ plan: NamesTable.Plan, negatives: NegativeAnswers, noRoom: Int, settings: nc_config, maps: GeoMaps?,
        liveMaps: GeoMaps?, geo: GeoTable?, nxdomainCleared: Set<[UInt8]>
    ) throws(BPFError) -> Prepared {
        var plan = plan
        // Straight into the mapped arena: no query reads these bytes until the slots below point there.
        for (offset, entry) in plan.writes { arena.write(entry.bytes, at: offset) }
        let nextGeneration: UInt32 = settings.generation == 0 ? 1 : 0
        plan.slots.withUnsafeBytes { slotWords.write($0, at: Int(nextGeneration) * table.slotCount * 8) }
        var refs = [UInt64](repeating: 0, count: Self.negativesMax)
        // (Read from the arena, where the plan's records are now.)
        let negativeRefs = negatives.records.map { plan.live.ref(of: $0.entry, holds: holds) }
        for (r, ref) in zip(negatives.records, negativeRefs) { refs[Int(r.index)] = UInt64(ref ?? 0) }
        plan.negativesLeftOut = negatives.leftOut + negativeRefs.filter { $0 == nil }.count
        plan.noRoomLeftOut = noRoom + negativeRefs.filter { $0 == nil }.count
        negativeWords.write(refs.withUnsafeBytes { Array($0) }, at: Int(nextGeneration) * Self.negativesMax * 8)
        try setGeoSlots(nextGeneration, maps)
        return Prepared(
            generation: nextGeneration, previous: settings.generation, maps: maps, liveMaps: liveMaps, geo: geo,
            plan: plan, negativeIndex: negatives.index, negativeZones: negatives.zones,
            space: NamesTable.ArenaSpace(table: table, places: plan.places), nxdomainCleared: nxdomainCleared)
    }

    /// Switches to a prepared generation: its nodes and pools are written as the health board
    /// says (under the state lock, so that a health change written to the board after this read is
    /// written to the map after the switch, by `writeNodeHealth`), then one write of the settings
    /// switches generations. Once every program run that could still read the old generation has
    /// ended (a grace period, waited for without the lock: health changes go to the live
    /// generation meanwhile), what it alone used is free for the next write. Short: a few entries
    /// under the lock, then the wait.
    @discardableResult
    public func switchTo(_ p: Prepared) throws(BPFError) -> TableWrite {
        defer { writing.store(false, ordering: .releasing) }
        precondition(writing.load(ordering: .acquiring), "FastPath.switchTo without prepare")
        try switchGenerations(to: p.generation, previous: p.previous, maps: p.maps, liveMaps: p.liveMaps, geo: p.geo) {
            s in
            s.live = p.plan.live
            s.negativeIndex = p.negativeIndex
            s.negativeZones = p.negativeZones
            s.space = p.space
            s.nxdomainCleared = p.nxdomainCleared
            s.leftOut = p.plan.full + p.plan.collisions + p.plan.noRoomLeftOut
        }
        return TableWrite(
            entries: p.plan.names, written: p.plan.writes.count + p.plan.writtenInPlace, full: p.plan.full,
            collisions: p.plan.collisions, tooBig: p.plan.tooBig, negativesLeftOut: p.plan.negativesLeftOut,
            noRoom: p.plan.noRoomLeftOut)
    }

    /// The switch itself, for a generation written whole (`switchTo`) or from the live one
    /// (`apply` with a new geo compile): `generation`'s nodes and pools written as the health
    /// board says, one write of the settings, `records` (the new generation's records, under the
    /// state lock), then a grace period, after which `previous`'s geo slots take `maps` too and
    /// `liveMaps`, when no generation uses them any more, are kept for `drainRetired`.
    func switchGenerations(
        to generation: UInt32, previous: UInt32, maps: GeoMaps?, liveMaps: GeoMaps?, geo: GeoTable?,
        records: (inout State) -> Void
    ) throws(BPFError) {
        // What each generation counted so far, by the geo maps it answered with: the new one's
        // (from when it was last live) before it answers with others. A counter that cannot be
        // read is no reason to keep the old generation.
        let meaning = state.withLock { s in
            AnswerTally.Meaning(
                zones: s.negativeZones, nodes: (0..<2).map { ($0, s.geoCounted[$0]?.nodeIndex ?? [:]) })
        }
        try? tally.attribute(meaning)
        try state.withLock { (s: inout State) throws(BPFError) in
            let (nodeValues, poolCaps) = try writeGeoHealth(generation, maps, geo)
            var next = s.settings
            next.abi_version = Self.abiVersion
            next.slot_mask = UInt32(table.slotCount - 1)
            next.names_capacity = UInt32(table.capacity)
            next.generation = generation
            try config.update(key: Self.bytes(of: UInt32(0)), value: Self.bytes(of: next))
            s.settings = next
            records(&s)
            s.geoCounted[Int(generation & 1)] = maps
            s.geo = maps
            s.nodes = nodeValues
            s.pools = poolCaps
            s.health = geo?.healthView
        }
        // The old generation's indexes are reused by the next write: no run may still read them.
        try BPFGracePeriod.wait()
        // Its geo slots now take the live maps too; maps of a compile no generation uses any more
        // are kept for `drainRetired` rather than handed to the kernel whole.
        try setGeoSlots(previous, maps)
        if let old = liveMaps, old !== maps { retired.withLock { $0.append(old) } }
    }

    /// Every map the control plane fills: its name, the entries written, and its kernel memory.
    public func mapSizes(geo: GeoTable?) -> [(name: String, entries: Int, bytes: Int?)] {
        return ([(NC_MAP_NAMES, liveNames)] + (geo.map(geoMapSizes) ?? [])).map { ($0.0, $0.1, memlock(of: $0.0)) }
    }

    /// The kernel memory a map of this object takes, as its fdinfo reports it (`memlock`); for
    /// the map-in-maps, the live generation's inner map.
    public func memlock(of name: String) -> Int? {
        let live = state.withLock { $0.geo }.map { [$0.geo4.map, $0.geo6.map, $0.cands.map] } ?? []
        let generation = state.withLock { $0.settings.generation & 1 }
        let fd = (live + [nodeMaps[Int(generation)].map, names, slots, config, stats, pools, aliases, geo4Spans]).first
        {
            $0.name == name
        }?
        .fd
        guard let fd, let text = try? String(contentsOfFile: "/proc/self/fdinfo/\(fd)", encoding: .utf8) else {
            return nil
        }
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("memlock:") }) else { return nil }
        return Int(line.split(whereSeparator: { $0 == " " || $0 == "\t" }).last ?? "")
    }

    /// What the answers went to since this process started (ARCHITECTURE §16).
    public func tallies() throws(BPFError) -> XDPTallies {
        let meaning = state.withLock { s in
            let g = Int(s.settings.generation & 1)
            return AnswerTally.Meaning(zones: s.negativeZones, nodes: [(g, s.geoCounted[g]?.nodeIndex ?? [:])])
        }
        return try tally.read(meaning)
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
            total.answeredGeo += s.answered_geo
            total.passGeo += s.pass_geo
            total.answeredGeoAllDown += s.answered_geo_all_down
            total.rrlSlipped += s.rrl_slipped
            total.rrlDropped += s.rrl_dropped
            total.answeredNXDomain += s.answered_nxdomain
            total.passCookie += s.pass_cookie
            total.passNotOurs += s.pass_not_ours
            total.passDNSSEC += s.pass_dnssec
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
    public var answeredGeo: UInt64 = 0
    public var passGeo: UInt64 = 0
    /// Geo answers given fail-open: every candidate of the client's class was down.
    public var answeredGeoAllDown: UInt64 = 0
    /// Answers over the response rate limit, slipped as TC=1 and dropped.
    public var rrlSlipped: UInt64 = 0
    public var rrlDropped: UInt64 = 0
    /// Names that do not exist, answered NXDOMAIN from their closest encloser's entry.
    public var answeredNXDomain: UInt64 = 0
    /// Queries whose server cookie was not valid (or whose COOKIE was malformed): the slow path's.
    public var passCookie: UInt64 = 0
    /// Queries to an address the daemon does not listen on (nc_local): passed untouched.
    public var passNotOurs: UInt64 = 0
    public var passDNSSEC: UInt64 = 0
    public init() {}

    /// The counters in the program's reason order, named as in `struct nc_stats` (and so as
    /// `bpftool map dump` names them).
    public var counters: [StatsReport.Counter] {
        [
            ("answered", answered), ("pass_not_dns", passNotDNS), ("pass_shape", passShape), ("pass_edns", passEDNS),
            ("pass_miss", passMiss), ("pass_too_big", passTooBig), ("pass_no_room", passNoRoom),
            ("drop_malformed", dropMalformed), ("drop_internal", dropInternal), ("limit_truncated", limitTruncated),
            ("limit_dropped", limitDropped), ("answered_geo", answeredGeo), ("pass_geo", passGeo),
            ("answered_geo_all_down", answeredGeoAllDown), ("rrl_slipped", rrlSlipped), ("rrl_dropped", rrlDropped),
            ("answered_nxdomain", answeredNXDomain), ("pass_cookie", passCookie),
            ("pass_not_ours", passNotOurs), ("pass_dnssec", passDNSSEC),
        ].map { StatsReport.Counter(name: $0.0, value: $0.1) }
    }
}

/// The response rate limit XDP applies to its answers, in buckets every CPU shares.
public struct RateLimit: Equatable, Sendable {
    /// Answers (positive and NODATA) a second per client prefix and question.
    public var rate: UInt32
    /// NXDOMAINs a second per client prefix and zone.
    public var nxdomainRate: UInt32
    public var slip: UInt32
    public var ipv4Prefix: UInt32
    public var ipv6Prefix: UInt32
    public var window: UInt32
    /// Prefixes never limited: address bytes (4 or 16) and length.
    public var exempt: [(address: [UInt8], length: Int)]

    public init(
        rate: UInt32, nxdomainRate: UInt32? = nil, slip: UInt32 = 2, ipv4Prefix: UInt32 = 24, ipv6Prefix: UInt32 = 56,
        window: UInt32 = 15, exempt: [(address: [UInt8], length: Int)] = []
    ) {
        self.rate = rate
        self.nxdomainRate = nxdomainRate ?? rate
        self.slip = slip
        self.ipv4Prefix = ipv4Prefix
        self.ipv6Prefix = ipv6Prefix
        self.window = window
        self.exempt = exempt
    }

    public static func == (a: RateLimit, b: RateLimit) -> Bool {
        a.rate == b.rate && a.nxdomainRate == b.nxdomainRate && a.slip == b.slip && a.ipv4Prefix == b.ipv4Prefix
            && a.ipv6Prefix == b.ipv6Prefix
            && a.window == b.window && a.exempt.map(\.address) == b.exempt.map(\.address)
            && a.exempt.map(\.length) == b.exempt.map(\.length)
    }
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
