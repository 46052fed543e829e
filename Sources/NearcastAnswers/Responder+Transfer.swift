import DNSWire
import NearcastGeo
import NearcastTSIG
import NearcastTransfer
import NearcastZones

/// What a zone transfer request over TCP is answered: one message (a refusal, or the SOA of a
/// secondary that is up to date), or the transfer's messages, made as the connection takes them.
public enum TransferReply: Sendable {
    case reply([UInt8])
    case messages(TransferMessages)
}

extension Responder {
    /// The answer to `query` from `client` over TCP when it asks for a zone transfer (AXFR or
    /// IXFR, opcode QUERY); nil for any other query, which `respond` answers.
    ///
    /// The zone's `allow-transfer` rules decide who may transfer it (`ZoneTransfers`), a signed
    /// request's key verified first; others are REFUSED (EDE 18). A name that is not a zone we
    /// serve is NOTAUTH (RFC 5936 §2.2.1). An IXFR from a serial the zone's history reaches gets
    /// the changes since (RFC 1995 §4), from the serial served or a newer one the SOA alone, from
    /// any other the whole zone (AXFR's form). A transfer carries each geo name's answer for a
    /// client that cannot be located (ARCHITECTURE §17): what a secondary can serve of it.
    ///
    /// A transfer's messages hold one of `slots` (nil: no limit), which the caller gives back once
    /// they are sent; with none free, the request is REFUSED.
    public func transfer(_ query: [UInt8], client: [UInt8], slots: TransferSlots? = nil) -> TransferReply? {
        guard Self.asksForTransfer(query), let msg = try? DNSMessage(wire: query), msg.questions.count == 1,
            msg.questions[0].type == .axfr || msg.questions[0].type == .ixfr
        else { return nil }
        var request = msg
        var signer: TSIGStreamSigner?
        var keyName: DNSName?
        if let tsig = msg.additional.last, tsig.type == .tsig {
            guard case .verified(let unsigned, let s) = keys.verify(query, tsig: tsig, now: clock()),
                let m = try? DNSMessage(wire: unsigned)
            else {
                // A refused or malformed signature: answered as any signed query is.
                return respond(to: query, transport: .tcp, client: client).map(TransferReply.reply)
            }
            request = m
            signer = TSIGStreamSigner(s)
            keyName = tsig.name
        }
        let question = request.questions[0]
        let header = request.header
        let opt: [UInt8] =
            request.edns == nil
            ? []
            : Array(
                ((try? DNSMessage(header: DNSHeader(), edns: EDNS(udpPayloadSize: maxUDPPayload)).serialize()) ?? [])
                    .dropFirst(12))
        func refuse(_ rcode: RCode, _ ede: ExtendedErrorCode?) -> TransferReply {
            var s = signer
            let edns = request.edns.map { _ in EDNS(udpPayloadSize: maxUDPPayload) }
            let reply = errorReply(header, question: question, rcode, edns: edns, ede: ede)
            return .reply(s?.sign(reply) ?? reply)
        }
        guard request.header.opcode == .query, request.answers.isEmpty else { return refuse(.formErr, nil) }
        guard question.qclass == .in, let zone = authority.zone(for: question.name), zone.origin == question.name
        else { return refuse(.notAuth, nil) }
        guard transfers.allows(zone.origin, address: client, signer: keyName) else {
            return refuse(.refused, .prohibited)
        }
        var replyHeader = replyHeader(header)
        replyHeader.aa = true
        // The secondary's serial, for IXFR: the SOA in the authority section (RFC 1995 §3).
        var theirs: UInt32?
        if question.type == .ixfr {
            guard let soa = request.authority.first(where: { $0.type == .soa }), case .soa(let s) = soa.rdata
            else { return refuse(.formErr, nil) }
            theirs = s.serial
        }
        guard slots?.take() ?? true else { return refuse(.refused, nil) }
        if let theirs {
            if !ZoneHistory.isNewer(zone.serial, than: theirs) {
                return .messages(
                    .upToDate(zone, header: replyHeader, question: question, opt: opt, signer: signer))
            }
            if let changes = transfers.histories[zone.origin]?.changes(from: theirs) {
                return .messages(
                    .ixfr(zone, changes: changes, header: replyHeader, question: question, opt: opt, signer: signer))
            }
        }
        return .messages(
            .axfr(
                zone, extra: geoRecords(in: zone), header: replyHeader, question: question, opt: opt, signer: signer))
    }

    /// Whether `query` is a QUERY whose one question asks for AXFR or IXFR, read from its octets:
    /// every query over TCP is asked this, and all but a few are not transfers.
    static func asksForTransfer(_ query: [UInt8]) -> Bool {
        guard query.count > 12, query[2] & 0xF8 == 0, query[4] == 0, query[5] == 1 else { return false }
        var i = 12
        while i < query.count, query[i] != 0 {
            guard query[i] & 0xC0 == 0 else { return false }
            i += Int(query[i]) + 1
        }
        guard i + 2 < query.count, query[i + 1] == 0 else { return false }
        return query[i + 2] == UInt8(RRType.axfr.rawValue) || query[i + 2] == UInt8(RRType.ixfr.rawValue)
    }

    /// The records a transfer of `zone` carries for its geo names: each one's answer for a client
    /// that cannot be located, and the addresses of its discovery targets; in a zone signed here,
    /// with their signatures (the chain names their types: a secondary's copy validates).
    func geoRecords(in zone: Zone) -> [ResourceRecord] {
        guard let geo else { return [] }
        var out: [ResourceRecord] = []
        let names =
            geo.allNames.map { ($0.config.name, $0.config.type) } + geo.targetNames.flatMap { [($0, .a), ($0, .aaaa)] }
        let signed = zone.isSigned
        for (name, type) in names where authority.zone(for: name)?.origin == zone.origin {
            guard let reply = respond(to: AnswerImage.plainQuery(name, type, dnssec: signed), transport: .tcp),
                let m = try? DNSMessage(wire: reply)
            else { continue }
            out += m.answers.filter { r in
                r.name == name && (r.type == type || (r.type == .rrsig && Signature(r.rdata)?.typeCovered == type))
            }
        }
        return out
    }
}
