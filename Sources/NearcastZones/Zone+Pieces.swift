import DNSWire
import HashTreeCollections

/// What a zone holds, taken apart into pieces that are let go one at a time (docs/ARCHITECTURE.md
/// §15, "Letting a zone go").
///
/// Freeing a zone of a million names at once is a second of frees into the malloc arenas the
/// answering threads allocate from: glibc's arena locks and its fast-bin consolidation made record
/// changes of that second wait 5-30 ms. Held apart, the zone's own structure is freed at once
/// (its trie's nodes only, the names and records are held here) and the rest a piece at a time,
/// with pauses between them (`Retired`).
public struct ZonePieces: Sendable {
    private var namePieces: [[(DNSName, ZoneNode)]]
    private var referrerPieces: [[(DNSName, TreeSet<DNSName>)]]

    fileprivate init(names: [[(DNSName, ZoneNode)]], referrers: [[(DNSName, TreeSet<DNSName>)]]) {
        (namePieces, referrerPieces) = (names, referrers)
    }

    /// The names the pieces hold, with their RRsets.
    var heldNames: [(DNSName, [RRSet])] { namePieces.flatMap { $0.map { ($0.0, $0.1.sets) } } }
    /// The names whose referrers the pieces hold.
    var heldReferred: [DNSName] { referrerPieces.flatMap { $0.map(\.0) } }

    /// How many pieces are left.
    public var count: Int { namePieces.count + referrerPieces.count }

    /// Lets one piece go (freed, unless something else still holds it); false when none was left.
    public mutating func letOneGo() -> Bool {
        if referrerPieces.popLast() != nil { return true }
        return namePieces.popLast() != nil
    }
}

extension Zone {
    /// The zone's names with what they hold, and its referrers index, in pieces of `size` names.
    /// It shares them with the zone (nothing is copied): once the zone is let go, each piece is
    /// freed when it is let go.
    public func pieces(of size: Int) -> ZonePieces {
        ZonePieces(names: Self.chunked(tree, size), referrers: Self.chunked(referrers, size))
    }

    private static func chunked<V>(_ d: TreeDictionary<DNSName, V>, _ size: Int) -> [[(DNSName, V)]] {
        var out: [[(DNSName, V)]] = []
        out.reserveCapacity(d.count / size + 1)
        var piece: [(DNSName, V)] = []
        piece.reserveCapacity(size)
        for (k, v) in d {
            piece.append((k, v))
            if piece.count == size {
                out.append(piece)
                piece.removeAll(keepingCapacity: true)
            }
        }
        if !piece.isEmpty { out.append(piece) }
        return out
    }
}
