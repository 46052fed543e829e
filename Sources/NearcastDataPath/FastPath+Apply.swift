import BPFKit
import CNearcastABI
import NearcastAnswers
import NearcastGeo

/// Changes written into the live generation (Sources/NearcastDataPath/README.md, "A change into the live
/// generation"): each changed name's record written where no query reads, then its slot pointed at
/// it with one store, so a query sees the name's old record or its new one, all its answers
/// together; a removed name's slot keeps its tag and loses its record. What a change costs is what
/// it changes: no slot of another name is touched, and no record is moved.
extension FastPath {
    /// What `apply` wrote.
    public struct Applied: Equatable, Sendable {
        /// Records written (names and negative answers that changed).
        public var written = 0
        /// Names removed.
        public var removed = 0
    }

    /// Writes the records of `names` (new or changed, as an image built of the changed zones has
    /// them) and removes those of `removed` (lower-cased wire names), in the live generation;
    /// `geo`: the geo table whose answers go into its names' records. Nil, having written
    /// nothing, when the change does not fit the live generation: a new name finds no slot within
    /// reach of its home, the arena has no room, a new negative answer no index, or it removes a
    /// name that another of its tag may be left out behind. The caller then
    /// writes a whole generation. The records it replaces are not written over by later changes
    /// (they take space past them) until the arena's free room runs out: then, once no program
    /// run can still read them (a grace period), the room is found again around the live records
    /// alone, from the arena's start (`compacted`), rather than a whole generation written; the
    /// next whole generation waits a grace period first too.
    ///
    /// A `geo` of another compile than the live generation's (a node registered, a pool changed)
    /// cannot go into the live generation: its names' records name rankings of the new compile's
    /// maps. The other generation is then made from the live one (its slots and negative answers
    /// copied, a few MB at a million names), the change written into it beside the new compile's
    /// geo maps, and the two switched to with one write (`switchGenerations`): what it costs is
    /// the geo maps and the names it changes, not the zone.
    public func apply(_ names: [AnswerImage.Name], removed: [[UInt8]], geo: GeoTable?) throws(BPFError) -> Applied? {
        guard writing.compareExchange(expected: false, desired: true, ordering: .acquiring).exchanged else {
            preconditionFailure("FastPath.apply called while another write is under way")
        }
        defer { writing.store(false, ordering: .releasing) }
        let (settings, liveGeo, leftOut) = state.withLock { ($0.settings, $0.geo, $0.leftOut) }
        guard settings.slot_mask != 0 else { return nil }  // no generation written yet
        // A generation that left names out: a change written into it made XDP answer some of
        // those names NXDOMAIN (a secondary's 100k-name zone in a table of 16,384, bench-transfer).
        // Until that is found, such a change is a whole generation, which places them right.
        guard leftOut == 0 else { return nil }
        let generation = Int(settings.generation & 1)
        guard liveGeo?.serial != geo?.serial else {
            guard var change = try ChangeWrite(self, names, removed: removed, geo: geo, into: generation) else {
                return nil
            }
            change.write(self, into: generation)
            state.withLock { s in
                change.commit(&s, holds: holds)
                s.replacedSinceGracePeriod = true
            }
            return change.applied
        }
        // A new compile: the other generation, made from this one.
        let next = 1 - generation
        slotWords.copy(
            from: generation * table.slotCount * 8, to: next * table.slotCount * 8, length: table.slotCount * 8)
        negativeWords.copy(
            from: generation * Self.negativesMax * 8, to: next * Self.negativesMax * 8, length: Self.negativesMax * 8)
        let maps = try geo.map { (g) throws(BPFError) in try buildGeoMaps(g) }
        guard var change = try ChangeWrite(self, names, removed: removed, geo: geo, into: next) else {
            if let maps { retired.withLock { $0.append(maps) } }  // emptied a little at a time, as others
            return nil
        }
        change.write(self, into: next)
        try setGeoSlots(UInt32(next), maps)
        try switchGenerations(
            to: UInt32(next), previous: UInt32(generation), maps: maps, liveMaps: liveGeo, geo: geo
        ) { s in change.commit(&s, holds: holds) }
        // The records it replaced were read by the old generation alone, which no run reads now.
        state.withLock { $0.replacedSinceGracePeriod = false }
        return change.applied
    }

    /// What a change writes into a generation (`apply`): records in free arena room, the
    /// negative answers' places, the names' slots, and the records it retires.
    private struct ChangeWrite {
        var records: [(offset: Int, entry: NamesTable.Entry)] = []
        var negativeStores: [(index: UInt16, entry: NamesTable.Entry)] = []
        /// nil value: the record written at `records` for the slot (`slotRecords`).
        var slotStores: [(slot: Int, value: UInt64?)] = []
        var slotRecords: [Int: NamesTable.Entry] = [:]
        var retired: [NamesTable.Entry] = []
        var negativeIndex: [[UInt8]: UInt16]
        /// The zones of the negative answers' indexes given out here.
        var negativeZones: [UInt16: [UInt8]] = [:]
        var space: NamesTable.ArenaSpace
        var removed = 0
        /// The records' references, once written.
        var refs: [NamesTable.Entry: UInt32] = [:]

        var applied: Applied { Applied(written: records.count, removed: removed) }

        /// The change of `names` and `removed` into `generation`, whose slots and negative answers
        /// are the live generation's (that one, or a copy of it); nil when it does not fit.
        init?(
            _ fp: FastPath, _ names: [AnswerImage.Name], removed: [[UInt8]], geo: GeoTable?, into generation: Int
        ) throws(BPFError) {
            // Not the live records: a copy held here would make the lock's change of them below
            // copy them whole (a million of them: 19 ms a change).
            let (negativeIndex, liveSpace, cleared) = fp.state.withLock {
                ($0.negativeIndex, $0.space, $0.nxdomainCleared)
            }
            self.negativeIndex = negativeIndex
            space = liveSpace ?? NamesTable.ArenaSpace(table: fp.table, inUse: fp.state.withLock { $0.live })
            var compacted = false
            var records = records  // (the closure below may not capture self being made)
            var space = space
            /// Room for a record of `length` octets: past the last taken; once that runs out,
            /// anywhere but where a live record or one of this change lies.
            func take(_ length: Int) throws(BPFError) -> Int? {
                if let offset = space.take(length) { return offset }
                guard !compacted else { return nil }
                compacted = true
                if fp.state.withLock({ $0.replacedSinceGracePeriod }) {
                    try BPFGracePeriod.wait()
                    fp.state.withLock { $0.replacedSinceGracePeriod = false }
                }
                // The places read under the lock (a copy of the live records held here would
                // make the lock's change of them below copy them whole).
                let live = fp.state.withLock { $0.live.places }
                let mine = records.map { (offset: $0.offset, length: $0.entry.bytes.count) }
                space = NamesTable.ArenaSpace(table: fp.table, places: (live + mine).sorted { $0.offset < $1.offset })
                return space.take(length)
            }

            // The negative answers among the names (anchors), each at its index or a free one.
            var index = negativeIndex
            for n in names {
                guard let negative = n.negative else { continue }
                var i = index[n.name]
                if i == nil {
                    let used = Set(index.values)
                    guard let free = (1..<FastPath.negativesMax).first(where: { !used.contains(UInt16($0)) }) else {
                        return nil
                    }
                    i = UInt16(free)
                    index[n.name] = i
                    negativeZones[i!] = negative.zone
                }
                let (entry, _) = NamesTable.record(
                    name: n.name, flags: 0, negative: 0, answers: FastPath.encodeNegatives(negative))
                let slot = Int(generation * FastPath.negativesMax + Int(i!)) * 8
                let old = fp.negativeWords.word(at: slot)
                if old != 0, let e = fp.record(at: UInt32(truncatingIfNeeded: old)), e == entry { continue }
                guard let offset = try take(entry.bytes.count) else { return nil }
                if old != 0, let e = fp.record(at: UInt32(truncatingIfNeeded: old)) { retired.append(e) }
                records.append((offset, entry))
                negativeStores.append((i!, entry))
            }

            // The names' records and their slots.
            let geoAnswers = geo.map { FastPath.geoAnswers($0, of: names) } ?? [:]
            for (i, n) in names.enumerated() {
                let anchor = n.apexLength > 0 ? Array(n.name.suffix(n.apexLength)) : []
                // An encloser of a name the generation left out keeps NXDOMAIN cleared (`layout`).
                let (entry, _) = FastPath.record(
                    n, geo: geoAnswers[i] ?? [], negative: index[anchor] ?? 0,
                    nxdomain: n.nxdomain && !cleared.contains(n.name))
                guard let (slot, old) = fp.liveSlot(of: n.name, hash: entry.hash, generation: generation) else {
                    return nil
                }
                if old == entry { continue }
                guard let offset = try take(entry.bytes.count) else { return nil }
                if let old { retired.append(old) }
                records.append((offset, entry))
                slotStores.append((slot, nil))
                slotRecords[slot] = entry
            }
            for name in removed {
                let hash = NamesTable.hash(name: name)
                guard let (slot, old) = fp.liveSlot(of: name, hash: hash, generation: generation), let old else {
                    continue
                }
                // A name of its tag past it may be one left out behind it, whose encloser kept its
                // NXDOMAIN (`layout`): with this record gone, its lookup would stop here and walk
                // up to that NXDOMAIN. A whole generation places it.
                if fp.tagFollows(slot, tag: hash >> 32, generation: generation) { return nil }
                retired.append(old)
                slotStores.append((slot, (hash >> 32) << 32))
                self.removed += 1
            }
            self.records = records
            self.space = space
            self.negativeIndex = index
        }

        /// Writes the records first, where nothing points yet; then the negative answers'
        /// indexes, then the slots, of `generation`.
        mutating func write(_ fp: FastPath, into generation: Int) {
            for (offset, entry) in records {
                fp.arena.write(entry.bytes, at: offset)
                refs[entry] = UInt32(offset / 8 + 1)
            }
            for (i, entry) in negativeStores {
                fp.negativeWords.store(UInt64(refs[entry]!), at: (generation * FastPath.negativesMax + Int(i)) * 8)
            }
            for (slot, value) in slotStores {
                let v = value ?? ((slotRecords[slot]!.hash >> 32) << 32 | UInt64(refs[slotRecords[slot]!]!))
                fp.slotWords.store(v, at: (generation * fp.table.slotCount + slot) * 8)
            }
        }

        /// The state's records, negative answers and free room as the change leaves them.
        func commit(_ s: inout State, holds: NamesTable.LiveRecords.Holds) {
            for e in retired { s.live.remove(e, holds: holds) }
            for (e, ref) in refs { s.live.insert(e, ref: ref) }
            s.negativeIndex = negativeIndex
            s.negativeZones.merge(negativeZones) { $1 }
            s.space = space
        }
    }

    /// Names (records in slots) in the live generation.
    public var liveNames: Int { state.withLock { $0.live.count - $0.negativeIndex.count } }

    /// The live generation's slot of `name` (whose hash is `hash`) and the record it holds (nil: a
    /// free slot for it), or nil when the name has no slot and none within reach of its home is
    /// free: a slot of its tag that holds another name's record comes first, or all are taken.
    fileprivate func liveSlot(of name: [UInt8], hash: UInt64, generation: Int) -> (Int, NamesTable.Entry?)? {
        let mask = table.slotCount - 1
        let tag = hash >> 32
        for p in 0..<NamesTable.probes {
            let s = (Int(truncatingIfNeeded: hash) + p) & mask
            let v = slotWords.word(at: (generation * table.slotCount + s) * 8)
            // An empty slot ends every lookup: nothing lies past it for a name to pass over.
            if v == 0 { return (s, nil) }
            guard v >> 32 == tag else { continue }
            // The program stops at the first slot of the tag: the name's, or a removed one's.
            let ref = UInt32(truncatingIfNeeded: v)
            guard ref != 0 else { return (s, nil) }
            guard let e = record(at: ref), NamesTable.recordName(e.bytes) == name else { return nil }
            return (s, e)
        }
        return nil
    }

    /// Whether a slot of `tag` follows `slot` within the probe distance, before an empty one.
    fileprivate func tagFollows(_ slot: Int, tag: UInt64, generation: Int) -> Bool {
        let mask = table.slotCount - 1
        for p in 1..<NamesTable.probes {
            let v = slotWords.word(at: (generation * table.slotCount + ((slot + p) & mask)) * 8)
            if v == 0 { return false }
            if v >> 32 == tag { return true }
        }
        return false
    }

    /// The record at `ref` in the arena, when there is one.
    func record(at ref: UInt32) -> NamesTable.Entry? { Self.record(at: ref, in: arena) }

    /// The record at `ref` in `arena`, when there is one.
    static func record(at ref: UInt32, in arena: BPFMappedArray) -> NamesTable.Entry? {
        guard ref != 0, Int(ref - 1) * 8 + NamesTable.recordMax <= arena.count else { return nil }
        let offset = Int(ref - 1) * 8
        guard let length = arena.read(at: offset, length: 8).withUnsafeBytes({ NamesTable.recordLength($0) }) else {
            return nil
        }
        let bytes = arena.read(at: offset, length: length)
        return NamesTable.Entry(hash: NamesTable.hash(name: NamesTable.recordName(bytes)), bytes: bytes)
    }
}
