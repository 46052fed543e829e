import Foundation
import NearcastTestSupport
import Testing

@testable import NearcastConfiguration

/// README.md against the code (issue 30): every flag it gives nearcastd or a nearcast command, and
/// every config key its YAML examples use, exists; and every flag of nearcastd and every top-level
/// config key is in it.
@Suite(.timeLimit(.minutes(2))) struct ReadmeTests {
    static let readme = try! String(contentsOf: Repository.root.appendingPathComponent("README.md"), encoding: .utf8)

    /// The README's code: its fenced blocks' lines and its inline `code` spans, each with the kind of
    /// fence it was in ("sh", "yaml", ...; "" for inline code).
    static var code: [(kind: String, text: String)] {
        var out: [(String, String)] = []
        var fence: String?
        for line in readme.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("```") {
                fence = fence == nil ? String(line.dropFirst(3)) : nil
                continue
            }
            if let fence {
                out.append((fence, String(line)))
                continue
            }
            let spans = line.split(separator: "`", omittingEmptySubsequences: false)
            for (i, span) in spans.enumerated() where i % 2 == 1 { out.append(("", String(span))) }
        }
        return out
    }

    static func help(_ arguments: [String]) throws -> String? {
        let program = try TestSupport.product(arguments[0])
        let out = try TestSupport.run(program, Array(arguments.dropFirst()) + ["--help"])
        return out.status == 0 ? out.stdout + out.stderr : nil
    }

    /// Each invocation of nearcastd or nearcast the README shows, with its flags.
    static var invocations: [(command: [String], flags: [String])] {
        var out: [([String], [String])] = []
        for (_, text) in code {
            // A line may show several commands (`a && b`, `a | b`) and a comment after `#`.
            let commandText = text.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            for part in commandText.components(separatedBy: CharacterSet(charactersIn: "|;&")) {
                var words = part.split(separator: " ").map(String.init)
                while let w = words.first,
                    !["nearcastd", "nearcast"].contains(URL(fileURLWithPath: w).lastPathComponent)
                {
                    words.removeFirst()
                }
                guard let first = words.first else { continue }
                let program = URL(fileURLWithPath: first).lastPathComponent
                let subcommands =
                    program == "nearcast"
                    ? Array(words.dropFirst().prefix { !$0.hasPrefix("-") && $0.first?.isLetter == true }.prefix(2))
                    : []
                let flags = words.filter { $0.hasPrefix("--") }.map { String($0.split(separator: "=").first!) }
                out.append(([program] + subcommands, flags))
            }
        }
        return out
    }

    @Test func everyFlagTheReadmeGivesExists() throws {
        var helps: [[String]: String] = [:]
        func help(for command: [String]) throws -> String? {
            // `nearcast store import`: the longest command that has a help of its own.
            var c = command
            while !c.isEmpty {
                if let h = helps[c] { return h }
                if let h = try Self.help(c) {
                    helps[c] = h
                    return h
                }
                c.removeLast()
            }
            return nil
        }
        let found = Self.invocations
        #expect(found.count > 20, "the README shows its commands: \(found.count)")
        for (command, flags) in found {
            let text = try #require(try help(for: command), "\(command.joined(separator: " "))")
            for flag in flags {
                #expect(
                    text.contains(flag + " ") || text.contains(flag + "\n") || text.contains(flag + ","),
                    "\(command.joined(separator: " ")) \(flag)")
            }
        }
    }

    @Test func everyFlagOfNearcastdIsInTheReadme() throws {
        let text = try #require(try Self.help(["nearcastd"]))
        let flags = Set(
            text.split(separator: "\n").compactMap { line -> String? in
                let word = line.split(separator: " ").first.map(String.init) ?? ""
                return word.hasPrefix("--") ? word : nil
            })
        #expect(flags.count > 10)
        for flag in flags.subtracting(["--help"]) {
            #expect(Self.readme.contains(flag), "\(flag)")
        }
    }

    /// The YAML examples' keys at the top level, and in `xdp` and `api`, are the config's; and every
    /// top-level key is shown or named.
    @Test func theConfigKeysTheReadmeUsesExistAndEveryOneIsInIt() {
        var section: String?
        var seen: Set<String> = []
        for (kind, text) in Self.code where kind == "yaml" {
            guard let colon = text.firstIndex(of: ":"), !text.hasPrefix("#") else { continue }
            let key = text[..<colon].trimmingCharacters(in: .whitespaces)
            guard !key.isEmpty, !key.hasPrefix("-"), !key.contains(" "), !key.contains("{") else { continue }
            if !text.hasPrefix(" ") {
                section = key
                seen.insert(key)
                #expect(NearcastConfig.knownKeys.contains(key), "\(text)")
            } else if text.hasPrefix("  "), !text.hasPrefix("   "), let section {
                let known =
                    section == "xdp"
                    ? NearcastConfig.knownXDPKeys : section == "api" ? NearcastConfig.knownAPIKeys : nil
                if let known { #expect(known.contains(key), "\(section).\(key)") }
            }
        }
        for key in NearcastConfig.knownKeys {
            #expect(
                seen.contains(key) || Self.readme.contains("`\(key)`") || Self.readme.contains("`\(key):"), "\(key)")
        }
    }
}
