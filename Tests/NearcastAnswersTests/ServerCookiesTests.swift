import DNSWire
import NearcastBasics
import Testing

@testable import NearcastAnswers

/// DNS Cookies in the slow path: SipHash-2-4 as its paper gives it, server cookies as RFC 9018's
/// examples give them, and the Responder's replies for each shape of COOKIE option (RFC 7873 §5.2).
@Suite(.timeLimit(.minutes(1))) struct ServerCookiesTests {
    static func hex(_ s: String) -> [UInt8] {
        stride(from: 0, to: s.count, by: 2).map {
            UInt8(s[s.index(s.startIndex, offsetBy: $0)..<s.index(s.startIndex, offsetBy: $0 + 2)], radix: 16)!
        }
    }

    @Test func sipHashIsThePapersFunction() {
        let key = Array(UInt8(0)..<16)
        #expect(SipHash24.hash([], key: key) == 0x726f_db47_dd0e_0e31)
        #expect(SipHash24.hash(Array(UInt8(0)..<15), key: key) == 0xa129_ca61_49be_45e5)
        #expect(SipHash24.hash(Array(UInt8(0)..<8), key: key) == 0x93f5_f579_9a93_2462)
    }

    /// RFC 9018 Appendix A.1: a client at 198.51.100.100 learns a server cookie.
    @Test func serverCookiesAreRFC9018s() {
        let cookies = ServerCookies(.init(current: Self.hex("e5e973e5a6b2a43f48e7dc849e37bfcf")))
        let client = Self.hex("2464c4abcf10c957")
        #expect(
            cookies.serverCookie(client: client, address: [198, 51, 100, 100], now: 1_559_731_985)
                == Self.hex("010000005cf79f111f8130c3eee29480"))
    }

    static let client: [UInt8] = [192, 0, 2, 55]
    static let clientCookie: [UInt8] = [9, 8, 7, 6, 5, 4, 3, 2]

    static func responder(_ cookies: ServerCookies?, at now: UInt64 = 1_800_000_000) -> Responder {
        var r = ResponderTests.responder
        r.cookies = cookies
        r.clock = { now }
        return r
    }

    /// www.example.test A from the client, with `options` (the cookies) in its OPT.
    static func ask(
        _ r: Responder, _ options: [EDNSOption], transport: Transport = .udp,
        tweak: (inout DNSMessage) -> Void = { _ in }
    ) throws -> DNSMessage {
        try r.ask(
            "www.example.test.", .a, edns: EDNS(options: options), transport: transport, client: Self.client,
            tweak: tweak)
    }

    static func cookie(_ data: [UInt8]) -> EDNSOption { EDNSOption(code: EDNSOption.cookieCode, data: data) }

    static func replyCookie(_ m: DNSMessage) -> [UInt8]? {
        m.edns?.options.first { $0.code == EDNSOption.cookieCode }?.data
    }

    /// RFC 7873 §5.2, case by case.
    @Test func eachShapeOfCookieGetsTheRFCsReply() throws {
        let cookies = ServerCookies(.init(current: Array(repeating: 0x5A, count: 16)))
        let r = Self.responder(cookies)
        // A client cookie alone: answered, with a new server cookie made now.
        let first = try Self.ask(r, [Self.cookie(Self.clientCookie)])
        let c = try #require(Self.replyCookie(first))
        #expect(
            first.rcode == .noError && !first.answers.isEmpty && c.count == 24 && Array(c[0..<8]) == Self.clientCookie)
        #expect(
            cookies.check(c, address: Self.client, now: 1_800_000_000)
                == .valid(client: Self.clientCookie, server: Array(c[8...]), echo: true))
        // Sent back: echoed while fresh, renewed after half an hour, BADCOOKIE after an hour.
        #expect(Self.replyCookie(try Self.ask(Self.responder(cookies, at: 1_800_001_000), [Self.cookie(c)])) == c)
        let later = try Self.ask(Self.responder(cookies, at: 1_800_002_000), [Self.cookie(c)])
        #expect(later.rcode == .noError && Self.replyCookie(later) != c)
        let stale = try Self.ask(Self.responder(cookies, at: 1_800_004_000), [Self.cookie(c)])
        #expect(stale.rcode == .badCookie && stale.answers.isEmpty && Self.replyCookie(stale)?.prefix(8) == c.prefix(8))
        // Over TCP the address is proved: answered, with a new cookie.
        let tcp = try Self.ask(Self.responder(cookies, at: 1_800_004_000), [Self.cookie(c)], transport: .tcp)
        #expect(tcp.rcode == .noError && !tcp.answers.isEmpty && Self.replyCookie(tcp) != c)
        // Malformed, or two: FORMERR.
        for options in [
            [Self.cookie([1, 2, 3])], [Self.cookie(Array(repeating: 1, count: 12))],
            [Self.cookie(Self.clientCookie), Self.cookie(Self.clientCookie)],
        ] {
            #expect(try Self.ask(r, options).rcode == .formErr)
        }
        // Without cookies, the option is ignored.
        let off = try Self.ask(Self.responder(nil), [Self.cookie(Self.clientCookie)])
        #expect(off.rcode == .noError && Self.replyCookie(off) == nil)
    }

    /// A query for a server cookie alone (RFC 7873 §5.4): no question, NOERROR with the cookie;
    /// BADCOOKIE when the server cookie sent is not valid; FORMERR without a COOKIE.
    @Test func aQueryWithoutAQuestionLearnsAServerCookie() throws {
        let r = Self.responder(ServerCookies(.init(current: Array(repeating: 4, count: 16))))
        func ask(_ options: [EDNSOption]) throws -> DNSMessage {
            try Self.ask(r, options) { $0.questions = [] }
        }
        let learned = try ask([Self.cookie(Self.clientCookie)])
        let c = try #require(Self.replyCookie(learned))
        #expect(learned.rcode == .noError && learned.questions.isEmpty && c.count == 24)
        #expect(try ask([Self.cookie(c)]).rcode == .noError)
        #expect(try ask([Self.cookie(Self.clientCookie + Array(repeating: 0, count: 16))]).rcode == .badCookie)
        #expect(try ask([]).rcode == .formErr)
    }

    /// After a rotation the previous secret's cookies are still taken (and replaced); after the next
    /// they are not.
    @Test func theSecretRotatesAndThePreviousIsAcceptedUntilTheNext() throws {
        let cookies = ServerCookies(.init(current: Array(repeating: 1, count: 16)))
        let old =
            Self.clientCookie
            + cookies.serverCookie(client: Self.clientCookie, address: Self.client, now: 1_800_000_000)
        cookies.rotate(to: Array(repeating: 2, count: 16))
        let taken = try Self.ask(Self.responder(cookies), [Self.cookie(old)])
        #expect(taken.rcode == .noError && Self.replyCookie(taken) != old)
        #expect(Self.responder(cookies).provesAddress(try Self.query(old), client: Self.client))
        cookies.rotate(to: Array(repeating: 3, count: 16))
        #expect(try Self.ask(Self.responder(cookies), [Self.cookie(old)]).rcode == .badCookie)
        #expect(!Self.responder(cookies).provesAddress(try Self.query(old), client: Self.client))
    }

    static func query(_ cookie: [UInt8]) throws -> [UInt8] {
        try DNSMessage(
            questions: [DNSQuestion(name: try DNSName("www.example.test."), type: .a)],
            edns: EDNS(options: [Self.cookie(cookie)])
        ).serialize()
    }

    /// The reply cache never hands one client's cookie to another: each gets its own, added to the
    /// reply kept without it.
    @Test func cookieRepliesFromTheCacheCarryEachClientsCookie() throws {
        let r = Self.responder(ServerCookies(.init(current: Array(repeating: 7, count: 16))))
        var cache = ReplyCache()
        let q = try Self.query(Self.clientCookie)
        let a = cache.reply(to: q, transport: .udp, responder: r, client: [192, 0, 2, 1])
        let b = cache.reply(to: q, transport: .udp, responder: r, client: [192, 0, 2, 2])
        #expect(a != nil && b != nil && a != b && cache.count == 1)
        #expect(a == r.respond(to: q, transport: .udp, client: [192, 0, 2, 1]))
        #expect(b == r.respond(to: q, transport: .udp, client: [192, 0, 2, 2]))
    }
}
