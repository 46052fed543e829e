import DNSWire
import NearcastBasics
import NearcastTSIG
import NearcastTestSupport
import NearcastTransfer
import Testing

@testable import NearcastAnswers
@testable import NearcastZones

/// What the responder answers a zone transfer request (AXFR, RFC 5936; IXFR, RFC 1995), message
/// by message. Real secondaries taking these transfers are in the daemon's ZoneTransferTests.
@Suite(.timeLimit(.minutes(1))) struct ZoneTransferResponderTests {
    static let origin = try! DNSName("example.test.")
    static let secondary: [UInt8] = [192, 0, 2, 53]

    /// The query-table fixture with `names` generated names added, an A at each.
    static func zone(names: Int = 3000) throws -> Zone {
        var text = Fixtures.queryTableZone
        for i in 0..<names { text += "n\(i) 300 IN A 198.51.\(i / 250).\(i % 250)\n" }
        let records = try ZoneFileParser.parse(text: text, fileName: "t.zone", origin: origin)
        return try Zone.build(origin: origin, records: records, sourceName: "t.zone")
    }

    static func responder(_ zone: Zone, history: ZoneHistory? = nil) -> Responder {
        var r = Responder(authority: Authority(zones: [zone]))
        r.transfers = ZoneTransfers(
            rules: [origin: [TransferRule(prefix: AddressPrefix("192.0.2.0/24"), key: nil)]],
            histories: history.map { [origin: $0] } ?? [:])
        return r
    }

    static func request(_ type: RRType, name: String = "example.test.", serial: UInt32? = nil) throws -> [UInt8] {
        var h = DNSHeader()
        h.id = 0x4242
        var m = DNSMessage(header: h, questions: [DNSQuestion(name: try DNSName(name), type: type)])
        if let serial, case .soa(var f) = try zone(names: 0).soa.rdatas[0] {
            f.serial = serial
            m.authority = [ResourceRecord(name: origin, type: .soa, ttl: 0, rdata: .soa(f))]
        }
        return try m.serialize()
    }

    /// Every message of a transfer, read back.
    static func messages(_ reply: TransferReply?) throws -> [DNSMessage] {
        guard case .messages(var m) = try #require(reply) else {
            Issue.record("not a transfer: \(String(describing: reply))")
            return []
        }
        var out: [DNSMessage] = []
        while let bytes = m.next() {
            #expect(bytes.count <= TransferMessages.messageLimit)
            out.append(try DNSMessage(wire: bytes))
        }
        #expect(m.isDone && m.messageCount == out.count)
        return out
    }

    /// The whole zone, SOA first and last and every other record once between, in messages that
    /// each fit 16 KiB, all authoritative with the request's ID, the question in the first alone.
    @Test func anAXFRIsTheZoneBetweenItsSOAsInMessagesThatFit() throws {
        let zone = try Self.zone()
        let messages = try Self.messages(Self.responder(zone).transfer(try Self.request(.axfr), client: Self.secondary))
        #expect(messages.count > 3)
        #expect(messages.allSatisfy { $0.header.id == 0x4242 && $0.header.qr && $0.header.aa && $0.rcode == .noError })
        #expect(messages.first?.questions.count == 1 && messages.dropFirst().allSatisfy { $0.questions.isEmpty })
        let records = messages.flatMap(\.answers)
        let soa = zone.soa.records()[0]
        #expect(records.first == soa && records.last == soa)
        let between = records.dropFirst().dropLast()
        #expect(between.count == zone.recordCount - 1)
        #expect(Set(between) == Set(zone.records.filter { $0.type != .soa }))
    }

    /// Nobody the rules do not name gets the zone: REFUSED with EDE 18. A name that is not a
    /// zone's apex is NOTAUTH; a query of another type is not a transfer.
    @Test func refusalsSayWhy() throws {
        let r = Self.responder(try Self.zone(names: 0))
        guard case .reply(let refused) = try #require(r.transfer(try Self.request(.axfr), client: [198, 51, 100, 1]))
        else {
            Issue.record("a transfer to an address no rule names")
            return
        }
        let m = try DNSMessage(wire: refused)
        #expect(m.rcode == .refused && m.answers.isEmpty)
        for name in ["www.example.test.", "other.test."] {
            guard
                case .reply(let notAuth) = try #require(
                    r.transfer(try Self.request(.axfr, name: name), client: Self.secondary))
            else {
                Issue.record("a transfer of \(name)")
                return
            }
            #expect(try DNSMessage(wire: notAuth).rcode == .notAuth)
        }
        #expect(r.transfer(try Self.request(.soa), client: Self.secondary) == nil)
    }

    /// An IXFR from a serial the history reaches is its changes (a record of an RRset changed
    /// alone, not the RRset); from the serial served, the SOA alone; from one before the history,
    /// the whole zone.
    @Test func anIXFRIsTheChangesSinceTheSecondarysSerial() throws {
        let zone = try Self.zone(names: 10)
        let www = try DNSName("www.example.test.")
        let old = try #require(zone.rrset(www, .a))
        var new = old
        new.rdatas[0] = .a(IPv4Address(192, 0, 2, 99))
        let (changed, changeset) = try zone.replacing([(www, .a, new)], serial: zone.serial + 1, source: "test")
        var history = ZoneHistory()
        history.append(changeset)
        let r = Self.responder(changed, history: history)

        let ixfr = try Self.messages(r.transfer(try Self.request(.ixfr, serial: zone.serial), client: Self.secondary))
        let soa1 = zone.soa.records()[0]
        let soa2 = changed.soa.records()[0]
        #expect(
            ixfr.flatMap(\.answers) == [
                soa2, soa1, ResourceRecord(name: www, type: .a, ttl: old.ttl, rdata: old.rdatas[0]), soa2,
                ResourceRecord(name: www, type: .a, ttl: old.ttl, rdata: .a(IPv4Address(192, 0, 2, 99))), soa2,
            ])
        let upToDate = try Self.messages(
            r.transfer(try Self.request(.ixfr, serial: changed.serial), client: Self.secondary))
        #expect(upToDate.flatMap(\.answers) == [soa2])
        let tooOld = try Self.messages(
            r.transfer(try Self.request(.ixfr, serial: zone.serial - 5), client: Self.secondary))
        #expect(tooOld.flatMap(\.answers).count == changed.recordCount + 1)
    }

    /// The history keeps the newest changes within its bound, and starts anew at a change that
    /// does not follow the last (the zone replaced) or does not move the serial forward.
    @Test func theHistoryIsBoundedAndContiguous() throws {
        func change(_ from: UInt32, _ to: UInt32, records: Int = 2) -> ZoneChangeset {
            let r = ResourceRecord(name: Self.origin, type: .a, ttl: 1, rdata: .a(IPv4Address(192, 0, 2, 1)))
            return ZoneChangeset(
                serialBefore: from, serialAfter: to, removed: Array(repeating: r, count: records / 2),
                added: Array(repeating: r, count: records / 2))
        }
        var h = ZoneHistory(recordLimit: 10)
        for s in UInt32(1)...8 { h.append(change(s, s + 1)) }
        #expect(h.changesets.map(\.serialBefore) == [4, 5, 6, 7, 8] && h.records == 10)
        #expect(h.changes(from: 6)?.map(\.serialAfter) == [7, 8, 9])
        #expect(h.changes(from: 3) == nil)
        h.append(change(20, 21))
        #expect(h.changesets.map(\.serialBefore) == [20])
        h.append(change(21, 21))
        #expect(h.changesets.isEmpty)
        // Serial arithmetic (RFC 1982): 1 follows 0xFFFFFFFF.
        h.append(change(0xFFFF_FFFF, 1))
        #expect(h.changesets.count == 1)
    }

    /// A signed request's transfer is signed message by message (RFC 8945 §5.3.1): a client's
    /// check passes every message in order, and fails at a message changed on the way.
    @Test func aSignedTransferIsCheckedMessageByMessage() throws {
        let key = TSIGKey(
            name: try DNSName("xfr.example.test."), algorithm: .hmacSHA256, secret: Array("0123456789abcdef".utf8))
        var r = Self.responder(try Self.zone())
        r.keys = try TSIGKeyring([key])
        r.clock = { 1_795_000_000 }
        let signed = key.sign(query: try Self.request(.axfr), now: 1_795_000_000)
        guard case .messages(var m) = try #require(r.transfer(signed, client: Self.secondary)) else {
            Issue.record("the signed request was refused")
            return
        }
        var messages: [[UInt8]] = []
        while let bytes = m.next() { messages.append(bytes) }
        #expect(messages.count > 3)
        let mac = try #require(TSIGKey.mac(ofSigned: signed))
        var verifier = TSIGStreamVerifier(key: key, requestMAC: mac)
        for message in messages { try verifier.check(message, now: 1_795_000_000) }
        #expect(verifier.lastWasSigned)

        var tampered = TSIGStreamVerifier(key: key, requestMAC: mac)
        try tampered.check(messages[0], now: 1_795_000_000)
        // An address changed (198.51.x.y): the message still reads, its MAC no longer matches.
        var changed = messages[1]
        let at = try #require(changed.indices.dropLast(4).first { changed[$0] == 198 && changed[$0 + 1] == 51 })
        changed[at + 3] ^= 1
        #expect(throws: TSIGStreamVerifier.Failure.self) { try tampered.check(changed, now: 1_795_000_000) }
    }

    /// Transfers running at once are bounded (`TransferSlots`): over the limit a request is
    /// REFUSED, and a slot given back takes the next one.
    @Test func transfersOverTheLimitAreRefusedUntilASlotIsFree() throws {
        let r = Self.responder(try Self.zone(names: 0))
        let slots = TransferSlots(limit: 1)
        guard case .messages = try #require(r.transfer(try Self.request(.axfr), client: Self.secondary, slots: slots))
        else {
            Issue.record("the first transfer was refused")
            return
        }
        guard
            case .reply(let refused) = try #require(
                r.transfer(try Self.request(.axfr), client: Self.secondary, slots: slots))
        else {
            Issue.record("a second transfer at once was taken")
            return
        }
        #expect(try DNSMessage(wire: refused).rcode == .refused)
        // A request refused for another reason takes no slot.
        slots.release()
        _ = r.transfer(try Self.request(.axfr, name: "www.example.test."), client: Self.secondary, slots: slots)
        #expect(slots.inUse == 0)
        guard case .messages = try #require(r.transfer(try Self.request(.axfr), client: Self.secondary, slots: slots))
        else {
            Issue.record("a transfer after the slot was given back was refused")
            return
        }
    }
}
