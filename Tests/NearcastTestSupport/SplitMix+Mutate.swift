extension SplitMix {
    /// `bytes` with `edits` random edits, each one of: overwrite a byte, cut the tail, insert a
    /// byte anywhere. Stops early when nothing is left.
    public mutating func mutate(_ bytes: [UInt8], edits: Int) -> [UInt8] {
        var b = bytes
        for _ in 0..<edits {
            if b.isEmpty { break }
            switch Int.random(in: 0..<3, using: &self) {
            case 0: b[Int.random(in: 0..<b.count, using: &self)] = UInt8.random(in: 0...255, using: &self)
            case 1: b = Array(b.prefix(Int.random(in: 0..<b.count, using: &self)))
            default: b.insert(UInt8.random(in: 0...255, using: &self), at: Int.random(in: 0...b.count, using: &self))
            }
        }
        return b
    }
}
