/// Builds a DNS message with name compression (RFC 1035 §4.1.4).
///
/// Compression matches suffixes case-insensitively, so an answer's owner points at the question
/// and is echoed in the client's case, as other authoritative servers do.
public struct WireWriter {
    public private(set) var bytes: [UInt8] = []
    /// Offsets of every label written so far (below 0x4000, where a pointer can reach): the places
    /// a later name may point at. Messages hold few names, so a linear scan beats hashing suffixes.
    private var labelOffsets: [UInt16] = []
    /// For messages of many names (a zone transfer's): the offset of each suffix written, by a
    /// hash of it folded to lower case, so that a name finds its longest match by hashing its
    /// suffixes instead of comparing with every label written (a hit is compared octet by octet
    /// before it is used). nil: the linear scan above.
    private var suffixes: [UInt64: UInt16]?
    /// The name an indexed writer wrote last, and the offset a pointer to it takes.
    private var lastName: (wire: [UInt8], offset: UInt16)?

    /// `indexed`: names are looked up through a hash of their suffixes (for messages of hundreds
    /// of names, where the scan would compare each with every label before it).
    public init(capacity: Int = 512, indexed: Bool = false) {
        bytes.reserveCapacity(capacity)
        if indexed { suffixes = [:] }
    }

    public var count: Int { bytes.count }

    public mutating func u8(_ v: UInt8) { bytes.append(v) }
    public mutating func u16(_ v: UInt16) {
        bytes.append(UInt8(v >> 8))
        bytes.append(UInt8(v & 0xFF))
    }
    public mutating func u32(_ v: UInt32) {
        bytes.append(UInt8(v >> 24))
        bytes.append(UInt8((v >> 16) & 0xFF))
        bytes.append(UInt8((v >> 8) & 0xFF))
        bytes.append(UInt8(v & 0xFF))
    }
    public mutating func append(_ b: [UInt8]) { bytes.append(contentsOf: b) }

    /// Takes back everything written from offset `count` on (a record that did not fit), with the
    /// places later names could have pointed at in it.
    public mutating func cut(to count: Int) {
        guard count < bytes.count else { return }
        bytes.removeSubrange(count...)
        labelOffsets.removeAll { Int($0) >= count }
        suffixes = suffixes?.filter { Int($0.value) < count }
        if let last = lastName, Int(last.offset) >= count { lastName = nil }
    }

    /// Overwrites a 16-bit field written earlier (e.g. RDLENGTH, counts).
    public mutating func patch16(at offset: Int, _ v: UInt16) {
        bytes[offset] = UInt8(v >> 8)
        bytes[offset + 1] = UInt8(v & 0xFF)
    }

    /// Writes a name; with `compress`, points at the longest suffix already in the message.
    /// Every label written is remembered as a place later names may point at.
    public mutating func name(_ name: DNSName, compress: Bool) {
        let wire = name.wire
        if suffixes != nil { return indexedName(wire, compress: compress) }
        // This name's labels are recorded as they are written, but become pointer targets only
        // once the name is complete (`find` looks below `complete`): until then their tails are
        // not in the buffer (think of `a.a.a.` matching its own first label).
        let complete = labelOffsets.count
        var i = 0
        while wire[i] != 0 {
            if compress, let ptr = find(wire, from: i, among: complete) {
                u16(0xC000 | ptr)
                return
            }
            if bytes.count < 0x4000 { labelOffsets.append(UInt16(bytes.count)) }
            let n = Int(wire[i])
            bytes.append(contentsOf: wire[i...(i + n)])
            i += n + 1
        }
        bytes.append(0)
    }

    /// `name` for an indexed writer: the longest suffix already written is pointed at, and the
    /// suffixes written here are added once the name is complete.
    private mutating func indexedName(_ wire: [UInt8], compress: Bool) {
        // The name just written again (a zone's next record at the same owner): its place.
        if compress, let last = lastName, last.wire == wire {
            u16(0xC000 | last.offset)
            return
        }
        // A name has at most 127 labels: the per-label figures live on the stack.
        withUnsafeTemporaryAllocation(of: (start: Int, hash: UInt64, offset: Int).self, capacity: 128) { labels in
            // The labels' offsets in `wire`, and the hash of each suffix, made from the root up
            // (FNV-1a over the folded octets, each label's on the hash of the labels after it).
            var count = 0
            var i = 0
            while wire[i] != 0 {
                labels[count] = (i, 0, -1)
                count += 1
                i += Int(wire[i]) + 1
            }
            var h: UInt64 = 0xcbf2_9ce4_8422_2325
            for j in stride(from: count - 1, through: 0, by: -1) {
                let s = labels[j].start
                for k in s...(s + Int(wire[s])) { h = (h ^ UInt64(DNSName.fold(wire[k]))) &* 0x100_0000_01b3 }
                labels[j].hash = h
            }
            // Labels written here become places to point at once the name is whole (as in `name`).
            var whole: Int?
            var written = 0
            for j in 0..<count {
                if compress, let ptr = suffixes![labels[j].hash], suffixMatches(wire, labels[j].start, at: Int(ptr)) {
                    u16(0xC000 | ptr)
                    if j == 0 { whole = Int(ptr) }
                    break
                }
                let s = labels[j].start
                labels[j].offset = bytes.count
                if j == 0 { whole = bytes.count }
                bytes.append(contentsOf: wire[s...(s + Int(wire[s]))])
                written += 1
            }
            if written == count { bytes.append(0) }
            for j in 0..<written where labels[j].offset < 0x4000 && suffixes![labels[j].hash] == nil {
                suffixes![labels[j].hash] = UInt16(labels[j].offset)
            }
            if let whole, whole < 0x4000 { lastName = (wire, UInt16(whole)) } else { lastName = nil }
        }
    }

    /// The offset of an earlier occurrence of the suffix of `wire` that starts at `start`, among
    /// the first `count` recorded labels (those of complete names).
    private func find(_ wire: [UInt8], from start: Int, among count: Int) -> UInt16? {
        for off in labelOffsets[..<count] where suffixMatches(wire, start, at: Int(off)) { return off }
        return nil
    }

    /// Compares the uncompressed suffix `wire[start...]` with the name written at `offset`,
    /// following pointers, ignoring ASCII case.
    private func suffixMatches(_ wire: [UInt8], _ start: Int, at offset: Int) -> Bool {
        var i = start
        var p = offset
        while true {
            var len = bytes[p]
            while len & 0xC0 == 0xC0 {
                p = Int(len & 0x3F) << 8 | Int(bytes[p + 1])
                len = bytes[p]
            }
            guard wire[i] == len else { return false }
            if len == 0 { return true }
            for k in 1...Int(len) where DNSName.fold(wire[i + k]) != DNSName.fold(bytes[p + k]) { return false }
            i += Int(len) + 1
            p += Int(len) + 1
        }
    }
}
