import DNSWire
import Foundation
import NearcastBasics

/// A record read from a zone file, with where it came from (for error messages).
public struct SourcedRecord: Hashable, Sendable {
    public var record: ResourceRecord
    public var file: String
    public var line: Int
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
        var p = ZoneFileParser()
        p.parseFile(path: path, origin: origin, depth: 0, includedFrom: nil)
        if !p.errors.isEmpty { throw DiagnosticsError(p.errors) }
        return p.records
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
        guard let data = FileManager.default.contents(atPath: path) else {
            let why = FileManager.default.fileExists(atPath: path) ? "cannot be read" : "does not exist"
            if let (file, line) = includedFrom {
                errors.append(Diagnostic(file: file, line: line, message: "$INCLUDE file '\(path)' \(why)"))
            } else {
                errors.append(Diagnostic(file: path, line: 0, message: "zone file \(why)"))
            }
            return
        }
        parseText(Array(data), fileName: path, origin: origin, depth: depth)
    }

    private mutating func parseText(_ bytes: [UInt8], fileName: String, origin startOrigin: DNSName, depth: Int) {
        var tokenizer = MasterFileTokenizer(bytes, file: fileName)
        // The tokenizer's problems come first in the report, as they are the file's first reading.
        let tokenErrorsAt = errors.count
        defer { errors.insert(contentsOf: tokenizer.errors, at: tokenErrorsAt) }
        var origin = startOrigin
        var defaultTTL: UInt32?
        var lastTTL: UInt32?
        var lastOwner: DNSName?
        var lastOwnerText: ArraySlice<UInt8> = []
        var lastOwnerOrigin = startOrigin

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
            do {
                let rdata = try RDataText.parse(type: type, tokens: Array(tokens), origin: origin)
                records.append(
                    SourcedRecord(
                        record: ResourceRecord(name: owner, type: type, ttl: effectiveTTL, rdata: rdata),
                        file: fileName, line: entry.line))
            } catch {
                fail("\(type) record for \(owner): \(error.message)")
            }
        }
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
