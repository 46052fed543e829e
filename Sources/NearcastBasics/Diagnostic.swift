/// One problem found in a user's file: where it is and what is wrong.
public struct Diagnostic: Error, Hashable, Sendable, CustomStringConvertible {
    public var file: String
    /// 1-based line number; 0 when the problem concerns the whole file.
    public var line: Int
    public var message: String

    public init(file: String, line: Int, message: String) {
        self.file = file
        self.line = line
        self.message = message
    }

    /// `file:line: message`, the form editors and compilers use.
    public var description: String { line > 0 ? "\(file):\(line): \(message)" : "\(file): \(message)" }
}

/// A file, or a set of files, that cannot be used, with every problem found in it.
public struct DiagnosticsError: Error, Sendable, CustomStringConvertible {
    public var diagnostics: [Diagnostic]
    public init(_ diagnostics: [Diagnostic]) { self.diagnostics = diagnostics }
    public var description: String { diagnostics.map(\.description).joined(separator: "\n") }
}

/// A path as an input file gives it: absolute as written, or relative to the file's directory
/// (`base`; empty: as written).
public func resolvedPath(_ path: String, relativeTo base: String) -> String {
    path.hasPrefix("/") || base.isEmpty ? path : base + "/" + path
}
