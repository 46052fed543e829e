import DNSWire
import NearcastTSIG

/// The NOTIFY message of a zone's change (RFC 1996 §3.7): opcode NOTIFY, AA, the zone's SOA as the
/// question and its new SOA as the answer, signed with `key` when given.
public enum NotifyMessage {
    public static func make(origin: DNSName, soa: ResourceRecord, id: UInt16, key: TSIGKey?, now: UInt64) -> [UInt8] {
        var h = DNSHeader()
        h.id = id
        h.opcode = .notify
        h.aa = true
        let m = DNSMessage(header: h, questions: [DNSQuestion(name: origin, type: .soa)], answers: [soa])
        let bytes = (try? m.serialize()) ?? []
        return key?.sign(query: bytes, now: now) ?? bytes
    }

    /// Whether `reply` answers the NOTIFY of `id`: a response, opcode NOTIFY, the same ID. Its
    /// RCODE is the secondary's to give (NOTAUTH, REFUSED): any reply ends the retries.
    public static func answers(_ reply: [UInt8], id: UInt16) -> Bool {
        guard reply.count >= 12 else { return false }
        return UInt16(reply[0]) << 8 | UInt16(reply[1]) == id && reply[2] & 0x80 != 0 && (reply[2] >> 3) & 0x0F == 4
    }

    /// The RCODE of a reply.
    public static func rcode(_ reply: [UInt8]) -> UInt8 { reply.count >= 4 ? reply[3] & 0x0F : 0 }
}
