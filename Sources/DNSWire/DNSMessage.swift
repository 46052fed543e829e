/// A whole DNS message. The OPT record is held apart as `edns`; `additional` holds the other records.
public struct DNSMessage: Hashable, Sendable {
    public var header: DNSHeader
    public var questions: [DNSQuestion]
    public var answers: [ResourceRecord]
    public var authority: [ResourceRecord]
    public var additional: [ResourceRecord]
    public var edns: EDNS?

    public init(
        header: DNSHeader = DNSHeader(), questions: [DNSQuestion] = [], answers: [ResourceRecord] = [],
        authority: [ResourceRecord] = [], additional: [ResourceRecord] = [], edns: EDNS? = nil
    ) {
        self.header = header
        self.questions = questions
        self.answers = answers
        self.authority = authority
        self.additional = additional
        self.edns = edns
    }

    /// The full 12-bit response code (header bits plus the OPT extension).
    ///
    /// Setting a code above 15 on a message without EDNS adds an OPT record, the only place the
    /// upper bits can go (RFC 6891 §6.1.3).
    public var rcode: RCode {
        get { RCode(UInt16(edns?.extendedRCode ?? 0) << 4 | UInt16(header.rcodeLow)) }
        set {
            header.rcodeLow = UInt8(newValue.rawValue & 0x0F)
            if edns == nil && newValue.rawValue > 15 { edns = EDNS() }
            if edns != nil { edns!.extendedRCode = UInt8(truncatingIfNeeded: newValue.rawValue >> 4) }
        }
    }
}

extension DNSMessage {
    /// Parses a message strictly. Any byte string yields a message or a `DNSWireError`.
    public init(wire: [UInt8]) throws(DNSWireError) {
        var r = WireReader(wire)
        var h = DNSHeader()
        h.id = try r.u16()
        h.flags = try r.u16()
        let qd = Int(try r.u16())
        let an = Int(try r.u16())
        let ns = Int(try r.u16())
        let ar = Int(try r.u16())
        // Each question is at least 5 bytes, each record at least 11: reject absurd counts early.
        if qd * 5 + (an + ns + ar) * 11 > r.remaining { throw .truncated(offset: r.offset, needed: qd * 5) }
        var questions: [DNSQuestion] = []
        questions.reserveCapacity(qd)
        for _ in 0..<qd {
            let name = try r.name()
            let type = RRType(try r.u16())
            let qclass = RRClass(try r.u16())
            questions.append(DNSQuestion(name: name, type: type, qclass: qclass))
        }
        var edns: EDNS?
        var tsigAt: Int?
        func section(_ count: Int, additional: Bool) throws(DNSWireError) -> [ResourceRecord] {
            var out: [ResourceRecord] = []
            out.reserveCapacity(count)
            for _ in 0..<count {
                let start = r.offset
                // RFC 8945 §5.1: a TSIG record is the last record of the message, or the message is
                // malformed.
                if let tsigAt { throw .misplacedTSIG(offset: tsigAt) }
                let name = try r.name()
                let type = RRType(try r.u16())
                if type == .tsig { tsigAt = start }
                if type == .opt {
                    guard additional else { throw .badOPT(offset: start, reason: "OPT outside the additional section") }
                    guard edns == nil else { throw .badOPT(offset: start, reason: "more than one OPT record") }
                    guard name.isRoot else { throw .badOPT(offset: start, reason: "OPT owner is not the root") }
                    edns = try r.opt()
                    continue
                }
                let rrClass = RRClass(try r.u16())
                let ttl = try r.u32()
                // RFC 2136 §2.4, §2.5: a prerequisite or update of class ANY or NONE names an RRset
                // or a name with no RDATA (any type).
                let rdata =
                    (rrClass == .any || rrClass == .none) && r.peekU16() == 0
                    ? try r.emptyRData() : try r.rdata(type: type)
                out.append(ResourceRecord(name: name, type: type, rrClass: rrClass, ttl: ttl, rdata: rdata))
            }
            return out
        }
        let answers = try section(an, additional: false)
        let authority = try section(ns, additional: false)
        let additional = try section(ar, additional: true)
        if r.remaining > 0 { throw .trailingBytes(offset: r.offset, count: r.remaining) }
        if let tsigAt, additional.last?.type != .tsig { throw .misplacedTSIG(offset: tsigAt) }
        self.init(
            header: h, questions: questions, answers: answers, authority: authority, additional: additional,
            edns: edns)
    }

    /// Encodes the message with name compression.
    public func serialize() throws(DNSWireError) -> [UInt8] {
        var w = WireWriter()
        try write(into: &w)
        return w.bytes
    }

    /// Encodes the message into `w`, which must be empty.
    public func write(into w: inout WireWriter) throws(DNSWireError) {
        if rcode.rawValue > 15 && edns == nil { throw .unencodable("rcode \(rcode) needs EDNS") }
        let arCount = additional.count + (edns == nil ? 0 : 1)
        for c in [questions.count, answers.count, authority.count, arCount] where c > 0xFFFF {
            throw .unencodable("section with \(c) entries")
        }
        w.u16(header.id)
        w.u16(header.flags)
        w.u16(UInt16(questions.count))
        w.u16(UInt16(answers.count))
        w.u16(UInt16(authority.count))
        w.u16(UInt16(arCount))
        for q in questions {
            w.name(q.name, compress: true)
            w.u16(q.type.rawValue)
            w.u16(q.qclass.rawValue)
        }
        for rr in answers { try w.record(rr) }
        for rr in authority { try w.record(rr) }
        // A TSIG record goes last, after the OPT record (RFC 8945 §5.1).
        for rr in additional where rr.type != .tsig { try w.record(rr) }
        if let edns { try w.opt(edns) }
        for rr in additional where rr.type == .tsig { try w.record(rr) }
        if w.count > 65535 { throw .unencodable("message of \(w.count) bytes") }
    }
}

extension WireReader {
    mutating func opt() throws(DNSWireError) -> EDNS {
        let size = try u16()
        let ttl = try u32()
        let rdlen = Int(try u16())
        try need(rdlen)
        let end = offset + rdlen
        var options: [EDNSOption] = []
        while offset < end {
            guard end - offset >= 4 else { throw .badOPT(offset: offset, reason: "option header runs past RDATA") }
            let code = try u16()
            let len = Int(try u16())
            guard len <= end - offset else { throw .badOPT(offset: offset, reason: "option \(code) runs past RDATA") }
            options.append(EDNSOption(code: code, data: try take(len)))
        }
        return EDNS(
            udpPayloadSize: size, extendedRCode: UInt8(ttl >> 24), version: UInt8((ttl >> 16) & 0xFF),
            dnssecOK: ttl & 0x8000 != 0, otherFlags: UInt16(ttl & 0x7FFF), options: options)
    }

    /// Reads RDLENGTH and the RDATA of `type`; the RDATA must use exactly RDLENGTH bytes.
    mutating func rdata(type: RRType) throws(DNSWireError) -> RData {
        let rdlen = Int(try u16())
        try need(rdlen)
        let start = offset
        let end = offset + rdlen
        func bad(_ why: String) -> DNSWireError { .badRData(type: type.rawValue, offset: start, reason: why) }
        var sub = WireReader(bytes)
        sub.offset = start
        // Names inside RDATA may be compressed (pointing anywhere earlier), but must end within RDATA.
        let value: RData
        switch type {
        case .a:
            guard rdlen == 4 else { throw bad("A needs 4 bytes, has \(rdlen)") }
            value = .a(IPv4Address(bytes[start], bytes[start + 1], bytes[start + 2], bytes[start + 3]))
            sub.offset = end
        case .aaaa:
            guard rdlen == 16 else { throw bad("AAAA needs 16 bytes, has \(rdlen)") }
            value = .aaaa(IPv6Address(bytes: Array(bytes[start..<end]))!)
            sub.offset = end
        case .ns, .cname, .ptr:
            let n = try sub.name()
            value = type == .ns ? .ns(n) : type == .cname ? .cname(n) : .ptr(n)
        case .soa:
            let m = try sub.name()
            let rn = try sub.name()
            guard end - sub.offset == 20 else { throw bad("SOA needs 20 bytes of counters") }
            value = .soa(
                .init(
                    mname: m, rname: rn, serial: try sub.u32(), refresh: try sub.u32(), retry: try sub.u32(),
                    expire: try sub.u32(), minimum: try sub.u32()))
        case .mx:
            guard rdlen >= 3 else { throw bad("MX too short") }
            let p = try sub.u16()
            value = .mx(preference: p, exchange: try sub.name())
        case .srv:
            guard rdlen >= 7 else { throw bad("SRV too short") }
            let p = try sub.u16()
            let wgt = try sub.u16()
            let port = try sub.u16()
            value = .srv(priority: p, weight: wgt, port: port, target: try sub.name())
        case .txt:
            guard rdlen >= 1 else { throw bad("TXT needs at least one string") }
            var strings: [[UInt8]] = []
            while sub.offset < end {
                let n = Int(try sub.u8())
                guard n <= end - sub.offset else { throw bad("character-string runs past RDATA") }
                strings.append(try sub.take(n))
            }
            value = .txt(strings)
        case .caa:
            guard rdlen >= 2 else { throw bad("CAA too short") }
            let flags = try sub.u8()
            let tlen = Int(try sub.u8())
            guard tlen >= 1, tlen <= end - sub.offset else { throw bad("CAA tag length \(tlen) invalid") }
            let tag = try sub.take(tlen)
            value = .caa(flags: flags, tag: tag, value: try sub.take(end - sub.offset))
        default:
            value = .unknown(Array(bytes[start..<end]))
            sub.offset = end
        }
        guard sub.offset == end else { throw bad("RDATA length \(rdlen) does not match its content") }
        offset = end
        return value
    }
}

extension WireWriter {
    /// Writes one record. Names in NS, CNAME, PTR, SOA and MX RDATA are compressed (RFC 3597 §4);
    /// others are not.
    public mutating func record(_ rr: ResourceRecord) throws(DNSWireError) {
        name(rr.name, compress: true)
        try recordAfterOwner(type: rr.type, rrClass: rr.rrClass, ttl: rr.ttl, rdata: rr.rdata)
    }

    /// Writes a record's type, class, TTL and RDATA: all of it but its owner name, which the
    /// caller has written (or pointed at).
    public mutating func recordAfterOwner(type: RRType, rrClass: RRClass, ttl: UInt32, rdata: RData)
        throws(DNSWireError)
    {
        u16(type.rawValue)
        u16(rrClass.rawValue)
        u32(ttl)
        let lenAt = count
        u16(0)
        let start = count
        switch rdata {
        case .a(let a): append(a.array)
        case .aaaa(let a): append(a.bytes)
        case .ns(let n), .cname(let n), .ptr(let n): name(n, compress: true)
        case .soa(let s):
            name(s.mname, compress: true)
            name(s.rname, compress: true)
            u32(s.serial)
            u32(s.refresh)
            u32(s.retry)
            u32(s.expire)
            u32(s.minimum)
        case .mx(let p, let n):
            u16(p)
            name(n, compress: true)
        case .txt(let strings):
            for s in strings {
                guard s.count <= 255 else { throw .unencodable("TXT string of \(s.count) bytes") }
                u8(UInt8(s.count))
                append(s)
            }
        case .srv(let p, let wgt, let port, let t):
            u16(p)
            u16(wgt)
            u16(port)
            name(t, compress: false)
        case .caa(let flags, let tag, let value):
            guard !tag.isEmpty, tag.count <= 255 else { throw .unencodable("CAA tag of \(tag.count) bytes") }
            u8(flags)
            u8(UInt8(tag.count))
            append(tag)
            append(value)
        case .unknown(let bytes): append(bytes)
        }
        let len = count - start
        guard len <= 0xFFFF else { throw .unencodable("RDATA of \(len) bytes") }
        patch16(at: lenAt, UInt16(len))
    }

    mutating func opt(_ e: EDNS) throws(DNSWireError) {
        u8(0)
        u16(RRType.opt.rawValue)
        u16(e.udpPayloadSize)
        var ttl = UInt32(e.extendedRCode) << 24 | UInt32(e.version) << 16
        if e.dnssecOK { ttl |= 0x8000 }
        ttl |= UInt32(e.otherFlags & 0x7FFF)
        u32(ttl)
        let lenAt = count
        u16(0)
        let start = count
        for o in e.options {
            guard o.data.count <= 0xFFFF else { throw .unencodable("EDNS option of \(o.data.count) bytes") }
            u16(o.code)
            u16(UInt16(o.data.count))
            append(o.data)
        }
        patch16(at: lenAt, UInt16(count - start))
    }
}

extension DNSMessage {
    /// The offset in `wire` where the message's last record begins (nil: no records). A transaction
    /// signature covers the message up to there (RFC 8945 §4.3.3), so a verifier needs the bytes
    /// as they came, not a re-encoding.
    public static func lastRecordOffset(in wire: [UInt8]) throws(DNSWireError) -> Int? {
        var r = WireReader(wire)
        _ = try r.take(4)
        let qd = Int(try r.u16())
        let records = Int(try r.u16()) + Int(try r.u16()) + Int(try r.u16())
        for _ in 0..<qd {
            _ = try r.name()
            _ = try r.take(4)
        }
        var last: Int?
        for _ in 0..<records {
            last = r.offset
            _ = try r.name()
            _ = try r.take(8)
            _ = try r.take(Int(try r.u16()))
        }
        return last
    }
}
