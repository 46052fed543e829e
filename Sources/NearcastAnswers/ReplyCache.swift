import DNSWire

/// Replies already computed, for questions that repeat.
///
/// Zone data does not change while it is loaded, so two queries that differ only in their ID, the
/// letter case of the question and the RD and CD bits get the same reply bytes, with those fields
/// patched. Only plain queries are cached (see `CacheKey.init?(query:transport:responder:)`); every
/// other query takes the full path. One cache per event loop, so no locking; it is emptied when full,
/// which bounds its memory under a flood of distinct names.
public struct ReplyCache {
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
        if var reply = entries[key.lookup] {
            key.patch(&reply, from: query)
            return reply
        }
        guard let reply = responder.respond(to: query, transport: transport, client: client) else { return nil }
        if entries.count >= capacity { entries.removeAll(keepingCapacity: true) }
        entries[key.lookup] = reply
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

    /// A key for `query` when it is plain: QR=0, OPCODE=0, QDCOUNT=1, ANCOUNT=NSCOUNT=0, an
    /// uncompressed question name that has no geo name, and either nothing more or exactly one
    /// well-formed EDNS(0) OPT record with no Client Subnet option (nor a COOKIE, when cookies are
    /// on), then the end of the message.
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
            p += 11
            guard p + rdlen == q.count else { return nil }
            while p < q.count {
                guard p + 4 <= q.count else { return nil }
                let code = UInt16(q[p]) << 8 | UInt16(q[p + 1])
                let olen = Int(q[p + 2]) << 8 | Int(q[p + 3])
                // A Client Subnet echo, and a cookie when cookies are on, are the client's own.
                guard code != EDNSOption.clientSubnetCode, code != EDNSOption.cookieCode || responder.cookies == nil,
                    p + 4 + olen <= q.count
                else { return nil }
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
