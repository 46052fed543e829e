import BPFKit
import DNSWire
import Foundation
import MaxMindDB
import NearcastAnswers
import NearcastConfiguration
import NearcastDNSSEC
import NearcastGeo
import NearcastTestSupport
import NearcastZones
import Synchronization
import Testing
import XDPFuzz

@testable import NearcastDataPath

/// Geo names on the real XDP program: the geo maps written from the slow path's GeoTable, and
/// every answer compared with the slow path's for the same client, with and without ECS.
@Suite(.serialized, .timeLimit(.minutes(3))) struct GeoXDPTests {
    static let zoneText = """
        $ORIGIN example.test.
        $TTL 300
        @     SOA ns1 hostmaster 1 3600 600 1209600 60
        @     NS  ns1
        ns1   A   192.0.2.53
        www   A   192.0.2.1
        """
    static let configText = """
        listen: ["127.0.0.1:53"]
        geo:
          database: DB
        \(Fixtures.fourNodes(indent: 2))
          names:
            - { name: geo.example.test, type: A, pool: web, answers: 2, ttl: 20 }
            - { name: geo.example.test, type: AAAA, pool: web, answers: 3, ttl: 40, strategy: stepped }
            - { name: strict.example.test, type: A, pool: web, all-down: servfail }
        """
    static var databasePath: String { Repository.testCityDatabase }
    static let origin = try! DNSName("example.test.")
    static let zone = try! Zone.build(
        origin: origin, records: try! ZoneFileParser.parse(text: zoneText, fileName: "z.zone", origin: origin),
        sourceName: "z.zone")
    static let config = try! NearcastConfig.parse(
        yaml: configText.replacingOccurrences(of: "DB", with: databasePath), fileName: "c.yaml", baseDirectory: "")
    static let table = try! GeoTable.build(config.geo, database: try! MaxMindDatabase(path: databasePath))

    /// The config with lon1 where nyc1 was, first among the pool's members: a compile that numbers
    /// the nodes anew.
    static var londonInsteadOfNewYork: String {
        configText.replacingOccurrences(of: "DB", with: databasePath)
            .replacingOccurrences(
                of:
                    "- { id: nyc1, ipv4: 192.0.2.30, ipv6: \"2001:db8::30\", latitude: 40.71, longitude: -74.01, country: US, weight: 3 }",
                with:
                    "- { id: lon1, ipv4: 192.0.2.50, ipv6: \"2001:db8::50\", latitude: 51.51, longitude: -0.13, country: GB }"
            )
            .replacingOccurrences(of: "members: [fra1, par1, nyc1, tyo1]", with: "members: [lon1, fra1, par1, tyo1]")
    }

    static func responder(_ t: GeoTable) -> Responder { Responder(authority: Authority(zones: [zone]), geo: t) }

    static func fastPath(_ t: GeoTable) throws -> FastPath {
        let fp = try FastPath(objectPath: XDPProgramTests.objectPath)
        try fp.configure(dnsPort: 53, udpPayload: 1232)
        try fp.answer(queriesTo: Packet.servers)
        let r = responder(t)
        try fp.write(AnswerImage.build(responder: r, maxSections: FastPath.sectionsCapacity), geo: t)
        return fp
    }

    /// Client addresses: one in each network of the test database, and some it has no record for.
    static let clients4: [[UInt8]] = [
        [192, 0, 2, 5], [192, 0, 2, 130], [192, 0, 2, 200], [198, 51, 100, 7], [203, 0, 113, 9], [203, 0, 113, 200],
        [198, 18, 0, 2], [198, 18, 1, 9], [198, 18, 2, 9], [198, 18, 3, 9], [198, 18, 4, 9], [8, 8, 8, 8],
        [10, 1, 2, 3],
    ]
    static let clients6: [[UInt8]] =
        (1...6).map { [0x20, 0x01, 0x0d, 0xb8, 0, UInt8($0)] + [UInt8](repeating: 0, count: 9) + [9] }
        + aliased([198, 51, 100, 7]) + aliased([198, 18, 1, 9]) + aliased([10, 1, 2, 3])

    /// `v4` as the database's aliases of its IPv4 space hold it: 6to4, Teredo, IPv4-mapped, ::/96.
    static func aliased(_ v4: [UInt8]) -> [[UInt8]] {
        let zeros = { (n: Int) in [UInt8](repeating: 0, count: n) }
        return [
            [0x20, 0x02] + v4 + zeros(9) + [1], [0x20, 0x01, 0, 0] + v4 + zeros(7) + [1],
            zeros(10) + [0xFF, 0xFF] + v4, zeros(12) + v4,
        ]
    }

    func query(_ name: String, _ type: RRType, ecs: ClientSubnet?) -> [UInt8] {
        var h = DNSHeader()
        h.id = 0x1234
        h.rd = true
        return try! DNSMessage(
            header: h, questions: [DNSQuestion(name: try! DNSName(name), type: type)],
            edns: ecs.map { EDNS(options: [$0.option]) }
        )
        .serialize()
    }

    /// Runs `payload` from `client` through XDP; when it answers, checks the frame and that the
    /// DNS payload is the slow path's reply to the same client. Returns the verdict.
    @discardableResult
    func run(
        _ fp: FastPath, _ r: Responder, _ payload: [UInt8], client: [UInt8],
        sourceLocation: SourceLocation = #_sourceLocation
    )
        throws -> UInt32
    {
        var p = Packet(ipv6: client.count == 16, payload: payload)
        if client.count == 16 { p.source6 = client } else { p.source4 = client }
        let out = try fp.program.testRun(p.bytes)
        guard out.returnValue == XDPProgramTests.XDP_TX else { return out.returnValue }
        let reply = try #require(p.parseReply(out.data), sourceLocation: sourceLocation)
        #expect(reply.ipChecksumOK && reply.udpChecksumOK, sourceLocation: sourceLocation)
        let slow = r.respond(to: payload, transport: .udp, client: client)
        #expect(
            reply.payload == slow, "XDP and the slow path differ for \(payload) from \(client)",
            sourceLocation: sourceLocation)
        return out.returnValue
    }

    /// Every client's A and AAAA of geo.example.test are answered by XDP, with the bytes of `r`
    /// (the slow path on the same table and health).
    func expectEveryClientAnswered(_ fp: FastPath, _ r: Responder, sourceLocation: SourceLocation = #_sourceLocation)
        throws
    {
        for c in Self.clients4 + Self.clients6 {
            for type in [RRType.a, .aaaa] {
                let verdict = try run(
                    fp, r, query("geo.example.test.", type, ecs: nil), client: c, sourceLocation: sourceLocation)
                #expect(verdict == XDPProgramTests.XDP_TX, "\(c) \(type)", sourceLocation: sourceLocation)
            }
        }
    }

    @Test func geoNamesAreAnsweredInXDPAsTheSlowPathAnswersThem() throws {
        let fp = try Self.fastPath(Self.table)
        let r = Self.responder(Self.table)
        let before = try fp.statistics()
        for c in Self.clients4 + Self.clients6 {
            #expect(
                try run(fp, r, query("geo.example.test.", .a, ecs: nil), client: c) == XDPProgramTests.XDP_TX, "\(c)")
            #expect(
                try run(fp, r, query("GEO.example.TEST.", .aaaa, ecs: nil), client: c) == XDPProgramTests.XDP_TX, "\(c)"
            )
        }
        // Through resolvers: ECS addresses of either family, whatever the packet's family.
        for (family, address, bits): (UInt16, [UInt8], UInt8) in [
            (1, [198, 51, 100], 24), (1, [203, 0, 113, 128], 25), (1, [198, 18, 1], 24), (1, [8, 8, 8], 24),
            (1, [192, 0], 16),
            (2, [0x20, 0x01, 0x0d, 0xb8, 0, 4], 48), (2, [0x20, 0x01, 0x0d, 0xb8, 0, 2], 47), (1, [], 0),
        ] {
            let ecs = ClientSubnet(family: family, sourcePrefixLength: bits, scopePrefixLength: 0, address: address)
            #expect(
                try run(fp, r, query("geo.example.test.", .a, ecs: ecs), client: [192, 0, 2, 99])
                    == XDPProgramTests.XDP_TX)
            #expect(
                try run(fp, r, query("geo.example.test.", .aaaa, ecs: ecs), client: Self.clients6[0])
                    == XDPProgramTests.XDP_TX)
        }
        let after = try fp.statistics()
        #expect(after.answeredGeo - before.answeredGeo == UInt64(2 * (Self.clients4.count + Self.clients6.count) + 16))
    }

    /// A geo name's owner answers the types asked of every name that it has no geo name for with
    /// NODATA, from XDP as from the slow path (the same for every client: ECS echoed with scope 0).
    /// An IPv6 client the database aliases to its IPv4 space is answered in XDP as the IPv4
    /// address inside it, by packet source and by ECS, with the scope the slow path gives (the
    /// alias's bits plus the IPv4 prefix's): Paris's nodes for 198.51.100.7.
    @Test func aliasedIPv6ClientsAreAnsweredInXDPByTheirIPv4Part() throws {
        let fp = try Self.fastPath(Self.table)
        let r = Self.responder(Self.table)
        let paris = r.respond(to: query("geo.example.test.", .a, ecs: nil), transport: .udp, client: [198, 51, 100, 7])
        for client in Self.aliased([198, 51, 100, 7]) {
            #expect(try run(fp, r, query("geo.example.test.", .a, ecs: nil), client: client) == XDPProgramTests.XDP_TX)
            let slow = r.respond(to: query("geo.example.test.", .a, ecs: nil), transport: .udp, client: client)
            #expect(slow == paris, "\(client) is answered as 198.51.100.7")
        }
        for (alias, bits) in [
            ([0x20, 0x02] as [UInt8], 16), ([0x20, 0x01, 0, 0], 32),
            ([UInt8](repeating: 0, count: 10) + [0xFF, 0xFF], 96),
        ] {
            let ecs = ClientSubnet(
                family: 2, sourcePrefixLength: UInt8(bits + 24), scopePrefixLength: 0, address: alias + [198, 51, 100])
            let q = query("geo.example.test.", .a, ecs: ecs)
            var p = Packet(payload: q)
            p.source4 = [203, 0, 113, 9]
            let out = try fp.program.testRun(p.bytes)
            #expect(out.returnValue == XDPProgramTests.XDP_TX)
            let reply = try DNSMessage(wire: #require(p.parseReply(out.data)).payload)
            #expect(reply.edns?.clientSubnetOption?.data[3] == UInt8(bits + 24), "scope /\(bits + 24)")
            #expect(
                try #require(p.parseReply(out.data)).payload
                    == r.respond(to: q, transport: .udp, client: [203, 0, 113, 9]))
        }
    }

    @Test func theOtherTypesOfAGeoNameAreNODATAInXDPToo() throws {
        let fp = try Self.fastPath(Self.table)
        let r = Self.responder(Self.table)
        let ecs = ClientSubnet(family: 1, sourcePrefixLength: 24, scopePrefixLength: 0, address: [198, 51, 100])
        for c in [Self.clients4[3], Self.clients6[0]] {
            for (name, type) in [
                ("strict.example.test.", RRType.aaaa), ("strict.example.test.", .https), ("geo.example.test.", .https),
            ] {
                for e in [nil, ecs] {
                    #expect(
                        try run(fp, r, query(name, type, ecs: e), client: c) == XDPProgramTests.XDP_TX,
                        "\(name) \(type) from \(c)")
                    let msg = try DNSMessage(
                        wire: try #require(r.respond(to: query(name, type, ecs: e), transport: .udp, client: c)))
                    #expect(msg.rcode == .noError && msg.answers.isEmpty && msg.authority.first?.type == .soa)
                }
            }
        }
    }

    /// A discovery name (issue 18): its A and AAAA are geo names, answered in XDP; its SRV is the
    /// slow path's (passed); its targets' addresses are the same for every client, answered in XDP
    /// from the names table, byte for byte as the slow path answers them.
    @Test func aDiscoveryNamesAddressesAreAnsweredInXDPAndItsSRVIsPassed() throws {
        let text =
            Self.configText.replacingOccurrences(of: "DB", with: Self.databasePath) + """

                    - { name: _join._udp.example.test, type: SRV, pool: web, answers: 3, port: 7946, targets: nodes.example.test }
                    - { name: _join._udp.example.test, type: A, pool: web, answers: 3 }
                    - { name: _join._udp.example.test, type: AAAA, pool: web, answers: 3 }
                """
        let config = try NearcastConfig.parse(yaml: text, fileName: "c.yaml", baseDirectory: "")
        let table = try GeoTable.build(config.geo, database: try MaxMindDatabase(path: Self.databasePath))
        let fp = try Self.fastPath(table)
        let r = Self.responder(table)
        for c in Self.clients4 + Self.clients6 {
            for type in [RRType.a, .aaaa] {
                #expect(
                    try run(fp, r, query("_join._udp.example.test.", type, ecs: nil), client: c)
                        == XDPProgramTests.XDP_TX)
                #expect(
                    try run(fp, r, query("tyo1.nodes.example.test.", type, ecs: nil), client: c)
                        == XDPProgramTests.XDP_TX)
            }
            #expect(
                try run(fp, r, query("_join._udp.example.test.", .srv, ecs: nil), client: c) == XDPProgramTests.XDP_PASS
            )
        }
    }

    /// A geo name's record holds its geo answers beside the name's other answers and flags: its
    /// other types are the zone's NODATA once its geo answers are in the record, and in a table
    /// too small for every name, the names left out go to the slow path whole.
    @Test func aGeoNamesRecordHoldsItsGeoAnswersAndItsNegatives() throws {
        let r = Self.responder(Self.table)
        let image = AnswerImage.build(responder: r, maxSections: FastPath.sectionsCapacity)
        let wire = try DNSName("geo.example.test.").wire
        let geo = try #require(image.names.first { $0.name == wire })
        #expect(geo.geoTypes == [RRType.a.rawValue, RRType.aaaa.rawValue] && geo.answers.isEmpty && geo.nodata)
        let fp = try FastPath(objectPath: XDPProgramTests.objectPath, capacity: image.names.count)
        try fp.configure(dnsPort: 53, udpPayload: 1232)
        try fp.answer(queriesTo: Packet.servers)
        let w = try fp.write(image, geo: Self.table)
        #expect(w.full == 0 && w.collisions == 0 && w.entries == image.names.count, "\(w)")
        for c in [Self.clients4[3], Self.clients6[0]] {
            for (name, type) in [
                ("geo.example.test.", RRType.a), ("geo.example.test.", .aaaa), ("strict.example.test.", .a),
                ("geo.example.test.", .txt), ("strict.example.test.", .aaaa), ("www.example.test.", .a),
                ("x.geo.example.test.", .a),
            ] {
                #expect(
                    try run(fp, r, query(name, type, ecs: nil), client: c) == XDPProgramTests.XDP_TX, "\(name) \(type)")
            }
        }
        // Without the geo table the geo answers are not in the record: its other types cannot be NODATA.
        let plain = try FastPath(objectPath: XDPProgramTests.objectPath, capacity: image.names.count)
        try plain.configure(dnsPort: 53, udpPayload: 1232)
        try plain.answer(queriesTo: Packet.servers)
        try plain.write(image)
        let q = Packet(payload: query("geo.example.test.", .txt, ecs: nil)).bytes
        #expect(try plain.program.testRun(q).returnValue == XDPProgramTests.XDP_PASS)
    }

    @Test func downNodesAreSkippedAndAllDownFollowsThePolicy() throws {
        var t = Self.table
        t.unhealthy = ["par1"]
        var fp = try Self.fastPath(t)
        var r = Self.responder(t)
        // Paris without par1: fra1 then nyc1, in XDP as in the slow path.
        try run(fp, r, query("geo.example.test.", .a, ecs: nil), client: [198, 51, 100, 7])
        let paris = try fp.program.testRun(Packet(payload: query("geo.example.test.", .a, ecs: nil)).bytes)
        #expect(paris.returnValue == XDPProgramTests.XDP_TX)
        #expect(try fp.statistics().answeredGeoAllDown == 0, "a candidate is up: no fail-open")

        t.unhealthy = ["fra1", "par1", "nyc1", "tyo1"]
        fp = try Self.fastPath(t)
        r = Self.responder(t)
        // fail-open (the default): the top ones anyway, and counted as such; servfail: left to the
        // slow path.
        let allDown = try fp.statistics()
        #expect(
            try run(fp, r, query("geo.example.test.", .a, ecs: nil), client: [198, 51, 100, 7])
                == XDPProgramTests.XDP_TX)
        let failOpen = try fp.statistics()
        #expect(
            failOpen.answeredGeoAllDown - allDown.answeredGeoAllDown == 1 && failOpen.answeredGeo == allDown.answeredGeo
        )
        let before = try fp.statistics()
        #expect(
            try run(fp, r, query("strict.example.test.", .a, ecs: nil), client: [198, 51, 100, 7])
                == XDPProgramTests.XDP_PASS)
        #expect(try fp.statistics().passGeo - before.passGeo == 1)
    }

    /// TTL follows health: a pool's cap, as written at fill and by one write of its pools-map
    /// entry, lowers the TTL of its names in XDP exactly as on the slow path, and lifting it
    /// restores each name's own TTL.
    @Test func aPoolsTTLCapLowersItsNamesTTLInXDPAsOnTheSlowPath() throws {
        var t = Self.table
        t.unhealthy = []  // a board of its own
        t.board.setTTLCap("web", 7)
        let fp = try Self.fastPath(t)
        let r = Self.responder(t)
        func ttls(_ type: RRType) throws -> [UInt32] {
            let out = try fp.program.testRun(Packet(payload: query("geo.example.test.", type, ecs: nil)).bytes)
            #expect(out.returnValue == XDPProgramTests.XDP_TX)
            let reply = try #require(Packet(payload: []).parseReply(out.data))
            #expect(
                try run(fp, r, query("geo.example.test.", type, ecs: nil), client: [198, 51, 100, 7])
                    == XDPProgramTests.XDP_TX)
            return try DNSMessage(wire: reply.payload).answers.map(\.ttl)
        }
        #expect(try ttls(.a) == [7, 7])  // written at fill
        #expect(try ttls(.aaaa) == [7, 7, 7])
        t.board.setTTLCap("web", 3)
        #expect(try fp.writePoolTTLCap("web"))
        #expect(try ttls(.a) == [3, 3])
        t.board.setTTLCap("web", .max)
        #expect(try fp.writePoolTTLCap("web"))
        #expect(try ttls(.a) == [20, 20])  // each name's own
        #expect(try ttls(.aaaa) == [40, 40, 40])
        #expect(try fp.writePoolTTLCap("nope") == false)
    }

    @Test(arguments: [Set<String>(), ["par1"], ["fra1", "tyo1"], ["fra1", "par1", "nyc1", "tyo1"]])
    func differentialOverManyClients(down: Set<String>) throws {
        var t = Self.table
        t.unhealthy = down
        let fp = try Self.fastPath(t)
        let r = Self.responder(t)
        var rng = SplitMix(seed: 7)
        var answered = 0
        for _ in 0..<2_000 {
            let v6 = Bool.random(using: &rng)
            let base = v6 ? Self.clients6.randomElement(using: &rng)! : Self.clients4.randomElement(using: &rng)!
            var client = base
            client[client.count - 1] = UInt8.random(in: 0...255, using: &rng)
            var ecs: ClientSubnet?
            if Bool.random(using: &rng) {
                let fam: UInt16 = Bool.random(using: &rng) ? 1 : 2
                let bits = UInt8.random(in: 0...(fam == 1 ? 32 : 128), using: &rng)
                let src =
                    fam == 1 ? Self.clients4.randomElement(using: &rng)! : Self.clients6.randomElement(using: &rng)!
                var a = Array(src.prefix((Int(bits) + 7) / 8))
                if bits % 8 != 0 { a[a.count - 1] &= 0xFF << (8 - bits % 8) }
                ecs = ClientSubnet(family: fam, sourcePrefixLength: bits, scopePrefixLength: 0, address: a)
            }
            let name = ["geo.example.test.", "GeO.Example.Test.", "strict.example.test."].randomElement(using: &rng)!
            let type: RRType = Bool.random(using: &rng) ? .a : .aaaa
            if try run(fp, r, query(name, type, ecs: ecs), client: client) == XDPProgramTests.XDP_TX { answered += 1 }
        }
        #expect(answered > 800, "most geo queries are answered in XDP (\(answered))")
    }

    /// IPv4 networks of every shape the program's prefix array holds (ARCHITECTURE §5): 1,024
    /// host routes in one /22, some left out; a /16 carved into blocks from /17 to /30 with gaps;
    /// a /9 that spans 128 /16s, and uncovered space around them.
    static func denseNetworks() -> [(String, String?)] {
        let cities: [String?] = ["frankfurt", "paris", "new-york", "tokyo", "sydney", nil]
        var rng = SplitMix(seed: 19)
        var out: [(String, String?)] = []
        for i in 0..<1024 where rng.next() % 8 != 0 {
            out.append(("198.18.\(i / 256).\(i % 256)/32", cities.randomElement(using: &rng)!))
        }
        var a: UInt32 = 198 << 24 | 19 << 16
        while a < 198 << 24 | 20 << 16 {
            let aligned = min(15, a.trailingZeroBitCount)  // the largest block that starts at `a`, up to a /17
            let length = Int.random(in: (32 - aligned)...30, using: &rng)
            if rng.next() % 6 != 0 {
                let text = "198.19.\((a >> 8) & 255).\(a & 255)/\(length)"
                out.append((text, cities.randomElement(using: &rng)!))
            }
            a += 1 << (32 - length)
        }
        out.append(("44.0.0.0/9", "sydney"))
        out.append(("45.0.0.0/15", "paris"))
        return out
    }

    /// Issue 19: IPv4 clients are found in the program's own prefix array (a span per /16, a
    /// binary search in it) exactly as the slow path finds them, for every shape of prefix and at
    /// every prefix's edges: by the packet's source and by ECS addresses of any source length.
    @Test func ipv4ClientsAreLocatedByThePrefixArrayAsByTheSlowPath() throws {
        let dir = try TemporaryDirectory("nearcast-dense").path
        let database = dir + "/dense.mmdb"
        try Fixtures.writeCityDatabase(Self.denseNetworks(), to: database)
        let config = try NearcastConfig.parse(
            yaml: Self.configText.replacingOccurrences(of: "DB", with: database), fileName: "c.yaml", baseDirectory: "")
        let t = try GeoTable.build(config.geo, database: MaxMindDatabase(path: database))
        let v4 = t.image.ipv4.map { (start: UInt32(truncatingIfNeeded: $0.address >> 96), length: $0.length) }
        let perSixteen = Dictionary(grouping: v4.filter { $0.length > 16 }, by: { $0.start >> 16 })
        #expect(perSixteen.values.map(\.count).max() ?? 0 > 500, "a /16 holds hundreds of prefixes")
        #expect(v4.contains { $0.length < 16 }, "a prefix spans several /16s")
        let fp = try Self.fastPath(t)
        let r = Self.responder(t)

        func bytes(_ a: UInt32) -> [UInt8] { withUnsafeBytes(of: a.bigEndian) { Array($0) } }
        var clients: [UInt32] = []
        for p in v4 where p.start >> 24 == 198 || p.start >> 24 == 44 || p.start >> 24 == 45 {
            let end = p.start | UInt32(truncatingIfNeeded: UInt64(UInt32.max) >> p.length)
            clients += [p.start, end, p.start &- 1, end &+ 1]
        }
        var rng = SplitMix(seed: 20)
        for _ in 0..<2_000 {
            clients.append(
                [198 << 24 | 18 << 16, 198 << 24 | 19 << 16, 44 << 24, 45 << 24].randomElement(using: &rng)!
                    | UInt32.random(in: 0...0xFFFF, using: &rng) << UInt32.random(in: 0...8, using: &rng))
        }
        var answered = 0
        for (i, c) in clients.enumerated() {
            let bits = UInt8([32, 24, 17, 16, 12, UInt8.random(in: 1...32, using: &rng)][i % 6])
            var address = Array(bytes(c).prefix((Int(bits) + 7) / 8))
            if bits % 8 != 0 { address[address.count - 1] &= 0xFF << (8 - bits % 8) }
            let ecs = ClientSubnet(family: 1, sourcePrefixLength: bits, scopePrefixLength: 0, address: address)
            for q in [query("geo.example.test.", .a, ecs: nil), query("geo.example.test.", .aaaa, ecs: ecs)] {
                if try run(fp, r, q, client: i % 2 == 0 ? bytes(c) : Self.aliased(bytes(c))[(i / 2) % 4])
                    == XDPProgramTests.XDP_TX
                {
                    answered += 1
                }
            }
        }
        #expect(answered == 2 * clients.count, "every client is answered in XDP")
    }

    /// Issue 19: the inner arrays of the prefix and candidate maps have one size (GeoCapacity),
    /// so the verifier inlines their lookups. The size is the loader's and a pinned set keeps it;
    /// a compile that needs more is refused, naming both sizes, and the live maps go on answering;
    /// a start whose geo data outgrows the pinned maps makes a new set (PinRoot).
    @Test func theGeoMapsHaveOneSizeThatAPinnedSetKeepsAndABiggerCompileIsRefused() throws {
        let pins = try TemporaryBPFFS()
        let need = GeoCapacity.needed(by: Self.table)
        let r = Self.responder(Self.table)
        let image = AnswerImage.build(responder: r, maxSections: FastPath.sectionsCapacity)
        let first = try FastPath(objectPath: XDPProgramTests.objectPath, pinDirectory: pins.path, geoCapacity: need)
        defer { try? first.object.unpinMaps(under: pins.path) }
        try first.configure(dnsPort: 53, udpPayload: 1232)
        try first.answer(queriesTo: Packet.servers)
        try first.write(image, geo: Self.table)
        let maps = try #require(first.state.withLock { $0.geo })
        #expect(maps.geo4.map.maxEntries == need.ipv4Prefixes && maps.cands.map.maxEntries == need.candidateLists)
        try expectEveryClientAnswered(first, r)

        // A new instance on the same pins, asking for the default size, makes its maps at the
        // pinned one: the kernel takes no other into the pinned outer maps.
        let second = try FastPath(objectPath: XDPProgramTests.objectPath, pinDirectory: pins.path)
        #expect(second.geoCapacity == need)
        try second.configure(dnsPort: 53, udpPayload: 1232)
        try second.answer(queriesTo: Packet.servers)
        try second.write(
            image, geo: try GeoTable.build(Self.config.geo, database: MaxMindDatabase(path: Self.databasePath)))
        try expectEveryClientAnswered(second, r)
        #expect(try PinRoot.replacementReason(pins.path, geo: need) == nil)
        let more = GeoCapacity(ipv4Prefixes: need.ipv4Prefixes, candidateLists: need.candidateLists + 1)
        let reason = try #require(try PinRoot.replacementReason(pins.path, geo: more))
        #expect(reason.contains("made for \(need)"), "\(reason)")

        // Maps one candidate list too small: the compile is refused, and what was live answers on.
        let small = try FastPath(
            objectPath: XDPProgramTests.objectPath,
            geoCapacity: GeoCapacity(ipv4Prefixes: need.ipv4Prefixes, candidateLists: need.candidateLists - 1))
        try small.configure(dnsPort: 53, udpPayload: 1232)
        try small.answer(queriesTo: Packet.servers)
        let before = Responder(authority: Authority(zones: [Self.zone]))
        try small.write(AnswerImage.build(responder: before, maxSections: FastPath.sectionsCapacity))
        do {
            try small.write(image, geo: Self.table)
            Issue.record("a compile bigger than the maps is written")
        } catch {
            #expect("\(error)".contains("restart nearcastd"), "\(error)")
        }
        for name in ["www.example.test.", "geo.example.test."] {
            let verdict = try run(small, before, query(name, .a, ecs: nil), client: [198, 51, 100, 7])
            #expect(verdict == XDPProgramTests.XDP_TX, "\(name) is answered as before the refused write")
        }
    }

    /// The inner map each generation's slot of a map-in-map holds (its kernel id), or nil.
    static func slotIDs(_ outer: BPFMap) throws -> [UInt32?] {
        try (0..<2).map { (g: UInt32) in
            try outer.lookup(key: FastPath.bytes(of: g))?.first.map {
                $0.withUnsafeBytes { $0.loadUnaligned(as: UInt32.self) }
            }
        }
    }

    /// Issue 6 (nodes changed while serving): a new geo table (a node moved, one gone, one new) is
    /// written beside the live maps and switched in with the names table. XDP then answers exactly
    /// as the new table's slow path, both following the one health board: a node that stays keeps
    /// its health, a new one starts as configured, health writes reach the new generation, and the
    /// old maps are let go.
    @Test func aChangedGeoTableIsSwitchedInWholeAndKeepsHealth() throws {
        let board = HealthBoard()
        let t = try GeoTable.build(Self.config.geo, database: MaxMindDatabase(path: Self.databasePath), board: board)
        let fp = try Self.fastPath(t)
        board.set("par1", .down)
        #expect(try fp.writeNodeHealth("par1"))
        let before = try Self.slotIDs(fp.geo4)
        #expect(before[0] != nil && before[0] == before[1], "both generations share the one compile's maps")
        let nodeMaps = try Self.slotIDs(fp.nodes)
        #expect(
            nodeMaps[0] != nil && nodeMaps[1] != nil && nodeMaps[0] != nodeMaps[1], "each generation has its own health"
        )

        let changed = Self.londonInsteadOfNewYork.replacingOccurrences(
            of: "ipv4: 192.0.2.20,", with: "ipv4: 192.0.2.21,")
        let config = try NearcastConfig.parse(yaml: changed, fileName: "c.yaml", baseDirectory: "")
        let next = try GeoTable.build(config.geo, database: MaxMindDatabase(path: Self.databasePath), board: board)
        #expect(board.state(of: "lon1") == nil && next.health.isServing("lon1"), "a new node starts as configured")
        try fp.write(
            AnswerImage.build(responder: Self.responder(next), maxSections: FastPath.sectionsCapacity), geo: next)
        let after = try Self.slotIDs(fp.geo4)
        #expect(
            after[0] != nil && after[0] == after[1] && after[0] != before[0],
            "the new maps in both slots, the old ones let go")

        var r = Self.responder(next)
        try expectEveryClientAnswered(fp, r)
        // A Paris client: par1 (down) is skipped, spill-over picks among lon1, fra1 and tyo1 by
        // weight, and nyc1 is gone.
        var p = Packet(payload: query("geo.example.test.", .a, ecs: nil))
        p.source4 = [198, 51, 100, 7]
        let reply = try #require(p.parseReply(try fp.program.testRun(p.bytes).data))
        let got = Set(try DNSMessage(wire: reply.payload).answers.map { "\($0.rdata)" })
        #expect(got.count == 2 && got.isSubset(of: ["a(192.0.2.50)", "a(192.0.2.10)", "a(192.0.2.40)"]), "\(got)")

        // Health writes go to the live generation: the new node, and not the one that is gone.
        board.set("lon1", .down)
        board.set("nyc1", .down)
        #expect(try fp.writeNodeHealth("lon1"))
        #expect(try fp.writeNodeHealth("nyc1") == false)
        r = Self.responder(next)
        for c in Self.clients4 {
            #expect(
                try run(fp, r, query("geo.example.test.", .a, ecs: nil), client: c) == XDPProgramTests.XDP_TX, "\(c)")
        }

        // A write of the same compile (a record change) keeps the maps and the health.
        try fp.write(AnswerImage.build(responder: r, maxSections: FastPath.sectionsCapacity), geo: next)
        #expect(try Self.slotIDs(fp.geo4) == after)
        for c in Self.clients4 {
            #expect(
                try run(fp, r, query("geo.example.test.", .a, ecs: nil), client: c) == XDPProgramTests.XDP_TX, "\(c)")
        }
        // And without geo names, the slots are emptied.
        try fp.write(AnswerImage.build(responder: Self.responder(next), maxSections: FastPath.sectionsCapacity))
        #expect(try Self.slotIDs(fp.geo4) == [nil, nil] && Self.slotIDs(fp.cands) == [nil, nil])
    }

    /// What the daemon does with a new compile whose zones are unchanged (ZoneReloads.apply): the
    /// names it changes (`GeoTable.namesChanged`) as changes of their zones, their records written
    /// by `apply` beside the new compile's maps (nil: no geo names). Nil when `apply` did not take
    /// them.
    static func applyCompile(_ fp: FastPath, from old: GeoTable?, to new: GeoTable?) throws -> FastPath.Applied? {
        let changes = AnswerImage.Change.adding(GeoTable.namesChanged(from: old, to: new), to: [], zones: [zone])
        let (names, removed) = try #require(
            AnswerImage.records(
                reachedBy: changes, responder: new.map(responder) ?? Responder(authority: Authority(zones: [zone])),
                maxSections: FastPath.sectionsCapacity))
        return try fp.apply(names, removed: removed, geo: new)
    }

    /// Issue 31 (nodes registering in a zone of a million names): a new compile that changes a few
    /// names (a node added with its discovery target, one gone, one moved to another address) is
    /// switched in with its maps and those names' records alone, in the other generation made from
    /// the live one: no image of the zone. XDP then answers geo names, discovery names and targets
    /// (the new one, the moved one, the one gone) as the new table's slow path, byte for byte, and
    /// a whole generation of the same image written afterwards finds every record in place.
    @Test func aNewCompileIsSwitchedInWithTheRecordsOfTheNamesItChanges() throws {
        let discovery = """

                - { name: _join._udp.example.test, type: SRV, pool: web, answers: 3, port: 7946, targets: nodes.example.test }
                - { name: _join._udp.example.test, type: A, pool: web, answers: 3 }
            """
        func table(_ text: String) throws -> GeoTable {
            let config = try NearcastConfig.parse(yaml: text + discovery, fileName: "c.yaml", baseDirectory: "")
            return try GeoTable.build(config.geo, database: MaxMindDatabase(path: Self.databasePath))
        }
        let old = try table(Self.configText.replacingOccurrences(of: "DB", with: Self.databasePath))
        let new = try table(
            Self.londonInsteadOfNewYork.replacingOccurrences(of: "ipv4: 192.0.2.20,", with: "ipv4: 192.0.2.21,"))
        let changed = GeoTable.namesChanged(from: old, to: new).map(\.description).sorted()
        #expect(
            changed == ["lon1.nodes.example.test.", "nyc1.nodes.example.test.", "par1.nodes.example.test."],
            "the targets added, gone and moved; the geo names keep their rankings")

        let fp = try Self.fastPath(old)
        let generation = fp.state.withLock { $0.settings.generation }
        let maps = try Self.slotIDs(fp.geo4)
        let applied = try #require(try Self.applyCompile(fp, from: old, to: new))
        #expect(fp.state.withLock { $0.settings.generation } != generation, "switched with the new maps")
        let after = try Self.slotIDs(fp.geo4)
        #expect(after[0] != nil && after[0] == after[1] && after[0] != maps[0], "the new maps in both slots")
        #expect(applied.written <= 4 && applied.removed == 1, "\(applied)")

        let r = Self.responder(new)
        for c in Self.clients4 + Self.clients6 {
            for (name, types) in [
                ("geo.example.test.", [RRType.a, .aaaa]), ("_join._udp.example.test.", [.a]),
                ("lon1.nodes.example.test.", [.a, .aaaa]), ("par1.nodes.example.test.", [.a, .aaaa]),
                ("fra1.nodes.example.test.", [.a, .aaaa]),
            ] {
                for type in types {
                    #expect(try run(fp, r, query(name, type, ecs: nil), client: c) == XDPProgramTests.XDP_TX, "\(name)")
                }
            }
            #expect(
                try run(fp, r, query("nyc1.nodes.example.test.", .a, ecs: nil), client: c) == XDPProgramTests.XDP_TX)
        }
        let gone = Packet(payload: query("nyc1.nodes.example.test.", .a, ecs: nil))
        let reply = try #require(gone.parseReply(try fp.program.testRun(gone.bytes).data))
        #expect(try DNSMessage(wire: reply.payload).rcode == .nxDomain)
        let whole = try fp.write(AnswerImage.build(responder: r, maxSections: FastPath.sectionsCapacity), geo: new)
        #expect(whole.written == 0, "every record in place: \(whole)")
    }

    /// A geo section added to a zone served without one, and taken away again, the same way.
    @Test func geoNamesAddedAndRemovedAreSwitchedInWithTheirRecordsAlone() throws {
        let fp = try FastPath(objectPath: XDPProgramTests.objectPath)
        try fp.configure(dnsPort: 53, udpPayload: 1232)
        try fp.answer(queriesTo: Packet.servers)
        let plain = Responder(authority: Authority(zones: [Self.zone]))
        try fp.write(AnswerImage.build(responder: plain, maxSections: FastPath.sectionsCapacity))
        _ = try #require(try Self.applyCompile(fp, from: nil, to: Self.table))
        try expectEveryClientAnswered(fp, Self.responder(Self.table))
        #expect(try Self.slotIDs(fp.geo4).allSatisfy { $0 != nil })

        let gone = try #require(try Self.applyCompile(fp, from: Self.table, to: nil))
        #expect(gone.removed == 2, "geo and strict: \(gone)")
        #expect(try Self.slotIDs(fp.geo4) == [nil, nil])
        for c in Self.clients4 {
            let verdict = try run(fp, plain, query("geo.example.test.", .a, ecs: nil), client: c)
            #expect(verdict == XDPProgramTests.XDP_TX, "NXDOMAIN from XDP, as the slow path")
        }
        #expect(try fp.write(AnswerImage.build(responder: plain, maxSections: FastPath.sectionsCapacity)).written == 0)
    }

    /// What XDP's answers went to, as an operator reads it in /metrics: each answer by its question's
    /// type and its zone (NXDOMAIN and NODATA too), each geo answer by the node it puts first, the
    /// same node the slow path counts for that client. A new compile numbers the nodes anew (one
    /// gone, one added first): the counts before it stay with the nodes that answered them.
    @Test func answersAreCountedByTypeZoneAndTheNodePutFirst() throws {
        let fp = try Self.fastPath(Self.table)
        let slowCounts = AnswerCounts()
        var r = Self.responder(Self.table)
        r.counts = slowCounts.view(zones: [Self.origin], nodes: Self.table.allNodes.map(\.id))
        var expected: [String: UInt64] = [:]
        /// Asks geo.example.test A from every IPv4 client through XDP and the slow path; notes the
        /// node of the first address XDP answered.
        func askGeo(_ t: GeoTable) throws {
            let byAddress = Dictionary(uniqueKeysWithValues: t.allNodes.compactMap { n in n.ipv4.map { ($0, n.id) } })
            for c in Self.clients4 {
                var p = Packet(payload: query("geo.example.test.", .a, ecs: nil))
                p.source4 = c
                let out = try fp.program.testRun(p.bytes)
                #expect(out.returnValue == XDPProgramTests.XDP_TX, "\(c)")
                let reply = try #require(p.parseReply(out.data))
                guard case .a(let first)? = try DNSMessage(wire: reply.payload).answers.first?.rdata else {
                    Issue.record("no address for \(c)")
                    continue
                }
                let b = first.bytes
                expected[try #require(byAddress[[b.0, b.1, b.2, b.3]]), default: 0] += 1
                _ = r.respond(to: p.payload, transport: .udp, client: c)
            }
        }
        try askGeo(Self.table)
        for (name, type) in [("www", RRType.a), ("WWW", .a), ("www", .mx), ("nope", .a), ("ns1", .aaaa)] {
            let verdict = try fp.program.testRun(Packet(payload: query("\(name).example.test.", type, ecs: nil)).bytes)
            #expect(verdict.returnValue == XDPProgramTests.XDP_TX, "\(name) \(type)")
        }
        #expect(slowCounts.totals().nodes.filter { $0.value > 0 } == expected, "the slow path counts the same nodes")

        let next = try GeoTable.build(
            try NearcastConfig.parse(yaml: Self.londonInsteadOfNewYork, fileName: "c.yaml", baseDirectory: "").geo,
            database: MaxMindDatabase(path: Self.databasePath))
        #expect(next.allNodes.map(\.id) != Self.table.allNodes.map(\.id))
        r = Self.responder(next)
        try fp.write(AnswerImage.build(responder: r, maxSections: FastPath.sectionsCapacity), geo: next)
        try askGeo(next)
        // Read once, after the switch: what the first generation counted is its nodes'.
        let t = try fp.tallies()
        let geoAnswers = UInt64(2 * Self.clients4.count)
        #expect(t.byZone == [Self.origin.wire: geoAnswers + 5], "\(t.byZone)")
        #expect(t.byType == [1: geoAnswers + 3, 15: 1, 28: 1], "\(t.byType)")
        #expect(
            t.byNode == expected && expected["lon1"] != nil && expected["nyc1"] != nil,
            "\(t.byNode) against \(expected)")
    }

    /// A compile no generation uses any more is emptied a slice at a time, never handed to the
    /// kernel whole (ARCHITECTURE §11), and let go once empty; XDP answers from the new one meanwhile.
    @Test func aReplacedCompilesTriesAreEmptiedASliceAtATime() throws {
        let fp = try Self.fastPath(Self.table)
        let old = try #require(fp.state.withLock { $0.geo })
        let next = try GeoTable.build(Self.config.geo, database: MaxMindDatabase(path: Self.databasePath))
        try fp.write(
            AnswerImage.build(responder: Self.responder(next), maxSections: FastPath.sectionsCapacity), geo: next)
        #expect(fp.retired.withLock { $0.count == 1 && $0[0] === old })
        func left() throws -> Int { try old.geo6.map.keys().count }
        let before = try left()
        #expect(before == old.ipv6.count && before > 3, "\(before)")
        var calls = 1
        #expect(fp.drainRetired(slice: 3, chunk: 2, pause: .zero), "more is left")
        #expect(try left() == before - 3)
        try expectEveryClientAnswered(fp, Self.responder(next))
        while fp.drainRetired(slice: 3, chunk: 2, pause: .zero) { calls += 1 }
        #expect(calls + 1 == (before + 2) / 3, "one slice per call")
        #expect(try left() == 0 && fp.retired.withLock { $0.isEmpty })
        try expectEveryClientAnswered(fp, Self.responder(next))
    }

    /// Health changes made while generations are being written (the writer on its own thread, a
    /// whole new geo compile each time) are never lost at a switch: each new generation starts as
    /// the board says, and writes to the live one go in meanwhile (ARCHITECTURE §11).
    @Test func healthChangesMadeWhileGenerationsAreWrittenAreNeverLost() async throws {
        let board = HealthBoard()
        let tables = try (0..<2).map { _ in
            try GeoTable.build(Self.config.geo, database: MaxMindDatabase(path: Self.databasePath), board: board)
        }
        let fp = try Self.fastPath(tables[0])
        let writer = GenerationWriter(fp)
        #expect(tables[0].serial != tables[1].serial, "two compiles: each write builds its maps anew")
        let done = Atomic<Bool>(false)
        let flipper = Task.detached {
            // Ends with fra1 down and tyo1 up, after thousands of changes of each.
            defer { done.store(true, ordering: .releasing) }
            func set(_ node: String, _ up: Bool) throws {
                board.set(node, up ? .up : .down)
                try fp.writeNodeHealth(node)
            }
            for i in 0..<4000 {
                try set("fra1", i % 2 == 1)
                try set("tyo1", i % 2 == 0)
            }
            try set("fra1", false)
            try set("tyo1", true)
        }
        var writes = 0
        while writes < 6 || !done.load(ordering: .acquiring) {
            _ = try await writer.write(responder: Self.responder(tables[writes % 2]), geo: tables[writes % 2])
            writes += 1
        }
        try await flipper.value
        let last = tables[(writes - 1) % 2]
        #expect(last.unhealthy == ["fra1"])
        let r = Self.responder(last)
        try expectEveryClientAnswered(fp, r)
    }

    /// In a zone signed here, a geo name's answer asked with DO is answered by XDP with its
    /// variant's signatures (nc_geo_sigs), the slow path's bytes, for clients of either family, by
    /// packet source and by ECS, and with the lower TTL of an unsettled pool; a variant the map
    /// lacks passes (pass_dnssec), and the slow path signs it.
    @Test func signedGeoAnswersAreAnsweredInXDPWithTheirVariantsSignatures() throws {
        var table = Self.table
        table.unhealthy = []  // a board of its own
        let now = UInt32(Date().timeIntervalSince1970)
        let signer = ZoneSigner(
            keys: [DNSSECKey.generate(zone: Self.origin)], inception: now - 3600, expiration: now + 86400,
            online: table.onlineTypes)
        let online = OnlineSignatures()
        online.use([
            Self.origin: OnlineSignatures.Signer(
                keyTags: signer.keys.map(\.keyTag), renewBefore: 3600,
                sign: { try signer.signatures($0, origin: Self.origin) })
        ])
        online.sign(table.answerVariants(), now: now)
        var r = Responder(authority: Authority(zones: [try signer.signWhole(Self.zone)]), geo: table)
        r.onlineSignatures = online
        let fp = try FastPath(objectPath: XDPProgramTests.objectPath)
        try fp.configure(dnsPort: 53, udpPayload: 1232)
        try fp.answer(queriesTo: Packet.servers)
        try fp.write(AnswerImage.build(responder: r, maxSections: FastPath.sectionsCapacity), geo: table)
        let held = try fp.writeGeoSignatures(FastPath.geoSignatures(online, geo: table, now: now))
        #expect(held == online.count, "every variant signed ahead is held")

        func signedQuery(_ name: String, _ type: RRType, ecs: ClientSubnet? = nil) -> [UInt8] {
            var h = DNSHeader()
            h.id = 0x4321
            return try! DNSMessage(
                header: h, questions: [DNSQuestion(name: try! DNSName(name), type: type)],
                edns: EDNS(dnssecOK: true, options: ecs.map { [$0.option] } ?? [])
            ).serialize()
        }
        let before = try fp.statistics()
        var signedReplies = 0
        for c in Self.clients4 + Self.clients6 {
            for type in [RRType.a, .aaaa] {
                let q = signedQuery("Geo.Example.test.", type)
                #expect(try run(fp, r, q, client: c) == XDPProgramTests.XDP_TX, "\(c) \(type)")
                let slow = try DNSMessage(wire: #require(r.respond(to: q, transport: .udp, client: c)))
                if slow.answers.contains(where: { $0.type == .rrsig }) { signedReplies += 1 }
            }
        }
        #expect(signedReplies == 2 * (Self.clients4.count + Self.clients6.count), "every answer signed")
        for (family, address, bits): (UInt16, [UInt8], UInt8) in [
            (1, [198, 51, 100], 24), (1, [203, 0, 113, 128], 25), (2, [0x20, 0x01, 0x0d, 0xb8, 0, 4], 48),
        ] {
            let ecs = ClientSubnet(family: family, sourcePrefixLength: bits, scopePrefixLength: 0, address: address)
            #expect(
                try run(fp, r, signedQuery("geo.example.test.", .a, ecs: ecs), client: [192, 0, 2, 99])
                    == XDPProgramTests.XDP_TX)
        }
        // strict.example.test answers 1 node: its variants too.
        #expect(
            try run(fp, r, signedQuery("strict.example.test.", .a), client: [198, 51, 100, 7]) == XDPProgramTests.XDP_TX
        )
        // The pool unsettled: every record, the signature's too, with its lower TTL (the
        // signature's Original TTL the name's own).
        table.board.setTTLCap("web", 7)
        #expect(try fp.writePoolTTLCap("web"))
        let capped = signedQuery("geo.example.test.", .a)
        #expect(try run(fp, r, capped, client: [198, 51, 100, 7]) == XDPProgramTests.XDP_TX)
        let slow = try DNSMessage(wire: #require(r.respond(to: capped, transport: .udp, client: [198, 51, 100, 7])))
        #expect(slow.answers.count == 3 && slow.answers.allSatisfy { $0.ttl == 7 })
        #expect(slow.answers.last.flatMap { Signature($0.rdata) }?.originalTTL == 20)
        table.board.setTTLCap("web", nil)
        #expect(try fp.writePoolTTLCap("web"))
        let answered = try fp.statistics()
        #expect(answered.passDNSSEC == before.passDNSSEC)

        // The variants gone from the map: DO queries about geo names pass, the rest still answered.
        try fp.writeGeoSignatures([])
        #expect(
            try run(fp, r, signedQuery("geo.example.test.", .a), client: [198, 51, 100, 7]) == XDPProgramTests.XDP_PASS)
        #expect(try fp.statistics().passDNSSEC == answered.passDNSSEC + 1)
        #expect(
            try run(fp, r, query("geo.example.test.", .a, ecs: nil), client: [198, 51, 100, 7])
                == XDPProgramTests.XDP_TX)
    }
}
