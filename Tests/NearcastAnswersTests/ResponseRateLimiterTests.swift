import DNSWire
import Testing

@testable import NearcastAnswers

/// Response rate limiting (issue 19), on a clock the test moves: per client prefix and response
/// class, a token bucket; over the limit every `slip`-th response is a TC=1 reply and the others are
/// dropped; a flood keeps its prefix limited for the window; other prefixes and exempt ones are
/// answered in full.
@Suite(.timeLimit(.minutes(1))) struct ResponseRateLimiterTests {
    static func reply(_ name: String, _ type: RRType = .a, rcode: RCode = .noError) -> [UInt8] {
        var m = DNSMessage(questions: [DNSQuestion(name: try! DNSName(name), type: type)])
        m.header.qr = true
        m.rcode = rcode
        if rcode == .noError, type == .a {
            m.answers = [
                ResourceRecord(name: try! DNSName(name), type: .a, ttl: 60, rdata: .a(IPv4Address("192.0.2.1")!))
            ]
        }
        return try! m.serialize()
    }

    let t0 = ContinuousClock.now
    let flooded: [UInt8] = [203, 0, 113, 7]

    func verdicts(_ l: ResponseRateLimiter, _ reply: [UInt8], from client: [UInt8], count: Int, at: Duration = .zero)
        -> [ResponseRateLimiter.Verdict]
    {
        (0..<count).map { _ in l.verdict(reply, client: client, now: t0 + at) }
    }

    @Test func overTheRateEverySlipthResponseIsTruncatedAndTheRestDropped() {
        let l = ResponseRateLimiter(.init(responses: 5, slip: 2, window: 15))
        let www = Self.reply("www.example.test.")
        let v = verdicts(l, www, from: flooded, count: 25)
        #expect(v.prefix(5).allSatisfy { $0 == .send }, "a second's worth first")
        #expect(v.dropFirst(5).filter { $0 == .slip }.count == 10 && v.dropFirst(5).filter { $0 == .drop }.count == 10)
        #expect(l.counts == (10, 10))
        // The same /24, another address: the same bucket. Another /24, another name: buckets of their own.
        #expect(l.verdict(www, client: [203, 0, 113, 200], now: t0) != .send)
        #expect(verdicts(l, www, from: [198, 51, 100, 9], count: 5).allSatisfy { $0 == .send })
        #expect(verdicts(l, Self.reply("mail.example.test."), from: flooded, count: 5).allSatisfy { $0 == .send })
        // In debt for the flood: 20 over, at 5 a second, it takes 4 s to be answered again.
        #expect(l.verdict(www, client: flooded, now: t0 + .seconds(2)) != .send)
        #expect(l.verdict(www, client: flooded, now: t0 + .seconds(5)) == .send)
    }

    @Test func theDebtIsBoundedByTheWindow() {
        let l = ResponseRateLimiter(.init(responses: 10, slip: 0, window: 2))
        let www = Self.reply("www.example.test.")
        #expect(verdicts(l, www, from: flooded, count: 1_000).filter { $0 == .send }.count == 10)
        #expect(
            verdicts(l, www, from: flooded, count: 1, at: .seconds(2.2)) == [.send],
            "at most 2 s of debt (and one response)")
        #expect(l.counts.slipped == 0, "slip 0: every limited response dropped")
    }

    @Test func nxdomainsAreCountedByZoneAndErrorsByPrefix() {
        let zone = try! DNSName("example.test.")
        let l = ResponseRateLimiter(.init(responses: 100, nxdomains: 3, errors: 2, slip: 1)) { name in
            name.isSubdomain(of: zone) ? zone : nil
        }
        let nx = (0..<5).map {
            l.verdict(Self.reply("r\($0).example.test.", rcode: .nxDomain), client: flooded, now: t0)
        }
        #expect(nx == [.send, .send, .send, .slip, .slip], "random names of one zone share a bucket")
        let refused = (0..<3).map { l.verdict(Self.reply("x\($0).other.", rcode: .refused), client: flooded, now: t0) }
        #expect(refused == [.send, .send, .slip])
        #expect(
            l.verdict(Self.reply("www.example.test."), client: flooded, now: t0) == .send, "answers have their own rate"
        )
    }

    @Test func exemptPrefixesAndIPv6PrefixesAreHonoured() {
        let l = ResponseRateLimiter(.init(responses: 1, ipv6Prefix: 48, exempt: [([192, 0, 2, 0], 24)]))
        let www = Self.reply("www.example.test.")
        #expect(verdicts(l, www, from: [192, 0, 2, 55], count: 50).allSatisfy { $0 == .send })
        let a: [UInt8] = [0x20, 0x01, 0x0d, 0xb8, 0, 1] + [UInt8](repeating: 7, count: 10)
        var sameSlash48 = a
        sameSlash48[15] = 9
        var otherSlash48 = a
        otherSlash48[5] = 2
        #expect(l.verdict(www, client: a, now: t0) == .send)
        #expect(l.verdict(www, client: sameSlash48, now: t0) != .send)
        #expect(l.verdict(www, client: otherSlash48, now: t0) == .send)
    }

    @Test func aSlippedReplyIsTheHeaderWithTCAndTheQuestion() throws {
        let full = Self.reply("www.example.test.")
        let tc = ResponseRateLimiter.truncated(full)
        let m = try DNSMessage(wire: tc)
        #expect(try m.header.tc && m.header.qr && m.header.id == DNSMessage(wire: full).header.id)
        #expect(m.questions.map(\.name.description) == ["www.example.test."] && m.answers.isEmpty && m.edns == nil)
        #expect(tc.count == 12 + 18 + 4)
    }

    /// A flood from forged sources fills the table: it stays within its capacity, and room is made
    /// a tenth at a time.
    @Test func theTableStaysWithinItsCapacity() {
        let l = ResponseRateLimiter(.init(responses: 1, capacity: 1_000))
        let www = Self.reply("www.example.test.")
        for i in 0..<20_000 {
            _ = l.verdict(www, client: [10, UInt8(i >> 8 & 0xFF), UInt8(i & 0xFF), 1], now: t0)  // 20,000 /24s
        }
        let count = l.state.withLock { $0.buckets.count }
        #expect(count <= 1_000 && count > 800, "\(count)")
    }
}
