import NearcastBasics

/// Splits RFC 1035 master-file text into entries: one entry per logical line, parentheses joining
/// physical lines, comments removed. Entries are read one at a time (`next`), each token a slice of
/// the text: a file of millions of records is read without a copy of each token or a list of them all.
struct MasterFileTokenizer {
    struct Token: Equatable {
        /// Raw text, a slice of the file; escapes (`\X`, `\DDD`) are kept as written and decoded by
        /// whoever interprets the token.
        var bytes: ArraySlice<UInt8>
        var quoted: Bool
        var text: [UInt8] { Array(bytes) }
        var string: String { String(decoding: bytes, as: UTF8.self) }
    }

    struct Entry {
        var line: Int
        /// True when the line began with a blank: the owner is the previous entry's.
        var inheritsOwner: Bool
        var tokens: [Token]
    }

    private let bytes: [UInt8]
    private let file: String
    /// Where the text read ends: the whole of `bytes`, or a part of them (`init(_:file:part:line:)`).
    private let end: Int
    private var i: Int
    private var line: Int
    /// Where the last newline that ended a line outside parentheses was (-1: none yet).
    private var lastLineEnd = -1
    /// Problems found so far (unbalanced parentheses, unclosed quotes), in the order met.
    private(set) var errors: [Diagnostic] = []

    init(_ bytes: [UInt8], file: String, line: Int = 1) {
        self.init(bytes, file: file, part: bytes.indices, line: line)
    }

    /// Reads only `part` of `bytes`, whose first line is the text's line `line`: a part that begins
    /// where a line begins outside parentheses and quotes reads as it would in the whole text.
    init(_ bytes: [UInt8], file: String, part: Range<Int>, line: Int) {
        self.bytes = bytes
        self.file = file
        self.end = part.upperBound
        self.i = part.lowerBound
        self.line = line
    }

    /// Where the next entry's reading begins.
    var offset: Int { i }

    /// Whether the text read so far ends with a newline that ended a line outside parentheses and
    /// quotes: the whole text read so would begin a new entry right after it.
    var endsAtLineEnd: Bool { i == end && lastLineEnd == end - 1 }

    /// Reads the next entry into `entry` (its tokens' storage reused); false at the end of the text.
    mutating func next(into entry: inout Entry) -> Bool {
        entry.tokens.removeAll(keepingCapacity: true)
        var depth = 0
        var parenLine = 0
        var atLineStart = true
        while i < end {
            let c = bytes[i]
            if atLineStart && depth == 0 {
                entry.line = line
                entry.inheritsOwner = c == 0x20 || c == 0x09
                atLineStart = false
            }
            switch c {
            case 0x0A:
                line += 1
                i += 1
                if depth == 0 {
                    lastLineEnd = i - 1
                    if !entry.tokens.isEmpty { return true }
                    atLineStart = true
                }
            case 0x20, 0x09, 0x0D:
                i += 1
            case UInt8(ascii: ";"):
                while i < end && bytes[i] != 0x0A { i += 1 }
            case UInt8(ascii: "("):
                if depth == 0 { parenLine = line }
                depth += 1
                i += 1
            case UInt8(ascii: ")"):
                if depth == 0 {
                    errors.append(Diagnostic(file: file, line: line, message: "')' without a matching '('"))
                } else {
                    depth -= 1
                }
                i += 1
            case UInt8(ascii: "\""):
                i += 1
                let start = i
                var closed = false
                while i < end {
                    let d = bytes[i]
                    if d == UInt8(ascii: "\\") && i + 1 < end {
                        if bytes[i + 1] == 0x0A { line += 1 }
                        i += 2
                        continue
                    }
                    if d == UInt8(ascii: "\"") {
                        closed = true
                        break
                    }
                    if d == 0x0A { break }
                    i += 1
                }
                entry.tokens.append(Token(bytes: bytes[start..<i], quoted: true))
                if closed {
                    i += 1
                } else {
                    errors.append(
                        Diagnostic(file: file, line: line, message: "quoted string is not closed on its line"))
                }
            default:
                let start = i
                while i < end {
                    let d = bytes[i]
                    if d == UInt8(ascii: "\\") && i + 1 < end {
                        i += 2
                        continue
                    }
                    if d == 0x20 || d == 0x09 || d == 0x0A || d == 0x0D || d == UInt8(ascii: ";")
                        || d == UInt8(ascii: "(") || d == UInt8(ascii: ")") || d == UInt8(ascii: "\"")
                    {
                        break
                    }
                    i += 1
                }
                entry.tokens.append(Token(bytes: bytes[start..<i], quoted: false))
            }
        }
        if depth > 0 {
            errors.append(Diagnostic(file: file, line: parenLine, message: "'(' is never closed"))
            return false
        }
        return !entry.tokens.isEmpty
    }
}
