import CNearcastABI
import Foundation
import NearcastAnswers
import NearcastBasics
import NearcastGeo

/// The records of a generation: each name of the answer image as its record, the geo names'
/// answers added to their names', and where each goes in the slots (nearcast_abi.h; NamesTable
/// places, this decides what each record says).
extension FastPath {
    /// The names of a generation, laid out: the records placed and their slots, and what was left out.
    struct Layout {
        /// The records, each with its slot.
        var placed: [(slot: Int, entry: NamesTable.Entry)] = []
        /// The name (index in the image) of each record of `placed`.
        var index: [Int] = []
        /// Slots kept with a tag and no record (NamesTable.Placement).
        var kept: [(slot: Int, tag: UInt32)] = []
        /// Names left out: a full table, a hash collision, or arena room (`leaveOut`).
        var leftOut: Set<Int> = []
        var full = 0
        var collisions = 0
        /// Of `full`, the names left out for want of arena room (`leaveOut`): room that the
        /// generation this one replaces frees once it is switched out.
        var noRoom = 0
        /// Answers a record could not hold.
        var tooBig = 0
        /// Names whose records have NXDOMAIN cleared: the closest enclosers of names left out.
        var unflagged: Set<Int> = []

        /// The names left out, with those of the records at `records` (indexes of `placed`).
        func leftOut(_ records: [Int]) -> Set<Int> { leftOut.union(records.map { index[$0] }) }
    }

    /// The geo names' answers (A and AAAA; a discovery name's SRV is the slow path's) by the
    /// index of their names in `names` (a name the image lacks is added, with no flags).
    static func geoAnswers(_ geo: GeoTable, names: inout [AnswerImage.Name]) -> [Int: [NamesTable.Answer]] {
        let geoNames = geo.allNames.filter { $0.config.type == .a || $0.config.type == .aaaa }
        let wanted = Set(geoNames.map { $0.config.name.lowercased().wire })
        var at: [[UInt8]: Int] = [:]
        for (i, n) in names.enumerated() where wanted.contains(n.name) { at[n.name] = i }
        var out: [Int: [NamesTable.Answer]] = [:]
        for g in geoNames {
            let name = g.config.name.lowercased().wire
            let i =
                at[name]
                ?? {
                    names.append(AnswerImage.Name(name: name))
                    at[name] = names.count - 1
                    return names.count - 1
                }()
            out[i, default: []].append(encodeGeo(g, rankings: geo.rankings.count))
        }
        return out
    }

    /// The geo names' answers for those of `names` that are geo names, by their index.
    static func geoAnswers(_ geo: GeoTable, of names: [AnswerImage.Name]) -> [Int: [NamesTable.Answer]] {
        var at: [[UInt8]: Int] = [:]
        for (i, n) in names.enumerated() where !n.geoTypes.isEmpty { at[n.name] = i }
        var out: [Int: [NamesTable.Answer]] = [:]
        for g in geo.allNames where g.config.type == .a || g.config.type == .aaaa {
            guard let i = at[g.config.name.lowercased().wire] else { continue }
            out[i, default: []].append(encodeGeo(g, rankings: geo.rankings.count))
        }
        return out
    }

    /// Lays `names` out in `table`, leaving out those at `leaveOut`. Every name that exists must
    /// have a record, or a walk would pass over it to an encloser that answers NXDOMAIN: so a name
    /// left out clears NC_NAME_NXDOMAIN on the closest encloser that has one (nearcast_abi.h),
    /// unless it is left out behind a name of its tag, whose record makes the program pass it.
    static func layout(
        _ names: [AnswerImage.Name], geo: [Int: [NamesTable.Answer]], negatives: [[UInt8]: UInt16],
        table: NamesTable, leaveOut: Set<Int> = []
    ) -> Layout {
        let hashes = ParallelWork.map(names, parts: ProcessInfo.processInfo.activeProcessorCount) { part in
            part.map { NamesTable.hash(name: $0.name) }
        }.flatMap { $0 }
        let placement = table.place(hashes, skip: leaveOut)
        let slots = placement.slots
        var out = Layout()
        out.kept = placement.kept
        out.leftOut = Set(slots.indices.filter { slots[$0] == nil })
        out.full = placement.full + leaveOut.count
        out.noRoom = leaveOut.count
        out.collisions = out.leftOut.count - out.full
        var noNXDOMAIN: Set<Int> = []
        if !out.leftOut.isEmpty {
            var index: [[UInt8]: Int] = [:]
            for (i, n) in names.enumerated() { index[n.name] = i }
            for i in out.leftOut where !placement.shadowed.contains(i) {
                var n = names[i].name
                while n.count > 1 {
                    n = Array(n[(Int(n[0]) + 1)...])
                    if let j = index[n], slots[j] != nil {
                        noNXDOMAIN.insert(j)
                        break
                    }
                }
            }
        }
        out.unflagged = noNXDOMAIN
        // The records made on every core (a third of a whole write at 1M names), placed in order.
        let unflagged = noNXDOMAIN
        let made = ParallelWork.map(Array(names.indices), parts: ProcessInfo.processInfo.activeProcessorCount) {
            part in
            // The index of the last anchor met, kept for the names after it: nearly every name of a
            // zone has its apex's (a dictionary lookup of each name's anchor, its bytes hashed one
            // by one, was a tenth of this).
            var last: (anchor: ArraySlice<UInt8>, index: UInt16) = ([], 0)
            return part.compactMap { i -> (slot: Int, entry: NamesTable.Entry, index: Int, tooBig: Int)? in
                guard let slot = slots[i] else { return nil }
                let n = names[i]
                var negative: UInt16 = 0
                if n.apexLength > 0 {
                    let anchor = n.name.suffix(n.apexLength)
                    if !anchor.elementsEqual(last.anchor) { last = (anchor, negatives[Array(anchor)] ?? 0) }
                    negative = last.index
                }
                let (entry, tooBig) = record(
                    n, hash: hashes[i], geo: geo.isEmpty ? [] : geo[i] ?? [], negative: negative,
                    nxdomain: n.nxdomain && (unflagged.isEmpty || !unflagged.contains(i)))
                return (slot, entry, i, tooBig)
            }
        }
        out.placed.reserveCapacity(names.count)
        out.index.reserveCapacity(names.count)
        for part in made {
            for r in part {
                out.placed.append((r.slot, r.entry))
                out.index.append(r.index)
                out.tooBig += r.tooBig
            }
        }
        return out
    }

    /// The record of `n`: its answers (the geo ones added), the index of its negative answer, and
    /// its flags (none without a negative answer; the index is there whatever the flags); NODATA only while every type the name has is
    /// answered in it. Its second value counts the answers the record could not hold.
    static func record(
        _ n: AnswerImage.Name, hash: UInt64? = nil, geo: [NamesTable.Answer], negative: UInt16, nxdomain: Bool
    ) -> (NamesTable.Entry, Int) {
        // The image's answers as the table's, without an array of them made (but beside geo answers).
        let own = n.answers.lazy.map {
            NamesTable.Answer(
                qtype: $0.qtype,
                head: .init(
                    flags: $0.flags, ancount: $0.ancount, nscount: $0.nscount, arcount: $0.arcount,
                    checksum: $0.checksum),
                sections: $0.sections)
        }
        if !geo.isEmpty {
            return record(
                name: n.name, hash: hash, nodata: n.nodata, geoTypes: n.geoTypes, Array(own) + geo, geo: geo,
                negative: negative, nxdomain: nxdomain)
        }
        return record(
            name: n.name, hash: hash, nodata: n.nodata, geoTypes: n.geoTypes, own, geo: geo, negative: negative,
            nxdomain: nxdomain)
    }

    /// `record(_:geo:negative:nxdomain:)` of a name's `answers`, the geo ones among them.
    private static func record<Answers: RandomAccessCollection<NamesTable.Answer>>(
        name: [UInt8], hash: UInt64?, nodata: Bool, geoTypes: [UInt16], _ answers: Answers,
        geo: [NamesTable.Answer], negative: UInt16, nxdomain: Bool
    ) -> (NamesTable.Entry, Int) {
        var nodata = negative != 0 && nodata && geoTypes.allSatisfy { t in geo.contains { $0.qtype == t } }
        let nxdomain = negative != 0 && nxdomain
        func flags() -> UInt8 {
            UInt8(nodata ? NC_NAME_NODATA : 0) | UInt8(nxdomain ? NC_NAME_NXDOMAIN : 0)
        }
        // The index even where no flag uses it: it also says the record's zone (what XDP's
        // answers from it are counted under, ARCHITECTURE §16).
        var (entry, complete) = NamesTable.record(
            name: name, hash: hash, flags: flags(), negative: negative, answers: answers)
        if !complete && nodata {
            nodata = false
            (entry, complete) = NamesTable.record(
                name: name, hash: hash, flags: flags(), negative: negative, answers: answers)
        }
        let kept = Int(entry.bytes[2])
        return (entry, answers.count - kept)
    }

    /// The negative answers of `names` (those of the anchors among them) as records of their own,
    /// each with its index in nc_negatives: the index an anchor had in `index` (the live
    /// generation's), else the lowest free one. Anchors past the indexes there are have none, and
    /// their names' negatives are the slow path's.
    static func negativeAnswers(_ names: [AnswerImage.Name], index: [[UInt8]: UInt16]) -> (
        records: [(index: UInt16, entry: NamesTable.Entry)], index: [[UInt8]: UInt16], zones: [UInt16: [UInt8]],
        leftOut: Int
    ) {
        var out: [[UInt8]: UInt16] = [:]
        var zones: [UInt16: [UInt8]] = [:]
        var records: [(index: UInt16, entry: NamesTable.Entry)] = []
        var leftOut = 0
        let anchors = names.compactMap { n in n.negative.map { (n.name, $0) } }
        let taken = Set(index.values)
        var free = (1..<negativesMax).lazy.filter { !taken.contains(UInt16($0)) }.makeIterator()
        for (name, negative) in anchors {
            guard let i = index[name] ?? free.next().map({ UInt16($0) }) else {
                leftOut += 1
                continue
            }
            out[name] = i
            zones[i] = negative.zone
            let (entry, _) = NamesTable.record(name: name, flags: 0, negative: 0, answers: [encodeNegative(negative)])
            records.append((i, entry))
        }
        return (records, out, zones, leftOut)
    }

    /// A negative answer (AnswerImage+Negative.swift) as the answer of its record: kind
    /// NC_KIND_NEGATIVE under NC_QTYPE_NEGATIVE, its struct nc_nx_head before the sections.
    static func encodeNegative(_ n: AnswerImage.Negative) -> NamesTable.Answer {
        var head = nc_nx_head()
        head.zone = NamesTable.hash(name: n.zone)
        head.qname_len = UInt16(n.questionLength)
        head.nptrs = UInt16(n.pointers.count)
        var zeroed = n.sections
        withUnsafeMutableBytes(of: &head.ptr_at) { buf in
            for (i, at) in n.pointers.enumerated() {
                buf.storeBytes(of: UInt16(at), toByteOffset: 2 * i, as: UInt16.self)
                zeroed[at] = 0
                zeroed[at + 1] = 0
            }
        }
        head.csum = AnswerImage.onesComplementSum(zeroed)
        return NamesTable.Answer(
            qtype: UInt16(NC_QTYPE_NEGATIVE),
            head: .init(flags: n.flags, nscount: n.nscount, kind: UInt8(NC_KIND_NEGATIVE.rawValue)),
            sections: bytes(of: head) + n.sections)
    }
}
