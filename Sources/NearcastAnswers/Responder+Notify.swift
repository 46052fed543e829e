import DNSWire
import NearcastTransfer

extension Responder {
    /// The answer to a NOTIFY (RFC 1996) from `client`, signed with `signer` (verified; nil:
    /// unsigned): NOERROR with AA and the question, when it names a secondary zone configured
    /// here (served or not yet) and comes from one of its primaries, with that primary's key
    /// when it has one (`ZoneTransfers.acceptsNotify`); the listener then has the zone refreshed
    /// (`acceptedNotify`). A zone that is not a secondary here is NOTAUTH, a sender that is not
    /// its primary REFUSED (EDE 18), as Knot and BIND answer them.
    func notifyReply(_ msg: DNSMessage, client: [UInt8]?, signer: DNSName?, edns: EDNS?) -> [UInt8] {
        let question = msg.questions.count == 1 ? msg.questions[0] : nil
        guard let question, question.type == .soa, question.qclass == .in else {
            return errorReply(msg.header, question: question, .formErr, edns: edns)
        }
        guard transfers.primaries[question.name] != nil else {
            return errorReply(msg.header, question: question, .notAuth, edns: edns)
        }
        guard let client, transfers.acceptsNotify(question.name, address: client, signer: signer) else {
            return errorReply(msg.header, question: question, .refused, edns: edns, ede: .prohibited)
        }
        var header = replyHeader(msg.header)
        header.aa = true
        let reply = DNSMessage(header: header, questions: [question], edns: edns)
        return (try? reply.serialize()) ?? []
    }

    /// The zone a NOTIFY asks to refresh, when `reply` is its acceptance (`notifyReply`): what a
    /// listener hands to the secondary zones' refresher after sending it. nil for any other
    /// query, read from the header's opcode first, so that queries cost one octet test.
    public static func acceptedNotify(_ query: [UInt8], reply: [UInt8]) -> DNSName? {
        guard query.count > 12, reply.count > 12, query[2] & 0x78 == Opcode.notify.rawValue << 3,
            reply[3] & 0x0F == 0, reply[2] & 0x80 != 0,
            let m = try? DNSMessage(wire: query), m.questions.count == 1
        else { return nil }
        return m.questions[0].name
    }
}
