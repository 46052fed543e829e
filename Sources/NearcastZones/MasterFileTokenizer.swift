import NearcastBasics

/// Splits RFC 1035 master-file text into entries: one entry per logical line, parentheses joining
/// physical lines, comments removed.
struct MasterFileTokenizer {
    struct Token: Equatable {
        /// Raw text; escapes (`\X`, `\DDD`) are kept as written and decoded by whoever interprets the token.
        var text: [UInt8]
        var quoted: Bool
        var string: String { String(decoding: text, as: UTF8.self) }
    }

    struct Entry {
        var line: Int
        /// True when the line began with a blank: the owner is the previous entry's.
        var inheritsOwner: Bool
        var tokens: [Token]
    }

    static func entries(_ bytes: [UInt8], file: String) -> (entries: [Entry], errors: [Diagnostic]) {
        var entries: [Entry] = []
        var errors: [Diagnostic] = []
        var i = 0
        var line = 1
        var depth = 0
        var parenLine = 0
        var current = Entry(line: 1, inheritsOwner: false, tokens: [])
        var atLineStart = true

        func flush() {
            if !current.tokens.isEmpty { entries.append(current) }
            current.tokens = []
        }
        while i < bytes.count {
            let c = bytes[i]
            if atLineStart && depth == 0 {
                current = Entry(line: line, inheritsOwner: c == 0x20 || c == 0x09, tokens: [])
                atLineStart = false
            }
            switch c {
            case 0x0A:
                line += 1
                i += 1
                if depth == 0 {
                    flush()
                    atLineStart = true
                }
            case 0x20, 0x09, 0x0D:
                i += 1
            case UInt8(ascii: ";"):
                while i < bytes.count && bytes[i] != 0x0A { i += 1 }
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
                var text: [UInt8] = []
                i += 1
                var closed = false
                while i < bytes.count {
                    let d = bytes[i]
                    if d == UInt8(ascii: "\\") && i + 1 < bytes.count {
                        text.append(d)
                        text.append(bytes[i + 1])
                        if bytes[i + 1] == 0x0A { line += 1 }
                        i += 2
                        continue
                    }
                    if d == UInt8(ascii: "\"") {
                        closed = true
                        i += 1
                        break
                    }
                    if d == 0x0A { break }
                    text.append(d)
                    i += 1
                }
                if !closed {
                    errors.append(
                        Diagnostic(file: file, line: line, message: "quoted string is not closed on its line"))
                }
                current.tokens.append(Token(text: text, quoted: true))
            default:
                var text: [UInt8] = []
                while i < bytes.count {
                    let d = bytes[i]
                    if d == UInt8(ascii: "\\") && i + 1 < bytes.count {
                        text.append(d)
                        text.append(bytes[i + 1])
                        i += 2
                        continue
                    }
                    if d == 0x20 || d == 0x09 || d == 0x0A || d == 0x0D || d == UInt8(ascii: ";")
                        || d == UInt8(ascii: "(") || d == UInt8(ascii: ")") || d == UInt8(ascii: "\"")
                    {
                        break
                    }
                    text.append(d)
                    i += 1
                }
                current.tokens.append(Token(text: text, quoted: false))
            }
        }
        if depth > 0 {
            errors.append(Diagnostic(file: file, line: parenLine, message: "'(' is never closed"))
        } else {
            flush()
        }
        return (entries, errors)
    }
}
