import DNSWire
import Testing

@testable import NearcastServer

/// The listeners hand each NOTIFY they accepted to the secondaries' refresher through a queue of
/// bounded size: a flood of NOTIFY (thousands of zones' worth, or one zone's, over and over) costs
/// the latest `kept` zones' memory, never more, and those are refreshed in the order they came.
@Suite(.timeLimit(.minutes(1))) struct NotifyInboxTests {
    /// A NOTIFY of `zone`, and the NOERROR reply that accepts it.
    static func accepted(_ zone: String) throws -> (query: [UInt8], reply: [UInt8]) {
        var h = DNSHeader()
        h.opcode = .notify
        h.aa = true
        let query = try DNSMessage(header: h, questions: [DNSQuestion(name: try DNSName(zone), type: .soa)])
            .serialize()
        var reply = query
        reply[2] |= 0x80
        return (query, reply)
    }

    @Test func aFloodKeepsTheLatestZonesInOrder() async throws {
        let inbox = NotifyInbox()
        let sent = NotifyInbox.kept + 300
        for i in 0..<sent {
            let (query, reply) = try Self.accepted("z\(i).test.")
            inbox.received(query, reply: reply)
        }
        // One that is not accepted (a REFUSED reply) is not handed on.
        let (query, reply) = try Self.accepted("refused.test.")
        var refused = reply
        refused[3] |= 5
        inbox.received(query, reply: refused)

        var zones = inbox.zones.makeAsyncIterator()
        for i in (sent - NotifyInbox.kept)..<sent {
            #expect(await zones.next() == (try DNSName("z\(i).test.")), "the oldest dropped, the rest in order")
        }
    }
}
