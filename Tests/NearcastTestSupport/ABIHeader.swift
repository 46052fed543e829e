import Foundation

/// What tests read from the one header the XDP program and Swift share
/// (Sources/CNearcastABI/include/nearcast_abi.h), so that no test keeps a copy of it by hand.
public enum ABIHeader {
    public static var path: String { Repository.path("Sources/CNearcastABI/include/nearcast_abi.h") }

    /// The verdict reasons, as `struct nc_stats` names its counters (and `bpftool map dump` shows
    /// them), in the program's order (`enum nc_reason`).
    public static let verdictReasons: [String] = {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8),
            let start = text.range(of: "struct nc_stats {"), let end = text[start.upperBound...].range(of: "};")
        else { return [] }
        return text[start.upperBound..<end.lowerBound].split(separator: "\n").compactMap { line in
            let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == ";" })
            // (The counts by type that follow the verdicts are an array.)
            return words.count >= 2 && words[0] == "__u64" && !words[1].contains("[") ? String(words[1]) : nil
        }
    }()

    /// The members of `enum nc_reason`, `NC_REASON_MAX` excluded, in order.
    public static let reasonConstants: [String] = {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8),
            let start = text.range(of: "enum nc_reason {"), let end = text[start.upperBound...].range(of: "};")
        else { return [] }
        return text[start.upperBound..<end.lowerBound].split(separator: "\n").compactMap { line in
            let name = line.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "," || $0 == "=" }).first.map(
                String.init)
            return name.flatMap { $0.hasPrefix("NC_") && $0 != "NC_REASON_MAX" ? $0 : nil }
        }
    }()
}
