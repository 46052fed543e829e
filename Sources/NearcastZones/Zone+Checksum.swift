import DNSWire
import NearcastBasics

extension Zone {
    /// A digest of what the zone holds, the same on every server that holds the same records
    /// whatever their order, file or store: 16 hex digits, the sum (mod 2^64) of a SipHash of each
    /// record's wire form (owner lower-cased, class IN, the SOA's serial taken as 0, for a fleet's
    /// servers derive the serial: docs/ARCHITECTURE.md §13). A sum, not a hash of the zone in
    /// order: no sort of a million names, and an import can compute it from the records it
    /// writes. `nearcast status` shows it per zone, so that servers are compared by it; an import
    /// stores it, so that a follower serves a whole import or none of it.
    public var checksum: String { Self.checksum(of: records) }

    /// The checksum of `records` (as `checksum` computes it for a zone of them).
    public static func checksum(of records: some Sequence<ResourceRecord>) -> String {
        var sum: UInt64 = 0
        for r in records { sum = sum &+ recordDigest(r) }
        return Hex.lowercase(withUnsafeBytes(of: sum.bigEndian) { Array($0) })
    }

    /// SipHash-2-4 of one record's wire form, with a fixed key: a digest, not a secret.
    static func recordDigest(_ record: ResourceRecord) -> UInt64 {
        var r = record
        r.name = r.name.lowercased()
        if case .soa(var s) = r.rdata {
            s.serial = 0
            r.rdata = .soa(s)
        }
        var w = WireWriter(capacity: 64)
        // Only names the writer has not seen are written whole: a fresh writer per record keeps
        // the bytes a function of the record alone.
        guard (try? w.record(r)) != nil else { return 0 }
        return SipHash24.hash(w.bytes, key: checksumKey)
    }

    private static let checksumKey: [UInt8] = Array("nearcast-zone-v1".utf8)
}
