import DNSWire
import NearcastGeo
import NearcastTSIG
import NearcastTransfer
import NearcastZones

#if canImport(Glibc)
import Glibc
#endif

/// The transport a query came over; it decides the size limit of the reply.
public enum Transport: Sendable {
    case udp
    case tcp
}

/// Turns a query's bytes into the reply's bytes, as an authoritative-only server (ARCHITECTURE §4).
///
/// Nothing here blocks or allocates per zone: it reads an immutable `Authority`.
public struct Responder: Sendable {
    public var authority: Authority
    /// The UDP payload size we advertise and the most we send over UDP (DNS flag day 2020).
    public var maxUDPPayload: UInt16
    /// Geo names, answered by the client's location (nil: none configured).
    public var geo: GeoTable?
    /// The keys signed queries may use (RFC 8945).
    public var keys: TSIGKeyring
    /// Seconds since 1970, for the time checks of signed queries and DNS cookies.
    public var clock: @Sendable () -> UInt64
    /// DNS Cookies (RFC 7873, RFC 9018); nil: a COOKIE option is ignored, as a server without
    /// them does.
    public var cookies: ServerCookies?
    /// This server's name, which a fleet's servers each say when asked which one answered: in
    /// CHAOS TXT at id.server and hostname.bind (RFC 4892) and as NSID (RFC 5001). nil: neither is
    /// answered (REFUSED, no NSID), as a server with its identity hidden.
    public var identity: String?
    /// Where its answers are counted, by zone and by the node a geo answer puts first (nil: not
    /// counted). Geo answers are counted as they are made for a client; zones by the listeners,
    /// from the replies they send (`AnswerCounts.View.countAnswer`).
    public var counts: AnswerCounts.View?
    /// Who may transfer which zone out, and the zones' recent changes (Responder+Transfer).
    public var transfers = ZoneTransfers()
    /// The signatures of the answers made for each query, in the zones signed here (nil: such
    /// answers go unsigned).
    public var onlineSignatures: OnlineSignatures?

    public init(
        authority: Authority, maxUDPPayload: UInt16 = 1232, geo: GeoTable? = nil, keys: TSIGKeyring = TSIGKeyring(),
        clock: @escaping @Sendable () -> UInt64 = Responder.systemClock, cookies: ServerCookies? = nil,
        identity: String? = nil
    ) {
        self.authority = authority
        self.maxUDPPayload = maxUDPPayload
        self.geo = geo
        self.keys = keys
        self.clock = clock
        self.cookies = cookies
        self.identity = identity
    }

    @Sendable public static func systemClock() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return UInt64(max(0, ts.tv_sec))
    }

    /// The reply to `query` from a client at `client` (4 or 16 address bytes; geo names need it),
    /// or nil when nothing must be sent (the packet is a response, or too short to carry a header).
    public func respond(to query: [UInt8], transport: Transport, client: [UInt8]? = nil) -> [UInt8]? {
        respond(to: query, transport: transport, client: client, reserve: 0)
    }

    /// As `respond(to:transport:client:)`, leaving `reserve` bytes of the size limit free (for the
    /// TSIG record a signed reply adds).
    /// `signer`: the key a signed query was verified with (a NOTIFY's primary may need it).
    func respond(to query: [UInt8], transport: Transport, client: [UInt8]?, reserve: Int, signer: DNSName? = nil)
        -> [UInt8]?
    {
        guard let header = try? DNSHeader(wire: query), !header.qr else { return nil }
        let msg: DNSMessage
        do { msg = try DNSMessage(wire: query) } catch { return errorReply(header, question: nil, .formErr, edns: nil) }
        let question = msg.questions.count == 1 ? msg.questions[0] : nil

        // EDNS (RFC 6891): our OPT goes into every reply to a query that had one.
        var replyEDNS: EDNS?
        var subnet: ClientSubnet?
        var cookie: ServerCookies.Check?
        if let qe = msg.edns {
            replyEDNS = EDNS(udpPayloadSize: maxUDPPayload, dnssecOK: qe.dnssecOK)
            if qe.version > 0 { return errorReply(header, question: question, .badVers, edns: replyEDNS) }
            if let opt = qe.clientSubnetOption {
                // RFC 7871 §7.1.1: a malformed ECS option is a FORMERR. A valid one is echoed with
                // scope 0: the static data here is the same for every client (a geo answer sets
                // its own scope below).
                guard let ecs = try? ClientSubnet(queryOption: opt.data) else {
                    return errorReply(header, question: question, .formErr, edns: replyEDNS)
                }
                subnet = ecs
                replyEDNS!.options.append(ecs.option)
            }
            // NSID (RFC 5001 §2.3): asked with an empty option, answered in every reply's OPT from
            // here on. (XDP passes queries that ask for it: nc_check_options.)
            if let identity, qe.options.contains(where: { $0.code == EDNSOption.nsidCode }) {
                replyEDNS!.options.append(EDNSOption(code: EDNSOption.nsidCode, data: Array(identity.utf8)))
            }
            // DNS Cookies (RFC 7873 §5.2): the reply carries the client's cookie and ours. A
            // server cookie that is not valid draws BADCOOKIE over UDP (TCP has proved the address).
            cookie = cookieCheck(qe, client: client)
            if let cookie {
                guard let option = cookies?.replyOption(cookie, address: client ?? [], now: now) else {
                    return errorReply(header, question: question, .formErr, edns: replyEDNS)
                }
                replyEDNS!.options.append(option)
                if case .invalid = cookie, transport == .udp {
                    return errorReply(header, question: question, .badCookie, edns: replyEDNS)
                }
            }
        }
        if let tsig = msg.additional.last, tsig.type == .tsig {
            // A signed query (RFC 8945 §5.2): answered as the same query unsigned, then signed;
            // or refused. Never from the reply cache or the fast path.
            switch keys.verify(query, tsig: tsig, now: clock()) {
            case .malformed:
                return errorReply(header, question: question, .formErr, edns: replyEDNS)
            case .refused(let signer):
                return signer.sign(errorReply(header, question: question, .notAuth, edns: replyEDNS))
            case .verified(let unsigned, let signer):
                return respond(
                    to: unsigned, transport: transport, client: client, reserve: signer.overhead, signer: tsig.name
                ).map(signer.sign)
            }
        }
        let limit = sizeLimit(msg.edns, transport) - reserve
        if header.opcode == .notify {
            return notifyReply(msg, client: client, signer: signer, edns: replyEDNS)
        }
        guard header.opcode == .query else { return errorReply(header, question: question, .notImp, edns: replyEDNS) }
        // A query for a server cookie alone (RFC 7873 §5.4): no question, and a COOKIE, answered
        // NOERROR with it (BADCOOKIE for a server cookie that is not valid, over any transport).
        if msg.questions.isEmpty, msg.answers.isEmpty, msg.authority.isEmpty, let cookie, cookie != .malformed {
            if case .invalid = cookie { return errorReply(header, question: nil, .badCookie, edns: replyEDNS) }
            return errorReply(header, question: nil, .noError, edns: replyEDNS)
        }
        guard let question, msg.answers.isEmpty, msg.authority.isEmpty else {
            return errorReply(header, question: question, .formErr, edns: replyEDNS)
        }
        if question.type == .axfr || question.type == .ixfr {
            // Transfers are answered by `transfer` (TCP, from an allowed client); here, AXFR over
            // UDP is NOTIMP, as NSD and Knot answer it, and every other transfer REFUSED.
            let rcode: RCode = question.type == .axfr && transport == .udp ? .notImp : .refused
            return errorReply(header, question: question, rcode, edns: replyEDNS, ede: .notSupported)
        }
        // Every other type, meta-types too (MAILA, MAILB, OPT, TSIG), is looked up as any type is:
        // NODATA where the name has none, as NSD and Knot answer them.
        if question.qclass == .ch, let identity, Self.identityNames.contains(question.name.lowercased()) {
            return identityReply(header, question, identity, edns: replyEDNS)
        }
        guard question.qclass == .in || question.qclass == .any else {
            return errorReply(header, question: question, .refused, edns: replyEDNS, ede: .notSupported)
        }
        let served = authority.zone(for: question.name)
        if authority.unavailableZone(for: question.name, below: served) != nil {
            return errorReply(header, question: question, .servFail, edns: replyEDNS, ede: .notReady)
        }
        guard let zone = served else {
            return errorReply(header, question: question, .refused, edns: replyEDNS, ede: .notAuthoritative)
        }
        var bytes = dataReply(
            header, question, zone: zone, client: client, subnet: subnet, edns: replyEDNS, limit: limit)
        // QCLASS ANY is answered from the IN data and never authoritatively: a server cannot know it
        // holds every class (RFC 1035 §6.2), as NSD answers it.
        if question.qclass == .any, bytes.count >= 12 { bytes[2] &= ~0x04 }
        return bytes
    }

    /// The reply to the plain question of `name` and `type` (ID 0, no flags, class IN, no EDNS;
    /// `dnssec`: an OPT with the DO bit and no option) over TCP, `zone` being the zone
    /// `authority` answers `name` from: what `respond(to:transport:)` answers that query
    /// (`AnswerImage.plainQuery`), without writing it, parsing it again and looking its zone up.
    /// The answer image asks millions of them.
    func plainReply(_ name: DNSName, _ type: RRType, zone: Zone, dnssec: Bool = false) -> [UInt8] {
        // Zone transfers are answered before any zone is looked at.
        if type == .axfr || type == .ixfr {
            return respond(to: AnswerImage.plainQuery(name, type, dnssec: dnssec), transport: .tcp)!
        }
        let edns = dnssec ? EDNS(udpPayloadSize: maxUDPPayload, dnssecOK: true) : nil
        return dataReply(
            Self.plainHeader, DNSQuestion(name: name, type: type), zone: zone, client: nil, subnet: nil, edns: edns,
            limit: sizeLimit(nil, .tcp))
    }

    /// The header of a plain question, as `respond` reads it.
    static let plainHeader = try! DNSHeader(wire: AnswerImage.plainQuery(.root, .a).prefix(12))

    /// Whether `query` from `client` carries a valid server cookie: its source address is proved,
    /// so its replies are never rate limited.
    public func provesAddress(_ query: [UInt8], client: [UInt8]) -> Bool {
        // No additional record, no OPT, no cookie: most queries are done without a parse.
        guard cookies != nil, query.count >= 12, query[10] | query[11] != 0,
            let edns = try? DNSMessage(wire: query).edns,
            case .valid = cookieCheck(edns, client: client)
        else { return false }
        return true
    }

    /// Seconds since 1970 as a cookie's 32 bits.
    var now: UInt32 { UInt32(truncatingIfNeeded: clock()) }

    /// What the query's COOKIE option is, when cookies are on and it has one; more than one is
    /// malformed.
    func cookieCheck(_ edns: EDNS, client: [UInt8]?) -> ServerCookies.Check? {
        guard let cookies else { return nil }
        let options = edns.options.filter { $0.code == EDNSOption.cookieCode }
        guard let first = options.first else { return nil }
        guard options.count == 1 else { return .malformed }
        return cookies.check(first.data, address: client ?? [], now: now)
    }

    /// The reply from `zone` (or a geo name in it) to `question`.
    func dataReply(
        _ header: DNSHeader, _ question: DNSQuestion, zone: Zone, client: [UInt8]?, subnet: ClientSubnet?,
        edns replyEDNS: EDNS?, limit: Int
    ) -> [UInt8] {
        if let target = geo?.target(question.name) {
            return targetReply(
                header, question, target.node, ttl: target.ttl, zone: zone, edns: replyEDNS, limit: limit)
        }
        if let geo,
            let name = geo.name(question.name, question.type == .any ? .a : question.type)
                ?? (question.type == .any ? geo.name(question.name, .aaaa) : nil)
        {
            return geoReply(
                header, question, name, geo: geo, zone: zone, client: client, subnet: subnet, edns: replyEDNS,
                limit: limit)
        }
        var answer = zone.lookup(question.name, question.type, dnssec: replyEDNS?.dnssecOK == true)
        if answer.rcode == .nxDomain, geo?.exists(question.name) == true {
            // The name has a geo name of another type, or one below it: NODATA (RFC 2308 §2.2, RFC 8020).
            answer.rcode = .noError
        }

        var reply = DNSMessage(header: replyHeader(header), questions: [question], edns: replyEDNS)
        reply.header.aa = answer.authoritative
        reply.rcode = answer.rcode
        reply.answers = answer.answer
        reply.authority = answer.authority
        reply.additional = answer.additional
        if let ede = answer.extendedError { reply.edns?.options.append(ede) }
        return fit(reply, limit: limit, glueRequired: answer.additionalIsRequiredGlue)
    }

    /// The reply for a geo name: the client's nearest healthy nodes (ARCHITECTURE §5). The client is the
    /// ECS address when the query has one with a source prefix, else the query's source; the ECS
    /// echo's scope is the prefix the address matched (the source prefix when none did, so a
    /// resolver never caches the answer for more than the client's own subnet).
    func geoReply(
        _ header: DNSHeader, _ question: DNSQuestion, _ name: GeoTable.Name, geo: GeoTable, zone: Zone,
        client: [UInt8]?,
        subnet: ClientSubnet?, edns: EDNS?, limit: Int
    ) -> [UInt8] {
        var edns = edns
        let address: [UInt8]
        if let s = subnet, s.sourcePrefixLength > 0 {
            address = s.address + [UInt8](repeating: 0, count: (s.family == 1 ? 4 : 16) - s.address.count)
        } else {
            address = client ?? [0, 0, 0, 0]
        }
        let answer = geo.answer(name, client: address)
        if var s = subnet, s.sourcePrefixLength > 0,
            let i = edns?.options.firstIndex(where: { $0.code == EDNSOption.clientSubnetCode })
        {
            s.scopePrefixLength = UInt8(answer.prefixLength ?? Int(s.sourcePrefixLength))
            edns!.options[i] = s.option
        }
        if answer.outcome == .servfail { return errorReply(header, question: question, .servFail, edns: edns) }
        // A client's answer (the answer image asks without one), by the node it puts first.
        if client != nil, answer.outcome != .nodata, let first = answer.chosen.first { counts?.countNode(first) }
        var reply = DNSMessage(header: replyHeader(header), questions: [question], edns: edns)
        reply.header.aa = true
        reply.rcode = .noError
        let dnssec = edns?.dnssecOK == true
        if answer.outcome == .nodata {
            reply.authority = [zone.negativeSOA]
            if dnssec, question.type == name.config.type, let proof = signedNoData(question.name, question.type, zone) {
                reply.authority = proof
            }
        } else if name.config.type == .srv {
            // A discovery name: the nodes nearest first, each at its target, whose addresses go
            // along as additional data.
            for (rank, id) in answer.chosen.enumerated() {
                guard let node = geo.node(id), let target = name.config.target(of: id) else { continue }
                reply.answers.append(
                    ResourceRecord(
                        name: question.name, type: .srv, ttl: answer.ttl,
                        rdata: .srv(priority: UInt16(rank), weight: 0, port: name.config.port, target: target)))
                reply.additional += Self.addresses(of: node, at: target, ttl: answer.ttl, .any)
            }
            reply.answers = signedOnline(reply.answers, originalTTL: name.config.ttl, dnssec: dnssec)
            reply.additional = signedOnline(reply.additional, originalTTL: name.config.ttl, dnssec: dnssec)
        } else {
            reply.answers = answer.addresses.compactMap { a in
                (try? RData(type: name.config.type, bytes: a)).map {
                    ResourceRecord(name: question.name, type: name.config.type, ttl: answer.ttl, rdata: $0)
                }
            }
            reply.answers = signedOnline(reply.answers, originalTTL: name.config.ttl, dnssec: dnssec)
        }
        return fit(reply, limit: limit, glueRequired: false)
    }

    /// The minimal TC=1 reply to `query` from `client`: the fast path's reply above its pass
    /// budget, and a reply over the response rate limit slipped (ResponseRateLimiter), byte for
    /// byte the same: QR and TC (RD from the query), NOERROR, the question, and our OPT when the
    /// query had one (DO, a Client Subnet echoed with scope 0, and a well-formed cookie's reply
    /// cookie). Nil for a query without one question to echo.
    public func truncatedReply(to query: [UInt8], client: [UInt8]? = nil) -> [UInt8]? {
        guard let msg = try? DNSMessage(wire: query), !msg.header.qr, msg.questions.count == 1 else { return nil }
        var edns: EDNS?
        if let qe = msg.edns {
            edns = EDNS(udpPayloadSize: maxUDPPayload, dnssecOK: qe.dnssecOK)
            if let opt = qe.clientSubnetOption, let ecs = try? ClientSubnet(queryOption: opt.data) {
                edns!.options.append(ecs.option)
            }
            if let cookie = cookieCheck(qe, client: client),
                let option = cookies?.replyOption(cookie, address: client ?? [], now: now)
            {
                edns!.options.append(option)
            }
        }
        var reply = DNSMessage(header: replyHeader(msg.header), questions: msg.questions, edns: edns)
        reply.header.tc = true
        reply.rcode = .noError
        return try? reply.serialize()
    }

    /// The reply for a discovery target (`NODE.TARGETS`): the node's addresses for A, AAAA (and
    /// ANY), NODATA for other types. The same for every client.
    func targetReply(
        _ header: DNSHeader, _ question: DNSQuestion, _ node: NodeConfig, ttl: UInt32, zone: Zone, edns: EDNS?,
        limit: Int
    ) -> [UInt8] {
        var reply = DNSMessage(header: replyHeader(header), questions: [question], edns: edns)
        reply.header.aa = true
        reply.rcode = .noError
        reply.answers = signedOnline(
            Self.addresses(of: node, at: question.name, ttl: ttl, question.type), originalTTL: ttl,
            dnssec: edns?.dnssecOK == true)
        if reply.answers.isEmpty { reply.authority = [zone.negativeSOA] }
        return fit(reply, limit: limit, glueRequired: false)
    }

    /// `node`'s A and AAAA records at `name`, those of `type` (ANY: both).
    static func addresses(of node: NodeConfig, at name: DNSName, ttl: UInt32, _ type: RRType) -> [ResourceRecord] {
        var out: [ResourceRecord] = []
        if type == .a || type == .any, let a = node.ipv4, let rdata = try? RData(type: .a, bytes: a) {
            out.append(ResourceRecord(name: name, type: .a, ttl: ttl, rdata: rdata))
        }
        if type == .aaaa || type == .any, let a = node.ipv6, let rdata = try? RData(type: .aaaa, bytes: a) {
            out.append(ResourceRecord(name: name, type: .aaaa, ttl: ttl, rdata: rdata))
        }
        return out
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
        h.rd = q.rd  // CD is not copied: docs/CONFORMANCE.md
        return h
    }

    /// The names a server's identity is asked at, in CHAOS (RFC 4892 §2.2 and BIND's older name).
    static let identityNames: Set<DNSName> = [try! DNSName("id.server."), try! DNSName("hostname.bind.")]

    /// The identity in a TXT record of class CHAOS, authoritative, TTL 0 (as NSD and Knot answer
    /// it); another type at the name: no data.
    func identityReply(_ q: DNSHeader, _ question: DNSQuestion, _ identity: String, edns: EDNS?) -> [UInt8] {
        var reply = DNSMessage(header: replyHeader(q), questions: [question], edns: edns)
        reply.header.aa = true
        if question.type == .txt || question.type == .any {
            // A character-string holds 255 octets at most: a longer identity is cut there.
            let text = Array(Array(identity.utf8).prefix(255))
            reply.answers = [
                ResourceRecord(name: question.name, type: .txt, rrClass: .ch, ttl: 0, rdata: .txt([text]))
            ]
        }
        return (try? reply.serialize()) ?? []
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
