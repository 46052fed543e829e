import DNSWire
import NearcastBasics
import NearcastTestSupport
import Testing

@testable import NearcastAnswers
@testable import NearcastZones

/// A zone changed one record at a time (`ZoneEditor` over `Zone.changing`, which reads indexes
/// instead of the whole zone) is the zone a file with the same records makes: every change it
/// refuses, a whole build refuses too, and every change it takes is answered by the slow path
/// byte for byte as the zone built from scratch answers. So what a change reaches (a CNAME's
/// target, an MX target's address, a wildcard, a delegation and its glue, a DNAME, an empty
/// non-terminal appearing and going) is found from the indexes, right after the change.
@Suite(.timeLimit(.minutes(3))) struct ZoneChangeTests {
    static let origin = try! DNSName("example.test.")
    static let base = """
        $ORIGIN example.test.
        $TTL 300
        @        SOA   ns1 hostmaster 1 3600 600 1209600 60
        @        NS    ns1
        ns1      A     192.0.2.53
        """

    /// Owners that collide often: parents and children, a delegation and what lies below it, a
    /// DNAME's owner and a name below it, a wildcard and a name it would cover.
    static let owners = [
        "@", "www", "c", "b.c", "a.b.c", "sub", "ns.sub", "deep.ns.sub", "wild", "*.wild", "x.wild", "dn",
        "under.dn", "mx", "target",
    ]
    static let types: [(String, [String])] = [
        ("A", ["192.0.2.1", "192.0.2.2"]), ("AAAA", ["2001:db8::1"]), ("TXT", ["\"t\""]),
        ("NS", ["ns.sub", "ns.other.test.", "target"]), ("CNAME", ["www", "target", "nothere"]),
        ("DNAME", ["other.test."]), ("MX", ["10 mx", "10 target"]),
        ("DS", ["12345 13 2 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"]),
    ]

    /// The slow path's replies to the questions whose answers a change may move: each owner and a
    /// name below it, by every type in play.
    static func replies(_ zone: Zone) throws -> [[UInt8]] {
        let responder = Responder(authority: Authority(zones: [zone]))
        var out: [[UInt8]] = []
        for owner in owners + ["nothere", "y.x.wild", "q.under.dn"] {
            let name = try DNSName(owner == "@" ? origin.description : owner, origin: origin)
            for type in types.map(\.0) + ["SOA"] {
                let q = DNSMessage(questions: [DNSQuestion(name: name, type: RRType(mnemonic: type)!)])
                out.append(responder.respond(to: try q.serialize(), transport: .tcp) ?? [])
            }
        }
        return out
    }

    @Test func aZoneChangedStepByStepIsTheZoneItsRecordsBuild() throws {
        var random = SplitMix(seed: 29)
        func pick(_ n: Int) -> Int { Int.random(in: 0..<n, using: &random) }
        var records = try ZoneFileParser.parse(text: Self.base, fileName: "base", origin: Self.origin).map(\.record)
        var zone = try Zone.build(
            origin: Self.origin, records: records.map { SourcedRecord($0, file: "base", line: 1) },
            sourceName: "base")
        var taken = 0
        var refused = 0
        for step in 0..<600 {
            let owner = Self.owners[pick(Self.owners.count)]
            let name = try DNSName(owner == "@" ? Self.origin.description : owner, origin: Self.origin)
            let present = records.filter { $0.name == name && $0.type != .soa }
            let edit: ZoneEditor.Edit
            var next = records
            if !present.isEmpty && pick(3) == 0 {
                let r = present[pick(present.count)]
                edit = .delete(name: owner, type: r.type.description, data: ZoneText.rdata(r.rdata, type: r.type))
                next.removeAll { $0 == r }
            } else {
                let (type, datas) = Self.types[pick(Self.types.count)]
                let data = datas[pick(datas.count)]
                let record = try ZoneEditor.record(
                    RecordInput(name: owner, type: type, data: data), origin: Self.origin,
                    defaultTTL: zone.rrset(name, RRType(mnemonic: type)!)?.ttl ?? 300)
                guard !records.contains(record) else { continue }
                edit = .add(RecordInput(name: owner, type: type, data: data))
                next.append(record)
            }
            // The whole build's verdict on the same records, the serial one step on.
            let soaAt = next.firstIndex { $0.type == .soa }!
            if case .soa(var soa) = next[soaAt].rdata {
                soa.serial += 1
                next[soaAt].rdata = .soa(soa)
            }
            let whole = Result { () throws(DiagnosticsError) -> Zone in
                try Zone.build(
                    origin: Self.origin, records: next.map { SourcedRecord($0, file: "whole", line: 1) },
                    sourceName: "whole")
            }
            let changed = Result { () throws(ZoneEditError) in try ZoneEditor.apply(edit, to: zone, fileName: "step") }
            switch (changed, whole) {
            case (.success(let c), .success(let w)):
                #expect(Set(c.zone.records) == Set(w.records), "step \(step): \(edit)")
                #expect(c.zone.existingNames == w.existingNames, "step \(step): \(edit)")
                let (got, want) = (try Self.replies(c.zone), try Self.replies(w))
                #expect(got == want, "step \(step): \(edit): the slow path answers the changed zone otherwise")
                (zone, records) = (c.zone, next)
                taken += 1
            case (.failure, .failure):
                refused += 1
            case (.success, .failure(let e)):
                Issue.record("step \(step): \(edit) taken, but a zone file with it is refused: \(e)")
            case (.failure(let e), .success):
                Issue.record("step \(step): \(edit) refused, but a zone file with it loads: \(e)")
            }
        }
        #expect(taken > 150 && refused > 30, "both kinds of change were tried: \(taken) taken, \(refused) refused")
    }

    @Test func emptyNonTerminalsAppearAndGoWithTheNamesBelowThem() throws {
        let records = try ZoneFileParser.parse(text: Self.base, fileName: "base", origin: Self.origin)
        let zone = try Zone.build(origin: Self.origin, records: records, sourceName: "base")
        let deep = try DNSName("a.b.c.example.test.")
        let ent = try DNSName("b.c.example.test.")
        let added = try ZoneEditor.apply(
            .add(RecordInput(name: "a.b.c", type: "TXT", data: "\"x\"")), to: zone, fileName: "t")
        #expect(added.zone.lookup(ent, .a).rcode == .noError, "b.c exists once a name below it does (NODATA)")
        #expect(zone.lookup(ent, .a).rcode == .nxDomain, "and the zone before the change is untouched")
        let gone = try ZoneEditor.apply(.delete(name: "a.b.c", type: "TXT", data: nil), to: added.zone, fileName: "t")
        #expect(gone.zone.lookup(ent, .a).rcode == .nxDomain && gone.zone.lookup(deep, .txt).rcode == .nxDomain)
        #expect(gone.zone.existingNames == zone.existingNames)
    }
}
