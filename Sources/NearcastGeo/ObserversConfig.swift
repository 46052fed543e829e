import Yams

/// How a fleet's servers judge a node together (ARCHITECTURE §13): each server checks every node
/// and publishes its view; a node is down where at least `downWhen` of the live observers see it
/// down (nil: more than half of them). One observer (a single server, or a fleet server cut off
/// from the store) judges alone, as its own checks say.
///
/// ```yaml
/// geo:
///   observers: { down-when: 60% }
/// ```
public struct ObserversConfig: Sendable, Equatable {
    /// The share of live observers (0 < share <= 1) that must see a node down for it to be down;
    /// nil: a majority (more than half).
    public var downWhen: Double?

    public init(downWhen: Double? = nil) { self.downWhen = downWhen }

    /// Whether `count` observers out of `total` are enough.
    public func isEnough(_ count: Int, of total: Int) -> Bool {
        guard total > 0 else { return false }
        if let share = downWhen { return Double(count) >= share * Double(total) - 1e-9 }
        return 2 * count > total
    }

    /// The `observers:` mapping of the geo section.
    static func parse(_ v: Node, fail: (Node?, String) -> Void) -> ObserversConfig {
        var out = ObserversConfig()
        guard let m = v.mapping else {
            fail(v, "geo observers must be { down-when: N% } (the share of live observers that takes a node down)")
            return out
        }
        for (k, value) in m {
            guard k.string == "down-when" else {
                fail(k, "unknown geo observers key '\(k.string ?? "?")' (known: down-when)")
                continue
            }
            let text = value.string ?? ""
            guard text.hasSuffix("%"), let n = Double(text.dropLast()), n > 0, n <= 100 else {
                fail(value, "geo observers down-when must be a share like 60% (more than 0%, at most 100%)")
                continue
            }
            out.downWhen = n / 100
        }
        return out
    }
}
