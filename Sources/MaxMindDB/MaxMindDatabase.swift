import CMaxMindDB

#if canImport(Glibc)
import Glibc
#endif

/// Where a MaxMind City database places an address: what the geo policy needs of a record.
public struct GeoLocation: Hashable, Sendable {
    public var latitude: Double?
    public var longitude: Double?
    /// ISO 3166-1 alpha-2 (`country.iso_code`).
    public var country: String?
    /// `continent.code` (AF, AN, AS, EU, NA, OC, SA).
    public var continent: String?
    /// ISO 3166-2 code of the first subdivision, without the country (`subdivisions.0.iso_code`).
    public var subdivision: String?

    public init(
        latitude: Double? = nil, longitude: Double? = nil, country: String? = nil, continent: String? = nil,
        subdivision: String? = nil
    ) {
        self.latitude = latitude
        self.longitude = longitude
        self.country = country
        self.continent = continent
        self.subdivision = subdivision
    }

    /// Whether the record places the address on the map at all.
    public var hasCoordinates: Bool { latitude != nil && longitude != nil }
}

/// An IP network: an address (4 or 16 bytes) and a prefix length.
public struct IPNetwork: Hashable, Sendable, CustomStringConvertible {
    public var address: [UInt8]
    public var prefixLength: Int

    public init(address: [UInt8], prefixLength: Int) {
        self.address = address
        self.prefixLength = prefixLength
    }

    public var isIPv4: Bool { address.count == 4 }

    public var description: String {
        if isIPv4 { return address.map(String.init).joined(separator: ".") + "/\(prefixLength)" }
        var groups: [UInt16] = []
        for i in stride(from: 0, to: 16, by: 2) { groups.append(UInt16(address[i]) << 8 | UInt16(address[i + 1])) }
        // RFC 5952: the longest run of two or more zero groups (the first of equals) becomes "::".
        var best = (start: -1, count: 0)
        var i = 0
        while i < 8 {
            var j = i
            while j < 8 && groups[j] == 0 { j += 1 }
            if j - i > best.count && j - i >= 2 { best = (i, j - i) }
            i = j == i ? i + 1 : j
        }
        let hex = groups.map { String($0, radix: 16) }
        guard best.start >= 0 else { return hex.joined(separator: ":") + "/\(prefixLength)" }
        let head = hex[..<best.start].joined(separator: ":")
        let tail = hex[(best.start + best.count)...].joined(separator: ":")
        return head + "::" + tail + "/\(prefixLength)"
    }
}

/// Why a database cannot be used, naming the file.
public struct MaxMindError: Error, CustomStringConvertible, Sendable {
    public var path: String
    public var reason: String
    public var description: String { "\(path): \(reason)" }
}

/// A MaxMind DB file (GeoIP2/GeoLite2 City or a test database of the same shape), read through
/// libmaxminddb: look up an address, or walk every network the database holds.
///
/// `@unchecked Sendable`: libmaxminddb's MMDB_s is read-only after MMDB_open, and its lookups are
/// thread-safe; the location cache is only touched inside `networks`, one call at a time.
public final class MaxMindDatabase: @unchecked Sendable {
    /// On the heap: libmaxminddb keeps pointers to it in every entry it hands out.
    private let mmdb: UnsafeMutablePointer<MMDB_s>
    public let path: String

    /// Opens `path` (memory-mapped). Blocking: keep it off event loops.
    public init(path: String) throws(MaxMindError) {
        self.path = path
        let db = UnsafeMutablePointer<MMDB_s>.allocate(capacity: 1)
        db.initialize(to: MMDB_s())
        let status = MMDB_open(path, UInt32(MMDB_MODE_MMAP), db)
        guard status == MMDB_SUCCESS else {
            let why =
                status == MMDB_FILE_OPEN_ERROR
                ? "cannot open the file: \(String(cString: strerror(errno)))" : String(cString: MMDB_strerror(status))
            db.deallocate()
            throw MaxMindError(path: path, reason: why)
        }
        mmdb = db  // last: a throw before this point runs no deinit
    }

    deinit {
        MMDB_close(mmdb)
        mmdb.deallocate()
    }

    /// `database_type` from the metadata, e.g. "GeoLite2-City".
    public var databaseType: String { String(cString: mmdb.pointee.metadata.database_type) }
    /// 4 or 6: an IPv6 database holds IPv4 under ::/96.
    public var ipVersion: Int { Int(mmdb.pointee.metadata.ip_version) }
    /// When the database was built (seconds since 1970).
    public var buildEpoch: UInt64 { mmdb.pointee.metadata.build_epoch }
    /// Search-tree nodes.
    public var nodeCount: Int { Int(mmdb.pointee.metadata.node_count) }

    /// The location of `address` (dotted IPv4 or IPv6 text) and the network it was found in, or
    /// nil when the database has no record for it.
    public func lookup(_ address: String) throws(MaxMindError) -> (network: IPNetwork, location: GeoLocation)? {
        var gaiError: Int32 = 0
        var mmdbError: Int32 = 0
        var result = MMDB_lookup_string(mmdb, address, &gaiError, &mmdbError)
        guard gaiError == 0 else { throw MaxMindError(path: path, reason: "'\(address)' is not an IP address") }
        guard mmdbError == MMDB_SUCCESS else {
            throw MaxMindError(path: path, reason: String(cString: MMDB_strerror(mmdbError)))
        }
        guard result.found_entry else { return nil }
        let isV4 = !address.contains(":")
        // The netmask counts bits in the tree; an IPv4 address in an IPv6 tree sits under ::/96.
        let bits = Int(result.netmask) - (isV4 && ipVersion == 6 ? 96 : 0)
        let bytes = Self.parse(address, v4: isV4)
        return (Self.network(bytes, bits), try location(&result.entry))
    }

    /// What a walk of the search tree meets, in address order.
    public enum TreeEntry: Equatable, Sendable {
        /// A network with a record.
        case located(IPNetwork, GeoLocation)
        /// A block the tree has no record for: every address in it is looked up as not found.
        case uncovered(IPNetwork)
        /// An IPv6 prefix the tree points at its IPv4 space (MaxMind's aliases: ::ffff:0:0/96,
        /// 2002::/16, 2001::/32, and ::/96 itself): an address in it is looked up as the IPv4
        /// address of its 32 bits after the prefix.
        case ipv4Alias(IPNetwork)
    }

    /// Walks every network that has a record, in address order, IPv4 ones as IPv4 networks (an
    /// IPv6 database's aliases of the IPv4 space are not walked again, so each address is seen
    /// once). Records shared by many networks are decoded once.
    public func networks(_ body: (IPNetwork, GeoLocation) throws -> Void) throws {
        try walk { entry in
            if case .located(let network, let location) = entry { try body(network, location) }
        }
    }

    /// Walks the whole search tree in address order: the networks with a record, the blocks
    /// without one, and the prefixes aliased to the IPv4 space (reported, not walked: the IPv4
    /// space is walked once, as IPv4; ::/96, whose subtree that is, is reported first). Together
    /// they cover the address space exactly once.
    public func walk(_ body: (TreeEntry) throws -> Void) throws {
        var cache: [UInt32: GeoLocation] = [:]
        let v6 = ipVersion == 6
        let nodes = UInt64(mmdb.pointee.metadata.node_count)
        let ipv4Start = v6 ? try ipv4StartNode() : 0
        if v6 && ipv4Start != UInt32.max {
            try body(.ipv4Alias(IPNetwork(address: [UInt8](repeating: 0, count: 16), prefixLength: 96)))
        }
        // Depth-first, left before right, so entries come in address order: a data record or an
        // empty one waits on the stack like a subtree does.
        enum Item {
            case node(UInt32, [UInt8], Int)
            case data(MMDB_entry_s, [UInt8], Int)
            case empty([UInt8], Int)
        }
        var stack: [Item] = [.node(0, [UInt8](repeating: 0, count: v6 ? 16 : 4), 0)]
        while let item = stack.popLast() {
            switch item {
            case .data(var entry, let bits, let length):
                let loc: GeoLocation
                if let c = cache[entry.offset] {
                    loc = c
                } else {
                    loc = try location(&entry)
                    cache[entry.offset] = loc
                }
                try body(.located(emitted(bits, length, v6: v6), loc))
            case .empty(let bits, let length):
                try body(.uncovered(emitted(bits, length, v6: v6)))
            case .node(let node, let bits, let depth):
                // The IPv4 space of an IPv6 tree is walked once, under ::/96, as IPv4; the other
                // prefixes that lead to it are aliases.
                if v6, node == ipv4Start, depth > 0, !(depth == 96 && bits.allSatisfy({ $0 == 0 })) {
                    try body(.ipv4Alias(IPNetwork(address: bits, prefixLength: depth)))
                    continue
                }
                var n = MMDB_search_node_s()
                let rc = MMDB_read_node(mmdb, node, &n)
                guard rc == MMDB_SUCCESS else {
                    throw MaxMindError(
                        path: path, reason: "search tree node \(node): \(String(cString: MMDB_strerror(rc)))")
                }
                var right = bits
                right[depth / 8] |= 0x80 >> UInt8(depth % 8)
                for (record, type, entry, prefix) in [
                    (n.right_record, n.right_record_type, n.right_record_entry, right),
                    (n.left_record, n.left_record_type, n.left_record_entry, bits),
                ] {
                    switch Int32(type) {
                    case MMDB_RECORD_TYPE_SEARCH_NODE:
                        guard record < nodes, depth + 1 < (v6 ? 128 : 32) else {
                            throw MaxMindError(path: path, reason: "search tree is malformed at node \(node)")
                        }
                        stack.append(.node(UInt32(record), prefix, depth + 1))
                    case MMDB_RECORD_TYPE_DATA:
                        stack.append(.data(entry, prefix, depth + 1))
                    case MMDB_RECORD_TYPE_EMPTY:
                        stack.append(.empty(prefix, depth + 1))
                    default:
                        throw MaxMindError(path: path, reason: "search tree record of an invalid type at node \(node)")
                    }
                }
            }
        }
    }

    /// The network of `bits`/`length` as reported: under ::/96 of an IPv6 tree, as IPv4.
    private func emitted(_ bits: [UInt8], _ length: Int, v6: Bool) -> IPNetwork {
        if v6, length >= 96, bits[0..<12].allSatisfy({ $0 == 0 }) {
            return Self.network(Array(bits[12..<16]), length - 96)
        }
        return Self.network(bits, length)
    }

    /// The node reached after 96 zero bits: the root of the IPv4 space in an IPv6 tree.
    private func ipv4StartNode() throws -> UInt32 {
        var node: UInt32 = 0
        for _ in 0..<96 {
            var n = MMDB_search_node_s()
            guard MMDB_read_node(mmdb, node, &n) == MMDB_SUCCESS,
                Int32(n.left_record_type) == MMDB_RECORD_TYPE_SEARCH_NODE
            else { return UInt32.max }
            node = UInt32(n.left_record)
        }
        return node
    }

    /// The fields of one record the policy uses.
    private func location(_ entry: inout MMDB_entry_s) throws(MaxMindError) -> GeoLocation {
        var loc = GeoLocation()
        loc.latitude = double(&entry, ["location", "latitude"])
        loc.longitude = double(&entry, ["location", "longitude"])
        loc.country = string(&entry, ["country", "iso_code"])
        loc.continent = string(&entry, ["continent", "code"])
        loc.subdivision = string(&entry, ["subdivisions", "0", "iso_code"])
        return loc
    }

    private func value(_ entry: inout MMDB_entry_s, _ path: [String]) -> MMDB_entry_data_s? {
        var data = MMDB_entry_data_s()
        var cStrings = path.map { strdup($0) }
        defer { for s in cStrings { free(s) } }
        cStrings.append(nil)
        let rc = cStrings.withUnsafeBufferPointer { buf in
            buf.baseAddress!.withMemoryRebound(to: UnsafePointer<CChar>?.self, capacity: buf.count) {
                MMDB_aget_value(&entry, &data, $0)
            }
        }
        return rc == MMDB_SUCCESS && data.has_data ? data : nil
    }

    private func double(_ entry: inout MMDB_entry_s, _ path: [String]) -> Double? {
        guard let d = value(&entry, path) else { return nil }
        switch Int32(d.type) {
        case MMDB_DATA_TYPE_DOUBLE: return d.double_value
        case MMDB_DATA_TYPE_FLOAT: return Double(d.float_value)
        default: return nil
        }
    }

    private func string(_ entry: inout MMDB_entry_s, _ path: [String]) -> String? {
        guard let d = value(&entry, path), Int32(d.type) == MMDB_DATA_TYPE_UTF8_STRING, let p = d.utf8_string else {
            return nil
        }
        return p.withMemoryRebound(to: UInt8.self, capacity: Int(d.data_size)) {
            String(decoding: UnsafeBufferPointer(start: $0, count: Int(d.data_size)), as: UTF8.self)
        }
    }

    static func parse(_ text: String, v4: Bool) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: v4 ? 4 : 16)
        _ = out.withUnsafeMutableBytes { inet_pton(v4 ? AF_INET : AF_INET6, text, $0.baseAddress) }
        return out
    }

    /// `bytes` cut to its first `length` bits.
    static func network(_ bytes: [UInt8], _ length: Int) -> IPNetwork {
        var a = bytes
        for i in 0..<a.count {
            let keep = max(0, min(8, length - i * 8))
            a[i] &= keep == 8 ? 0xFF : ~(0xFF >> UInt8(keep))
        }
        return IPNetwork(address: a, prefixLength: length)
    }
}
