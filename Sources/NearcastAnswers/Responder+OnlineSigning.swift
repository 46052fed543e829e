import DNSWire
import NearcastZones

extension Responder {
    /// `records` with each RRset's signatures after it, when `dnssec` (the query's DO bit) and
    /// the zone signs the answers it makes for each query (`onlineSignatures`): a geo name's
    /// nodes, a discovery target's address. `originalTTL`: the TTL the RRsets are signed with,
    /// the name's own (the answer's may be lower while its pool is unsettled: RFC 4035 §5.3.3 lets
    /// a validator take it). Unsigned, as they are, when a signature cannot be made.
    func signedOnline(_ records: [ResourceRecord], originalTTL: UInt32, dnssec: Bool) -> [ResourceRecord] {
        guard dnssec, let online = onlineSignatures, !records.isEmpty else { return records }
        // The RRsets, in the order their first records come.
        var sets: [(name: DNSName, type: RRType, records: [ResourceRecord])] = []
        for r in records {
            if let i = sets.firstIndex(where: { $0.name == r.name && $0.type == r.type }) {
                sets[i].records.append(r)
            } else {
                sets.append((r.name, r.type, [r]))
            }
        }
        let now = UInt32(truncatingIfNeeded: clock())
        var out: [ResourceRecord] = []
        for s in sets {
            let set = RRSet(name: s.name, type: s.type, ttl: originalTTL, rdatas: s.records.map(\.rdata))
            guard let sigs = online.signatures(set, now: now) else { return records }
            out +=
                s.records
                + sigs.map { ResourceRecord(name: $0.name, type: $0.type, ttl: s.records[0].ttl, rdata: $0.rdata) }
        }
        return out
    }

    /// The proof of a NODATA at a geo name whose nodes are all down (its policy NODATA) in a zone
    /// signed here: the negative SOA with its signatures, and the name's NSEC without `qtype`,
    /// signed as the answers are (the zone's own NSEC lists the type, which the name answers
    /// while a node is up). Nil where the zone is not signed here or its chain is NSEC3.
    func signedNoData(_ name: DNSName, _ qtype: RRType, _ zone: Zone) -> [ResourceRecord]? {
        guard let online = onlineSignatures, let (soa, nsec) = zone.onlineNoData(name, qtype),
            let sigs = online.signatures(nsec, now: UInt32(truncatingIfNeeded: clock()))
        else { return nil }
        return soa + nsec.records()
            + sigs.map { ResourceRecord(name: nsec.name, type: .rrsig, ttl: nsec.ttl, rdata: $0.rdata) }
    }
}
