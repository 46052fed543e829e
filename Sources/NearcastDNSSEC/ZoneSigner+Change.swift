import DNSWire
import Foundation
import NearcastBasics
import NearcastZones

extension ZoneSigner {
    /// What signing a change did: the signed zone after it, and every name whose records it
    /// changed (the changed names, and the names whose NSEC now points elsewhere).
    public struct SignedChange: Sendable {
        public var zone: Zone
        public var owners: Set<DNSName>
    }

    /// `signed` (a zone these keys signed) with the data of `source` at `owners`, and signed again
    /// where that reaches, never the whole zone (docs/ARCHITECTURE.md §18): each of `owners`
    /// and the apex (its SOA's serial changes with every change) signed anew, with its NSEC; a
    /// name added to or gone from the chain, its predecessor's NSEC (made and signed anew); a
    /// delegation or DNAME added or removed, the names below it too, which become glue or stop
    /// being glue. `source` holds the data (its DNSSEC records are not used: the signer makes
    /// them). Costs a few signatures per name changed and O(log n) per lookup.
    public func signChange(_ signed: Zone, to source: Zone, owners: Set<DNSName>) throws -> SignedChange {
        let origin = signed.origin
        var names = owners.union([origin])
        // A delegation or DNAME that comes or goes changes what lies below it.
        func redirects(_ z: Zone, _ n: DNSName) -> Bool {
            z.rrset(n, .dname) != nil || (n != origin && z.rrset(n, .ns) != nil)
        }
        let redirecting = owners.filter { redirects(signed, $0) != redirects(source, $0) }
        if !redirecting.isEmpty {
            for zone in [signed, source] {
                zone.forEachName(from: 0, to: zone.nameCount) { name, _ in
                    if redirecting.contains(where: { name != $0 && name.isSubdomain(of: $0) }) { names.insert(name) }
                }
            }
        }
        // The data, as the source has it now.
        var data: [(name: DNSName, type: RRType, set: RRSet?)] = []
        for name in names {
            for type in Set(signed.types(at: name) + source.types(at: name))
            where !Self.replaces(type, at: name, origin: origin) {
                let (old, new) = (signed.rrset(name, type), source.rrset(name, type))
                if let old, let new, old.isIdentical(to: new) { continue }
                data.append((name, type, new))
            }
        }
        data.append((origin, .dnskey, dnskeySet(source)))
        var zone = try signed.changing(data, source: "signing \(origin)")

        // The names that the chain links, and the ones it should: linked in with a placeholder
        // NSEC, or out with their signatures, before the links are made.
        var links: [(name: DNSName, type: RRType, set: RRSet?)] = []
        var linked: [DNSName] = []  // names that come into or go out of the chain
        var authoritative: [DNSName] = []
        for name in names {
            let held =
                zone.node(at: name).map { node in
                    !node.isRedirected && !node.isHashedOwner
                        && (name == origin || node.sets.contains { !Self.replaces($0.type, at: name, origin: origin) })
                } ?? false
            let wanted = held || (online[name] != nil && Self.answersOnline(name, in: zone))
            let present = zone.rrset(name, .nsec) != nil
            if wanted {
                authoritative.append(name)
                if !present {
                    links.append((name, .nsec, RRSet(name: name, type: .nsec, ttl: 0, rdatas: [.unknown(name.wire)])))
                    linked.append(name)
                }
            } else {
                if present { linked.append(name) }
                for type in [RRType.nsec, .rrsig, .nsec3] where zone.rrset(name, type) != nil {
                    links.append((name, type, nil))
                }
            }
        }
        zone = try zone.changing(links, source: "signing \(origin)")

        // Each authoritative name changed: its NSEC and all its signatures anew. Each name whose
        // successor came or went: its NSEC anew, and that NSEC's signatures.
        let nsecTTL = zone.negativeSOA.ttl
        var predecessors = Set(linked.compactMap { zone.nsecNeighbours(of: $0)?.previous })
        predecessors.subtract(authoritative)
        let signer = self
        let jobs = authoritative.map { ($0, true) } + predecessors.map { ($0, false) }
        let frozen = zone
        let parts = ParallelWork.map(jobs, parts: ProcessInfo.processInfo.activeProcessorCount, smallest: 64) {
            slice -> Result<[(name: DNSName, type: RRType, set: RRSet?)], Error> in
            Result {
                var out: [(name: DNSName, type: RRType, set: RRSet?)] = []
                for (name, whole) in slice {
                    guard let node = frozen.node(at: name), let next = frozen.nsecNeighbours(of: name)?.next else {
                        continue
                    }
                    let sets = node.sets.filter { $0.type != .rrsig && $0.type != .nsec }
                    let types = signer.nsecTypes(name, sets)
                    let nsec = RRSet(
                        name: name, type: .nsec, ttl: nsecTTL, rdatas: [.unknown(next.wire + Self.typeBitmap(types))])
                    out.append((name, .nsec, nsec))
                    var sigs: [RData]
                    if whole {
                        sigs = []
                        for s in sets + [nsec] where !node.isDelegation || s.type == .ds || s.type == .nsec {
                            sigs += try signer.signatures(s, origin: origin).map(\.rdata)
                        }
                    } else {
                        sigs = (frozen.rrset(name, .rrsig)?.rdatas ?? []).filter { Signature($0)?.typeCovered != .nsec }
                        sigs += try signer.signatures(nsec, origin: origin).map(\.rdata)
                    }
                    out.append((name, .rrsig, RRSet(name: name, type: .rrsig, ttl: nsecTTL, rdatas: sigs)))
                }
                return out
            }
        }
        var made: [(name: DNSName, type: RRType, set: RRSet?)] = []
        for part in parts { made += try part.get() }
        zone = try zone.changing(made, source: "signing \(origin)")
        return SignedChange(zone: zone, owners: names.union(predecessors))
    }

    /// The whole of `zone` signed (`sign`), as a zone: what a zone's keys first sign, at start or
    /// once its keys change.
    public func signWhole(_ zone: Zone) throws -> Zone {
        let records = try sign(zone).map { SourcedRecord($0, file: "signed \(zone.origin)", line: 0) }
        return try Zone.build(origin: zone.origin, records: records, sourceName: "signed \(zone.origin)")
    }
}
