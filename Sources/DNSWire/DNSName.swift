/// A domain name, held in uncompressed wire form (length-prefixed labels ending with the root label).
///
/// Equality and hashing ignore ASCII case (RFC 4343); the original case is kept for echoing.
public struct DNSName: Hashable, Sendable, CustomStringConvertible, Comparable {
    /// Uncompressed wire form, always ending with a zero byte.
    public private(set) var wire: [UInt8]

    /// The root name `.`.
    public static let root = DNSName(uncheckedWire: [0])

    /// Wraps bytes already known to be a valid uncompressed name.
    init(uncheckedWire: [UInt8]) { self.wire = uncheckedWire }

    /// Builds a name from its labels (without the root label).
    public init(labels: [[UInt8]]) throws(DNSWireError) {
        var w: [UInt8] = []
        for label in labels {
            if label.isEmpty { throw .emptyLabel }
            if label.count > 63 { throw .labelTooLong }
            w.append(UInt8(label.count))
            w.append(contentsOf: label)
        }
        w.append(0)
        if w.count > 255 { throw .nameTooLong(offset: 0) }
        self.wire = w
    }

    /// The name at the start of `bytes` in uncompressed wire form, and how many bytes it takes;
    /// nil when the bytes hold no whole name (or a compression pointer).
    public static func uncompressed(_ bytes: [UInt8]) -> (DNSName, Int)? {
        var labels: [[UInt8]] = []
        var i = 0
        while i < bytes.count {
            let n = Int(bytes[i])
            if n == 0 { return (try? DNSName(labels: labels)).map { ($0, i + 1) } }
            guard n < 64, i + 1 + n <= bytes.count else { return nil }
            labels.append(Array(bytes[(i + 1)...(i + n)]))
            i += 1 + n
        }
        return nil
    }

    /// Parses presentation format (`www.example.net.`, with `\.` and `\DDD` escapes).
    ///
    /// A name without a trailing dot is relative and gets `origin` appended; `@` is the origin itself.
    /// The wire form is written as the text is read (zone files hold millions of names).
    public init(_ text: String, origin: DNSName? = nil) throws(DNSWireError) {
        try self.init(presentation: Array(text.utf8)[...], origin: origin)
    }

    /// `init(_:origin:)` from the text's bytes (a token of a zone file, without a String made of it).
    public init(presentation bytes: ArraySlice<UInt8>, origin: DNSName? = nil) throws(DNSWireError) {
        var text: String { String(decoding: bytes, as: UTF8.self) }  // for messages only
        if bytes.count == 1 && bytes.first == UInt8(ascii: "@") {
            guard let origin else { throw .badText("'@' used without an origin") }
            self = origin
            return
        }
        if bytes.count == 1 && bytes.first == UInt8(ascii: ".") {
            self = .root
            return
        }
        if bytes.isEmpty { throw .badText("empty name") }
        var w: [UInt8] = [0]  // w[lengthAt] is the current label's length, filled in when it ends
        w.reserveCapacity(bytes.count + 2 + (origin?.wire.count ?? 0))
        var lengthAt = 0
        var absolute = false
        func endLabel() throws(DNSWireError) {
            let n = w.count - lengthAt - 1
            if n == 0 { throw .badText("name '\(text)' has an empty label") }
            if n > 63 { throw .badText("name '\(text)' has a label longer than 63 octets") }
            w[lengthAt] = UInt8(n)
        }
        let b = bytes.startIndex
        var i = 0
        while i < bytes.count {
            let c = bytes[b + i]
            if c == UInt8(ascii: "\\") {
                guard i + 1 < bytes.count else { throw .badText("name '\(text)' ends with a lone backslash") }
                let n = bytes[b + i + 1]
                if n >= 0x30 && n <= 0x39 {
                    guard i + 3 < bytes.count, (0x30...0x39).contains(bytes[b + i + 2]),
                        (0x30...0x39).contains(bytes[b + i + 3])
                    else { throw .badText("name '\(text)': \\DDD escape needs three digits") }
                    let v = Int(n - 0x30) * 100 + Int(bytes[b + i + 2] - 0x30) * 10 + Int(bytes[b + i + 3] - 0x30)
                    guard v <= 255 else { throw .badText("name '\(text)': escape \\\(v) is above 255") }
                    w.append(UInt8(v))
                    i += 4
                } else {
                    w.append(n)
                    i += 2
                }
                continue
            }
            if c == UInt8(ascii: ".") {
                try endLabel()
                if i == bytes.count - 1 {
                    absolute = true
                } else {
                    lengthAt = w.count
                    w.append(0)
                }
                i += 1
                continue
            }
            w.append(c)
            i += 1
        }
        if !absolute {
            try endLabel()
            // A relative name takes the origin; without one (command line, config) it is taken as absolute.
            if let origin { w.append(contentsOf: origin.wire.dropLast()) }
        }
        w.append(0)
        if w.count > 255 { throw .badText("name '\(text)' is longer than 255 octets") }
        self.wire = w
    }

    /// The labels, leftmost first, without the root label.
    public var labels: [[UInt8]] {
        var out: [[UInt8]] = []
        var i = 0
        while wire[i] != 0 {
            let n = Int(wire[i])
            out.append(Array(wire[(i + 1)...(i + n)]))
            i += n + 1
        }
        return out
    }

    /// Number of labels, not counting the root.
    public var labelCount: Int {
        var count = 0
        var i = 0
        while wire[i] != 0 {
            count += 1
            i += Int(wire[i]) + 1
        }
        return count
    }

    public var isRoot: Bool { wire.count == 1 }

    /// The name with its leftmost label removed (the root's parent is the root).
    public var parent: DNSName {
        if isRoot { return self }
        return DNSName(uncheckedWire: Array(wire[(Int(wire[0]) + 1)...]))
    }

    /// Whether the leftmost label is `*`.
    public var isWildcard: Bool { wire.count >= 2 && wire[0] == 1 && wire[1] == UInt8(ascii: "*") }

    /// `*.` prepended to this name.
    public var wildcardChild: DNSName? {
        guard wire.count + 2 <= 255 else { return nil }
        return DNSName(uncheckedWire: [1, UInt8(ascii: "*")] + wire)
    }

    /// Prepends one label.
    public func prepending(_ label: [UInt8]) throws(DNSWireError) -> DNSName {
        if label.isEmpty { throw .emptyLabel }
        if label.count > 63 { throw .labelTooLong }
        if 1 + label.count + wire.count > 255 { throw .nameTooLong(offset: 0) }
        var w: [UInt8] = []
        w.reserveCapacity(1 + label.count + wire.count)
        w.append(UInt8(label.count))
        w += label
        w += wire
        return DNSName(uncheckedWire: w)
    }

    /// ASCII-lower-cased copy.
    public func lowercased() -> DNSName {
        DNSName(uncheckedWire: wire.map(DNSName.fold))
    }

    /// True when this name equals `other` or lies below it.
    public func isSubdomain(of other: DNSName) -> Bool {
        if other.wire.count > wire.count { return false }
        var i = 0
        let skip = wire.count - other.wire.count
        // Walk label boundaries until we reach the offset where the suffix would start.
        while i < skip {
            i += Int(wire[i]) + 1
        }
        guard i == skip else { return false }
        for k in 0..<other.wire.count where DNSName.fold(wire[skip + k]) != DNSName.fold(other.wire[k]) {
            return false
        }
        return true
    }

    /// The ancestors of this name down to (and including) `apex`, nearest first, excluding self.
    public func ancestors(upTo apex: DNSName) -> [DNSName] {
        var out: [DNSName] = []
        var n = self
        while n.wire.count > apex.wire.count {
            n = n.parent
            out.append(n)
        }
        return out
    }

    /// ASCII lower case of one byte (RFC 4343: DNS compares names ignoring ASCII case only).
    @inline(__always) public static func fold(_ b: UInt8) -> UInt8 { (b >= 0x41 && b <= 0x5A) ? b | 0x20 : b }

    /// Eight bytes at once with ASCII upper case folded to lower, as `fold` does each: a byte's
    /// high bit is set where it is at least "A", another where it is past "Z" (no carry leaves a
    /// byte of seven bits), and bytes of eight bits are left alone.
    @inline(__always) static func fold8(_ w: UInt64) -> UInt64 {
        let low = w & 0x7F7F_7F7F_7F7F_7F7F
        let upper = (low &+ 0x3F3F_3F3F_3F3F_3F3F) & ~(low &+ 0x2525_2525_2525_2525) & ~w & 0x8080_8080_8080_8080
        return w | (upper >> 2)
    }

    /// The eight bytes of `p` from `i`.
    @inline(__always) static func load8(_ p: UnsafeBufferPointer<UInt8>, _ i: Int) -> UInt64 {
        UnsafeRawPointer(p.baseAddress! + i).loadUnaligned(as: UInt64.self)
    }

    // Equality and hashing ignore ASCII case eight bytes at a time: both are on every lookup's
    // path (a reload of a 1M-name zone compares each name with the served one's).
    public static func == (lhs: DNSName, rhs: DNSName) -> Bool {
        guard lhs.wire.count == rhs.wire.count else { return false }
        return lhs.wire.withUnsafeBufferPointer { l in
            rhs.wire.withUnsafeBufferPointer { r in
                var i = 0
                while i + 8 <= l.count {
                    let (a, b) = (load8(l, i), load8(r, i))
                    if a != b && fold8(a) != fold8(b) { return false }
                    i += 8
                }
                while i < l.count {
                    if l[i] != r[i] && fold(l[i]) != fold(r[i]) { return false }
                    i += 1
                }
                return true
            }
        }
    }

    public func hash(into hasher: inout Hasher) {
        wire.withUnsafeBufferPointer { p in
            var i = 0
            while i + 8 <= p.count {
                hasher.combine(DNSName.fold8(DNSName.load8(p, i)))
                i += 8
            }
            var w = UInt64(p.count)
            while i < p.count {
                w = w << 8 | UInt64(DNSName.fold(p[i]))
                i += 1
            }
            hasher.combine(w)
        }
    }

    /// An order of wire bytes, as they are (letter case included): not the canonical one, but the
    /// same every time and cheap (eight bytes compared at once), for lists of millions of names
    /// that need an order of their own.
    public static func wireOrder(_ lhs: DNSName, _ rhs: DNSName) -> Bool {
        lhs.wire.withUnsafeBufferPointer { l in
            rhs.wire.withUnsafeBufferPointer { r in
                let n = Swift.min(l.count, r.count)
                var i = 0
                while i + 8 <= n {
                    let (a, b) = (load8(l, i).bigEndian, load8(r, i).bigEndian)
                    if a != b { return a < b }
                    i += 8
                }
                while i < n {
                    if l[i] != r[i] { return l[i] < r[i] }
                    i += 1
                }
                return l.count < r.count
            }
        }
    }

    /// Canonical DNS order (RFC 4034 §6.1): by labels from the right, case-folded, bytewise.
    public static func < (lhs: DNSName, rhs: DNSName) -> Bool {
        let l = lhs.labels.reversed().map { $0.map(fold) }
        let r = rhs.labels.reversed().map { $0.map(fold) }
        for (a, b) in zip(l, r) where a != b { return a.lexicographicallyPrecedes(b) }
        return l.count < r.count
    }

    /// Presentation format with a trailing dot; unusual bytes are escaped.
    public var description: String {
        if isRoot { return "." }
        var s = ""
        for label in labels {
            for b in label {
                switch b {
                case UInt8(ascii: "."), UInt8(ascii: "\\"), UInt8(ascii: "\""), UInt8(ascii: ";"), UInt8(ascii: "("),
                    UInt8(ascii: ")"), UInt8(ascii: "@"), UInt8(ascii: "$"):
                    s.append("\\")
                    s.append(Character(UnicodeScalar(b)))
                case 0x21...0x7E:
                    s.append(Character(UnicodeScalar(b)))
                default:
                    s.append("\\" + String(format3(b)))
                }
            }
            s.append(".")
        }
        return s
    }
}

@inline(__always) func format3(_ b: UInt8) -> String {
    let v = Int(b)
    return String(v / 100) + String((v / 10) % 10) + String(v % 10)
}
