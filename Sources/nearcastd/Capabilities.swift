import CCapabilities
import Logging

/// The daemon's Linux capabilities (capabilities(7)), narrowed once it has started
/// (Sources/nearcastd/README.md, "Privileges"): loading and attaching the XDP program, pinning its maps
/// and binding port 53 need more than serving does.
enum Capabilities {
    /// What a running fast path still needs: CAP_BPF to make the maps of a new generation (a
    /// capacity or geo change), CAP_NET_ADMIN to detach the program at the stop.
    static let fastPath: [Int] = [39, 12]  // CAP_BPF, CAP_NET_ADMIN

    /// Drops what the start alone needed (all but `fastPath` when XDP is on, everything when it is
    /// off), and says in the log what went and what stayed.
    static func narrow(keepingFastPath: Bool, logger: Logger) {
        guard let narrowed = keepOnly(keepingFastPath ? fastPath : []) else {
            logger.warning("capabilities could not be dropped in every thread: some keep those the daemon started with")
            return
        }
        guard !narrowed.dropped.isEmpty else { return }
        logger.info(
            "capabilities dropped",
            metadata: [
                "dropped": "\(narrowed.dropped.joined(separator: ","))",
                "kept": "\(narrowed.kept.isEmpty ? "none" : narrowed.kept.joined(separator: ","))",
            ])
    }

    /// Every thread keeps, of the capabilities it has, those in `keep`, and drops the others for
    /// good. The names of those dropped and of those kept, or nil if a thread could not drop them.
    static func keepOnly(_ keep: [Int]) -> (dropped: [String], kept: [String])? {
        let held = ncc_permitted()
        let mask = keep.reduce(UInt64(0)) { $0 | 1 << UInt64($1) }
        guard ncc_keep_only(mask) == 0 else { return nil }
        let caps = (0..<64).filter { held & (1 << UInt64($0)) != 0 }
        return (
            caps.filter { mask & (1 << UInt64($0)) == 0 }.map(name),
            caps.filter { mask & (1 << UInt64($0)) != 0 }.map(name)
        )
    }

    /// `cap_bpf` for 39, as capabilities(7) names them.
    static func name(_ cap: Int) -> String {
        var buffer = [CChar](repeating: 0, count: 32)
        ncc_name(Int32(cap), &buffer, Int32(buffer.count))
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
