import DNSWire
import NearcastTSIG
import NearcastZones

/// The messages of a zone transfer out (AXFR, RFC 5936; IXFR, RFC 1995), made one at a time as
/// the connection takes them: a zone of millions of names is never held as messages. Each message
/// carries as many records as fit in `messageLimit` octets, names compressed (pointers reach the
/// whole message at that size), the question in the first alone (RFC 5936 §2.2.1), and, for a
/// signed request, a TSIG record on every message (RFC 8945 §5.3.1). It holds the zone as it was
/// when the transfer began, whatever is served meanwhile.
public struct TransferMessages: Sendable {
    /// The most octets of a message, TSIG record included: pointers reach offsets below 16,384.
    public static let messageLimit = 16_384

    /// What a transfer sends: the whole zone, its changes since a serial, or its SOA alone.
    public enum Form: String, Sendable {
        case axfr = "AXFR"
        case ixfr = "IXFR"
        case upToDate = "SOA only"
    }

    public let form: Form
    /// The zone, and the serial it is at.
    public let origin: DNSName
    public let serial: UInt32
    var records: RecordSequence
    let header: DNSHeader
    let question: DNSQuestion
    /// Our OPT record, when the request had one: on every message.
    let opt: [UInt8]
    var signer: TSIGStreamSigner?
    var first = true
    var held: ResourceRecord?
    public private(set) var isDone = false
    /// Records sent so far, and messages.
    public private(set) var recordCount = 0
    public private(set) var messageCount = 0

    /// The whole zone: its SOA, every RRset (and `extra`, records it serves from elsewhere), its
    /// SOA again.
    public static func axfr(
        _ zone: Zone, extra: [ResourceRecord] = [], header: DNSHeader, question: DNSQuestion, opt: [UInt8] = [],
        signer: TSIGStreamSigner?
    ) -> TransferMessages {
        let soa = zone.soa.records()
        return TransferMessages(
            form: .axfr, origin: zone.origin, serial: zone.serial,
            records: RecordSequence(head: soa + extra, sets: zone.rrsets.makeIterator(), skip: zone.origin, tail: soa),
            header: header, question: question, opt: opt, signer: signer)
    }

    /// The changes from a secondary's serial to `zone`'s (RFC 1995 §4): the new SOA, then each
    /// change as its old SOA, the records it removes, its new SOA and the records it adds, then
    /// the new SOA again. A record both removed and added (an RRset changed in part) is in neither.
    public static func ixfr(
        _ zone: Zone, changes: ArraySlice<ZoneChangeset>, header: DNSHeader, question: DNSQuestion,
        opt: [UInt8] = [], signer: TSIGStreamSigner?
    ) -> TransferMessages {
        let soa = zone.soa.records()
        var list = soa
        for c in changes {
            let (removed, added) = Self.net(c.removed, c.added)
            let oldSOA = c.removed.first { $0.type == .soa } ?? Self.soa(zone, serial: c.serialBefore)
            let newSOA = c.added.first { $0.type == .soa } ?? Self.soa(zone, serial: c.serialAfter)
            list.append(oldSOA)
            list += removed.filter { $0.type != .soa }
            list.append(newSOA)
            list += added.filter { $0.type != .soa }
        }
        list += soa
        return TransferMessages(
            form: .ixfr, origin: zone.origin, serial: zone.serial,
            records: RecordSequence(head: list, sets: nil, skip: zone.origin, tail: []), header: header,
            question: question, opt: opt, signer: signer)
    }

    /// One message of the zone's SOA alone: an IXFR from the serial served or a newer one.
    public static func upToDate(
        _ zone: Zone, header: DNSHeader, question: DNSQuestion, opt: [UInt8] = [], signer: TSIGStreamSigner?
    ) -> TransferMessages {
        TransferMessages(
            form: .upToDate, origin: zone.origin, serial: zone.serial,
            records: RecordSequence(head: zone.soa.records(), sets: nil, skip: zone.origin, tail: []),
            header: header, question: question, opt: opt, signer: signer)
    }

    /// The next message, signed when the request was; nil once all have been made.
    public mutating func next() -> [UInt8]? {
        guard !isDone else { return nil }
        let room = Self.messageLimit - (signer?.overhead ?? 0) - opt.count
        var w = WireWriter(capacity: Self.messageLimit, indexed: true)
        var h = header
        h.qr = true
        h.aa = true
        w.u16(h.id)
        w.u16(h.flags)
        w.u16(first ? 1 : 0)
        w.u16(0)  // ANCOUNT, once known
        w.u16(0)
        w.u16(opt.isEmpty ? 0 : 1)
        if first {
            w.name(question.name, compress: false)
            w.u16(question.type.rawValue)
            w.u16(question.qclass.rawValue)
        }
        var count = 0
        while let rr = held ?? records.next() {
            held = nil
            let before = w.count
            do { try w.record(rr) } catch {
                continue  // not encodable: a zone loaded holds none
            }
            if w.count > room && count > 0 {
                w.cut(to: before)
                held = rr
                break
            }
            count += 1
        }
        if count == 0 && !first {
            isDone = true
            return nil
        }
        if held == nil && records.isExhausted { isDone = true }
        first = false
        w.patch16(at: 6, UInt16(count))
        w.append(opt)
        recordCount += count
        messageCount += 1
        return signer?.sign(w.bytes) ?? w.bytes
    }

    /// `removed` and `added` without the records found in both.
    static func net(_ removed: [ResourceRecord], _ added: [ResourceRecord]) -> ([ResourceRecord], [ResourceRecord]) {
        let both = Set(removed.map(Key.init)).intersection(added.map(Key.init))
        guard !both.isEmpty else { return (removed, added) }
        return (removed.filter { !both.contains(Key($0)) }, added.filter { !both.contains(Key($0)) })
    }

    /// A record as the wire tells it: its owner's letter case and its TTL count.
    struct Key: Hashable {
        var owner: [UInt8]
        var type: RRType
        var ttl: UInt32
        var rdata: RData
        init(_ r: ResourceRecord) { (owner, type, ttl, rdata) = (r.name.wire, r.type, r.ttl, r.rdata) }
    }

    /// The zone's SOA with `serial` (a change whose SOA records were not kept).
    static func soa(_ zone: Zone, serial: UInt32) -> ResourceRecord {
        var r = zone.soa.records()[0]
        if case .soa(var f) = r.rdata {
            f.serial = serial
            r.rdata = .soa(f)
        }
        return r
    }
}

/// The records of a transfer in order: `head`, then each RRset of `sets` but the SOA at `skip`
/// (the apex), then `tail`.
struct RecordSequence: Sendable {
    var head: ArraySlice<ResourceRecord>
    var sets: Zone.RRSets.Iterator?
    let skip: DNSName
    var tail: ArraySlice<ResourceRecord>
    /// The RRset being sent, and its next record's index (no array of its records is made).
    var set: RRSet?
    var index = 0

    init(head: [ResourceRecord], sets: Zone.RRSets.Iterator?, skip: DNSName, tail: [ResourceRecord]) {
        self.head = head[...]
        self.sets = sets
        self.skip = skip
        self.tail = tail[...]
    }

    var isExhausted: Bool { head.isEmpty && set == nil && sets == nil && tail.isEmpty }

    mutating func next() -> ResourceRecord? {
        if let r = head.popFirst() { return r }
        while set == nil, sets != nil {
            guard let s = sets!.next() else {
                sets = nil
                break
            }
            if s.type == .soa && s.name == skip || s.rdatas.isEmpty { continue }
            set = s
            index = 0
        }
        if let s = set {
            let r = ResourceRecord(name: s.name, type: s.type, ttl: s.ttl(of: s.rdatas[index]), rdata: s.rdatas[index])
            index += 1
            if index == s.rdatas.count { set = nil }
            return r
        }
        return tail.popFirst()
    }
}
