import DNSWire
import NearcastBasics

/// An RRset's records as the API takes them to replace one (`PUT .../records?name=&type=`).
public struct RRSetInput: Codable, Equatable, Sendable {
    /// Seconds; when absent, the RRset's TTL if it exists, else the SOA's.
    public var ttl: UInt32?
    /// Each record's RDATA in presentation form, as in a zone file.
    public var data: [String]

    public init(ttl: UInt32? = nil, data: [String]) {
        self.ttl = ttl
        self.data = data
    }
}

/// A record as the management API takes and gives it: presentation form, names relative to the
/// zone's origin or absolute.
public struct RecordInput: Codable, Equatable, Sendable {
    public var name: String
    public var type: String
    /// Seconds; when absent, the RRset's TTL if it exists, else the SOA's.
    public var ttl: UInt32?
    /// The RDATA in presentation form, as in a zone file (e.g. `10 mail`, `"v=spf1 -all"`).
    public var data: String

    public init(name: String, type: String, ttl: UInt32? = nil, data: String) {
        self.name = name
        self.type = type
        self.ttl = ttl
        self.data = data
    }
}

/// A zone as the management API lists it.
public struct ZoneSummary: Codable, Equatable, Sendable {
    public var origin: String
    public var file: String
    public var serial: UInt32
    public var records: Int
    /// `Zone.checksum`, where it was asked for (the status): servers holding the same records
    /// show the same.
    public var checksum: String?
    /// For a secondary zone, its primaries and its refresh; nil for a zone read from its file.
    public var secondary: SecondaryZoneStatus?
    /// For a catalog zone (RFC 9432): `produce` (made here of the zones offered by transfer) or
    /// `consume` (followed from its primaries).
    public var catalog: String?
    /// For a zone served because a catalog followed here lists it: that catalog.
    public var memberOf: String?

    public init(
        origin: String, file: String, serial: UInt32, records: Int, checksum: String? = nil,
        secondary: SecondaryZoneStatus? = nil, catalog: String? = nil, memberOf: String? = nil
    ) {
        self.catalog = catalog
        self.memberOf = memberOf
        self.origin = origin
        self.file = file
        self.serial = serial
        self.records = records
        self.checksum = checksum
        self.secondary = secondary
    }
}

/// A secondary zone's refresh from its primaries, as `nearcast zones` and the dashboard show it.
public struct SecondaryZoneStatus: Codable, Equatable, Sendable {
    /// `served`; `not transferred yet` or `expired` (answered SERVFAIL).
    public var state: String
    /// ADDRESS:PORT [key NAME], in the order they are asked.
    public var primaries: [String]
    /// Seconds since 1970 of the last answer from a primary, and of the next refresh planned.
    public var lastRefresh: Int64?
    public var nextRefresh: Int64?
    /// Why the last refresh failed; nil once one succeeds.
    public var lastError: String?
    /// In a fleet, the server that transfers it (its refresh is that server's); nil for a single
    /// server's secondary, or while no server is known to.
    public var transferredBy: String?

    public init(
        state: String, primaries: [String], lastRefresh: Int64? = nil, nextRefresh: Int64? = nil,
        lastError: String? = nil, transferredBy: String? = nil
    ) {
        self.state = state
        self.primaries = primaries
        self.lastRefresh = lastRefresh
        self.nextRefresh = nextRefresh
        self.lastError = lastError
        self.transferredBy = transferredBy
    }
}

/// What a change did to a zone.
public struct RecordChange: Codable, Equatable, Sendable {
    public var zone: String
    /// The zone's new SOA serial (bumped by one on every change).
    public var serial: UInt32
    /// Records added or removed, and the records the zone holds now.
    public var changed: Int
    public var records: Int

    public init(zone: String, serial: UInt32, changed: Int, records: Int) {
        self.zone = zone
        self.serial = serial
        self.changed = changed
        self.records = records
    }
}

/// Why a change to a zone was refused; nothing was changed.
public enum ZoneEditError: Error, CustomStringConvertible, Sendable {
    /// The request is not valid: the field at fault, and why.
    case invalid(field: String, String)
    /// The zone would not be valid (each problem with its line in the rewritten file).
    case zone(DiagnosticsError)
    case notFound(String)
    /// The change cannot be made as asked (e.g. the record is already there).
    case conflict(String)
    /// The server could not make it durable or apply it (the audit log, the file, the maps).
    case failed(String)
    /// Where the change must be written cannot be reached now (a fleet's store): try again later.
    case unavailable(String)
    /// The RRset is not at the version the change was made for (HTTP If-Match): read it again.
    case versionChanged(String)

    public var description: String {
        switch self {
        case .invalid(let field, let why): return "\(field): \(why)"
        case .zone(let d): return "the zone would not be valid, nothing was changed:\n\(d.description)"
        case .notFound(let why), .conflict(let why), .failed(let why), .unavailable(let why), .versionChanged(let why):
            return why
        }
    }
}

/// Changes a zone's records as the management API asks: the record is read as a zone file line
/// would be, the change is applied to the served zone (`Zone.changing`, which shares what it does
/// not touch), the SOA serial bumped, and the names the change reaches checked as a zone file is
/// at start, so a change the server would refuse at start is refused here. Its cost grows with the
/// change, not with the zone.
public enum ZoneEditor {
    public enum Edit: Sendable {
        case add(RecordInput)
        /// Every record at name of type, or only the one with this data.
        case delete(name: String, type: String, data: String?)
        /// The RRset at name of type made exactly these records (their data), in one change: an
        /// address changed with no moment between where the name has none.
        case replace(name: String, type: String, RRSetInput)
    }

    /// The owner and type of the RRset `edit` changes, or why the edit names none.
    public static func target(of edit: Edit, origin: DNSName) throws(ZoneEditError) -> (owner: DNSName, type: RRType) {
        switch edit {
        case .add(let input):
            let r = try record(input, origin: origin)
            return (r.name, r.type)
        case .delete(let name, let typeText, _), .replace(let name, let typeText, _):
            let owner = try ownerName(name, origin: origin)
            guard let type = RRType(mnemonic: typeText) else {
                throw .invalid(field: "type", "'\(typeText)' is not a record type")
            }
            return (owner, type)
        }
    }

    /// The zone after `edit`, the change as the API reports it, and as the journal keeps it.
    public static func apply(_ edit: Edit, to zone: Zone, fileName: String) throws(ZoneEditError)
        -> (zone: Zone, change: RecordChange, changeset: ZoneChangeset)
    {
        let origin = zone.origin
        var removed: [ResourceRecord] = []
        var added: [ResourceRecord] = []
        var changes: [(name: DNSName, type: RRType, set: RRSet?)] = []
        switch edit {
        case .add(let input):
            var r = try record(input, origin: origin, defaultTTL: zone.soa.ttl)
            let same = zone.rrset(r.name, r.type)
            if same?.rdatas.contains(r.rdata) == true { throw .conflict("\(ZoneText.line(r)) is already in the zone") }
            if input.ttl == nil, let same { r.ttl = same.ttl }
            // One TTL per RRset (RFC 2181 §5.2): a new TTL applies to the whole set.
            var set = same ?? RRSet(name: r.name, type: r.type, ttl: r.ttl, rdatas: [])
            if let same, same.ttl != r.ttl {
                removed += same.records()
                added += same.records(ttl: r.ttl)
            }
            set.ttl = r.ttl
            set.rdatas.append(r.rdata)
            added.append(r)
            changes.append((r.name, r.type, set))
        case .delete(let name, let typeText, let data):
            let owner = try ownerName(name, origin: origin)
            guard let type = RRType(mnemonic: typeText) else {
                throw .invalid(field: "type", "'\(typeText)' is not a record type")
            }
            var match: RData?
            if let data {
                match = try record(RecordInput(name: name, type: typeText, ttl: 0, data: data), origin: origin).rdata
            }
            guard var set = zone.rrset(owner, type), match == nil || set.rdatas.contains(match!) else {
                throw .notFound("no \(type) record at \(owner)\(data.map { " with data \($0)" } ?? "")")
            }
            let gone = set.rdatas.filter { match == nil || $0 == match }
            set.rdatas.removeAll { match == nil || $0 == match }
            removed += gone.map { ResourceRecord(name: set.name, type: type, ttl: set.ttl, rdata: $0) }
            changes.append((owner, type, set.rdatas.isEmpty ? nil : set))
        case .replace(let name, let typeText, let input):
            let owner = try ownerName(name, origin: origin)
            guard let type = RRType(mnemonic: typeText) else {
                throw .invalid(field: "type", "'\(typeText)' is not a record type")
            }
            guard !input.data.isEmpty else {
                throw .invalid(field: "data", "no records given (DELETE removes an RRset)")
            }
            let old = zone.rrset(owner, type)
            let ttl = input.ttl ?? old?.ttl ?? zone.soa.ttl
            var set = RRSet(name: owner, type: type, ttl: ttl, rdatas: [])
            for data in input.data {
                let r = try record(RecordInput(name: name, type: typeText, ttl: ttl, data: data), origin: origin)
                guard !set.rdatas.contains(r.rdata) else { throw .invalid(field: "data", "'\(data)' is given twice") }
                set.rdatas.append(r.rdata)
            }
            if let old, old.isIdentical(to: set) {
                throw .conflict("the \(type) records at \(owner) are already these")
            }
            removed += old?.records() ?? []
            added += set.records()
            changes.append((owner, type, set))
        }
        // The serial: one step forward (RFC 1982).
        var next: Zone
        do throws(DiagnosticsError) {
            next = try zone.changing(changes, source: fileName)
            guard next.rrset(origin, .soa)?.rdatas.count == 1, case .soa(var soa) = next.soa.rdatas[0] else {
                throw DiagnosticsError([
                    Diagnostic(file: fileName, line: 0, message: "the zone would have no SOA record")
                ])
            }
            let oldSOA = next.soa
            soa.serial = zone.serial &+ 1
            var bumped = oldSOA
            bumped.rdatas = [.soa(soa)]
            next = try next.changing([(origin, .soa, bumped)], source: fileName)
            // (A change of the SOA itself leaves none or two, refused above.)
            removed += zone.soa.records()
            added += bumped.records()
        } catch {
            throw .zone(error)
        }
        let changed: Int
        switch edit {
        case .add: changed = 1
        case .delete: changed = removed.filter { $0.type != .soa }.count
        case .replace: changed = added.filter { $0.type != .soa }.count
        }
        return (
            next,
            RecordChange(zone: origin.description, serial: next.serial, changed: changed, records: next.recordCount),
            ZoneChangeset(serialBefore: zone.serial, serialAfter: next.serial, removed: removed, added: added)
        )
    }

    /// A name as the API takes it (`@`, relative to the origin, or absolute) that must lie in the zone.
    public static func ownerName(_ text: String, origin: DNSName) throws(ZoneEditError) -> DNSName {
        let name: DNSName
        do { name = try DNSName(text == "@" ? origin.description : text, origin: origin) } catch {
            throw .invalid(field: "name", "'\(text)' is not a domain name (\(error))")
        }
        guard name.isSubdomain(of: origin) else {
            throw .invalid(field: "name", "\(name) is not inside the zone \(origin)")
        }
        return name
    }

    /// The record `input` describes, read as a zone file line.
    static func record(_ input: RecordInput, origin: DNSName, defaultTTL: UInt32 = 3600) throws(ZoneEditError)
        -> ResourceRecord
    {
        let owner = try ownerName(input.name, origin: origin)
        guard let type = RRType(mnemonic: input.type) else {
            throw .invalid(field: "type", "'\(input.type)' is not a record type")
        }
        guard !input.data.contains(where: { $0 == "\n" || $0 == "\r" }) else {
            throw .invalid(field: "data", "one line only")
        }
        let ttl = input.ttl ?? defaultTTL
        let line = "\(owner) \(ttl) IN \(type) \(input.data)\n"
        let parsed: [SourcedRecord]
        do { parsed = try ZoneFileParser.parse(text: line, fileName: "request", origin: origin) } catch {
            // The field at fault is the data: name and type were checked above.
            throw .invalid(field: "data", error.diagnostics.map(\.message).joined(separator: "; "))
        }
        guard parsed.count == 1 else { throw .invalid(field: "data", "one record at a time") }
        return parsed[0].record
    }
}
