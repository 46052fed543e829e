import DNSWire
import Foundation
import FoundationNetworking
import NearcastTestSupport
import Testing

/// A zone of 100k names is changed 1,000 times through the API (names and empty non-terminals that
/// appear and go, records added, changed and deleted, CNAMEs and MX records pointing at names whose
/// addresses then change, wildcards, delegations with glue); the test keeps its own account of what the
/// zone should hold, and NSD and Knot serve that account as a file. nearcast, which applied each change
/// to the zone it served, must answer as they do: the changed names, names below them, and a sample
/// of the rest (ReferenceServerDifferentialTests' rules for the differences the RFCs allow).
@Suite(.timeLimit(.minutes(6))) struct ChangedZoneDifferentialTests {
    static let origin = "chg.test."

    /// The zone as the test means it to be: owner -> type -> RRset, in presentation form.
    struct ZoneAccount {
        struct RRset {
            var ttl: Int
            var data: [String]
        }
        var serial = 1
        var names: [String: [String: RRset]] = [:]

        /// The zone file of this account (the SOA first, with the serial).
        var text: String {
            var out =
                "$ORIGIN \(ChangedZoneDifferentialTests.origin)\n@ 300 IN SOA ns1 hostmaster \(serial) 3600 600 1209600 60\n"
            out.reserveCapacity(names.count * 48)
            for (owner, sets) in names {
                for (type, set) in sets { for d in set.data { out += "\(owner) \(set.ttl) IN \(type) \(d)\n" } }
            }
            return out
        }

        func has(_ owner: String, _ type: String) -> Bool { names[owner]?[type] != nil }

        mutating func add(_ owner: String, _ type: String, ttl: Int, _ data: String) {
            // A record added to an RRset takes the RRset's TTL, as the API does.
            names[owner, default: [:]][type, default: RRset(ttl: ttl, data: [])].data.append(data)
        }

        mutating func delete(_ owner: String, _ type: String, _ data: String?) {
            if let data {
                names[owner]?[type]?.data.removeAll { $0 == data }
                if names[owner]?[type]?.data.isEmpty == true { names[owner]?[type] = nil }
            } else {
                names[owner]?[type] = nil
            }
            if names[owner]?.isEmpty == true { names[owner] = nil }
        }
    }

    /// One change through the API.
    enum Change {
        case add(owner: String, type: String, ttl: Int, data: String)
        case delete(owner: String, type: String, data: String?)
    }

    /// The generated zone: an A at each name, an AAAA at every fourth, MX (to the next name) and TXT at
    /// every tenth, every fifth name one label below one of 1,000 empty non-terminals.
    static func generated(names count: Int) -> (ZoneAccount, owners: [String]) {
        var zone = ZoneAccount()
        func owner(_ i: Int) -> String { i % 5 == 0 ? "n\(i).g\(i % 1000).\(origin)" : "n\(i).\(origin)" }
        zone.add(origin, "NS", ttl: 300, "ns1.\(origin)")
        zone.add(origin, "NS", ttl: 300, "ns2.\(origin)")
        zone.add("ns1.\(origin)", "A", ttl: 300, "192.0.2.53")
        zone.add("ns2.\(origin)", "A", ttl: 300, "192.0.2.54")
        var owners: [String] = []
        owners.reserveCapacity(count)
        for i in 0..<count {
            let o = owner(i)
            owners.append(o)
            zone.add(o, "A", ttl: 300, "10.\(i >> 16 & 255).\(i >> 8 & 255).\(i & 255)")
            if i % 4 == 0 {
                zone.add(
                    o, "AAAA", ttl: 300, "2001:db8::\(String(i >> 16, radix: 16)):\(String(i & 0xffff, radix: 16))")
            }
            if i % 10 == 0 {
                zone.add(o, "MX", ttl: 300, "10 \(owner(i + 1))")
                zone.add(o, "TXT", ttl: 300, "\"t\(i)\"")
            }
        }
        return (zone, owners)
    }

    /// Draws `count` changes, each one the server must accept, applying each to `zone` as it goes
    /// (through `send`, which fails the test on a refusal). Returns every owner a change touched.
    static func change(
        _ zone: inout ZoneAccount, owners: inout [String], count: Int, using rng: inout SplitMix,
        send: (Change) async throws -> Void
    ) async throws -> (touched: Set<String>, wildcards: Set<String>, delegations: [String]) {
        var touched: Set<String> = []
        var wildcards: Set<String> = []
        var delegations: [String] = []
        var targets: [String] = []
        // Names that take no new address or MX (CNAME owners, delegations and what is below them)
        // and names whose records are never deleted (the apex's servers, glue).
        var noData: Set<String> = []
        var keep: Set<String> = [origin, "ns1.\(origin)", "ns2.\(origin)"]
        var fresh = 0
        func address() -> String {
            fresh += 1
            return "198.51.\(fresh >> 8 & 255).\(fresh & 255)"
        }
        func apply(_ c: Change) async throws {
            try await send(c)
            switch c {
            case .add(let o, let t, let ttl, let d):
                zone.add(o, t, ttl: ttl, d)
                touched.insert(o)
            case .delete(let o, let t, let d):
                zone.delete(o, t, d)
                touched.insert(o)
            }
            zone.serial += 1
        }
        /// An owner that has `type` and passes `ok`, drawn at random (nil after a few misses).
        func pick(_ type: String?, from list: [String]? = nil, _ ok: (String) -> Bool = { _ in true }) -> String? {
            let list = list ?? owners
            for _ in 0..<50 {
                guard let o = list.randomElement(using: &rng) else { return nil }
                if let sets = zone.names[o], type.map({ sets[$0] != nil }) ?? true, ok(o) { return o }
            }
            return nil
        }
        func ttl(_ o: String, _ t: String) -> Int { zone.names[o]?[t]?.ttl ?? 300 }

        for k in 0..<count {
            switch rng.next() % 16 {
            case 0, 1:  // a new name; every other one below a new or existing empty non-terminal
                let o = k % 2 == 0 ? "a\(k).\(origin)" : "a\(k).e\(k % 50).\(origin)"
                owners.append(o)
                try await apply(.add(owner: o, type: "A", ttl: 120, data: address()))
            case 2, 3:  // another address in an RRset
                guard let o = pick("A", { !noData.contains($0) }) else { continue }
                try await apply(.add(owner: o, type: "A", ttl: ttl(o, "A"), data: address()))
            case 4:  // one address of several deleted
                guard let o = pick("A", { !keep.contains($0) && zone.names[$0]!["A"]!.data.count > 1 }) else {
                    continue
                }
                try await apply(
                    .delete(owner: o, type: "A", data: zone.names[o]!["A"]!.data.randomElement(using: &rng)))
            case 5, 6:  // an RRset deleted: the name may go, and the empty non-terminal above it
                guard let o = pick(nil, { !keep.contains($0) }),
                    let t = zone.names[o]!.keys.sorted().randomElement(using: &rng)
                else { continue }
                try await apply(.delete(owner: o, type: t, data: nil))
            case 7, 8, 9:  // an address changed, half the time one a CNAME or an MX points at
                let list = k % 2 == 0 && !targets.isEmpty ? targets : nil
                guard let o = pick("A", from: list, { !noData.contains($0) && !keep.contains($0) }) else { continue }
                let set = zone.names[o]!["A"]!
                try await apply(.delete(owner: o, type: "A", data: set.data.randomElement(using: &rng)))
                try await apply(.add(owner: o, type: "A", ttl: set.ttl, data: address()))
            case 10:  // a CNAME to a name of the zone
                guard let target = pick("A") else { continue }
                let o = "c\(k).\(origin)"
                owners.append(o)
                noData.insert(o)
                targets.append(target)
                try await apply(.add(owner: o, type: "CNAME", ttl: 300, data: target))
            case 11, 12:  // an MX to a name of the zone
                guard let target = pick("A"), let o = pick(nil, { !noData.contains($0) && !zone.has($0, "CNAME") })
                else { continue }
                targets.append(target)
                try await apply(.add(owner: o, type: "MX", ttl: ttl(o, "MX"), data: "\(k) \(target)"))
            case 13, 14:  // a wildcard, new or one more address in one
                let o = "*.w\(k % 20).\(origin)"
                wildcards.insert(o)
                owners.append(o)
                try await apply(.add(owner: o, type: "A", ttl: ttl(o, "A"), data: address()))
            default:  // a delegation with its glue, the glue first
                let cut = "d\(k).\(origin)"
                let glue = "ns.\(cut)"
                noData.formUnion([cut, glue])
                keep.insert(glue)
                delegations.append(cut)
                owners.append(cut)
                try await apply(.add(owner: glue, type: "A", ttl: 300, data: address()))
                try await apply(.add(owner: cut, type: "NS", ttl: 300, data: glue))
            }
        }
        return (touched, wildcards, delegations)
    }

    /// The questions to compare: every touched name with its types, a name below it and its parent,
    /// names under the wildcards and delegations, a sample of untouched names and of names that never
    /// existed; half with EDNS.
    static func questions(
        touched: Set<String>, wildcards: Set<String>, delegations: [String], owners: [String],
        using rng: inout SplitMix
    ) -> [(String, RRType, EDNS?)] {
        var q: [(String, RRType)] = []
        for o in touched.sorted() {
            for t in [RRType.a, .aaaa, .mx, .txt, .cname, .ns] { q.append((o, t)) }
            q.append(("below.\(o)", .a))
            if let dot = o.firstIndex(of: "."), o[o.index(after: dot)...] != origin {
                q.append((String(o[o.index(after: dot)...]), .a))
            }
        }
        for w in wildcards.sorted() {
            let parent = w.dropFirst(2)
            q += [("x.\(parent)", .a), ("x.\(parent)", .txt), ("y.z.\(parent)", .a), (String(parent), .a)]
        }
        for d in delegations { q += [(d, .a), ("www.\(d)", .a), (d, .ds), (d, .ns)] }
        for _ in 0..<500 {
            q.append((owners.randomElement(using: &rng)!, [.a, .mx, .aaaa].randomElement(using: &rng)!))
        }
        for k in 0..<200 {
            q.append((k % 2 == 0 ? "nx\(k).\(origin)" : "nx.\(owners.randomElement(using: &rng)!)", .a))
        }
        return q.enumerated().map { i, e in (e.0, e.1, i % 2 == 0 ? EDNS(udpPayloadSize: 1232) : nil) }
    }

    @Test func aZoneChangedAThousandTimesAnswersAsNSDAndKnotServingTheResult() async throws {
        let dir = try TemporaryDirectory.url("nearcast-chg")
        // Making and writing 100k names is seconds of work in a debug build: on a thread of its
        // own, as are the starts and comparisons below, so no other test waits for the pool.
        var (zone, owners) = try await TestSupport.blocking { () throws -> (ZoneAccount, [String]) in
            let generated = Self.generated(names: 100_000)
            try generated.0.text.write(
                to: dir.appendingPathComponent("nearcast.zone"), atomically: true, encoding: .utf8)
            return (generated.0, generated.owners)
        }
        let writer = String(repeating: "2", count: 32)
        try "write \(writer)\n".write(to: dir.appendingPathComponent("tokens"), atomically: true, encoding: .utf8)
        try """
        listen: ["127.0.0.1:0"]
        zones: [{ origin: \(Self.origin), file: nearcast.zone }]
        api: { listen: "127.0.0.1:0", tokens: tokens }
        state-dir: state
        """.write(to: dir.appendingPathComponent("c.yaml"), atomically: true, encoding: .utf8)
        let nearcast = try await TestSupport.blocking {
            try Daemon(["--config", dir.appendingPathComponent("c.yaml").path], timeout: 120)
        }
        defer { nearcast.stop() }
        let api = try #require(nearcast.apiPort)

        var refused: [String] = []
        func send(_ change: Change) async throws {
            var url = URLComponents(string: "http://127.0.0.1:\(api)/v1/zones/\(Self.origin)/records")!
            var request: URLRequest
            switch change {
            case .add(let owner, let type, let ttl, let data):
                request = URLRequest(url: url.url!)
                request.httpMethod = "POST"
                let body: [String: Any] = ["name": owner, "type": type, "ttl": ttl, "data": data]
                request.httpBody = try JSONSerialization.data(withJSONObject: body)
            case .delete(let owner, let type, let data):
                url.queryItems = [.init(name: "name", value: owner), .init(name: "type", value: type)]
                if let data { url.queryItems!.append(.init(name: "data", value: data)) }
                request = URLRequest(url: url.url!)
                request.httpMethod = "DELETE"
            }
            request.setValue("Bearer \(writer)", forHTTPHeaderField: "Authorization")
            request.timeoutInterval = 30
            let (body, response) = try await URLSession.shared.data(for: request)
            let status = (response as! HTTPURLResponse).statusCode
            if status != 200 { refused.append("\(change): \(status) \(String(decoding: body, as: UTF8.self))") }
        }
        var rng = SplitMix(seed: 29)
        let (touched, wildcards, delegations) = try await Self.change(
            &zone, owners: &owners, count: 1000, using: &rng, send: send)
        #expect(refused.isEmpty, "the server refused changes the test meant to be valid: \(refused.prefix(5))")
        #expect(touched.count > 800 && wildcards.count > 5 && delegations.count > 20, "every kind of change was drawn")

        let file = dir.appendingPathComponent("reference.zone")
        try await TestSupport.blocking { [zone] in try zone.text.write(to: file, atomically: true, encoding: .utf8) }
        let queries = Self.questions(
            touched: touched, wildcards: wildcards, delegations: delegations, owners: owners, using: &rng)
        let apexNS = ["\(Self.origin) 300 in ns ns1.\(Self.origin)", "\(Self.origin) 300 in ns ns2.\(Self.origin)"]
        let nsAddresses: Set<String> = [
            "ns1.\(Self.origin) 300 in a 192.0.2.53", "ns2.\(Self.origin) 300 in a 192.0.2.54",
        ]
        for reference in ReferenceServerDifferentialTests.Reference.allCases {
            let (serial, dnsPort) = (zone.serial, nearcast.dnsPort)
            let (compared, mismatches, _) = try await TestSupport.blocking {
                let home = dir.appendingPathComponent("\(reference)")
                try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
                let port = try TestSupport.unusedPort()
                let server = try reference.start(dir: home, port: port, origin: Self.origin, file: file)
                defer { server.stop() }
                try server.waitUntilReady(timeout: 60) {
                    RawClient.udp(RawClient.query(Self.origin, .soa), port: port, timeout: 0.2).flatMap {
                        try? DNSMessage(wire: $0)
                    }.map { $0.rcode == .noError && $0.answers.first?.description.contains(" \(serial) ") == true }
                        == true
                }
                return try ReferenceServerDifferentialTests.compare(
                    queries, nearcast: dnsPort, reference, at: port, apexNS: apexNS, nsAddresses: nsAddresses)
            }
            #expect(compared > queries.count)
            #expect(
                mismatches.isEmpty,
                "\(mismatches.count) differences from \(reference):\n\(mismatches.prefix(8).joined(separator: "\n"))")
        }
    }
}
