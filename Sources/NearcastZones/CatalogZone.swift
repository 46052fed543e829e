import DNSWire
import NearcastBasics

/// A catalog zone (RFC 9432, schema version 2): a zone whose `zones` subtree lists member zones,
/// one PTR at `UNIQUE.zones.CATALOG` each, so that a secondary that follows the catalog serves
/// new zones without a change of its config (ARCHITECTURE §17). This is its codec: the members a
/// catalog lists, and the catalog of a list of zones.
public enum CatalogZone {
    /// Why a zone cannot be read as a catalog.
    public struct Problem: Error, CustomStringConvertible, Sendable {
        public var description: String
    }

    /// The member zones `zone` lists, in name order. A unique label with
    /// more than one PTR lists nothing (RFC 9432 §4.1: the member is broken); a member listed
    /// under two labels is taken once. Properties (`group`, `coo`) are not read. A catalog of
    /// any version but "2" (the TXT at `version.CATALOG`) is not read at all (§4.2.1).
    public static func members(of zone: Zone) -> Result<[DNSName], Problem> {
        let origin = zone.origin
        guard let version = try? origin.prepending(Array("version".utf8)),
            let zonesName = try? origin.prepending(Array("zones".utf8))
        else { return .failure(Problem(description: "\(origin) is too long a name for a catalog")) }
        let versions = zone.rrset(version, .txt)?.rdatas ?? []
        guard versions.count == 1, case .txt(let strings) = versions[0], strings == [Array("2".utf8)] else {
            return .failure(
                Problem(
                    description:
                        "catalog \(origin) has no version \"2\" (TXT at \(version)): not read (RFC 9432 §4.2.1)"))
        }
        var out: [DNSName] = []
        var seen: Set<DNSName> = []
        let depth = zonesName.labelCount + 1
        for owner in zone.owners where owner.labelCount == depth && owner.parent == zonesName {
            guard let ptrs = zone.rrset(owner, .ptr)?.rdatas, ptrs.count == 1, case .ptr(let member) = ptrs[0] else {
                continue
            }
            let name = member.lowercased()
            if seen.insert(name).inserted { out.append(name) }
        }
        return .success(out.sorted())
    }

    /// The unique label of `member` in a catalog: a SipHash-2-4 of its lower-cased wire form, in
    /// 16 hex digits (as Knot's are), so that every server of a fleet lists a zone under the
    /// same label, and a member keeps its label for as long as it is listed.
    public static func uniqueLabel(of member: DNSName) -> String {
        let h = SipHash24.hash(member.lowercased().wire, key: labelKey)
        return Hex.lowercase((0..<8).map { UInt8(truncatingIfNeeded: h >> (56 - 8 * $0)) })
    }

    /// A fixed key: the label must be the same wherever it is made.
    static let labelKey: [UInt8] = Array("nearcast catalog".utf8)

    /// The records of catalog `origin` listing `members` at `serial`: SOA and NS (`invalid.`, as
    /// RFC 9432 §4.1 suggests: a catalog is not for resolution), the version, and a PTR for each
    /// member.
    public static func records(origin: DNSName, members: [DNSName], serial: UInt32) throws(DNSWireError)
        -> [ResourceRecord]
    {
        let invalid = try DNSName("invalid.")
        let soa = RData.SOA(
            mname: invalid, rname: invalid, serial: serial, refresh: 3600, retry: 600, expire: 2_147_483_646,
            minimum: 0)
        var out = [
            ResourceRecord(name: origin, type: .soa, ttl: 0, rdata: .soa(soa)),
            ResourceRecord(name: origin, type: .ns, ttl: 0, rdata: .ns(invalid)),
            ResourceRecord(
                name: try origin.prepending(Array("version".utf8)), type: .txt, ttl: 0, rdata: .txt([Array("2".utf8)])),
        ]
        let zonesName = try origin.prepending(Array("zones".utf8))
        for member in members {
            let owner = try zonesName.prepending(Array(uniqueLabel(of: member).utf8))
            out.append(ResourceRecord(name: owner, type: .ptr, ttl: 0, rdata: .ptr(member.lowercased())))
        }
        return out
    }
}
