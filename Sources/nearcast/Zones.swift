import ArgumentParser
import Foundation
import NearcastZones

/// `nearcast zones`: the zones served, with their serials and sizes; a secondary zone's primaries
/// and refresh too, and a catalog's part.
struct Zones: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract:
            "List the zones, with their SOA serials, record counts and files; for a secondary zone, its primaries, its last and next refresh and its last error."
    )

    @OptionGroup var options: APIOptions

    func run() async throws {
        try await Nodes.reportingFailures {
            let zones = try await options.client(role: .read).get("/v1/zones", as: [ZoneSummary].self)
            let now = Int64(Date().timeIntervalSince1970)
            for z in zones { print(Self.lines(z, now: now).joined(separator: "\n")) }
        }
    }

    /// A zone as printed: its line, and for a secondary, its refresh below it.
    static func lines(_ z: ZoneSummary, now: Int64) -> [String] {
        var out = ["\(z.origin)  serial \(z.serial)  \(z.records) records  \(z.file)"]
        switch z.catalog {
        case "produce": out.append("  catalog made here of the zones offered by transfer")
        case "consume": out.append("  catalog followed: each zone it lists is served as a secondary")
        default: break
        }
        if let catalog = z.memberOf { out.append("  listed in catalog \(catalog)") }
        guard let s = z.secondary else { return out }
        var refresh = "  secondary of \(s.primaries.joined(separator: ", ")): \(s.state)"
        if s.state != "served" { refresh += " (answered SERVFAIL)" }
        if let by = s.transferredBy { refresh += "; transferred by \(by)" }
        // (In a fleet, another server's refresh is its own.)
        if let last = s.lastRefresh {
            refresh += "; refreshed \(max(0, now - last)) s ago"
        } else if s.transferredBy == nil {
            refresh += "; never refreshed"
        }
        if let next = s.nextRefresh { refresh += "; next refresh in \(max(0, next - now)) s" }
        out.append(refresh)
        if let e = s.lastError { out.append("  last error: \(e)") }
        return out
    }
}

/// `nearcast records ORIGIN [--name N] [--type T]`: a zone's records, one per line as in a zone file.
struct Records: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print a zone's records (all, or of one name and type), as zone file lines.")

    @OptionGroup var options: APIOptions
    @Argument(help: "The zone's origin, e.g. example.net.") var origin: String
    @Option(help: "Only records of this name (relative to the origin, or absolute).") var name: String?
    @Option(help: "Only records of this type.") var type: String?

    func run() async throws {
        try await Nodes.reportingFailures {
            let (list, version) = try await options.client(role: .read).getTagged(
                "/v1/zones/\(APIClient.segment(origin))/records", query: [("name", name), ("type", type)],
                as: [RecordInput].self)
            // One RRset: its version first, for `nearcast record ... --if-match`.
            if let version { print("; version \(version)") }
            for r in list { print("\(r.name) \(r.ttl.map(String.init) ?? "") IN \(r.type) \(r.data)") }
        }
    }
}

/// `nearcast record add|set|delete ORIGIN NAME TYPE [DATA...]`: changes a zone while it is served.
struct RecordCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "record",
        abstract:
            "Add, set or delete records in a served zone (checked as a zone file is, written to the zone's journal, served at once).",
        discussion: """
            nearcast record add example.net. www A 192.0.2.10 --ttl 300
            nearcast record add example.net. @ TXT '"v=spf1 -all"'
            nearcast record set example.net. www A 192.0.2.20         # www's A records become this one, in one change
            nearcast record delete example.net. www A 192.0.2.10      # one record
            nearcast record delete example.net. old A                  # the whole RRset
            nearcast records example.net. --name www --type A          # prints "; version V" first
            nearcast record set example.net. www A 192.0.2.30 --if-match V   # only if unchanged since
            The zone's file is rewritten in canonical form (comments are not kept) and its SOA serial goes up by one.
            """)

    enum Action: String, ExpressibleByArgument, CaseIterable { case add, set, delete }

    @OptionGroup var options: APIOptions
    @Argument(help: "add, set (the name's records of the type become this one) or delete.") var action: Action
    @Argument(help: "The zone's origin, e.g. example.net.") var origin: String
    @Argument(help: "The record's name: @, relative to the origin, or absolute.") var name: String
    @Argument(help: "The record's type, e.g. A, MX, TXT.") var type: String
    @Argument(help: "The record's data as in a zone file (delete: optional).") var data: [String] = []
    @Option(help: "TTL in seconds (add, set; default: the RRset's, else the SOA's).") var ttl: UInt32?
    @Option(
        name: .customLong("if-match"),
        help:
            "Only if the RRset is still at this version (as `nearcast records --name --type` prints it); else refused (412)."
    )
    var ifMatch: String?

    func validate() throws {
        if action != .delete && data.isEmpty {
            throw ValidationError("\(action.rawValue) needs the record's data, e.g. 192.0.2.10")
        }
        if action == .delete && ttl != nil { throw ValidationError("--ttl goes with add and set") }
    }

    func run() async throws {
        try await Nodes.reportingFailures {
            let client = try options.client(role: .write)
            let path = "/v1/zones/\(APIClient.segment(origin))/records"
            let text = data.joined(separator: " ")
            let change: RecordChange
            switch action {
            case .add:
                change = try await client.post(
                    path, body: RecordInput(name: name, type: type, ttl: ttl, data: text), ifMatch: ifMatch,
                    as: RecordChange.self)
            case .set:
                change = try await client.put(
                    path, query: [("name", name), ("type", type)], body: RRSetInput(ttl: ttl, data: [text]),
                    ifMatch: ifMatch, as: RecordChange.self)
            case .delete:
                change = try await client.delete(
                    path, query: [("name", name), ("type", type), ("data", text.isEmpty ? nil : text)],
                    ifMatch: ifMatch, as: RecordChange.self)
            }
            print(
                "\(change.zone): \(["add": "added", "set": "set", "delete": "deleted"][action.rawValue]!) \(change.changed), serial \(change.serial), \(change.records) records"
            )
        }
    }
}
