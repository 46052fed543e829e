import BPFKit
import DNSWire
import Foundation
import NearcastAnswers
import NearcastTestSupport
import Testing
import XDPFuzz

@testable import NearcastDataPath

/// DNS Cookies (RFC 7873, RFC 9018) on the real program beside the slow path's ServerCookies, with
/// one secret: whatever XDP answers is the slow path's reply byte for byte (a new server cookie
/// carries the second it was made at; the slow path is asked at that second), and what the slow
/// path answers with an error XDP passes.
@Suite(.serialized, .timeLimit(.minutes(2))) struct CookieXDPTests {
    static let secret: [UInt8] = Array(0..<16)
    static let previous: [UInt8] = Array(100..<116)
    static let cookies = ServerCookies(.init(current: secret, previous: previous))
    static let responder: Responder = {
        var r = XDPProgramTests.responder
        r.cookies = cookies
        return r
    }()
    static let fastPath: FastPath = {
        let fp = try! FastPath(objectPath: XDPProgramTests.objectPath)
        try! fp.configure(dnsPort: 53, udpPayload: responder.maxUDPPayload)
        try! fp.answer(queriesTo: Packet.servers)
        try! fp.configureCookies(cookies.secrets)
        try! fp.write(AnswerImage.build(responder: responder, maxSections: FastPath.sectionsCapacity))
        return fp
    }()
    static let clientCookie: [UInt8] = [1, 2, 3, 4, 5, 6, 7, 8]

    static var now: UInt32 { UInt32(Date().timeIntervalSince1970) }

    static func query(_ name: String, cookie: [UInt8], id: UInt16 = 0x2121) -> [UInt8] {
        XDPProgramTests.query(
            name, .a, id: id, edns: EDNS(options: [EDNSOption(code: EDNSOption.cookieCode, data: cookie)]))
    }

    /// The COOKIE option of a reply, if it has one.
    static func cookie(_ reply: [UInt8]) -> [UInt8]? {
        (try? DNSMessage(wire: reply))?.edns?.options.first { $0.code == EDNSOption.cookieCode }?.data
    }

    /// The slow path's reply to `p` at second `at`.
    static func slowPath(_ p: Packet, at: UInt32) -> [UInt8]? {
        var r = responder
        r.clock = { UInt64(at) }
        return r.respond(to: p.payload, transport: .udp, client: p.ipv6 ? p.source6 : p.source4)
    }

    /// Runs `p` through XDP, which must answer it; checks the frame, and that the reply is the
    /// slow path's at the second its server cookie was made. Returns the reply's DNS message.
    @discardableResult
    static func answered(_ p: Packet, sourceLocation: SourceLocation = #_sourceLocation) throws -> [UInt8] {
        let out = try fastPath.program.testRun(p.bytes)
        #expect(out.returnValue == XDPProgramTests.XDP_TX, sourceLocation: sourceLocation)
        let reply = try #require(p.parseReply(out.data), sourceLocation: sourceLocation)
        #expect(reply.udpChecksumOK && reply.ipChecksumOK, sourceLocation: sourceLocation)
        let c = try #require(cookie(reply.payload), "the reply carries a cookie", sourceLocation: sourceLocation)
        let made = UInt32(c[12]) << 24 | UInt32(c[13]) << 16 | UInt32(c[14]) << 8 | UInt32(c[15])
        #expect(reply.payload == slowPath(p, at: made), "byte for byte", sourceLocation: sourceLocation)
        return reply.payload
    }

    @Test func aClientCookieAloneGetsAFreshServerCookie() throws {
        for ipv6 in [false, true] {
            let reply = try Self.answered(
                Packet(ipv6: ipv6, payload: Self.query("www.example.test.", cookie: Self.clientCookie)))
            let c = try #require(Self.cookie(reply))
            #expect(c.count == 24 && Array(c[0..<8]) == Self.clientCookie && Array(c[8..<12]) == [1, 0, 0, 0])
            let made = Int(UInt32(c[12]) << 24 | UInt32(c[13]) << 16 | UInt32(c[14]) << 8 | UInt32(c[15]))
            #expect(abs(made - Int(Self.now)) <= 2, "the server cookie carries the time")
            // The client's next query with it: valid, and echoed as it came.
            let p = Packet(ipv6: ipv6, payload: Self.query("www.example.test.", cookie: c))
            #expect(Self.cookie(try Self.answered(p)) == c)
        }
    }

    @Test func aValidCookieIsEchoedWhileFreshAndRenewedAfterHalfAnHour() throws {
        let p = Packet(payload: [])
        func server(ageSeconds: UInt32, secret: [UInt8] = Self.secret) -> [UInt8] {
            ServerCookies(.init(current: secret)).serverCookie(
                client: Self.clientCookie, address: p.source4, now: Self.now - ageSeconds)
        }
        let fresh = server(ageSeconds: 600)
        #expect(
            Self.cookie(
                try Self.answered(Packet(payload: Self.query("www.example.test.", cookie: Self.clientCookie + fresh))))
                == Self.clientCookie + fresh)
        for old in [server(ageSeconds: 2400), server(ageSeconds: 60, secret: Self.previous)] {
            let reply = try Self.answered(
                Packet(payload: Self.query("www.example.test.", cookie: Self.clientCookie + old)))
            let c = try #require(Self.cookie(reply))
            #expect(Array(c[8...]) != old, "a new server cookie, under the current secret")
            #expect(
                Self.cookies.check(c, address: p.source4, now: Self.now)
                    == .valid(client: Self.clientCookie, server: Array(c[8...]), echo: true))
        }
        // An NXDOMAIN from XDP carries the cookie too.
        let nx = try Self.answered(Packet(payload: Self.query("nope.example.test.", cookie: Self.clientCookie + fresh)))
        #expect(try DNSMessage(wire: nx).rcode == .nxDomain)
    }

    /// What the slow path answers with an error XDP passes: a server cookie that is not valid
    /// (another secret, another address, too old, from the future, another version, another
    /// length) is BADCOOKIE with a new cookie; a malformed option is FORMERR.
    @Test func aBadServerCookieIsTheSlowPathsBADCOOKIE() throws {
        let p = Packet(payload: [])
        let make = { (secret: [UInt8], address: [UInt8], now: UInt32) in
            ServerCookies(.init(current: secret)).serverCookie(client: Self.clientCookie, address: address, now: now)
        }
        var badVersion = make(Self.secret, p.source4, Self.now)
        badVersion[0] = 2
        let before = try Self.fastPath.statistics()
        let bad: [[UInt8]] = [
            make(Array(repeating: 9, count: 16), p.source4, Self.now), make(Self.secret, [192, 0, 2, 99], Self.now),
            make(Self.secret, p.source4, Self.now - 7200), make(Self.secret, p.source4, Self.now + 900), badVersion,
            Array(repeating: 7, count: 12),
        ]
        for server in bad {
            let q = Packet(payload: Self.query("www.example.test.", cookie: Self.clientCookie + server))
            #expect(try Self.fastPath.program.testRun(q.bytes).returnValue == XDPProgramTests.XDP_PASS)
            let reply = try DNSMessage(wire: try #require(Self.slowPath(q, at: Self.now)))
            let c = try #require(reply.edns?.options.first { $0.code == EDNSOption.cookieCode }?.data)
            #expect(reply.rcode == .badCookie && reply.answers.isEmpty && Array(c[0..<8]) == Self.clientCookie)
            #expect(Self.cookies.check(c, address: p.source4, now: Self.now) != .invalid(client: Self.clientCookie))
        }
        for malformed in [
            [UInt8](repeating: 1, count: 5), Array(repeating: 1, count: 12), Array(repeating: 1, count: 41),
        ] {
            let q = Packet(payload: Self.query("www.example.test.", cookie: malformed))
            #expect(try Self.fastPath.program.testRun(q.bytes).returnValue == XDPProgramTests.XDP_PASS)
            #expect(try DNSMessage(wire: try #require(Self.slowPath(q, at: Self.now))).rcode == .formErr)
        }
        #expect(try Self.fastPath.statistics().passCookie - before.passCookie == UInt64(bad.count + 3))
    }

    /// A client whose query carries a valid server cookie has proved its address: never rate
    /// limited. The same prefix without one is, and its slipped TC=1 replies carry its cookie, as
    /// the slow path's do.
    @Test func aValidServerCookieIsNotRateLimited() throws {
        try withThread(onCPU: 0) {
            defer { try! Self.fastPath.configureRateLimit(nil) }
            try Self.fastPath.configureRateLimit(RateLimit(rate: 3, slip: 1))
            var p = Packet(payload: [])
            p.source4 = [203, 0, 113, 50]
            let server = Self.cookies.serverCookie(client: Self.clientCookie, address: p.source4, now: Self.now)
            p.payload = Self.query("www.example.test.", cookie: Self.clientCookie + server)
            for _ in 0..<30 {
                let reply = try Self.answered(p)
                #expect(try DNSMessage(wire: reply).header.tc == false)
            }
            p.payload = Self.query("www.example.test.", cookie: Self.clientCookie)
            var slipped = 0
            for _ in 0..<10 {
                let out = try Self.fastPath.program.testRun(p.bytes)
                let reply = try #require(p.parseReply(out.data))
                guard try DNSMessage(wire: reply.payload).header.tc else { continue }
                slipped += 1
                let c = try #require(Self.cookie(reply.payload))
                let made = UInt32(c[12]) << 24 | UInt32(c[13]) << 16 | UInt32(c[14]) << 8 | UInt32(c[15])
                var r = Self.responder
                r.clock = { UInt64(made) }
                #expect(reply.payload == r.truncatedReply(to: p.payload, client: p.source4))
            }
            #expect(slipped >= 7, "over the limit without a server cookie: \(slipped) of 10 slipped")
        }
    }
}
