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
        /// Each name's hash, and its slot (nil: left out).
        var hashes: [UInt64] = []
        var slots: [Int?] = []

        /// The names left out, with those of the records at `records` (indexes of `placed`).
        func leftOut(_ records: [Int]) -> Set<Int> { leftOut.union(records.map { index[$0] }) }
    }

    /// The geo names of type A and AAAA, A first: a name's record is the same bytes from compile to
    /// compile (the table's own order is its dictionary's, which differs between compiles), so
    /// that a record a new compile leaves alone is not written again.
    static func addressNames(_ geo: GeoTable) -> [GeoTable.Name] {
        geo.allNames.filter { $0.config.type == .a || $0.config.type == .aaaa }
            .sorted { $0.config.type.rawValue < $1.config.type.rawValue }
    }

    /// The geo names' answers (A and AAAA; a discovery name's SRV is the slow path's) by the
    /// index of their names in `names` (a name the image lacks is added, with no flags).
    static func geoAnswers(_ geo: GeoTable, names: inout [AnswerImage.Name]) -> [Int: [NamesTable.Answer]] {
        let geoNames = Self.addressNames(geo)
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
        for g in Self.addressNames(geo) {
            guard let i = at[g.config.name.lowercased().wire] else { continue }
            out[i, default: []].append(encodeGeo(g, rankings: geo.rankings.count))
        }
        return out
    }

    /// Lays `names` out in `table` (`slotting`) and makes their records, on every core (a third
    /// of a whole write at 1M names), placed in order.
    static func layout(
        _ names: [AnswerImage.Name], geo: [Int: [NamesTable.Answer]], negatives: [[UInt8]: UInt16],
        table: NamesTable, leaveOut: Set<Int> = []
    ) -> Layout {
        let slotted = slotting(names, table: table, leaveOut: leaveOut)
        return withRecords(
            slotted, RecordSources(names: names, geo: geo, negatives: negatives, unflagged: slotted.unflagged))
    }

    /// `layout`, a `slotting`'s records made from `sources`.
    static func withRecords(_ slotted: Layout, _ sources: RecordSources) -> Layout {
        var out = slotted
        let names = sources.names
        let (slots, hashes) = (out.slots, out.hashes)
        let made = ParallelWork.map(Array(names.indices), parts: ProcessInfo.processInfo.activeProcessorCount) {
            part in
            var last = RecordSources.LastAnchor()
            return part.compactMap { i -> (slot: Int, entry: NamesTable.Entry, index: Int, tooBig: Int)? in
                guard let slot = slots[i] else { return nil }
                let (entry, tooBig) = record(sources.source(i, last: &last), hash: hashes[i])
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

    /// `names`' slots in `table`, leaving out those at `leaveOut`: a layout without its records.
    /// Every name that exists must have a record, or a walk would pass over it to an encloser
    /// that answers NXDOMAIN: so a name left out clears NC_NAME_NXDOMAIN on the closest encloser
    /// that has one (nearcast_abi.h), unless it is left out behind a name of its tag, whose record
    /// makes the program pass it.
    static func slotting(_ names: [AnswerImage.Name], table: NamesTable, leaveOut: Set<Int> = []) -> Layout {
        let hashes = ParallelWork.map(names, parts: ProcessInfo.processInfo.activeProcessorCount) { part in
            part.map { NamesTable.hash(name: $0.name) }
        }.flatMap { $0 }
        let placement = table.place(hashes, skip: leaveOut)
        let slots = placement.slots
        var out = Layout()
        out.hashes = hashes
        out.slots = slots
        out.kept = placement.kept
        out.leftOut = Set(slots.indices.filter { slots[$0] == nil })
        out.full = placement.full + leaveOut.count
        out.noRoom = leaveOut.count
        out.collisions = out.leftOut.count - out.full
        if !out.leftOut.isEmpty {
            var index: [[UInt8]: Int] = [:]
            for (i, n) in names.enumerated() { index[n.name] = i }
            for i in out.leftOut where !placement.shadowed.contains(i) {
                var n = names[i].name
                while n.count > 1 {
                    n = Array(n[(Int(n[0]) + 1)...])
                    if let j = index[n], slots[j] != nil {
                        out.unflagged.insert(j)
                        break
                    }
                }
            }
        }
        return out
    }

    /// A first generation's plan (NamesTable.freshPlan) for `names` in `layout` (`slotting`'s,
    /// its records not made): the records made on every core, each thread's one after another in
    /// an array of its own, then copied to their places in the arena. nil when they do not all
    /// fit (`prepare` then makes them as any generation's, and leaves out what finds no room).
    func freshPlan(
        _ sources: RecordSources, negatives: [NamesTable.Entry], layout: inout Layout
    ) -> NamesTable.Plan? {
        let (slots, hashes) = (layout.slots, layout.hashes)
        let made = ParallelWork.map(Array(sources.names.indices), parts: ProcessInfo.processInfo.activeProcessorCount) {
            part in
            var last = RecordSources.LastAnchor()
            var out = NamesTable.MadeRecords()
            var tooBig = 0
            for (k, i) in part.enumerated() {
                if k == 1024 { out.expect(part.count) }
                guard let slot = slots[i] else { continue }
                let source = sources.source(i, last: &last)
                out.append(slot: slot, hash: hashes[i], length: source.length) { source.write(into: $0) }
                tooBig += source.tooBig
            }
            return (out, tooBig)
        }
        let kept = layout.kept
        let plan = arena.withUnsafeMutableBytes { arena in
            table.freshPlan(unslotted: negatives, made.map(\.0), kept: kept, arena: arena)
        }
        // Counted only with a plan: without one, the records are made again (`withRecords`).
        if plan != nil { layout.tooBig = made.reduce(0) { $0 + $1.1 } }
        return plan
    }

    /// What the names' records are made from: the image's names, their geo answers (by index),
    /// the negative answers' indexes (by anchor), and the names whose NXDOMAIN is cleared
    /// (`Layout.unflagged`).
    struct RecordSources: Sendable {
        let names: [AnswerImage.Name]
        let geo: [Int: [NamesTable.Answer]]
        let negatives: [[UInt8]: UInt16]
        let unflagged: Set<Int>

        /// The index of the last anchor met, kept for the names after it: nearly every name of
        /// a zone has its apex's (a dictionary lookup of each name's anchor, its bytes hashed
        /// one by one, was a tenth of the records' making).
        struct LastAnchor {
            var anchor: ArraySlice<UInt8> = []
            var index: UInt16 = 0

            /// The index of `n`'s negative answer in `negatives` (by anchor), 0 for none.
            mutating func negative(of n: AnswerImage.Name, in negatives: [[UInt8]: UInt16]) -> UInt16 {
                guard n.apexLength > 0 else { return 0 }
                let anchor = n.name.suffix(n.apexLength)
                if !anchor.elementsEqual(self.anchor) {
                    self = .init(anchor: anchor, index: negatives[Array(anchor)] ?? 0)
                }
                return index
            }
        }

        /// The record of the name at `i`.
        func source(_ i: Int, last: inout LastAnchor) -> RecordSource {
            let n = names[i]
            return RecordSource(
                n, geo: geo.isEmpty ? [] : geo[i] ?? [], negative: last.negative(of: n, in: negatives),
                nxdomain: n.nxdomain && (unflagged.isEmpty || !unflagged.contains(i)))
        }
    }

    /// The record of `n` (`RecordSource`), with `hash` its name's when known. Its second value
    /// counts the answers the record could not hold.
    static func record(
        _ n: AnswerImage.Name, hash: UInt64? = nil, geo: [NamesTable.Answer], negative: UInt16, nxdomain: Bool
    ) -> (NamesTable.Entry, Int) {
        record(RecordSource(n, geo: geo, negative: negative, nxdomain: nxdomain), hash: hash)
    }

    /// The record `source` says, in an array of its own.
    static func record(_ source: RecordSource, hash: UInt64? = nil) -> (NamesTable.Entry, Int) {
        let bytes = [UInt8](unsafeUninitializedCapacity: source.length) { buffer, initialized in
            source.write(into: UnsafeMutableRawBufferPointer(buffer))
            initialized = source.length
        }
        return (NamesTable.Entry(hash: hash ?? NamesTable.hash(name: source.name), bytes: bytes), source.tooBig)
    }

    /// What the record of a name says, measured before it is written (to an array of its own,
    /// or straight to its place in the arena): its answers (the geo ones added), the index of its
    /// negative answer, and its flags (none without a negative answer; the index is there
    /// whatever the flags: it also says the record's zone, which XDP's answers from it are
    /// counted under, ARCHITECTURE §16). NODATA only while every type the name has is answered
    /// in it.
    struct RecordSource {
        let name: [UInt8]
        let flags: UInt8
        let negative: UInt16
        let answers: RecordAnswers
        /// The bytes it takes.
        let length: Int
        /// Answers it cannot hold.
        let tooBig: Int

        init(_ n: AnswerImage.Name, geo: [NamesTable.Answer], negative: UInt16, nxdomain: Bool) {
            name = n.name
            self.negative = negative
            answers = RecordAnswers(own: n.answers, geo: geo, signed: n.signedAnswers, signsGeo: n.signed)
            let (length, kept, leading) = NamesTable.encodeRecord(
                name: name, flags: 0, negative: negative, answers: answers, into: nil)
            // The signed answers come last, so a record without room for them keeps the rest
            // (a query with DO then passes: NC_FOUND_UNSIGNED).
            let nodata =
                negative != 0 && n.nodata && leading >= n.answers.count + geo.count
                && n.geoTypes.allSatisfy { t in geo.contains { $0.qtype == t } }
            flags =
                UInt8(nodata ? NC_NAME_NODATA : 0) | UInt8(negative != 0 && nxdomain ? NC_NAME_NXDOMAIN : 0)
                | UInt8(n.signed ? NC_NAME_SIGNED : 0)
            self.length = length
            tooBig = answers.count - kept
        }

        /// Writes the record to the start of `out`, which has `length` bytes of room.
        func write(into out: UnsafeMutableRawBufferPointer) {
            NamesTable.encodeRecord(name: name, flags: flags, negative: negative, answers: answers, into: out)
        }
    }

    /// A name's answers as its record's: the image's, then the geo ones, in a signed zone the geo
    /// ones again for DO (NC_AT_SIGNED: XDP appends their variant's signatures, nc_geo_sigs), then
    /// the image's signed ones, seen as one collection without an array of them made (a million
    /// names' records made one each).
    struct RecordAnswers: RandomAccessCollection {
        let own: [AnswerImage.Answer]
        let geo: [NamesTable.Answer]
        let signed: [AnswerImage.Answer]
        /// The geo answers are in a signed zone: each has its entry for DO too.
        var signsGeo = false
        var startIndex: Int { 0 }
        var endIndex: Int { own.count + geoEntries + signed.count }
        var geoEntries: Int { signsGeo ? 2 * geo.count : geo.count }

        subscript(i: Int) -> NamesTable.Answer {
            if i < own.count { return Self.entry(own[i], signed: false) }
            if i < own.count + geo.count { return geo[i - own.count] }
            if i < own.count + geoEntries {
                var a = geo[i - own.count - geo.count]
                a.signed = true
                return a
            }
            return Self.entry(signed[i - own.count - geoEntries], signed: true)
        }

        static func entry(_ a: AnswerImage.Answer, signed: Bool) -> NamesTable.Answer {
            NamesTable.Answer(
                qtype: a.qtype,
                head: .init(
                    flags: a.flags, ancount: a.ancount, nscount: a.nscount, arcount: a.arcount, checksum: a.checksum),
                sections: a.sections, signed: signed)
        }
    }

    /// The negative answers of `names` (those of the anchors among them) as records of their own,
    /// each with its index in nc_negatives: the index an anchor had in `index` (the live
    /// generation's), else the lowest free one. Anchors past the indexes there are have none, and
    /// their names' negatives are the slow path's.
    static func negativeAnswers(_ names: [AnswerImage.Name], index: [[UInt8]: UInt16]) -> NegativeAnswers {
        negativeAnswers(anchors: names.compactMap { n in n.negative.map { (n.name, $0) } }, index: index)
    }

    /// The negative answers of a generation: their records, each with its index in nc_negatives,
    /// the index of each anchor, the zone of each index, and how many found no index.
    typealias NegativeAnswers = (
        records: [(index: UInt16, entry: NamesTable.Entry)], index: [[UInt8]: UInt16], zones: [UInt16: [UInt8]],
        leftOut: Int
    )

    /// `negativeAnswers` of the anchors (lower-cased wire names) and their negative answers.
    static func negativeAnswers(anchors: [(name: [UInt8], negative: AnswerImage.Negative)], index: [[UInt8]: UInt16])
        -> NegativeAnswers
    {
        var out: [[UInt8]: UInt16] = [:]
        var zones: [UInt16: [UInt8]] = [:]
        var records: [(index: UInt16, entry: NamesTable.Entry)] = []
        var leftOut = 0
        let taken = Set(index.values)
        var free = (1..<negativesMax).lazy.filter { !taken.contains(UInt16($0)) }.makeIterator()
        for (name, negative) in anchors {
            guard let i = index[name] ?? free.next().map({ UInt16($0) }) else {
                leftOut += 1
                continue
            }
            out[name] = i
            zones[i] = negative.zone
            let (entry, _) = NamesTable.record(name: name, flags: 0, negative: 0, answers: encodeNegatives(negative))
            records.append((i, entry))
        }
        return (records, out, zones, leftOut)
    }

    /// A negative answer (AnswerImage+Negative.swift) as the answers of its record: its own, and
    /// in a signed zone the signed one (NC_AT_SIGNED: the SOA and its signatures, which a name's
    /// NODATA proof follows).
    static func encodeNegatives(_ n: AnswerImage.Negative) -> [NamesTable.Answer] {
        var signed = n.signed.map { encodeNegative($0, zone: n.zone) }
        signed?.signed = true
        return [encodeNegative(n, zone: n.zone)] + (signed.map { [$0] } ?? [])
    }

    /// A negative answer as an answer of its record: kind NC_KIND_NEGATIVE under
    /// NC_QTYPE_NEGATIVE, its struct nc_nx_head before the sections.
    static func encodeNegative(_ n: AnswerImage.NegativeSections, zone: [UInt8]) -> NamesTable.Answer {
        var head = nc_nx_head()
        head.zone = NamesTable.hash(name: zone)
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
