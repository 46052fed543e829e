import DNSWire
import NearcastTestSupport
import Testing

@testable import NearcastAnswers

/// The reply cache must be invisible: for any query, cached or not, the bytes equal the full path's.
@Suite(.timeLimit(.minutes(1))) struct ReplyCacheTests {
    static let responder = ResponderTests.responder

    static let names = [
        "www.example.test.", "alias.example.test.", "nope.example.test.", "x.wild.example.test.", "c.example.test.",
        "host.sub.example.test.", "example.test.", "big.example.test.", "huge.example.test.", "www.other.test.",
        "dangling.example.test.", "_dns._udp.example.test.",
    ]
    static let types: [RRType] = [.a, .aaaa, .txt, .mx, .ns, .soa, .any, .srv, .axfr, .mailb, RRType(65280)]

    static func randomCase(_ s: String, _ rng: inout SplitMix) -> String {
        String(s.map { Bool.random(using: &rng) ? Character($0.uppercased()) : $0 })
    }

    static func query(_ name: String, _ type: RRType, _ rng: inout SplitMix) -> [UInt8] {
        var h = DNSHeader()
        h.id = UInt16.random(in: 0...0xFFFF, using: &rng)
        h.rd = Bool.random(using: &rng)
        h.cd = Bool.random(using: &rng)
        var edns: EDNS?
        switch Int.random(in: 0..<7, using: &rng) {
        case 0: edns = nil
        case 1: edns = EDNS(udpPayloadSize: 512)
        case 2: edns = EDNS(udpPayloadSize: 1232, dnssecOK: true)
        case 3: edns = EDNS(udpPayloadSize: 4096, options: [EDNSOption(code: 10, data: Array(repeating: 7, count: 8))])
        case 4:
            edns = EDNS(options: [
                ClientSubnet(family: 1, sourcePrefixLength: 24, scopePrefixLength: 0, address: [192, 0, 2]).option
            ])
        case 5: edns = EDNS(version: 1)
        default: edns = EDNS(udpPayloadSize: 100)
        }
        let qclass: RRClass = Int.random(in: 0..<10, using: &rng) == 0 ? .ch : .in
        return try! DNSMessage(
            header: h, questions: [DNSQuestion(name: try! DNSName(randomCase(name, &rng)), type: type, qclass: qclass)],
            edns: edns
        ).serialize()
    }

    @Test func cachedRepliesEqualTheFullPath() {
        var rng = SplitMix(seed: 7)
        var cache = ReplyCache()
        var hits = 0
        for _ in 0..<20_000 {
            let q = Self.query(Self.names.randomElement(using: &rng)!, Self.types.randomElement(using: &rng)!, &rng)
            let transport: Transport = Int.random(in: 0..<4, using: &rng) == 0 ? .tcp : .udp
            let before = cache.count
            let got = cache.reply(to: q, transport: transport, responder: Self.responder)
            if cache.count == before && CacheKey(query: q, transport: transport, responder: Self.responder) != nil {
                hits += 1
            }
            #expect(got == Self.responder.respond(to: q, transport: transport))
        }
        #expect(hits > 10_000, "the cache is used for plain queries")
    }

    /// With cookies on, queries with every kind of COOKIE (a client cookie alone, a valid server
    /// cookie, one not valid, a malformed one, two) from several clients, cached or not: the full
    /// path's bytes, each client's cookie in its reply.
    @Test func cookieRepliesEqualTheFullPath() {
        var rng = SplitMix(seed: 10)
        let cookies = ServerCookies(.init(current: Array(repeating: 3, count: 16)))
        var r = Self.responder
        r.cookies = cookies
        r.clock = { 1_800_000_000 }
        var cache = ReplyCache()
        for _ in 0..<20_000 {
            let client: [UInt8] = [192, 0, 2, UInt8.random(in: 1...4, using: &rng)]
            let clientCookie = (0..<8).map { _ in UInt8.random(in: 0...255, using: &rng) }
            var data = clientCookie
            switch Int.random(in: 0..<6, using: &rng) {
            case 0, 1: break
            case 2, 3:
                data += cookies.serverCookie(
                    client: clientCookie, address: client, now: 1_800_000_000 - UInt32.random(in: 0...4000, using: &rng)
                )
            case 4: data += (0..<16).map { _ in UInt8.random(in: 0...255, using: &rng) }
            default: data = Array(data.prefix(Int.random(in: 0...7, using: &rng)))
            }
            var options = [EDNSOption(code: EDNSOption.cookieCode, data: data)]
            if Int.random(in: 0..<20, using: &rng) == 0 { options.append(options[0]) }
            let name = Self.names.randomElement(using: &rng)!
            var h = DNSHeader()
            h.id = UInt16.random(in: 0...0xFFFF, using: &rng)
            let q = try! DNSMessage(
                header: h,
                questions: [
                    DNSQuestion(
                        name: try! DNSName(Self.randomCase(name, &rng)), type: Self.types.randomElement(using: &rng)!)
                ],
                edns: EDNS(udpPayloadSize: [512, 1232, 4096].randomElement(using: &rng)!, options: options)
            ).serialize()
            let transport: Transport = Int.random(in: 0..<4, using: &rng) == 0 ? .tcp : .udp
            let got = cache.reply(to: q, transport: transport, responder: r, client: client)
            #expect(got == r.respond(to: q, transport: transport, client: client), "\(q)")
        }
        // Every query carried a COOKIE: what the cache holds, it took from them.
        #expect(cache.count > 50, "cookie queries' replies are kept (\(cache.count))")
    }

    @Test func mutatedQueriesGetTheFullPathsBytes() {
        var rng = SplitMix(seed: 8)
        var cache = ReplyCache()
        for _ in 0..<30_000 {
            let base = Self.query(Self.names.randomElement(using: &rng)!, Self.types.randomElement(using: &rng)!, &rng)
            let q = rng.mutate(base, edits: Int.random(in: 0...2, using: &rng))
            #expect(
                cache.reply(to: q, transport: .udp, responder: Self.responder)
                    == Self.responder.respond(to: q, transport: .udp))
        }
    }

    @Test func aFullCacheStartsOver() {
        var rng = SplitMix(seed: 9)
        var cache = ReplyCache(capacity: 8)
        for i in 0..<50 {
            let q = Self.query("n\(i).example.test.", .a, &rng)
            _ = cache.reply(to: q, transport: .tcp, responder: Self.responder)
            #expect(cache.count <= 8)
        }
    }
}
