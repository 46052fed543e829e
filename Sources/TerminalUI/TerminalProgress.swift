import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A progress bar on standard error, drawn in place, only when standard error is a terminal (logs
/// and pipes get nothing). For long steps such as the geo compile of a whole City database.
public final class TerminalProgress: Sendable {
    private let label: String
    private let expected: Int
    private let enabled: Bool
    /// The percentage last drawn (the work's threads may update it at once).
    private let lastPercent = Atomic(-1)

    /// `expected`: the count that makes 100 % (an estimate is fine: the bar stops at 99 % until
    /// `finish`).
    public init(_ label: String, expected: Int) {
        self.label = label
        self.expected = max(1, expected)
        enabled = isatty(STDERR_FILENO) == 1
    }

    /// Draws `done` of `expected`.
    public func update(_ done: Int) {
        guard enabled else { return }
        let percent = min(99, done * 100 / expected)
        guard lastPercent.exchange(percent, ordering: .relaxed) != percent else { return }
        draw(percent, done)
    }

    /// Draws 100 % and ends the line.
    public func finish(_ done: Int) {
        guard enabled else { return }
        draw(100, done)
        FileHandle.standardError.write("\n".data(using: .utf8)!)
    }

    private func draw(_ percent: Int, _ done: Int) {
        let width = 30
        let filled = width * percent / 100
        let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled)
        FileHandle.standardError.write("\r\(label) [\(bar)] \(percent)% \(done)".data(using: .utf8)!)
    }
}
