import DNSWire

/// Transaction signatures (RFC 8945) as a server without keys answers them. nearcast has no TSIG
/// keys yet, so every signed query names a key it does not have: it is answered NOTAUTH with an
/// unsigned TSIG record whose error is BADKEY (§5.2.1, §5.3.2), never with data, and a client that
/// signs its queries can tell. A TSIG record anywhere but last is refused as FORMERR when the
/// message is read (DNSMessage). The XDP program passes every query with a TSIG record.
enum TSIGReply {
    /// The TSIG error for a key the server does not have.
    static let badKey: UInt16 = 17

    /// The reply to a query whose last record is `tsig`; nil when its RDATA is not a TSIG's (the
    /// caller answers FORMERR).
    static func unknownKey(_ reply: DNSMessage, tsig: ResourceRecord) -> DNSMessage? {
        guard case .unknown(let rdata) = tsig.rdata, let (algorithm, n) = DNSName.uncompressed(rdata) else {
            return nil
        }
        // Time signed (6), fudge (2), MAC size (2), MAC, original ID (2), error (2), other length (2), other.
        var i = n
        guard rdata.count >= i + 10 else { return nil }
        let timeAndFudge = Array(rdata[i..<(i + 8)])
        let macSize = Int(rdata[i + 8]) << 8 | Int(rdata[i + 9])
        i += 10 + macSize
        guard rdata.count >= i + 6 else { return nil }
        let originalID = Array(rdata[i..<(i + 2)])
        let otherLength = Int(rdata[i + 4]) << 8 | Int(rdata[i + 5])
        guard rdata.count == i + 6 + otherLength else { return nil }
        var r = reply
        r.rcode = .notAuth
        r.additional = [
            ResourceRecord(
                name: tsig.name, type: .tsig, rrClass: .any, ttl: 0,
                rdata: .unknown(
                    algorithm.wire + timeAndFudge + [0, 0] + originalID + [
                        UInt8(badKey >> 8), UInt8(badKey & 0xFF), 0, 0,
                    ]
                ))
        ]
        return r
    }
}
