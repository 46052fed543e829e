import DNSWire
import NearcastAnswers

/// The one way a test asks a `Responder` (the slow path's answers, without a socket) a question:
/// the query as a client sends it, the reply parsed. Daemons are asked through `Daemon.ask` and
/// `Daemon.dig`, raw sockets through `RawClient`.
extension Responder {
    /// The reply to `name` `type` in `qclass`, with `edns`, over `transport`, from `client` (the
    /// packet's source address; nil: none), with header id `id`; `tweak` changes the query before it
    /// is sent (a flag, the opcode, the question section). Throws when the responder sends nothing.
    public func ask(
        _ name: String, _ type: RRType, _ qclass: RRClass = .in, edns: EDNS? = nil, transport: Transport = .udp,
        client: [UInt8]? = nil, id: UInt16 = 0x4242, tweak: (inout DNSMessage) -> Void = { _ in }
    ) throws -> DNSMessage {
        var header = DNSHeader()
        header.id = id
        var query = DNSMessage(
            header: header, questions: [DNSQuestion(name: try DNSName(name), type: type, qclass: qclass)], edns: edns)
        tweak(&query)
        guard let reply = respond(to: try query.serialize(), transport: transport, client: client) else {
            throw TestFailure("no reply to \(name) \(type) over \(transport)")
        }
        return try DNSMessage(wire: reply)
    }
}
