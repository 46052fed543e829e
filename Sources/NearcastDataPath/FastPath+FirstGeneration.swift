import BPFKit
import CNearcastABI
import Foundation
import NearcastAnswers
import NearcastGeo

/// A start's first generation, made from the image's stream (`AnswerImage.Stream`) rather than
/// from a whole image (docs/ARCHITECTURE.md §11, step 1): each name's record is made
/// by the thread that made the name, while its bytes are in that thread's cache, into that
/// thread's run of records; the name is then let go. No image of every name is held (at 1M names
/// about 1 GiB, made, read again for the records and freed), and the table is sized from the
/// records themselves. Their slots are found once all are made, and the records copied to the
/// arena in order, as `freshPlan` does for an image's.
extension FastPath {
    /// The records of a first generation, made and not yet placed.
    public struct FirstRecords: Sendable {
        /// Each thread's records, in the stream's order; then those of geo names no zone holds.
        var made: [NamesTable.MadeRecords]
        var negatives: NegativeAnswers
        /// What the table must hold for them (`tableSize(for:capacity:)`).
        public let needs: TableNeeds
        /// Answers the image left out as too big for the fast path, and those a record could not hold.
        public let imageTooBig: Int
        let recordTooBig: Int
    }

    /// What one thread of `records` makes: its records, with what the needs count.
    struct RecordMaker: Sendable {
        var made = NamesTable.MadeRecords()
        var last = RecordSources.LastAnchor()
        var answers = 0
        var tooBig = 0
        /// The geo names met (the others get records of their own after).
        var geoMet: Set<[UInt8]> = []
        /// The names this thread is likely to make: the room for their records is reserved
        /// once their mean length is known (`MadeRecords.expect`).
        let expected: Int
        /// The geo names' answers, and the index of each anchor's negative answer.
        let geo: [[UInt8]: [NamesTable.Answer]]
        let negatives: [[UInt8]: UInt16]

        /// Makes the record of `n`, one of the stream's names.
        mutating func take(_ n: AnswerImage.Name) {
            let own = geo.isEmpty ? [] : geo[n.name] ?? []
            if !own.isEmpty { geoMet.insert(n.name) }
            let source = RecordSource(n, geo: own, negative: last.negative(of: n, in: negatives), nxdomain: n.nxdomain)
            if made.records.count == 1024 { made.expect(expected) }
            made.append(slot: 0, hash: NamesTable.hash(name: n.name), length: source.length) { source.write(into: $0) }
            answers += n.answers.count + n.signedAnswers.count
            tooBig += source.tooBig
        }
    }

    /// The records of every name of `stream`, with `geo`'s answers in those of its names, made on
    /// `parts` threads as the names are made.
    public static func records(_ stream: AnswerImage.Stream, geo: GeoTable?, parts: Int) -> FirstRecords {
        let negatives = negativeAnswers(anchors: stream.negatives, index: [:])
        var geoAnswers: [[UInt8]: [NamesTable.Answer]] = [:]
        var geoOrder: [[UInt8]] = []
        for g in geo?.allNames ?? [] where g.config.type == .a || g.config.type == .aaaa {
            let name = g.config.name.lowercased().wire
            if geoAnswers[name] == nil { geoOrder.append(name) }
            geoAnswers[name, default: []].append(encodeGeo(g, rankings: geo!.rankings.count))
        }
        let (index, expected, own) = (negatives.index, stream.count / max(1, parts) + 1024, geoAnswers)
        let (makers, imageTooBig) = stream.run(
            parts: parts, sink: { _ in RecordMaker(expected: expected, geo: own, negatives: index) },
            take: { $0.take($1) })
        // Geo names no zone holds: records of their own, with no flags (as `geoAnswers` adds them).
        let met = makers.reduce(into: Set<[UInt8]>()) { $0.formUnion($1.geoMet) }
        var beside = RecordMaker(expected: 0, geo: geoAnswers, negatives: [:])
        for name in geoOrder where !met.contains(name) { beside.take(AnswerImage.Name(name: name)) }
        let all = makers + (beside.made.records.isEmpty ? [] : [beside])
        let needs = TableNeeds(
            names: all.reduce(0) { $0 + $1.made.records.count }, answers: all.reduce(0) { $0 + $1.answers },
            recordBytes: all.reduce(0) { $0 + $1.made.bytes.count }
                + negatives.records.reduce(0) { $0 + $1.entry.bytes.count })
        return FirstRecords(
            made: all.map(\.made), negatives: negatives, needs: needs, imageTooBig: imageTooBig,
            recordTooBig: all.reduce(0) { $0 + $1.tooBig })
    }

    /// Writes `records` as the first generation and switches to it, as `write` writes an image's;
    /// nil, having written nothing, when the table is not empty (pinned maps a previous instance
    /// left) or cannot take every record (a name left out, or too little arena): then `write` of
    /// the stream's image is the way, which leaves out what does not fit.
    public func writeFirst(_ records: FirstRecords, geo: GeoTable? = nil) throws(BPFError) -> TableWrite? {
        guard writing.compareExchange(expected: false, desired: true, ordering: .acquiring).exchanged else {
            preconditionFailure("FastPath.writeFirst called while another write is under way")
        }
        do {
            guard let p = try prepareFirst(records, geo: geo) else {
                writing.store(false, ordering: .releasing)
                return nil
            }
            return try switchTo(p)
        } catch {
            writing.store(false, ordering: .releasing)
            throw error
        }
    }

    private func prepareFirst(_ records: FirstRecords, geo: GeoTable?) throws(BPFError) -> Prepared? {
        let (live, settings, liveGeo) = state.withLock { ($0.live, $0.settings, $0.geo) }
        guard live.count == 0 else { return nil }
        var made = records.made
        let placement = table.place(made.flatMap { $0.records.map(\.hash) })
        guard placement.slots.allSatisfy({ $0 != nil }) else { return nil }
        var at = 0
        for p in made.indices {
            for k in made[p].records.indices {
                made[p].records[k].slot = placement.slots[at]!
                at += 1
            }
        }
        let negatives = records.negatives
        let kept = placement.kept
        let fresh = arena.withUnsafeMutableBytes { arena in
            table.freshPlan(unslotted: negatives.records.map(\.entry), made, kept: kept, arena: arena)
        }
        guard var plan = fresh else { return nil }
        plan.tooBig = records.recordTooBig
        var maps: GeoMaps?
        if let geo { maps = liveGeo?.serial == geo.serial ? liveGeo : try buildGeoMaps(geo) }
        return try prepared(
            plan, negatives: negatives, noRoom: 0, settings: settings, maps: maps, liveMaps: liveGeo, geo: geo,
            nxdomainCleared: [])
    }
}
