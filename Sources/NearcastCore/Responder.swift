import DNSWire

/// The transport a query came over; it decides the size limit of the reply.
public enum Transport: Sendable {
    case udp
    case tcp
}

/// Turns a query's bytes into the reply's bytes, as an authoritative-only server (DESIGN §4).
///
/// Nothing here blocks or allocates per zone: it reads an immutable `Authority`.
public struct Responder: Sendable {
    public var authority: Authority
    /// The UDP payload size we advertise and the most we send over UDP (DNS flag day 2020).
    public var maxUDPPayload: UInt16

    public init(authority: Authority, maxUDPPayload: UInt16 = 1232) {
        self.authority = authority
        self.maxUDPPayload = maxUDPPayload
    }

    /// The reply to `query`, or nil when nothing must be sent (the packet is a response, or too short
    /// to carry a header).
    public func respond(to query: [UInt8], transport: Transport) -> [UInt8]? {
        guard let header = try? DNSHeader(wire: query), !header.qr else { return nil }
        let msg: DNSMessage
        do { msg = try DNSMessage(wire: query) } catch { return errorReply(header, question: nil, .formErr, edns: nil) }
        let question = msg.questions.count == 1 ? msg.questions[0] : nil

        // EDNS (RFC 6891): our OPT goes into every reply to a query that had one.
        var replyEDNS: EDNS?
        if let qe = msg.edns {
            replyEDNS = EDNS(udpPayloadSize: maxUDPPayload, dnssecOK: qe.dnssecOK)
            if qe.version > 0 { return errorReply(header, question: question, .badVers, edns: replyEDNS) }
            if let opt = qe.clientSubnetOption {
                // RFC 7871 §7.1.1: a malformed ECS option is a FORMERR. A valid one is echoed with
                // scope 0: the static data here is the same for every client.
                guard let ecs = try? ClientSubnet(queryOption: opt.data) else {
                    return errorReply(header, question: question, .formErr, edns: replyEDNS)
                }
                replyEDNS!.options.append(ecs.option)
            }
        }
        guard header.opcode == .query else { return errorReply(header, question: question, .notImp, edns: replyEDNS) }
        guard let question, msg.answers.isEmpty, msg.authority.isEmpty else {
            return errorReply(header, question: question, .formErr, edns: replyEDNS)
        }
        if question.type == .axfr || question.type == .ixfr {
            return errorReply(header, question: question, .refused, edns: replyEDNS, ede: .notSupported)  // no transfers
        }
        if question.type.isMetaType && question.type != .any {
            return errorReply(header, question: question, .notImp, edns: replyEDNS)
        }
        guard question.qclass == .in else {
            return errorReply(header, question: question, .refused, edns: replyEDNS, ede: .notSupported)
        }
        guard let zone = authority.zone(for: question.name) else {
            return errorReply(header, question: question, .refused, edns: replyEDNS, ede: .notAuthoritative)
        }
        let answer = zone.lookup(question.name, question.type)

        var reply = DNSMessage(header: replyHeader(header), questions: [question], edns: replyEDNS)
        reply.header.aa = answer.authoritative
        reply.rcode = answer.rcode
        reply.answers = answer.answer
        reply.authority = answer.authority
        reply.additional = answer.additional
        return fit(reply, limit: sizeLimit(msg.edns, transport), glueRequired: answer.additionalIsRequiredGlue)
    }

    /// The most a reply may hold: 65535 over TCP; over UDP the client's EDNS size (at least 512),
    /// capped at ours.
    func sizeLimit(_ edns: EDNS?, _ transport: Transport) -> Int {
        switch transport {
        case .tcp: return 65535
        case .udp:
            guard let edns else { return 512 }
            return Int(min(max(edns.udpPayloadSize, 512), maxUDPPayload))
        }
    }

    /// Serializes `reply` within `limit`: optional additional data is dropped first; if the answer
    /// itself (or required glue) does not fit, the reply is cut to the question with TC=1 (RFC 2181 §9).
    func fit(_ reply: DNSMessage, limit: Int, glueRequired: Bool) -> [UInt8] {
        if let bytes = try? reply.serialize(), bytes.count <= limit { return bytes }
        var r = reply
        if !r.additional.isEmpty {
            r.additional = []
            if glueRequired { r.header.tc = true }
            if let bytes = try? r.serialize(), bytes.count <= limit { return bytes }
        }
        r.answers = []
        r.authority = []
        r.additional = []
        r.header.tc = true
        return (try? r.serialize()) ?? []
    }

    func replyHeader(_ q: DNSHeader) -> DNSHeader {
        var h = DNSHeader()
        h.id = q.id
        h.qr = true
        h.opcode = q.opcode
        h.rd = q.rd
        h.cd = q.cd
        return h
    }

    /// A reply with no data: the question (when it could be read), the rcode, and our OPT when the
    /// query had one, carrying an Extended DNS Error (RFC 8914) when `ede` says why.
    func errorReply(_ q: DNSHeader, question: DNSQuestion?, _ rcode: RCode, edns: EDNS?, ede: ExtendedErrorCode? = nil)
        -> [UInt8]
    {
        var edns = edns
        if let ede { edns?.options.append(.extendedError(ede)) }
        var reply = DNSMessage(header: replyHeader(q), questions: question.map { [$0] } ?? [], edns: edns)
        reply.rcode = rcode  // a code above 15 brings its own OPT (DNSMessage.rcode)
        return (try? reply.serialize()) ?? []
    }
}
