import Foundation
import NearcastTestSupport
import Testing

/// docs/ARCHITECTURE.md and the modules' READMEs it sends readers to, against the code (issue 68):
/// what they name exists, so that a newcomer who follows them finds each type, file and section,
/// and the module map lists every module.
@Suite(.timeLimit(.minutes(1))) struct ArchitectureTests {
    static let doc = try! String(
        contentsOf: Repository.root.appendingPathComponent("docs/ARCHITECTURE.md"), encoding: .utf8)

    /// The map and the details it sends readers to: each module's README, the XDP program's and the
    /// test support's.
    static var documents: [String] {
        let readmes =
            (modules.map { "Sources/\($0)/README.md" } + ["bpf/README.md", "Tests/NearcastTestSupport/README.md"])
            .compactMap { path in
                try? String(contentsOfFile: Repository.path(path), encoding: .utf8)
            }
        return [doc] + readmes
    }

    /// Names from outside the project the document uses: Swift's and its libraries' types, the
    /// browser's EventSource, HTTP's Authorization header, the timing fields of BIND's key files.
    static let outside: Set<String> = [
        "AsyncStream", "Atomic", "Mutex", "TreeDictionary", "EventSource", "Authorization", "Activate", "Delete",
        "Publish", "Inactive",
    ]

    /// What a source file's name ends with.
    static let sourceSuffixes = [".swift", ".c", ".h", ".sh", ".py", ".pl"]

    /// The documents' inline `code` spans (fenced blocks left out).
    static var spans: [String] {
        var out: [String] = []
        var fenced = false
        for line in documents.joined(separator: "\n").split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("```") {
                fenced.toggle()
                continue
            }
            guard !fenced else { continue }
            let parts = line.split(separator: "`", omittingEmptySubsequences: false)
            for (i, part) in parts.enumerated() where i % 2 == 1 { out.append(String(part)) }
        }
        return out
    }

    /// Every file of the repository (paths from its root), the build's and git's left out.
    static let files: [String] = {
        let root = Repository.root.path
        var out: [String] = []
        guard let walk = FileManager.default.enumerator(atPath: root) else { return [] }
        while let path = walk.nextObject() as? String {
            if path == ".build" || path == ".git" || path.hasPrefix(".build/") || path.hasPrefix(".git/") {
                walk.skipDescendants()
                continue
            }
            out.append(path)
        }
        return out
    }()

    /// The names the project's Swift and C declare as types (and extends).
    static let declared: Set<String> = {
        let pattern = try! NSRegularExpression(
            pattern: #"\b(?:class|struct|enum|actor|protocol|typealias|extension)\s+([A-Z][A-Za-z0-9_]*)"#)
        var names: Set<String> = []
        for path in files where path.hasSuffix(".swift") || path.hasSuffix(".h") || path.hasSuffix(".c") {
            guard let text = try? String(contentsOfFile: Repository.path(path), encoding: .utf8) else { continue }
            let range = NSRange(text.startIndex..., in: text)
            for m in pattern.matches(in: text, range: range) {
                if let r = Range(m.range(at: 1), in: text) { names.insert(String(text[r])) }
            }
        }
        return names
    }()

    static var modules: [String] {
        (try? FileManager.default.contentsOfDirectory(atPath: Repository.path("Sources")))?.sorted() ?? []
    }

    @Test func everyTypeItNamesIsDeclaredOrAModule() {
        let name = try! NSRegularExpression(pattern: #"^([A-Z][A-Za-z0-9]*)(\.[a-z][A-Za-z0-9]*)?$"#)
        let modules = Set(Self.modules)
        var named: Set<String> = []
        for span in Self.spans where !Self.sourceSuffixes.contains(where: span.hasSuffix) {
            let range = NSRange(span.startIndex..., in: span)
            guard let m = name.firstMatch(in: span, range: range), let r = Range(m.range(at: 1), in: span) else {
                continue
            }
            let type = String(span[r])
            // All capitals: a placeholder (FILE, NODE) or an acronym, not a type.
            guard type != type.uppercased() else { continue }
            named.insert(type)
        }
        #expect(named.count > 100, "the document names the project's types")
        let unknown = named.filter {
            !Self.declared.contains($0) && !modules.contains($0) && !Self.outside.contains($0)
        }
        #expect(unknown.isEmpty, "named in ARCHITECTURE.md or a README, declared nowhere: \(unknown.sorted())")
    }

    @Test func everyFileItNamesExists() {
        let tops = ["Sources/", "Tests/", "tools/", "bpf/", "docs/", "dist/", "debian/", "examples/", ".ci/"]
        var named: Set<String> = []
        for span in Self.spans where !span.contains(" ") && !span.contains("Type+Feature") {
            let path = span.hasSuffix("/") ? String(span.dropLast()) : span
            if tops.contains(where: span.hasPrefix) || Self.sourceSuffixes.contains(where: path.hasSuffix) {
                named.insert(path)
            }
        }
        #expect(named.count > 10, "the document names the project's files")
        let files = Set(Self.files)
        let missing = named.filter { path in
            !files.contains(path) && !Self.files.contains { $0.hasSuffix("/" + path) }
        }
        #expect(missing.isEmpty, "named in ARCHITECTURE.md or a README, not in the repository: \(missing.sorted())")
    }

    @Test func everySectionItRefersToIsThere() {
        let headings = Set(
            Self.doc.split(separator: "\n").compactMap { line -> Int? in
                guard line.hasPrefix("## ") else { return nil }
                return Int(line.dropFirst(3).prefix { $0.isNumber })
            })
        // "§13", not an RFC's "RFC 4035 §3.1".
        let reference = try! NSRegularExpression(pattern: #"(?<!RFC \d{4} )§(\d+)"#)
        let all = Self.documents.joined(separator: "\n")
        let referred = Set(
            reference.matches(in: all, range: NSRange(all.startIndex..., in: all)).compactMap { m in
                Range(m.range(at: 1), in: all).flatMap { Int(all[$0]) }
            })
        #expect(!referred.isEmpty)
        #expect(referred.subtracting(headings).isEmpty, "sections referred to and not there")
    }

    /// Code that cites a paragraph of a README (`Sources/NearcastControl/README.md, "Letting a zone
    /// go"`) finds it there: a bold title or a heading that begins so.
    @Test func everyParagraphTheCodeCitesIsInItsReadme() throws {
        let citation = try NSRegularExpression(pattern: #"((?:Sources/[A-Za-z]+|bpf)/README\.md)`?, "([^"]+)""#)
        var cited = 0
        var missing: [String] = []
        for path in Self.files where path.hasPrefix("Sources/") || path.hasPrefix("bpf/") {
            guard [".swift", ".h", ".c", ".md"].contains(where: path.hasSuffix),
                let raw = try? String(contentsOfFile: Repository.path(path), encoding: .utf8)
            else { continue }
            // A title may wrap onto the comment's next line.
            let text = raw.replacingOccurrences(
                of: #"\n[ \t]*(///|//|\*)[ \t]*"#, with: " ", options: .regularExpression)
            for m in citation.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                guard let r1 = Range(m.range(at: 1), in: text), let r2 = Range(m.range(at: 2), in: text) else {
                    continue
                }
                let (readme, title) = (String(text[r1]), String(text[r2]))
                cited += 1
                let body = (try? String(contentsOfFile: Repository.path(readme), encoding: .utf8)) ?? ""
                let flat = body.replacingOccurrences(of: "\n", with: " ")
                if !flat.contains("**\(title)") && !flat.contains("## \(title)") {
                    missing.append("\(path): \(readme), \"\(title)\"")
                }
            }
        }
        #expect(cited > 10, "the code cites the READMEs' paragraphs")
        #expect(missing.isEmpty, "cited and not there: \(missing)")
    }

    /// The map is read in one sitting: details go beside their code, in the modules' READMEs.
    @Test func theMapFitsOneSitting() {
        let lines = Self.doc.split(separator: "\n", omittingEmptySubsequences: false).count - 1
        #expect(lines <= 600, "docs/ARCHITECTURE.md has \(lines) lines: move details to a module's README")
    }

    /// §8's rule for threads: `OwnThread` is the one way the daemon makes one.
    @Test func threadsAreMadeOnlyByOwnThread() throws {
        // Foundation's Thread made (not onOwnThread's call), or a thread detached or created.
        let made = try NSRegularExpression(
            pattern: #"(^|[^A-Za-z])Thread( \{|\(block)|detachNewThread|pthread_create"#, options: .anchorsMatchLines)
        var makers: [String] = []
        for path in Self.files where path.hasPrefix("Sources/") && path.hasSuffix(".swift") {
            let text = try String(contentsOfFile: Repository.path(path), encoding: .utf8)
            if made.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) != nil { makers.append(path) }
        }
        #expect(makers == ["Sources/NearcastBasics/OwnThread.swift"], "threads made outside OwnThread: \(makers)")
    }

    /// The module map (§7) lists every module of Sources.
    @Test func theModuleMapListsEveryModule() throws {
        let start = try #require(Self.doc.range(of: "## 7. "))
        let end = try #require(Self.doc.range(of: "\n## 8. ", range: start.upperBound..<Self.doc.endIndex))
        let section = Self.doc[start.upperBound..<end.lowerBound]
        let words = Set(section.split { !($0.isLetter || $0.isNumber) }.map(String.init))
        let missing = Self.modules.filter { !words.contains($0) }
        #expect(Self.modules.count > 20)
        #expect(missing.isEmpty, "modules §7 does not list: \(missing)")
    }
}
