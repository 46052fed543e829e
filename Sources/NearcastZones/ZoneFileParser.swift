import DNSWire
import Foundation
import NearcastBasics

/// A record read from a zone file, with where it came from (for error messages).
public struct SourcedRecord: Hashable, Sendable {
    public var record: ResourceRecord
    public var file: String
    public var line: Int

    /// `record`, from `file` at `line` (for a transfer: its primary, and the record's number).
    public init(_ record: ResourceRecord, file: String, line: Int) {
        self.record = record
        self.file = file
        self.line = line
    }
}

/// Parses RFC 1035 master files: `$ORIGIN`, `$TTL`, `$INCLUDE`, relative names, `@`, parentheses,
/// comments, quoted strings and escapes, class and TTL in either order, BIND TTL units (`1h30m`),
/// and RFC 3597 `\#` RDATA for any type.
///
/// Parsing goes on after an error so that every problem in a file is reported at once.
public struct ZoneFileParser {
    public static let maxIncludeDepth = 8

    private var records: [SourcedRecord] = []
    private var errors: [Diagnostic] = []

    /// Parses the file at `path` for the zone `origin`.
    public static func parse(path: String, origin: DNSName) throws(DiagnosticsError) -> [SourcedRecord] {
        let parts = try parseInParts(path: path, origin: origin)
        return parts.count == 1 ? parts[0] : Array(parts.joined())
    }

    /// Parses the file at `path` for the zone `origin`: its records in the file's order, in parts.
    /// A large file is read in parts on every core (`parseInParts`), with the same records and the
    /// same errors as one reading; the parts are handed on as they are (`Zone.build(origin:parts:)`)
    /// rather than copied into one list, a tenth of a second at 1M names.
    public static func parseInParts(path: String, origin: DNSName) throws(DiagnosticsError) -> [[SourcedRecord]] {
        var p = ZoneFileParser()
        guard let bytes = p.contents(of: path, includedFrom: nil) else { throw DiagnosticsError(p.errors) }
        if bytes.count >= readInPartsFrom,
            let (parts, errors) = parseInParts(
                bytes, fileName: path, origin: origin, parts: ProcessInfo.processInfo.activeProcessorCount)
        {
            if !errors.isEmpty { throw DiagnosticsError(errors) }
            return parts
        }
        p.parseText(bytes, fileName: path, origin: origin, depth: 0)
        if !p.errors.isEmpty { throw DiagnosticsError(p.errors) }
        return [p.records]
    }

    /// Parses zone text held in memory; `fileName` is used in messages and to resolve `$INCLUDE`.
    public static func parse(text: String, fileName: String, origin: DNSName) throws(DiagnosticsError)
        -> [SourcedRecord]
    {
        var p = ZoneFileParser()
        p.parseText(Array(text.utf8), fileName: fileName, origin: origin, depth: 0)
        if !p.errors.isEmpty { throw DiagnosticsError(p.errors) }
        return p.records
    }

    private mutating func parseFile(path: String, origin: DNSName, depth: Int, includedFrom: (String, Int)?) {
        guard let bytes = contents(of: path, includedFrom: includedFrom) else { return }
        parseText(bytes, fileName: path, origin: origin, depth: depth)
    }

    /// The bytes of the file at `path`, or nil with the reason it cannot be read among the errors.
    private mutating func contents(of path: String, includedFrom: (String, Int)?) -> [UInt8]? {
        if let data = FileManager.default.contents(atPath: path) { return Array(data) }
        let why = FileManager.default.fileExists(atPath: path) ? "cannot be read" : "does not exist"
        if let (file, line) = includedFrom {
            errors.append(Diagnostic(file: file, line: line, message: "$INCLUDE file '\(path)' \(why)"))
        } else {
            errors.append(Diagnostic(file: path, line: 0, message: "zone file \(why)"))
        }
        return nil
    }

    private mutating func parseText(_ bytes: [UInt8], fileName: String, origin: DNSName, depth: Int) {
        reserveRecords(for: bytes.count)
        var tokenizer = MasterFileTokenizer(bytes, file: fileName)
        // The tokenizer's problems come first in the report, as they are the file's first reading.
        let tokenErrorsAt = errors.count
        _ = read(&tokenizer, fileName: fileName, from: Carried(origin: origin), depth: depth)
        errors.insert(contentsOf: tokenizer.errors, at: tokenErrorsAt)
    }

    /// Room for the records of `count` more bytes of text, taken at once: grown as they come, the
    /// list of a large file's records was copied a dozen times over, a tenth of its reading. Most
    /// records' lines take 16 bytes or more (a file of shorter ones grows the list as before);
    /// room not used is never touched, so it costs address space, not memory.
    private mutating func reserveRecords(for count: Int) {
        records.reserveCapacity(records.count + count / 16)
    }

    /// What one entry leaves to the entries after it: the origin (`$ORIGIN`), the default TTL
    /// (`$TTL`) and the last TTL a record gave (RFC 1035 §5.1, for records with neither).
    struct Carried: Sendable {
        var origin: DNSName
        var defaultTTL: UInt32?
        var lastTTL: UInt32?

        init(origin: DNSName, defaultTTL: UInt32? = nil, lastTTL: UInt32? = nil) {
            (self.origin, self.defaultTTL, self.lastTTL) = (origin, defaultTTL, lastTTL)
        }

        /// Whether the entries after one reading and after the other read alike. An entry's
        /// owner is never carried past a line that begins with a name.
        func readsAlike(_ other: Carried) -> Bool {
            origin.wire == other.origin.wire && defaultTTL == other.defaultTTL
                && (defaultTTL != nil || lastTTL == other.lastTTL)
        }
    }

    /// Reads the entries `tokenizer` hands out, beginning with `carried`; returns what the last of
    /// them carries on.
    private mutating func read(
        _ tokenizer: inout MasterFileTokenizer, fileName: String, from carried: Carried, depth: Int
    ) -> Carried {
        var origin = carried.origin
        var defaultTTL = carried.defaultTTL
        var lastTTL = carried.lastTTL
        var lastOwner: DNSName?
        var lastOwnerText: ArraySlice<UInt8> = []
        var lastOwnerOrigin = origin

        var entry = MasterFileTokenizer.Entry(line: 0, inheritsOwner: false, tokens: [])
        while tokenizer.next(into: &entry) {
            func fail(_ message: String) {
                errors.append(Diagnostic(file: fileName, line: entry.line, message: message))
            }
            var tokens = entry.tokens[...]
            let first = tokens.first!
            if !entry.inheritsOwner && !first.quoted && first.bytes.first == UInt8(ascii: "$") {
                let directive = first.string.uppercased()
                let args = Array(tokens.dropFirst())
                switch directive {
                case "$ORIGIN":
                    guard args.count == 1 else {
                        fail("$ORIGIN takes one name")
                        continue
                    }
                    do { origin = try DNSName(args[0].string, origin: origin) } catch {
                        fail("$ORIGIN: \(error)")
                    }
                case "$TTL":
                    guard args.count == 1, let ttl = Self.ttl(args[0].string) else {
                        fail("$TTL takes one TTL (seconds, or units like 1h30m)")
                        continue
                    }
                    defaultTTL = ttl
                case "$INCLUDE":
                    guard args.count == 1 || args.count == 2 else {
                        fail("$INCLUDE takes a file name and an optional origin")
                        continue
                    }
                    guard depth < Self.maxIncludeDepth else {
                        fail("$INCLUDE nested deeper than \(Self.maxIncludeDepth) (a loop?)")
                        continue
                    }
                    var path = args[0].string
                    if !path.hasPrefix("/") {
                        let dir = (fileName as NSString).deletingLastPathComponent
                        path = dir.isEmpty ? path : dir + "/" + path
                    }
                    var incOrigin = origin
                    if args.count == 2 {
                        do { incOrigin = try DNSName(args[1].string, origin: origin) } catch {
                            fail("$INCLUDE origin: \(error)")
                            continue
                        }
                    }
                    parseFile(path: path, origin: incOrigin, depth: depth + 1, includedFrom: (fileName, entry.line))
                default:
                    fail("unsupported directive \(first.string) (supported: $ORIGIN, $TTL, $INCLUDE)")
                }
                continue
            }

            // Owner.
            let owner: DNSName
            if entry.inheritsOwner {
                guard let lastOwner else {
                    fail("record has no owner name (line starts with a blank and no record came before)")
                    continue
                }
                owner = lastOwner
            } else if let lastOwner, first.bytes == lastOwnerText, origin == lastOwnerOrigin {
                // The same owner written again (a name's records, one per line): one name for them
                // all, not a copy per record.
                tokens = tokens.dropFirst()
                owner = lastOwner
            } else {
                tokens = tokens.dropFirst()
                do { owner = try DNSName(presentation: first.bytes, origin: origin) } catch {
                    fail("owner '\(first.string)': \(error)")
                    continue
                }
                (lastOwnerText, lastOwnerOrigin) = (first.bytes, origin)
            }
            lastOwner = owner

            // TTL and class, in either order.
            var ttl: UInt32?
            var sawClass = false
            var bad = false
            while let t = tokens.first, !t.quoted, ttl == nil || !sawClass {
                if ttl == nil, let d = t.bytes.first, d >= UInt8(ascii: "0") && d <= UInt8(ascii: "9"),
                    let v = Self.ttl(t.string)
                {
                    ttl = v
                } else if !sawClass, let cls = Self.recordClass(t.bytes) {
                    if cls != .in {
                        fail("class \(cls) is not served (only IN)")
                        bad = true
                    }
                    sawClass = true
                } else {
                    break
                }
                tokens = tokens.dropFirst()
            }
            if bad { continue }
            guard let typeToken = tokens.first else {
                fail("record for \(owner) has no type")
                continue
            }
            guard let type = RRType(mnemonic: typeToken.bytes) else {
                fail("unknown type '\(typeToken.string)' (use TYPEnnn with \\# RDATA for types nearcast does not know)")
                continue
            }
            if type.isMetaType {
                fail("\(type) is a meta type and cannot be stored in a zone")
                continue
            }
            tokens = tokens.dropFirst()
            if let ttl { lastTTL = ttl }
            guard let effectiveTTL = ttl ?? defaultTTL ?? lastTTL else {
                fail("record for \(owner) has no TTL and no $TTL came before it")
                continue
            }
            // The RDATA's tokens, as the entry's own array (no copy of each token): the fields
            // read are taken off its front once the slice over it is let go.
            let read = entry.tokens.count - tokens.count
            tokens = []
            entry.tokens.removeFirst(read)
            do {
                let rdata = try RDataText.parse(type: type, tokens: entry.tokens, origin: origin)
                records.append(
                    SourcedRecord(
                        ResourceRecord(name: owner, type: type, ttl: effectiveTTL, rdata: rdata),
                        file: fileName, line: entry.line))
            } catch {
                fail("\(type) record for \(owner): \(error.message)")
            }
        }
        return Carried(origin: origin, defaultTTL: defaultTTL, lastTTL: lastTTL)
    }

    /// Files of this many bytes or more are read in parts (a zone of about 30k names): below it
    /// the threads cost more than they save, and their malloc arenas keep memory a reload frees.
    static let readInPartsFrom = 1 << 20

    /// Reads `bytes` in `parts` parts, each on a thread: their records, and their errors joined, in
    /// the file's order, or nil when the parts did not read as one reading would: then the file
    /// is read whole.
    ///
    /// Each part but the first begins where a line begins with a name, and is read with what the
    /// file's leading directives carry (`$ORIGIN`, `$TTL`). It read as the whole file would if the
    /// part before it ended with a line outside parentheses and quotes, carrying on what it began
    /// with (a `$TTL` or `$ORIGIN` later in the file changes that, and the file is read whole).
    /// A file without a leading `$TTL` is read whole: its parts would need the last TTL before them.
    static func parseInParts(_ bytes: [UInt8], fileName: String, origin: DNSName, parts: Int) -> (
        [[SourcedRecord]], [Diagnostic]
    )? {
        guard parts > 1 else { return nil }
        // What the leading directives carry: read apart, their problems reported by the first part.
        var head = MasterFileTokenizer(bytes, file: fileName)
        var headEnd = 0
        var entry = MasterFileTokenizer.Entry(line: 0, inheritsOwner: false, tokens: [])
        while head.next(into: &entry), !entry.inheritsOwner, entry.tokens[0].bytes.first == UInt8(ascii: "$"),
            !entry.tokens[0].quoted
        {
            headEnd = head.offset
        }
        var scratch = ZoneFileParser()
        var leading = MasterFileTokenizer(bytes, file: fileName, part: 0..<headEnd, line: 1)
        let carried = scratch.read(&leading, fileName: fileName, from: Carried(origin: origin), depth: maxIncludeDepth)
        guard carried.defaultTTL != nil else { return nil }

        // Where the parts begin: near each equal share, at the next line that begins with a name.
        var starts = [0]
        for k in 1..<parts {
            var at = max(k * bytes.count / parts, starts.last! + 1)
            while at < bytes.count {
                guard let newline = bytes[at...].firstIndex(of: 0x0A) else {
                    at = bytes.count
                    break
                }
                at = newline + 1
                if at < bytes.count, ![0x20, 0x09, 0x0D, 0x0A, UInt8(ascii: ";")].contains(bytes[at]) { break }
            }
            if at < bytes.count { starts.append(at) }
        }
        guard starts.count > 1 else { return nil }
        let ranges = zip(starts, starts.dropFirst() + [bytes.count]).map { $0..<$1 }
        // Each part's first line, for messages.
        let lines = ranges.dropLast().reduce(into: [1]) { lines, r in
            lines.append(lines.last! + bytes[r].reduce(0) { $0 + ($1 == 0x0A ? 1 : 0) })
        }

        struct Part: Sendable {
            var records: [SourcedRecord]
            var errors: [Diagnostic]
            var tokenizerErrors: [Diagnostic]
            var carried: Carried
            var endsAtLineEnd: Bool
        }
        let read = ParallelWork.map(Array(ranges.indices), parts: ranges.count, smallest: 1) { indices in
            let k = indices.first!
            var p = ZoneFileParser()
            p.reserveRecords(for: ranges[k].count)
            // Copies of its own of what every token and record retains (the text, the file's name,
            // the origin): threads retaining one object's count in turn wait on each other's caches.
            var tokenizer = MasterFileTokenizer(Array(bytes[ranges[k]]), file: fileName, line: lines[k])
            let file = String(decoding: Array(fileName.utf8), as: UTF8.self)
            var from = k == 0 ? Carried(origin: origin) : carried
            from.origin = (try? DNSName(labels: from.origin.labels)) ?? from.origin
            let end = p.read(&tokenizer, fileName: file, from: from, depth: 0)
            return Part(
                records: p.records, errors: p.errors, tokenizerErrors: tokenizer.errors, carried: end,
                endsAtLineEnd: tokenizer.endsAtLineEnd)
        }
        for part in read.dropLast() where !part.endsAtLineEnd || !part.carried.readsAlike(carried) { return nil }
        // As one reading reports them: the tokenizer's problems first, then the parser's.
        return (read.map(\.records), read.flatMap(\.tokenizerErrors) + read.flatMap(\.errors))
    }

    /// The class a token names, if it names one, read from its bytes.
    static func recordClass(_ bytes: ArraySlice<UInt8>) -> RRClass? {
        if bytes.count == 2, bytes.first! | 0x20 == UInt8(ascii: "i"), bytes.last! | 0x20 == UInt8(ascii: "n") {
            return .in
        }
        return RRClass(mnemonic: bytes)
    }

    /// Parses a TTL: decimal seconds up to 2^31−1 (RFC 2181 §8), or BIND units `1w2d3h4m5s`.
    static func ttl(_ s: String) -> UInt32? {
        guard let f = s.first, f.isASCII, f.isNumber else { return nil }
        if let v = UInt64(s) { return v <= 0x7FFF_FFFF ? UInt32(v) : nil }
        var total: UInt64 = 0
        var num: UInt64? = nil
        for ch in s.lowercased() {
            if let d = ch.wholeNumberValue, ch.isASCII {
                num = (num ?? 0) * 10 + UInt64(d)
                if num! > 0x7FFF_FFFF { return nil }
                continue
            }
            guard let n = num else { return nil }
            let mult: UInt64
            switch ch {
            case "s": mult = 1
            case "m": mult = 60
            case "h": mult = 3600
            case "d": mult = 86400
            case "w": mult = 604800
            default: return nil
            }
            total += n * mult
            num = nil
        }
        if num != nil { return nil }
        return total <= 0x7FFF_FFFF ? UInt32(total) : nil
    }
}
