import BPFKit
import CNearcastABI
import NearcastAnswers
import NearcastGeo

/// Changes written into the live generation (ARCHITECTURE §11, "A change into the live
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
    /// `geo`: the live geo table, whose answers go into its names' records. Nil, having written
    /// nothing, when the change does not fit the live generation: a new name finds no slot within
    /// reach of its home, the arena has no room, a new negative answer no index, or it removes a
    /// name that another of its tag may be left out behind. The caller then
    /// writes a whole generation. The records it replaces are not written over by later changes
    /// (they take space past them) until the arena's free room runs out: then, once no program
    /// run can still read them (a grace period), the room is found again around the live records
    /// alone, from the arena's start (`compacted`), rather than a whole generation written; the
    /// next whole generation waits a grace period first too.
    public func apply(_ names: [AnswerImage.Name], removed: [[UInt8]], geo: GeoTable?) throws(BPFError) -> Applied? {
        guard writing.compareExchange(expected: false, desired: true, ordering: .acquiring).exchanged else {
            preconditionFailure("FastPath.apply called while another write is under way")
        }
        defer { writing.store(false, ordering: .releasing) }
        // Not the live records: a copy held here would make the lock's change of them below copy
        // them whole (a million of them: 19 ms a change).
        let (settings, negativeIndex, liveSpace, cleared) = state.withLock {
            ($0.settings, $0.negativeIndex, $0.space, $0.nxdomainCleared)
        }
        guard settings.slot_mask != 0 else { return nil }  // no generation written yet
        var space = liveSpace ?? NamesTable.ArenaSpace(table: table, inUse: state.withLock { $0.live })
        let generation = Int(settings.generation & 1)
        var records: [(offset: Int, entry: NamesTable.Entry)] = []
        var compacted = false
        /// Room for a record of `length` octets: past the last taken; once that runs out, anywhere
        /// but where a live record or one of this change lies.
        func take(_ length: Int) throws(BPFError) -> Int? {
            if let offset = space.take(length) { return offset }
            guard !compacted else { return nil }
            compacted = true
            if state.withLock({ $0.replacedSinceGracePeriod }) {
                try BPFGracePeriod.wait()
                state.withLock { $0.replacedSinceGracePeriod = false }
            }
            // The places read under the lock (a copy of the live records held here would make
            // the lock's change of them below copy them whole).
            let live = state.withLock { $0.live.places }
            let mine = records.map { (offset: $0.offset, length: $0.entry.bytes.count) }
            space = NamesTable.ArenaSpace(table: table, places: (live + mine).sorted { $0.offset < $1.offset })
            return space.take(length)
        }

        // The negative answers among the names (anchors), each at its index or a free one.
        var index = negativeIndex
        var zones: [UInt16: [UInt8]] = [:]  // of the indexes given out here
        var negativeStores: [(index: UInt16, entry: NamesTable.Entry)] = []
        var retired: [NamesTable.Entry] = []
        for n in names {
            guard let negative = n.negative else { continue }
            var i = index[n.name]
            if i == nil {
                let used = Set(index.values)
                guard let free = (1..<Self.negativesMax).first(where: { !used.contains(UInt16($0)) }) else {
                    return nil
                }
                i = UInt16(free)
                index[n.name] = i
                zones[i!] = negative.zone
            }
            let (entry, _) = NamesTable.record(
                name: n.name, flags: 0, negative: 0, answers: [Self.encodeNegative(negative)])
            let slot = Int(generation * Self.negativesMax + Int(i!)) * 8
            let old = negativeWords.word(at: slot)
            if old != 0, let e = record(at: UInt32(truncatingIfNeeded: old)), e == entry { continue }
            guard let offset = try take(entry.bytes.count) else { return nil }
            if old != 0, let e = record(at: UInt32(truncatingIfNeeded: old)) { retired.append(e) }
            records.append((offset, entry))
            negativeStores.append((i!, entry))
        }

        // The names' records and their slots.
        let geoAnswers = geo.map { Self.geoAnswers($0, of: names) } ?? [:]
        var slotStores: [(slot: Int, value: UInt64?)] = []  // nil value: the record written at `records`
        var slotRecords: [Int: NamesTable.Entry] = [:]
        for (i, n) in names.enumerated() {
            let anchor = n.apexLength > 0 ? Array(n.name.suffix(n.apexLength)) : []
            // An encloser of a name the generation left out keeps NXDOMAIN cleared (`layout`).
            let (entry, _) = Self.record(
                n, geo: geoAnswers[i] ?? [], negative: index[anchor] ?? 0,
                nxdomain: n.nxdomain && !cleared.contains(n.name))
            guard let (slot, old) = liveSlot(of: n.name, hash: entry.hash, generation: generation) else { return nil }
            if old == entry { continue }
            guard let offset = try take(entry.bytes.count) else { return nil }
            if let old { retired.append(old) }
            records.append((offset, entry))
            slotStores.append((slot, nil))
            slotRecords[slot] = entry
        }
        var gone = 0
        for name in removed {
            let hash = NamesTable.hash(name: name)
            guard let (slot, old) = liveSlot(of: name, hash: hash, generation: generation), let old else { continue }
            // A name of its tag past it may be one left out behind it, whose encloser kept its
            // NXDOMAIN (`layout`): with this record gone, its lookup would stop here and walk up
            // to that NXDOMAIN. A whole generation places it.
            if tagFollows(slot, tag: hash >> 32, generation: generation) { return nil }
            retired.append(old)
            slotStores.append((slot, (hash >> 32) << 32))
            gone += 1
        }

        // Records first, where nothing points yet; then the negative answers' indexes, then the slots.
        var refs: [NamesTable.Entry: UInt32] = [:]
        for (offset, entry) in records {
            arena.write(entry.bytes, at: offset)
            refs[entry] = UInt32(offset / 8 + 1)
        }
        for (i, entry) in negativeStores {
            negativeWords.store(UInt64(refs[entry]!), at: (generation * Self.negativesMax + Int(i)) * 8)
        }
        for (slot, value) in slotStores {
            let v = value ?? ((slotRecords[slot]!.hash >> 32) << 32 | UInt64(refs[slotRecords[slot]!]!))
            slotWords.store(v, at: (generation * table.slotCount + slot) * 8)
        }
        state.withLock { s in
            for e in retired { s.live.remove(e, holds: holds) }
            for (e, ref) in refs { s.live.insert(e, ref: ref) }
            s.negativeIndex = index
            s.negativeZones.merge(zones) { $1 }
            s.space = space
            s.replacedSinceGracePeriod = true
        }
        return Applied(written: records.count, removed: gone)
    }

    /// Names (records in slots) in the live generation.
    public var liveNames: Int { state.withLock { $0.live.count - $0.negativeIndex.count } }

    /// The live generation's slot of `name` (whose hash is `hash`) and the record it holds (nil: a
    /// free slot for it), or nil when the name has no slot and none within reach of its home is
    /// free: a slot of its tag that holds another name's record comes first, or all are taken.
    private func liveSlot(of name: [UInt8], hash: UInt64, generation: Int) -> (Int, NamesTable.Entry?)? {
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
    private func tagFollows(_ slot: Int, tag: UInt64, generation: Int) -> Bool {
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
