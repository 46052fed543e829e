import DNSWire

/// Replies already computed, for questions that repeat.
///
/// Zone data does not change while it is loaded, so two queries that differ only in their ID, the
/// letter case of the question and the RD and CD bits get the same reply bytes, with those fields
/// patched. Only plain queries are cached (see `CacheKey.init?(query:transport:responder:)`); every
/// other query takes the full path. One cache per event loop, so no locking; it is emptied when full,
/// which bounds its memory under a flood of distinct names.
public struct ReplyCache: Sendable {
    public let capacity: Int
    private var entries: [CacheKey.Lookup: [UInt8]] = [:]

    public init(capacity: Int = 16384) {
        self.capacity = capacity
        entries.reserveCapacity(min(capacity, 1024))
    }

    public var count: Int { entries.count }

    /// The reply to `query` from `client`, from the cache when a plain query asked the same before.
    public mutating func reply(to query: [UInt8], transport: Transport, responder: Responder, client: [UInt8]? = nil)
        -> [UInt8]?
    {
        guard let key = CacheKey(query: query, transport: transport, responder: responder) else {
            return responder.respond(to: query, transport: transport, client: client)
        }
        guard let cookie = key.cookie else {
            if var reply = entries[key.lookup] {
                key.patch(&reply, from: query)
                return reply
            }
            guard let reply = responder.respond(to: query, transport: transport, client: client) else { return nil }
            remember(reply, key)
            return reply
        }
        return reply(to: query, cookie: cookie, key: key, transport: transport, responder: responder, client: client)
    }

    private mutating func remember(_ reply: [UInt8], _ key: CacheKey) {
        if entries.count >= capacity { entries.removeAll(keepingCapacity: true) }
        entries[key.lookup] = reply
    }

    /// A query with a COOKIE option (cookies on): the reply is the one to the same query without
    /// it (cached), with the client's cookie and ours added at the end of our OPT, when that gives
    /// the full path's bytes: a client cookie alone or a valid server cookie (the others are
    /// errors), an OPT with no other option (an Extended DNS Error would come after the cookie),
    /// and room for it (the full path fits the reply with the cookie in: a reply the cookie would
    /// push past the limit is fitted otherwise).
    private mutating func reply(
        to query: [UInt8], cookie: Range<Int>, key: CacheKey, transport: Transport, responder: Responder,
        client: [UInt8]?
    ) -> [UInt8]? {
        let full = { responder.respond(to: query, transport: transport, client: client) }
        guard let cookies = responder.cookies else { return full() }
        let check = cookies.check(
            Array(query[(cookie.lowerBound + 4)..<cookie.upperBound]), address: client ?? [], now: responder.now)
        switch check {
        case .clientOnly, .valid: break
        case .malformed, .invalid: return full()
        }
        guard let option = cookies.replyOption(check, address: client ?? [], now: responder.now) else { return full() }
        var reply: [UInt8]
        if let cached = entries[key.lookup] {
            reply = cached
        } else {
            // The same query without its cookie: the option cut out, the OPT's length shortened.
            var bare = query
            bare.removeSubrange(cookie)
            let rdlen = (Int(bare[key.optRdlenAt]) << 8 | Int(bare[key.optRdlenAt + 1])) - cookie.count
            bare[key.optRdlenAt] = UInt8(rdlen >> 8)
            bare[key.optRdlenAt + 1] = UInt8(rdlen & 0xFF)
            guard let r = responder.respond(to: bare, transport: transport, client: client) else { return full() }
            remember(r, key)
            reply = r
        }
        key.patch(&reply, from: query)
        let n = reply.count
        // Our OPT with no options ends the reply: root, TYPE 41, class, TTL, RDLENGTH 0.
        guard n >= 23, reply[n - 11] == 0, reply[n - 10] == 0, reply[n - 9] == 41, reply[n - 2] == 0,
            reply[n - 1] == 0, n + 4 + option.data.count <= Int(key.lookup.shape & 0xFFFF)
        else { return full() }
        let added = 4 + option.data.count
        reply[n - 2] = UInt8(added >> 8)
        reply[n - 1] = UInt8(added & 0xFF)
        reply += [
            UInt8(option.code >> 8), UInt8(option.code & 0xFF), UInt8(option.data.count >> 8),
            UInt8(option.data.count & 0xFF),
        ]
        reply += option.data
        return reply
    }
}

/// What a plain query's reply depends on: the question (case-folded) and the reply's shape.
struct CacheKey {
    struct Lookup: Hashable {
        var name: [UInt8]
        var type: UInt16
        var qclass: UInt16
        /// EDNS present, DO bit, and the size limit the reply was fitted to.
        var shape: UInt32
    }

    let lookup: Lookup
    /// Length of the question name in the query (and the reply), from offset 12.
    let nameLength: Int
    /// The query's COOKIE option, header included, when cookies are on (ReplyCache adds the
    /// reply's cookie to a reply cached without it), and where its OPT's RDLENGTH is.
    var cookie: Range<Int>?
    var optRdlenAt = 0

    /// A key for `query` when it is plain: QR=0, OPCODE=0, QDCOUNT=1, ANCOUNT=NSCOUNT=0, an
    /// uncompressed question name that has no geo name, and either nothing more or exactly one
    /// well-formed EDNS(0) OPT record with no Client Subnet option (and at most one COOKIE), then
    /// the end of the message.
    /// Such a query's reply depends on nothing but the key. Anything else (nil) is answered without
    /// the cache.
    init?(query q: [UInt8], transport: Transport, responder: Responder) {
        guard q.count >= 17, q[2] & 0xF8 == 0, q[4] == 0, q[5] == 1, q[6] | q[7] | q[8] | q[9] == 0,
            q[10] == 0, q[11] <= 1
        else { return nil }
        var name: [UInt8] = []
        name.reserveCapacity(32)
        var i = 12
        while true {
            guard i < q.count else { return nil }
            let len = Int(q[i])
            if len == 0 { break }
            guard len <= 63, i + 1 + len < q.count else { return nil }
            name.append(UInt8(len))
            for k in (i + 1)...(i + len) { name.append(DNSName.fold(q[k])) }
            i += 1 + len
        }
        name.append(0)
        guard name.count <= 255, i + 5 <= q.count else { return nil }
        // A geo name's reply depends on who asks: never from the cache.
        if let geo = responder.geo, geo.isOwner(lowercasedWire: name) { return nil }
        let type = UInt16(q[i + 1]) << 8 | UInt16(q[i + 2])
        let qclass = UInt16(q[i + 3]) << 8 | UInt16(q[i + 4])
        var p = i + 5
        var shape: UInt32
        if q[11] == 0 {
            guard p == q.count else { return nil }
            shape = UInt32(responder.sizeLimit(nil, transport))
        } else {
            // OPT: root owner, TYPE 41, CLASS = UDP size, TTL = ext-rcode, version, flags; RDATA = options.
            guard p + 11 <= q.count, q[p] == 0, q[p + 1] == 0, q[p + 2] == 41, q[p + 6] == 0 else { return nil }
            let size = UInt16(q[p + 3]) << 8 | UInt16(q[p + 4])
            let dnssecOK = q[p + 7] & 0x80 != 0
            let rdlen = Int(q[p + 9]) << 8 | Int(q[p + 10])
            optRdlenAt = p + 9
            p += 11
            guard p + rdlen == q.count else { return nil }
            while p < q.count {
                guard p + 4 <= q.count else { return nil }
                let code = UInt16(q[p]) << 8 | UInt16(q[p + 1])
                let olen = Int(q[p + 2]) << 8 | Int(q[p + 3])
                // A Client Subnet echo is the client's own; so is a cookie when cookies are on, which
                // the cache adds to a reply kept without it (one cookie: two are FORMERR); an NSID
                // is in the replies of those who ask for it alone.
                guard code != EDNSOption.clientSubnetCode, code != EDNSOption.nsidCode, p + 4 + olen <= q.count
                else { return nil }
                if code == EDNSOption.cookieCode && responder.cookies != nil {
                    guard cookie == nil else { return nil }
                    cookie = p..<(p + 4 + olen)
                }
                p += 4 + olen
            }
            let limit = responder.sizeLimit(EDNS(udpPayloadSize: size), transport)
            shape = 1 << 31 | (dnssecOK ? 1 << 30 : 0) | UInt32(limit)
        }
        lookup = Lookup(name: name, type: type, qclass: qclass, shape: shape)
        nameLength = name.count
    }

    /// Makes a cached reply the reply to `query`: its ID, its RD bit, and its question name
    /// bytes (the client's letter case; answers that point at the question follow it).
    func patch(_ reply: inout [UInt8], from query: [UInt8]) {
        reply[0] = query[0]
        reply[1] = query[1]
        reply[2] = (reply[2] & ~0x01) | (query[2] & 0x01)  // RD
        guard reply.count >= 12 + nameLength, reply[5] == 1 else { return }  // no question echoed
        for k in 12..<(12 + nameLength) { reply[k] = query[k] }
    }
}
