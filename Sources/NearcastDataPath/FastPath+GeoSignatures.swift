import BPFKit
import CNearcastABI
import DNSWire
import NearcastAnswers
import NearcastGeo
import Synchronization

/// Signed geo answers from XDP (nearcast_abi.h, struct nc_geo_sig; docs/ARCHITECTURE.md §18,
/// "Geo names"): each variant of a geo name's answer in a signed zone, its signatures as the
/// slow path writes them after the addresses, keyed by the name, the type and the addresses as a
/// set. XDP builds a client's answer as it does unsigned, then appends its variant's signatures,
/// or passes the query when the variant has none here.
extension FastPath {
    /// A variant of a geo name's answer and its signatures (owner, type, the name's TTL, the
    /// addresses in any order, the RRSIG records over them).
    public struct GeoSignature: Sendable {
        public var name: DNSName
        public var type: RRType
        public var ttl: UInt32
        public var addresses: [[UInt8]]
        public var signatures: [ResourceRecord]

        public init(name: DNSName, type: RRType, ttl: UInt32, addresses: [[UInt8]], signatures: [ResourceRecord]) {
            (self.name, self.type, self.ttl, self.addresses, self.signatures) = (name, type, ttl, addresses, signatures)
        }
    }

    /// The signed variants of `geo`'s A and AAAA names as the fast path appends their signatures
    /// (`writeGeoSignatures`): those `online` keeps, good at `now`, whose TTL is their name's.
    public static func geoSignatures(_ online: OnlineSignatures, geo: GeoTable, now: UInt32) -> [GeoSignature] {
        var ttls: [DNSName: [RRType: UInt32]] = [:]
        for n in geo.allNames where n.config.type == .a || n.config.type == .aaaa {
            ttls[n.config.name.lowercased(), default: [:]][n.config.type] = n.config.ttl
        }
        return online.current(now: now).compactMap { v in
            guard ttls[v.set.name]?[v.set.type] == v.set.ttl else { return nil }
            let addresses = v.set.rdatas.compactMap { rd -> [UInt8]? in
                switch rd {
                case .a(let a): a.array
                case .aaaa(let a): a.bytes
                default: nil
                }
            }
            return GeoSignature(
                name: v.set.name, type: v.set.type, ttl: v.set.ttl, addresses: addresses, signatures: v.signatures)
        }
    }

    /// An address as the program keys it: IPv4 its 4 bytes as a native word, IPv6 its 4 words
    /// XORed (nc_geo_addr_key).
    static func addressKey(_ a: [UInt8]) -> UInt32 {
        func word(_ i: Int) -> UInt32 {
            UInt32(a[i]) | UInt32(a[i + 1]) << 8 | UInt32(a[i + 2]) << 16 | UInt32(a[i + 3]) << 24
        }
        return a.count == 16 ? word(0) ^ word(4) ^ word(8) ^ word(12) : word(0)
    }

    /// The entry of `v` in nc_geo_sigs, or nil when the program cannot hold it (more addresses
    /// than an answer has, signatures past NC_GEO_SIG_MAX, an address of the wrong size).
    static func geoSignatureEntry(_ v: GeoSignature) -> (key: [UInt8], value: [UInt8])? {
        let size = v.type == .aaaa ? 16 : 4
        guard !v.addresses.isEmpty, v.addresses.count <= Int(NC_GEO_ANSWERS_MAX),
            v.addresses.allSatisfy({ $0.count == size }), !v.signatures.isEmpty
        else { return nil }
        var key = nc_geo_sig_key()
        key.name = NamesTable.hash(name: v.name.lowercased().wire)
        key.qtype = v.type.rawValue
        key.count = UInt16(v.addresses.count)
        let sorted = v.addresses.map(addressKey).sorted() + [UInt32](repeating: 0xFFFF_FFFF, count: 8)
        key.addr = (sorted[0], sorted[1], sorted[2], sorted[3], sorted[4], sorted[5], sorted[6], sorted[7])
        // The RRSIG records as the slow path writes them: the owner the question (0xc00c).
        guard v.signatures.count <= Int(NC_GEO_SIG_RECORDS) else { return nil }
        var data: [UInt8] = []
        var ttlAt: [UInt16] = []
        for r in v.signatures {
            ttlAt.append(UInt16(data.count + 6))
            guard case .unknown(let rdata) = r.rdata else { return nil }
            data += [0xC0, 0x0C, 0, UInt8(RRType.rrsig.rawValue), 0, 1]
            data += [UInt8(v.ttl >> 24), UInt8(v.ttl >> 16 & 0xFF), UInt8(v.ttl >> 8 & 0xFF), UInt8(v.ttl & 0xFF)]
            data += [UInt8(rdata.count >> 8), UInt8(rdata.count & 0xFF)] + rdata
        }
        guard data.count <= Int(NC_GEO_SIG_MAX) else { return nil }
        var value = nc_geo_sig()
        value.len = UInt16(data.count)
        value.count = UInt16(v.signatures.count)
        ttlAt += [UInt16](repeating: 0, count: Int(NC_GEO_SIG_RECORDS) - ttlAt.count)
        value.ttl_at = (ttlAt[0], ttlAt[1], ttlAt[2], ttlAt[3])
        var valueBytes = bytes(of: value)
        let dataAt = MemoryLayout<nc_geo_sig>.offset(of: \nc_geo_sig.data)!
        valueBytes.replaceSubrange(dataAt..<dataAt + data.count, with: data)
        return (bytes(of: key), valueBytes)
    }

    /// Makes nc_geo_sigs hold `variants` (those it can: `geoSignatureEntry`), and none written
    /// before that is not among them: those new or changed written in a batch, those gone
    /// deleted. A variant whose addresses' keys another variant's different
    /// IPv6 address shares is left out (XDP passes its queries): a key says one set. Returns how
    /// many it holds.
    @discardableResult
    public func writeGeoSignatures(_ variants: [GeoSignature]) throws(BPFError) -> Int {
        // IPv6 addresses that fold alike.
        var folds: [UInt32: [UInt8]] = [:]
        var clashing: Set<UInt32> = []
        for v in variants where v.type == .aaaa {
            for a in v.addresses {
                let k = Self.addressKey(a)
                if let other = folds[k], other != a { clashing.insert(k) } else { folds[k] = a }
            }
        }
        var entries: [[UInt8]: [UInt8]] = [:]
        for v in variants {
            if v.type == .aaaa, v.addresses.contains(where: { clashing.contains(Self.addressKey($0)) }) { continue }
            if let (key, value) = Self.geoSignatureEntry(v) { entries[key] = value }
        }
        return try geoSignaturesWritten.withLock { (written: inout [[UInt8]: Int]) throws(BPFError) -> Int in
            // Only what changed: a refresh round or a health change rewrites a few of thousands.
            let changed = entries.keys.filter { written[$0] != entries[$0]!.hashValue }
            try geoSignatures.updateBatch(keys: changed, values: changed.map { entries[$0]! })
            for gone in written.keys where entries[gone] == nil { try? geoSignatures.delete(key: gone) }
            written = entries.mapValues(\.hashValue)
            return entries.count
        }
    }
}
