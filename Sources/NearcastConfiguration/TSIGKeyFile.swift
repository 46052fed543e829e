import DNSWire
import Foundation
import NearcastBasics
import NearcastTSIG

/// TSIG keys in BIND's `key` syntax, as `tsig-keygen`, `rndc-confgen` and Knot's `keymgr` print
/// them, and as named.conf and nsupdate read them:
///
///     key "xfr.example." {
///         algorithm hmac-sha256;
///         secret "6Nd4hW6X0W8cGSUhv3kYVZ4UpmjtwcIs4hGJgkZ61ZE=";
///     };
///
/// Comments (`#`, `//`, `/* */`) may go anywhere; a file holds any number of keys and nothing else.
public enum TSIGKeyFile {
    /// The keys in `text` (the contents of `fileName`); every problem is reported with its line.
    public static func parse(_ text: String, fileName: String) throws(DiagnosticsError) -> [TSIGKey] {
        var tokens = Tokens(text)
        var keys: [TSIGKey] = []
        var problems: [Diagnostic] = []
        func fail(_ line: Int, _ m: String) { problems.append(Diagnostic(file: fileName, line: line, message: m)) }
        while let (word, line) = tokens.next() {
            guard word == "key" else {
                fail(
                    line,
                    "expected a key statement (key \"NAME\" { algorithm ALG; secret \"BASE64\"; };), found '\(word)'")
                return try Self.stop(problems)
            }
            guard let (nameText, _) = tokens.next(), nameText != "{" else {
                fail(line, "a key statement needs the key's name")
                return try Self.stop(problems)
            }
            guard tokens.next()?.0 == "{" else {
                fail(line, "expected '{' after key \(nameText)")
                return try Self.stop(problems)
            }
            let problemsBefore = problems.count
            var algorithm: TSIGAlgorithm?
            var secret: [UInt8]?
            var closed = false
            while let (field, fieldLine) = tokens.next() {
                if field == "}" {
                    closed = true
                    break
                }
                guard let (value, _) = tokens.next(), tokens.next()?.0 == ";" else {
                    fail(fieldLine, "expected '\(field) VALUE;' in key \(nameText)")
                    return try Self.stop(problems)
                }
                switch field.lowercased() {
                case "algorithm":
                    algorithm = TSIGAlgorithm(name: value)
                    if algorithm == nil {
                        fail(
                            fieldLine,
                            "key \(nameText): algorithm '\(value)' is not supported (supported: \(TSIGAlgorithm.allCases.map(\.rawValue).joined(separator: ", ")))"
                        )
                    }
                case "secret":
                    secret = Data(base64Encoded: value).map { Array($0) }
                    if secret == nil || secret!.isEmpty {
                        fail(fieldLine, "key \(nameText): the secret is not base64")
                    }
                default:
                    fail(fieldLine, "key \(nameText): unknown field '\(field)' (known: algorithm, secret)")
                }
            }
            guard closed, tokens.next()?.0 == ";" else {
                fail(line, "key \(nameText) is not closed with '};'")
                return try Self.stop(problems)
            }
            let name: DNSName
            do { name = try DNSName(nameText.hasSuffix(".") ? nameText : nameText + ".") } catch {
                fail(line, "key name '\(nameText)': \(error)")
                continue
            }
            if problems.count == problemsBefore {
                if algorithm == nil { fail(line, "key \(nameText) has no algorithm") }
                if secret == nil { fail(line, "key \(nameText) has no secret") }
            }
            if let algorithm, let secret {
                keys.append(TSIGKey(name: name, algorithm: algorithm, secret: secret, source: "\(fileName):\(line)"))
            }
        }
        return try Self.stop(problems, keys)
    }

    private static func stop(_ problems: [Diagnostic], _ keys: [TSIGKey] = []) throws(DiagnosticsError) -> [TSIGKey] {
        if !problems.isEmpty { throw DiagnosticsError(problems) }
        return keys
    }

    /// Reads the key file at `path`.
    public static func load(path: String) throws(DiagnosticsError) -> [TSIGKey] {
        guard let data = FileManager.default.contents(atPath: path) else {
            let why = FileManager.default.fileExists(atPath: path) ? "cannot be read" : "does not exist"
            throw DiagnosticsError([Diagnostic(file: path, line: 0, message: "TSIG key file \(why)")])
        }
        return try parse(String(decoding: data, as: UTF8.self), fileName: path)
    }

    /// `key` in this syntax, as `nearcast tsig keygen` prints it.
    public static func text(for key: TSIGKey) -> String {
        """
        key "\(key.name)" {
        \talgorithm \(key.algorithm.rawValue);
        \tsecret "\(Data(key.secret).base64EncodedString())";
        };

        """
    }

    /// Words, quoted strings and the punctuation `{ } ;`, each with its line; comments skipped.
    struct Tokens {
        let chars: [Character]
        var i = 0
        var line = 1

        init(_ text: String) { chars = Array(text) }

        mutating func next() -> (String, Int)? {
            while i < chars.count {
                let c = chars[i]
                if c == "\n" {
                    line += 1
                    i += 1
                } else if c.isWhitespace {
                    i += 1
                } else if c == "#" || (c == "/" && i + 1 < chars.count && chars[i + 1] == "/") {
                    while i < chars.count && chars[i] != "\n" { i += 1 }
                } else if c == "/" && i + 1 < chars.count && chars[i + 1] == "*" {
                    i += 2
                    while i < chars.count && !(chars[i] == "*" && i + 1 < chars.count && chars[i + 1] == "/") {
                        if chars[i] == "\n" { line += 1 }
                        i += 1
                    }
                    i += 2
                } else if c == "{" || c == "}" || c == ";" {
                    i += 1
                    return (String(c), line)
                } else if c == "\"" {
                    let start = line
                    var s = ""
                    i += 1
                    while i < chars.count && chars[i] != "\"" {
                        if chars[i] == "\n" { line += 1 }
                        s.append(chars[i])
                        i += 1
                    }
                    i += 1
                    return (s, start)
                } else {
                    var s = ""
                    while i < chars.count, !chars[i].isWhitespace, !"{};\"".contains(chars[i]) {
                        s.append(chars[i])
                        i += 1
                    }
                    return (s, line)
                }
            }
            return nil
        }
    }
}
