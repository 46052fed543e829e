import DNSWire

/// A dynamic update's rules (RFC 2136) applied to a zone: its prerequisites checked (§3.2), its
/// update section prescanned (§3.4.1) and then applied (§3.4.2), each as the RFC says, to give the
/// RRsets it changes and the zone's next serial. Pure: what serves the change (one journaled
/// change of the zone, one serial) is the caller's; a refusal is an RCODE and changes nothing.
public struct ZoneUpdate: Sendable, Equatable {
    /// The prerequisite section (the message's answer section).
    public var prerequisites: [ResourceRecord]
    /// The update section (the message's authority section).
    public var updates: [ResourceRecord]

    public init(prerequisites: [ResourceRecord], updates: [ResourceRecord]) {
        self.prerequisites = prerequisites
        self.updates = updates
    }

    /// Why an update is refused: the RCODE to answer, and what failed, for the log.
    public struct Refusal: Error, Equatable, CustomStringConvertible {
        public var rcode: RCode
        public var why: String
        public var description: String { "\(rcode): \(why)" }
    }

    /// The RRsets the update changes in `zone` (each whole as it is after it; nil: gone) and the
    /// zone's serial after it: one more than now (RFC 1982), or an SOA's the update adds when
    /// that is newer. Empty when it changes nothing (the serial stays then).
    public struct Outcome: Sendable, Equatable {
        public var sets: [RRSetChange]
        public var serial: UInt32
    }

    /// One RRset after an update (nil: none left).
    public struct RRSetChange: Sendable, Equatable {
        public var name: DNSName
        public var type: RRType
        public var set: RRSet?
    }

    /// Checks the prerequisites against `zone`, prescans and applies the update section.
    public func apply(to zone: Zone) throws(Refusal) -> Outcome {
        try checkPrerequisites(zone)
        try prescan(zone)
        return applyUpdates(zone)
    }

    // MARK: prerequisites (§3.2)

    func checkPrerequisites(_ zone: Zone) throws(Refusal) {
        // Value-dependent prerequisites: the RRsets they name, as they must be, compared whole.
        var wanted: [Zone.RRKey: [RData]] = [:]
        var order: [Zone.RRKey] = []
        for rr in prerequisites {
            guard rr.ttl == 0 else { throw Refusal(rcode: .formErr, why: "a prerequisite's TTL is not 0") }
            guard rr.name.isSubdomain(of: zone.origin) else {
                throw Refusal(rcode: .notZone, why: "\(rr.name) is not in zone \(zone.origin)")
            }
            let empty = rr.rdata == .unknown([])
            switch rr.rrClass {
            case .any:
                guard empty else { throw Refusal(rcode: .formErr, why: "a prerequisite of class ANY has data") }
                if rr.type == .any {
                    guard !zone.types(at: rr.name).isEmpty else {
                        throw Refusal(rcode: .nxDomain, why: "\(rr.name) is not in use")
                    }
                } else {
                    guard zone.rrset(rr.name, rr.type) != nil else {
                        throw Refusal(rcode: .nxRRSet, why: "no \(rr.type) RRset at \(rr.name)")
                    }
                }
            case .none:
                guard empty else { throw Refusal(rcode: .formErr, why: "a prerequisite of class NONE has data") }
                if rr.type == .any {
                    guard zone.types(at: rr.name).isEmpty else {
                        throw Refusal(rcode: .yxDomain, why: "\(rr.name) is in use")
                    }
                } else {
                    guard zone.rrset(rr.name, rr.type) == nil else {
                        throw Refusal(rcode: .yxRRSet, why: "a \(rr.type) RRset is at \(rr.name)")
                    }
                }
            case .in:
                guard !Self.metaTypes.contains(rr.type) else {
                    throw Refusal(rcode: .formErr, why: "a prerequisite of type \(rr.type) with data")
                }
                let key = Zone.RRKey(name: rr.name, type: rr.type)
                if wanted[key] == nil { order.append(key) }
                wanted[key, default: []].append(rr.rdata)
            default:
                throw Refusal(rcode: .formErr, why: "a prerequisite of class \(rr.rrClass)")
            }
        }
        for key in order {
            let have = Set(zone.rrset(key.name, key.type)?.rdatas ?? [])
            guard have == Set(wanted[key] ?? []) else {
                throw Refusal(rcode: .nxRRSet, why: "the \(key.type) RRset at \(key.name) is not the one given")
            }
        }
    }

    // MARK: the update section (§3.4.1, §3.4.2)

    /// DNSSEC's types, which may stand beside a CNAME.
    static let dnssecTypes: Set<RRType> = [.rrsig, .nsec, .nsec3]

    /// Types that name no record: a query's, not data's.
    static let metaTypes: Set<RRType> = [.any, .axfr, .ixfr, .maila, .mailb, .opt, .tsig]

    func prescan(_ zone: Zone) throws(Refusal) {
        for rr in updates {
            guard rr.name.isSubdomain(of: zone.origin) else {
                throw Refusal(rcode: .notZone, why: "\(rr.name) is not in zone \(zone.origin)")
            }
            let empty = rr.rdata == .unknown([])
            switch rr.rrClass {
            case .in:
                guard !Self.metaTypes.contains(rr.type) else {
                    throw Refusal(rcode: .formErr, why: "an update adds a record of type \(rr.type)")
                }
            case .any:
                guard rr.ttl == 0, empty, !Self.metaTypes.subtracting([.any]).contains(rr.type) else {
                    throw Refusal(rcode: .formErr, why: "a deletion of class ANY with a TTL, data or type \(rr.type)")
                }
            case .none:
                guard rr.ttl == 0, !Self.metaTypes.contains(rr.type) else {
                    throw Refusal(rcode: .formErr, why: "a deletion of class NONE with a TTL or type \(rr.type)")
                }
            default:
                throw Refusal(rcode: .formErr, why: "an update of class \(rr.rrClass)")
            }
        }
    }

    func applyUpdates(_ zone: Zone) -> Outcome {
        // Each RRset touched, as it is after the updates so far (in the section's order).
        var now: [Zone.RRKey: RRSet?] = [:]
        var touched: [Zone.RRKey] = []
        func current(_ key: Zone.RRKey) -> RRSet? {
            if let set = now[key] { return set }
            return zone.rrset(key.name, key.type)
        }
        func put(_ key: Zone.RRKey, _ set: RRSet?) {
            if now[key] == nil { touched.append(key) }
            now[key] = .some(set.flatMap { $0.rdatas.isEmpty ? nil : $0 })
        }
        func types(at name: DNSName) -> [RRType] {
            var out = Set(zone.types(at: name))
            for (key, set) in now where key.name == name {
                if set == nil { out.remove(key.type) } else { out.insert(key.type) }
            }
            return Array(out)
        }
        var serial = zone.serial &+ 1
        let apex = zone.origin
        for rr in updates {
            let key = Zone.RRKey(name: rr.name, type: rr.type)
            switch rr.rrClass {
            case .in:
                if rr.type == .soa {
                    // Only at the apex, and only a newer serial (RFC 1982).
                    guard rr.name == apex, case .soa(let new) = rr.rdata,
                        Int32(bitPattern: new.serial &- zone.serial) > 0
                    else { continue }
                    serial = new.serial
                    put(key, RRSet(name: apex, type: .soa, ttl: rr.ttl, rdatas: [rr.rdata]))
                    continue
                }
                let here = types(at: rr.name)
                // CNAME and other data do not meet at a name (RFC 2136 §3.4.2.2; DNSSEC types aside).
                if rr.type == .cname && here.contains(where: { $0 != .cname && !Self.dnssecTypes.contains($0) }) {
                    continue
                }
                if rr.type != .cname && !Self.dnssecTypes.contains(rr.type) && here.contains(.cname) { continue }
                var set = current(key) ?? RRSet(name: rr.name, type: rr.type, ttl: rr.ttl, rdatas: [])
                if rr.type == .cname {
                    set.rdatas = [rr.rdata]  // a CNAME replaces the one there
                } else if !set.rdatas.contains(rr.rdata) {
                    set.rdatas.append(rr.rdata)
                }
                set.ttl = rr.ttl
                put(key, set)
            case .any:
                if rr.type == .any {
                    for t in types(at: rr.name) where !(rr.name == apex && (t == .soa || t == .ns)) {
                        put(Zone.RRKey(name: rr.name, type: t), nil)
                    }
                } else if !(rr.name == apex && (rr.type == .soa || rr.type == .ns)) {
                    if current(key) != nil { put(key, nil) }
                }
            default:  // NONE: one record deleted
                guard rr.type != .soa, var set = current(key), let i = set.rdatas.firstIndex(of: rr.rdata) else {
                    continue
                }
                // The apex's last NS stays.
                if rr.name == apex && rr.type == .ns && set.rdatas.count == 1 { continue }
                set.rdatas.remove(at: i)
                put(key, set)
            }
        }
        // Only the RRsets that end other than they began.
        let sets = touched.compactMap { key -> RRSetChange? in
            let after = now[key] ?? nil
            let before = zone.rrset(key.name, key.type)
            if Self.same(before, after) { return nil }
            return RRSetChange(name: key.name, type: key.type, set: after)
        }
        return Outcome(sets: sets, serial: sets.isEmpty ? zone.serial : serial)
    }

    /// Whether two RRsets hold the same records with the same TTL (their order aside).
    static func same(_ a: RRSet?, _ b: RRSet?) -> Bool {
        guard let a, let b else { return a == nil && b == nil }
        return a.ttl == b.ttl && Set(a.rdatas) == Set(b.rdatas)
    }
}
