/// Where and how the XDP fast path runs (`nearcastd --xdp`, or `xdp:` in the config).
public struct XDPSettings: Hashable, Sendable {
    /// One interface to attach to, and the attach mode.
    public struct Interface: Hashable, Sendable, CustomStringConvertible {
        public var name: String
        /// "native" (driver) or "generic" (skb).
        public var mode: String

        /// Parses `IFACE`, `IFACE:native` or `IFACE:generic`.
        public init?(_ text: String) {
            let parts = text.split(separator: ":", maxSplits: 1).map(String.init)
            guard let n = parts.first, !n.isEmpty, n.count < 16 else { return nil }
            let m = parts.count == 2 ? parts[1] : "native"
            guard m == "native" || m == "generic" else { return nil }
            name = n
            mode = m
        }

        public var description: String { "\(name):\(mode)" }
    }

    public var interfaces: [Interface] = []
    /// A directory on a bpffs where the maps are pinned, so a restarted daemon takes them over.
    public var pinRoot = "/sys/fs/bpf/nearcast"
    /// The compiled XDP program; nil: look next to the executable, then in /usr/lib/nearcast.
    public var objectPath: String?
    /// Leave the program attached (and the maps pinned) when the daemon stops.
    public var keepOnExit = false
    /// DNS queries per second each CPU may pass to the slow path (0: no limit). The default keeps
    /// a flood of misses well below what one slow-path core answers.
    public var passRate: UInt32 = 10000
    /// Queries a CPU may pass at once above the rate.
    public var passBurst: UInt32 = 1000
    /// Above the budget: a minimal TC=1 reply (true) or a drop (false).
    public var overBudgetTruncates = true
    /// Names the names table holds, a record each (kernel memory in proportion to the records'
    /// size, with arena room for a quarter more records). nil: sized from the zones at start.
    /// A table pinned by a running instance keeps its size until the pins are removed.
    public var namesCapacity: Int?

    public init() {}

    public var enabled: Bool { !interfaces.isEmpty }
}
