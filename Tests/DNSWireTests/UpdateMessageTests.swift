import Testing

@testable import DNSWire

/// An UPDATE message (RFC 2136 §2): its prerequisites and deletions of class ANY or NONE carry no
/// RDATA, whatever their type, and read and write as such; other records keep their type's form.
@Suite(.timeLimit(.minutes(1))) struct UpdateMessageTests {
    @Test func classAnyAndNoneRecordsWithoutDataRoundTrip() throws {
        var h = DNSHeader()
        h.id = 2136
        h.opcode = .update
        let zone = try DNSName("example.test.")
        let www = try DNSName("www.example.test.")
        let message = DNSMessage(
            header: h, questions: [DNSQuestion(name: zone, type: .soa)],
            answers: [
                ResourceRecord(name: www, type: .any, rrClass: .any, ttl: 0, rdata: .unknown([])),
                ResourceRecord(name: www, type: .aaaa, rrClass: .none, ttl: 0, rdata: .unknown([])),
            ],
            authority: [
                ResourceRecord(name: www, type: .a, rrClass: .any, ttl: 0, rdata: .unknown([])),
                ResourceRecord(name: www, type: .a, rrClass: .none, ttl: 0, rdata: .a(IPv4Address(192, 0, 2, 1))),
                ResourceRecord(name: www, type: .a, ttl: 60, rdata: .a(IPv4Address(192, 0, 2, 2))),
            ])
        let wire = try message.serialize()
        let read = try DNSMessage(wire: wire)
        #expect(read.header.opcode == .update)
        #expect(read.answers == message.answers)
        #expect(read.authority == message.authority)
        #expect(try read.serialize() == wire)
    }

    @Test func anEmptyRecordOfClassINIsStillMalformed() throws {
        var h = DNSHeader()
        h.opcode = .update
        var wire = try DNSMessage(header: h, questions: [DNSQuestion(name: try DNSName("example.test."), type: .soa)])
            .serialize()
        wire[7] = 1  // one record in the prerequisite section: www A IN, no data
        wire += [3] + Array("www".utf8) + [0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0]
        #expect(throws: DNSWireError.self) { try DNSMessage(wire: wire) }
    }
}
