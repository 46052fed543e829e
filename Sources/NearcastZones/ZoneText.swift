import DNSWire
import Foundation
import NearcastBasics

/// Records back into master-file text (RFC 1035 §5; each type's presentation form; RFC 3597 for
/// the others), such that ZoneFileParser reads the same records back: how a zone changed through
/// the management API is written to its file.
public enum ZoneText {
    /// One record per line, absolute names, the SOA first, then in canonical order.
    public static func render(origin: DNSName, records: [ResourceRecord]) -> String {
        let soa = records.filter { $0.type == .soa }
        // Each name's sort key made once: comparing names label by label allocates.
        let rest = records.filter { $0.type != .soa }.map { (key: canonicalKey($0.name), record: $0) }.sorted {
            $0.key == $1.key
                ? $0.record.type.rawValue < $1.record.type.rawValue : $0.key.lexicographicallyPrecedes($1.key)
        }
        var out = header(origin, ttl: soa.first?.ttl ?? 3600)
        for r in soa + rest.map(\.record) { out += line(r) + "\n" }
        return out
    }

    /// `zone` as master-file text, as `render(origin:records:)` writes it.
    public static func render(_ zone: Zone) -> String {
        var out: [UInt8] = []
        write(zone) { out += $0 }
        return String(decoding: out, as: UTF8.self)
    }

    /// `zone` as `render(origin:records:)` writes it, given to `emit` in chunks of about
    /// `chunkSize` bytes as they fill: a zone of millions of names is written out without its
    /// whole text, or an array of its records, in memory at once: only its owners' sort keys, in
    /// one array (`CanonicalOrder`).
    public static func write<E: Error>(
        _ zone: Zone, chunkSize: Int = 1 << 16, to emit: ([UInt8]) throws(E) -> Void
    ) throws(E) {
        var buffer: [UInt8] = []
        buffer.reserveCapacity(chunkSize + 1024)
        func put(_ text: String) throws(E) {
            buffer += text.utf8
            if buffer.count >= chunkSize {
                try emit(buffer)
                buffer.removeAll(keepingCapacity: true)
            }
        }
        try put(header(zone.origin, ttl: zone.soa.ttl))
        for r in zone.soa.records() { try put(line(r) + "\n") }
        let owners = CanonicalOrder(zone.owners)
        for i in owners.order {
            for set in zone.tree[owners.names[Int(i)]]!.sets.sorted(by: { $0.type.rawValue < $1.type.rawValue })
            where set.type != .soa {
                for r in set.records() { try put(line(r) + "\n") }
            }
        }
        if !buffer.isEmpty { try emit(buffer) }
    }

    /// The file's first lines. Every record carries its TTL; the `$TTL` (the SOA's) is there for
    /// the reader: a large file that begins with one is read in parts on every core
    /// (`ZoneFileParser.parseInParts`), where without it each part would need the TTL of the
    /// record before it, and a written-back zone of 1M names took twice as long to load.
    static func header(_ origin: DNSName, ttl: UInt32) -> String {
        "; \(origin) — written by nearcast (changes through the management API); comments are not kept.\n"
            + "$ORIGIN \(origin)\n$TTL \(ttl)\n"
    }

    /// Bytes whose lexicographic order is the canonical order of names (RFC 4034 §6.1): the
    /// labels from the right, case-folded, each ended by 0 (0 and 1 inside a label escaped as
    /// 1 1 and 1 2, so a shorter label sorts first).
    static func canonicalKey(_ name: DNSName) -> [UInt8] {
        var key: [UInt8] = []
        var starts: [Int] = []
        key.reserveCapacity(name.wire.count + 4)
        appendCanonicalKey(name, to: &key, starts: &starts)
        return key
    }

    /// `canonicalKey(name)` appended to `key`; `starts`, where each label begins, is scratch that
    /// a caller with many names keeps from one to the next.
    static func appendCanonicalKey(_ name: DNSName, to key: inout [UInt8], starts: inout [Int]) {
        starts.removeAll(keepingCapacity: true)
        name.wire.withUnsafeBufferPointer { w in
            var i = 0
            while w[i] != 0 {
                starts.append(i)
                i += Int(w[i]) + 1
            }
            for start in starts.reversed() {
                for b in w[(start + 1)...(start + Int(w[start]))] {
                    let f = DNSName.fold(b)
                    if f <= 1 {
                        key.append(1)
                        key.append(f + 1)
                    } else {
                        key.append(f)
                    }
                }
                key.append(0)
            }
        }
    }

    /// Names in canonical order (RFC 4034 §6.1), as a write-back of millions of names takes them:
    /// their sort keys one after another in one array, and the order an array of indices, sorted
    /// by comparing the keys where they lie. A key per name, each an array of its own, took about
    /// 1 GB at 10M names, freed in small pieces that glibc kept; these few large arrays are
    /// mapped and unmapped whole.
    struct CanonicalOrder {
        let names: [DNSName]
        /// Indices of `names`, in canonical order.
        let order: [UInt32]

        init(_ names: some Sequence<DNSName>) {
            let names = Array(names)
            var keys: [UInt8] = []
            var ends: [UInt32] = []
            var starts: [Int] = []
            ends.reserveCapacity(names.count)
            for name in names {
                appendCanonicalKey(name, to: &keys, starts: &starts)
                ends.append(UInt32(keys.count))
            }
            var order = (0..<UInt32(names.count)).map { $0 }
            keys.withUnsafeBufferPointer { k in
                ends.withUnsafeBufferPointer { e in
                    func key(_ i: UInt32) -> UnsafeBufferPointer<UInt8> {
                        let start = i == 0 ? 0 : Int(e[Int(i) - 1])
                        return UnsafeBufferPointer(rebasing: k[start..<Int(e[Int(i)])])
                    }
                    order.sort { a, b in
                        let (x, y) = (key(a), key(b))
                        let n = min(x.count, y.count)
                        let c = n == 0 ? 0 : memcmp(x.baseAddress!, y.baseAddress!, n)
                        return c != 0 ? c < 0 : x.count < y.count
                    }
                }
            }
            (self.names, self.order) = (names, order)
        }
    }

    /// `name TTL IN TYPE rdata`.
    public static func line(_ r: ResourceRecord) -> String {
        "\(r.name) \(r.ttl) IN \(r.type) \(rdata(r.rdata, type: r.type))"
    }

    /// The presentation form of `rdata`.
    public static func rdata(_ rdata: RData, type: RRType) -> String {
        switch rdata {
        case .a(let a): return a.description
        case .aaaa(let a): return a.description
        case .ns(let n), .cname(let n), .ptr(let n): return n.description
        case .soa(let s): return "\(s.mname) \(s.rname) \(s.serial) \(s.refresh) \(s.retry) \(s.expire) \(s.minimum)"
        case .mx(let p, let n): return "\(p) \(n)"
        case .txt(let strings): return strings.map(quoted).joined(separator: " ")
        case .srv(let p, let w, let port, let t): return "\(p) \(w) \(port) \(t)"
        case .caa(let flags, let tag, let value):
            return "\(flags) \(String(decoding: tag, as: UTF8.self)) \(quoted(value))"
        case .unknown(let bytes):
            if let text = RDataLayout.render(type: type, bytes: bytes) { return text }
            return "\\# \(bytes.count)" + (bytes.isEmpty ? "" : " " + Hex.lowercase(bytes))
        }
    }

    /// A character-string in quotes: `"` and `\` escaped, bytes outside printable ASCII as \DDD.
    static func quoted(_ bytes: [UInt8]) -> String {
        var s = "\""
        for b in bytes {
            switch b {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"): s += "\\" + String(UnicodeScalar(b))
            case 0x20...0x7E: s.append(Character(UnicodeScalar(b)))
            default: s += "\\" + String(format: "%03d", Int(b))
            }
        }
        return s + "\""
    }
}
