import DNSWire

/// How a server answers a signed query (RFC 8945 §5.2, §5.3): it checks the key, the MAC and the
/// time, in that order, and signs its reply with the key the query used.
public enum TSIGVerdict: Sendable {
    /// The signature verifies: answer `unsigned` (the query without its TSIG record) as any
    /// query, and sign that reply with `signer`.
    case verified(unsigned: [UInt8], signer: TSIGReplySigner)
    /// Answer NOTAUTH, its TSIG record from `signer`: BADKEY and BADSIG unsigned, BADTIME signed.
    case refused(TSIGReplySigner)
    /// The TSIG record cannot be read, or its MAC is longer than the algorithm's or shorter than
    /// the shortest allowed: FORMERR, without a TSIG record (§5.2, §5.2.2.1).
    case malformed
}

extension TSIGKeyring {
    /// The fudge of our replies' TSIG records, in seconds (RFC 8945 §10 recommends 300).
    public static let fudge: UInt16 = 300

    /// Checks `query`, whose last record is `tsig`, at `now` (seconds since 1970).
    public func verify(_ query: [UInt8], tsig: ResourceRecord, now: UInt64) -> TSIGVerdict {
        guard let request = TSIGRecord(tsig), let at = try? DNSMessage.lastRecordOffset(in: query), at >= 12 else {
            return .malformed
        }
        guard let key = key(named: request.keyName), TSIGAlgorithm(name: request.algorithm) == key.algorithm else {
            return .refused(TSIGReplySigner(request: request, key: nil, error: .badKey, now: now))
        }
        let algorithm = key.algorithm
        guard (algorithm.shortestMAC...algorithm.macLength).contains(request.mac.count) else { return .malformed }
        var unsigned = Array(query[0..<at])
        let arCount = (UInt16(unsigned[10]) << 8 | UInt16(unsigned[11])) - 1
        unsigned[10] = UInt8(arCount >> 8)
        unsigned[11] = UInt8(arCount & 0xFF)
        var covered = unsigned
        covered[0] = UInt8(request.originalID >> 8)
        covered[1] = UInt8(request.originalID & 0xFF)
        let expected = algorithm.mac(covered + request.variables(), secret: key.secret)
        guard Self.equalInConstantTime(expected.prefix(request.mac.count), request.mac) else {
            return .refused(TSIGReplySigner(request: request, key: nil, error: .badSig, now: now))
        }
        let skew = now > request.timeSigned ? now - request.timeSigned : request.timeSigned - now
        guard skew <= UInt64(request.fudge) else {
            return .refused(TSIGReplySigner(request: request, key: key, error: .badTime, now: now))
        }
        return .verified(
            unsigned: unsigned, signer: TSIGReplySigner(request: request, key: key, error: .verified, now: now))
    }

    static func equalInConstantTime(_ a: ArraySlice<UInt8>, _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var diff: UInt8 = 0
        for (x, y) in zip(a, b) { diff |= x ^ y }
        return diff == 0
    }
}

/// Adds the TSIG record to the reply to a signed query.
public struct TSIGReplySigner: Sendable {
    let request: TSIGRecord
    /// The key that signs; nil: the reply's TSIG record is unsigned (BADKEY, BADSIG; §5.3.2).
    let key: TSIGKey?
    public let error: TSIGError
    /// The server's clock when the query came, seconds since 1970.
    let now: UInt64

    /// Bytes the TSIG record adds to a reply, which the reply must leave room for.
    public var overhead: Int { record(mac: [UInt8](repeating: 0, count: key?.algorithm.macLength ?? 0)).wire.count }

    /// `reply` (a whole message whose ID is the query's) with the TSIG record appended last.
    public func sign(_ reply: [UInt8]) -> [UInt8] { signed(reply).message }

    /// `reply` signed, and the MAC it was signed with (empty when unsigned).
    func signed(_ reply: [UInt8]) -> (message: [UInt8], mac: [UInt8]) {
        guard reply.count >= 12 else { return (reply, []) }
        var record = record(mac: [])
        if let key {
            let covered = TSIGRecord.withID(reply, request.originalID)
            record.mac = key.algorithm.mac(
                TSIGRecord.lengthPrefixed(request.mac) + covered + record.variables(), secret: key.secret)
        }
        return (record.appended(to: reply), record.mac)
    }

    /// The reply's TSIG record before its MAC. A signed reply carries our time, except BADTIME,
    /// which echoes the query's time and gives ours in Other Data (§5.2.3); an unsigned one echoes
    /// the query's time. The fudge is always ours, as BIND and Knot send it.
    func record(mac: [UInt8]) -> TSIGRecord {
        var r = TSIGRecord(
            keyName: request.keyName, algorithm: request.algorithm, timeSigned: now, fudge: TSIGKeyring.fudge, mac: mac,
            originalID: request.originalID, error: error, otherData: [])
        if key == nil {
            r.timeSigned = request.timeSigned
        } else if error == .badTime {
            r.timeSigned = request.timeSigned
            r.otherData = TSIGRecord.time48(now)
        }
        return r
    }
}

extension TSIGKey {
    /// `query` signed with this key at `now`, as a client signs (§4.3.3): a TSIG record appended
    /// last, its MAC over the message and the TSIG variables.
    public func sign(query: [UInt8], now: UInt64, fudge: UInt16 = TSIGKeyring.fudge) -> [UInt8] {
        guard query.count >= 12 else { return query }
        let id = UInt16(query[0]) << 8 | UInt16(query[1])
        var record = TSIGRecord(
            keyName: name, algorithm: algorithm.name, timeSigned: now, fudge: fudge, mac: [], originalID: id,
            error: .verified, otherData: [])
        record.mac = algorithm.mac(query + record.variables(), secret: secret)
        return record.appended(to: query)
    }
}

/// Signs the messages of a reply that takes more than one (a zone transfer, RFC 8945 §5.3.1):
/// the first as `TSIGReplySigner` signs a single reply, each later one over the MAC before it,
/// the message and the timers alone. Every message is signed (the RFC allows gaps of up to 99;
/// BIND and Knot accept either).
public struct TSIGStreamSigner: Sendable {
    var first: TSIGReplySigner
    /// The MAC of the message signed last; nil before the first.
    var priorMAC: [UInt8]?

    public init(_ signer: TSIGReplySigner) { first = signer }

    /// Bytes the TSIG record adds to each message.
    public var overhead: Int { first.overhead }

    /// `message` with its TSIG record appended last.
    public mutating func sign(_ message: [UInt8]) -> [UInt8] {
        guard let prior = priorMAC, let key = first.key, message.count >= 12 else {
            let (signed, mac) = first.signed(message)
            priorMAC = mac
            return signed
        }
        var record = first.record(mac: [])
        let covered = TSIGRecord.withID(message, first.request.originalID)
        record.mac = key.algorithm.mac(
            TSIGRecord.lengthPrefixed(prior) + covered + record.timers, secret: key.secret)
        priorMAC = record.mac
        return record.appended(to: message)
    }
}

/// Checks the messages of a signed reply that takes more than one (a zone transfer in, RFC 8945
/// §5.3.1), as a client: the first over the request's MAC, each later signed one over the MAC
/// before it, the unsigned messages since and its timers. Up to 99 unsigned messages may come
/// between signed ones; the last message must be signed.
public struct TSIGStreamVerifier: Sendable {
    let key: TSIGKey
    var priorMAC: [UInt8]
    var first = true
    /// The unsigned messages since the last signed one, as they came.
    var unsigned: [UInt8] = []
    var unsignedCount = 0

    /// For the replies to a request signed by `key` with `requestMAC`.
    public init(key: TSIGKey, requestMAC: [UInt8]) {
        self.key = key
        priorMAC = requestMAC
    }

    /// Why a message does not verify.
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    /// Whether the last message checked was signed (a transfer must end on one).
    public var lastWasSigned: Bool { unsignedCount == 0 && !first }

    /// Checks `message` (the bytes as they came), at `now` (seconds since 1970).
    public mutating func check(_ message: [UInt8], now: UInt64) throws(Failure) {
        let m: DNSMessage
        let found: Int?
        do {
            m = try DNSMessage(wire: message)
            found = try DNSMessage.lastRecordOffset(in: message)
        } catch { throw Failure(description: "a message that does not read: \(error)") }
        guard let at = found, at >= 12, let last = m.additional.last, last.type == .tsig else {
            guard !first else { throw Failure(description: "the first message is not signed") }
            unsignedCount += 1
            guard unsignedCount <= 99 else { throw Failure(description: "more than 99 messages without a signature") }
            unsigned += message
            return
        }
        guard let record = TSIGRecord(last) else { throw Failure(description: "a TSIG record that does not read") }
        guard record.keyName == key.name, TSIGAlgorithm(name: record.algorithm) == key.algorithm else {
            throw Failure(description: "signed with \(record.keyName), not \(key.name)")
        }
        guard record.error == .verified else { throw Failure(description: "the server says \(record.error)") }
        var covered = TSIGRecord.withID(Array(message[0..<at]), record.originalID)
        let arCount = (UInt16(covered[10]) << 8 | UInt16(covered[11])) &- 1
        covered[10] = UInt8(arCount >> 8)
        covered[11] = UInt8(arCount & 0xFF)
        let tail = first ? record.variables() : record.timers
        let expected = key.algorithm.mac(
            TSIGRecord.lengthPrefixed(priorMAC) + unsigned + covered + tail, secret: key.secret)
        guard TSIGKeyring.equalInConstantTime(expected.prefix(record.mac.count), record.mac),
            record.mac.count >= key.algorithm.shortestMAC
        else { throw Failure(description: "the MAC does not verify (BADSIG)") }
        let skew = now > record.timeSigned ? now - record.timeSigned : record.timeSigned - now
        guard skew <= UInt64(record.fudge) else { throw Failure(description: "signed at a time off by \(skew) s") }
        priorMAC = record.mac
        unsigned = []
        unsignedCount = 0
        first = false
    }
}

extension TSIGKey {
    /// The MAC of `signed`, a query this key signed (`sign(query:now:)`): what the first reply's
    /// MAC covers.
    public static func mac(ofSigned signed: [UInt8]) -> [UInt8]? {
        guard let m = try? DNSMessage(wire: signed), let last = m.additional.last else { return nil }
        return TSIGRecord(last)?.mac
    }
}
