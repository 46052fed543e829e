import NearcastTestSupport
import Testing

@testable import DNSWire

@Suite(.timeLimit(.minutes(1))) struct DNSMessageTests {
    static func n(_ s: String) -> DNSName { try! DNSName(s) }

    static let everyType: [ResourceRecord] = [
        .init(name: n("a.example."), type: .a, ttl: 300, rdata: .a(IPv4Address(192, 0, 2, 1))),
        .init(name: n("a.example."), type: .aaaa, ttl: 300, rdata: .aaaa(IPv6Address("2001:db8::1")!)),
        .init(name: n("example."), type: .ns, ttl: 3600, rdata: .ns(n("ns1.example."))),
        .init(name: n("www.example."), type: .cname, ttl: 60, rdata: .cname(n("a.example."))),
        .init(name: n("1.2.0.192.in-addr.arpa."), type: .ptr, ttl: 60, rdata: .ptr(n("a.example."))),
        .init(
            name: n("example."), type: .soa, ttl: 3600,
            rdata: .soa(
                .init(
                    mname: n("ns1.example."), rname: n("h.example."), serial: 1, refresh: 2, retry: 3, expire: 4,
                    minimum: 5))),
        .init(name: n("example."), type: .mx, ttl: 300, rdata: .mx(preference: 10, exchange: n("mail.example."))),
        .init(name: n("example."), type: .txt, ttl: 300, rdata: .txt([Array("v=spf1".utf8), [], [0, 255]])),
        .init(
            name: n("_sip._udp.example."), type: .srv, ttl: 300,
            rdata: .srv(priority: 1, weight: 2, port: 5060, target: n("a.example."))),
        .init(
            name: n("example."), type: .caa, ttl: 300,
            rdata: .caa(flags: 128, tag: Array("issue".utf8), value: Array("ca.example".utf8))),
        .init(name: n("example."), type: RRType(65280), ttl: 300, rdata: .unknown([1, 2, 3])),
        .init(name: n("example."), type: RRType(65281), ttl: 300, rdata: .unknown([])),
    ]

    @Test func everyTypeRoundTrips() throws {
        var h = DNSHeader()
        h.id = 0xBEEF
        h.qr = true
        h.aa = true
        h.rd = true
        let msg = DNSMessage(
            header: h, questions: [DNSQuestion(name: Self.n("a.example."), type: .a)], answers: Self.everyType,
            authority: [Self.everyType[2]], additional: [Self.everyType[0]],
            edns: EDNS(
                udpPayloadSize: 1232, dnssecOK: true, options: [EDNSOption(code: 10, data: [1, 2, 3, 4, 5, 6, 7, 8])]))
        let wire = try msg.serialize()
        let back = try DNSMessage(wire: wire)
        #expect(back == msg)
        #expect(try back.serialize() == wire)
    }

    @Test func compressionPointsAtEarlierNames() throws {
        let q = DNSQuestion(name: Self.n("www.example."), type: .a)
        let rr = ResourceRecord(name: Self.n("WWW.example."), type: .a, ttl: 1, rdata: .a(IPv4Address(1, 2, 3, 4)))
        let wire = try DNSMessage(questions: [q], answers: [rr]).serialize()
        // header 12 + qname 13 + 4; the answer's owner is a pointer to offset 12.
        #expect(Array(wire[29..<31]) == [0xC0, 12])
        #expect(wire.count == 12 + 13 + 4 + 2 + 10 + 4)
        // ... so it is echoed in the question's case.
        #expect(try DNSMessage(wire: wire).answers[0].name.description == "www.example.")
    }

    @Test func srvTargetsAreNotCompressed() throws {
        let rr = Self.everyType[8]
        let wire = try DNSMessage(answers: [Self.everyType[0], rr]).serialize()
        #expect(wire.suffix(11) == [1, 97, 7, 101, 120, 97, 109, 112, 108, 101, 0][...])
    }

    @Test func parsesADigQuery() throws {
        // dig www.example.com A +norec +edns (cookie option stripped), ID 0x1234.
        let wire: [UInt8] = [
            0x12, 0x34, 0x00, 0x20, 0, 1, 0, 0, 0, 0, 0, 1,
            3, 119, 119, 119, 7, 101, 120, 97, 109, 112, 108, 101, 3, 99, 111, 109, 0, 0, 1, 0, 1,
            0, 0, 41, 0x04, 0xD0, 0, 0, 0, 0, 0, 0,
        ]
        let m = try DNSMessage(wire: wire)
        #expect(m.header.id == 0x1234)
        #expect(m.header.ad)
        #expect(!m.header.rd)
        #expect(m.questions == [DNSQuestion(name: Self.n("www.example.com."), type: .a)])
        #expect(m.edns?.udpPayloadSize == 1232)
        #expect(m.edns?.version == 0)
        #expect(try m.serialize() == wire)
    }

    @Test func rejectsPointerLoopsAndForwardPointers() {
        // qname is a pointer to itself.
        let selfLoop: [UInt8] = [0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0xC0, 12, 0, 1, 0, 1]
        #expect(throws: DNSWireError.badPointer(offset: 12)) { try DNSMessage(wire: selfLoop) }
        let forward: [UInt8] = [0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0xC0, 14, 0, 1, 0, 1]
        #expect(throws: DNSWireError.badPointer(offset: 12)) { try DNSMessage(wire: forward) }
        // Two pointers that point at each other: a → b → a.
        let mutual: [UInt8] = [0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1, 97, 0xC0, 16, 0xC0, 12, 0, 1, 0, 1]
        #expect(throws: DNSWireError.self) { try DNSMessage(wire: mutual) }
    }

    @Test func rejectsReservedLabelTypesAndTruncation() {
        #expect(throws: DNSWireError.badLabelType(offset: 12)) {
            try DNSMessage(wire: [0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0x40, 0, 0, 1, 0, 1])
        }
        #expect(throws: DNSWireError.self) { try DNSMessage(wire: [0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 3, 97]) }
        #expect(throws: DNSWireError.self) { try DNSMessage(wire: [0, 0, 0]) }
    }

    @Test func rejectsTrailingBytesAndBadRDLength() throws {
        var wire = try DNSMessage(answers: [Self.everyType[0]]).serialize()
        #expect(throws: DNSWireError.trailingBytes(offset: wire.count, count: 1)) { try DNSMessage(wire: wire + [0]) }
        wire[wire.count - 5] = 5  // A with RDLENGTH 5
        #expect(throws: DNSWireError.self) { try DNSMessage(wire: wire + [0]) }
    }

    @Test func rejectsMisplacedOrRepeatedOPT() throws {
        let opt: [UInt8] = [0, 0, 41, 2, 0, 0, 0, 0, 0, 0, 0]
        let header: (UInt8, UInt8) -> [UInt8] = { an, ar in [0, 0, 0, 0, 0, 0, 0, an, 0, 0, 0, ar] }
        #expect(throws: DNSWireError.self) { try DNSMessage(wire: header(1, 0) + opt) }
        #expect(throws: DNSWireError.self) { try DNSMessage(wire: header(0, 2) + opt + opt) }
        var nonRoot = opt
        nonRoot.replaceSubrange(0..<1, with: [1, 97, 0])
        #expect(throws: DNSWireError.self) { try DNSMessage(wire: header(0, 1) + nonRoot) }
        #expect(try DNSMessage(wire: header(0, 1) + opt).edns?.udpPayloadSize == 512)
    }

    @Test func extendedRCodeSplitsAcrossHeaderAndOPT() throws {
        var m = DNSMessage(edns: EDNS())
        m.rcode = .badVers
        #expect(m.header.rcodeLow == 0)
        #expect(m.edns?.extendedRCode == 1)
        #expect(try DNSMessage(wire: m.serialize()).rcode == .badVers)
        var plain = DNSMessage()
        plain.rcode = .badVers
        #expect(plain.edns != nil)
        #expect(try DNSMessage(wire: plain.serialize()).rcode == .badVers)
    }

    @Test func clientSubnetValidation() throws {
        let ok = try ClientSubnet(queryOption: [0, 1, 24, 0, 192, 0, 2])
        #expect(ok.description == "192.0.2.0/24/0")
        #expect(try ClientSubnet(queryOption: [0, 2, 0, 0]).address.isEmpty)
        #expect(throws: ClientSubnet.Invalid.addressLengthMismatch) {
            try ClientSubnet(queryOption: [0, 1, 24, 0, 192, 0, 2, 0])
        }
        #expect(throws: ClientSubnet.Invalid.bitsBeyondPrefix) {
            try ClientSubnet(queryOption: [0, 1, 23, 0, 192, 0, 3])
        }
        #expect(throws: ClientSubnet.Invalid.prefixTooLong) {
            try ClientSubnet(queryOption: [0, 1, 33, 0, 1, 2, 3, 4, 5])
        }
        #expect(throws: ClientSubnet.Invalid.nonZeroScope) { try ClientSubnet(queryOption: [0, 1, 8, 8, 10]) }
        #expect(throws: ClientSubnet.Invalid.unknownFamily(3)) { try ClientSubnet(queryOption: [0, 3, 0, 0]) }
        #expect(throws: ClientSubnet.Invalid.tooShort) { try ClientSubnet(queryOption: [0, 1, 0]) }
    }
}

/// Any byte string must give a message or a typed error: never a crash, never an out-of-bounds read.
@Suite(.timeLimit(.minutes(1))) struct DNSWireFuzzTests {
    @Test func randomBytesNeverCrash() {
        var rng = SplitMix(seed: 1)
        var kinds: Set<String> = []
        for _ in 0..<50_000 {
            let len = Int.random(in: 0..<96, using: &rng)
            var b = (0..<len).map { _ in UInt8.random(in: 0...255, using: &rng) }
            if b.count >= 12 {  // make counts small so that parsing gets past the header often
                for i in [4, 6, 8, 10] { b[i] = 0 }
                b[5] = UInt8.random(in: 0...2, using: &rng)
                b[7] = UInt8.random(in: 0...2, using: &rng)
                b[11] = UInt8.random(in: 0...1, using: &rng)
            }
            do {
                let m = try DNSMessage(wire: b)
                // Whatever parses must serialize again, and the result must parse to the same message.
                if let again = try? m.serialize() { #expect((try? DNSMessage(wire: again)) == m) }
            } catch {
                kinds.insert(String(describing: error).prefix(while: { $0 != ":" && $0 != " " }).description)
            }
        }
        // The generator reaches several distinct failure paths, not only the header check.
        #expect(kinds.count >= 4, "\(kinds)")
    }

    @Test func mutatedMessagesNeverCrash() throws {
        let base = try DNSMessage(
            header: DNSHeader(), questions: [DNSQuestion(name: try DNSName("a.example."), type: .a)],
            answers: DNSMessageTests.everyType,
            edns: EDNS(options: [
                ClientSubnet(family: 1, sourcePrefixLength: 24, scopePrefixLength: 0, address: [1, 2, 3]).option
            ])
        ).serialize()
        var rng = SplitMix(seed: 2)
        var failures = 0
        for _ in 0..<50_000 {
            let b = rng.mutate(base, edits: Int.random(in: 1...4, using: &rng))
            do {
                let m = try DNSMessage(wire: b)
                if let again = try? m.serialize() { #expect((try? DNSMessage(wire: again)) == m) }
            } catch { failures += 1 }
        }
        #expect(failures > 0)
    }
}

@Suite(.timeLimit(.minutes(1))) struct CompressionTests {
    @Test func aNameNeverPointsIntoItselfBeforeItIsWritten() throws {
        let n = try DNSName("a.a.a.")
        let m = DNSMessage(
            questions: [DNSQuestion(name: n, type: .a)],
            answers: [
                ResourceRecord(name: try DNSName("a.a."), type: .cname, ttl: 1, rdata: .cname(try DNSName("a.a.a.a.")))
            ])
        let back = try DNSMessage(wire: m.serialize())
        #expect(back == m)
    }

    @Test func suffixesAreSharedAcrossSections() throws {
        let m = DNSMessage(
            questions: [DNSQuestion(name: try DNSName("www.example.net."), type: .mx)],
            answers: [
                ResourceRecord(
                    name: try DNSName("www.example.net."), type: .mx, ttl: 1,
                    rdata: .mx(preference: 1, exchange: try DNSName("mail.EXAMPLE.net.")))
            ])
        let wire = try m.serialize()
        // question 12+17+4; owner: pointer (2); type..rdlength 10; preference 2; "mail" 5 + pointer 2.
        #expect(wire.count == 12 + 17 + 4 + 2 + 10 + 2 + 5 + 2)
        #expect(try DNSMessage(wire: wire) == m)
    }
}
