import BPFKit
import CNearcastABI
import NearcastGeo

#if canImport(Glibc)
import Glibc
#endif

/// A geo compile's IPv4 prefixes as the XDP program looks them up (ARCHITECTURE §5; the layouts are
/// `struct nc_geo4_span` and `struct nc_geo4_prefix` in nearcast_abi.h): the prefixes in address
/// order, and a span per /16 saying which of them meet it. The kernel's LPM trie cost 155-165 ns
/// of a geo answer; this costs a lookup of the span and a binary search within it.
struct IPv4PrefixArray {
    /// NC_GEO4_SPANS entries (`struct nc_geo4_span`), one after another.
    let spans: [UInt8]
    /// One `struct nc_geo4_prefix` per prefix, one after another.
    let prefixes: [UInt8]

    static let spanSize = MemoryLayout<nc_geo4_span>.size
    static let prefixSize = MemoryLayout<nc_geo4_prefix>.size

    /// `prefixes`: disjoint and sorted by address, IPv4 in the top 32 bits (GeoImage.ipv4).
    init(_ prefixes: [ClassPrefix]) {
        var spans = [UInt8](repeating: 0, count: Int(NC_GEO4_SPANS) * Self.spanSize)
        var entries = [UInt8](repeating: 0, count: prefixes.count * Self.prefixSize)
        var next: UInt64 = 0  // the first address after the previous prefix
        spans.withUnsafeMutableBytes { spanBytes in
            entries.withUnsafeMutableBytes { prefixBytes in
                for (i, p) in prefixes.enumerated() {
                    let start = UInt32(truncatingIfNeeded: p.address >> 96)
                    let length = max(0, min(32, p.length))
                    let end = UInt64(start) | (UInt64(UInt32.max) >> length)  // the prefix's last address
                    precondition(UInt64(start) >= next, "IPv4 prefixes are sorted and disjoint (GeoCompiler)")
                    next = end + 1
                    var value = nc_geo4_prefix()
                    value.start = start
                    value.cls = UInt32(p.locationClass)
                    value.seed = p.seed
                    value.plen = UInt8(length)
                    prefixBytes.storeBytes(of: value, toByteOffset: i * Self.prefixSize, as: nc_geo4_prefix.self)
                    // Every /16 the prefix meets counts it; the first one it meets starts there.
                    for block in Int(start >> 16)...Int(end >> 16) {
                        let at = block * Self.spanSize
                        var span = spanBytes.load(fromByteOffset: at, as: nc_geo4_span.self)
                        if span.count == 0 { span.first = UInt32(i) }
                        span.count += 1
                        spanBytes.storeBytes(of: span, toByteOffset: at, as: nc_geo4_span.self)
                    }
                }
            }
        }
        self.spans = spans
        self.prefixes = entries
    }

    /// The spans of a generation without IPv4 prefixes: every /16 empty.
    static let noSpans = [UInt8](repeating: 0, count: Int(NC_GEO4_SPANS) * spanSize)
}
