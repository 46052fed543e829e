import DNSWire
import NearcastBasics
import NearcastZones

/// The image's names made and handed on one at a time, never held together (`AnswerImage.build`
/// holds them all: at 1M names about 1 GiB, and at 10M the start's peak). What a first generation
/// of the fast path is made from: each name's record made by the thread that made the name, while
/// its bytes are still in that thread's cache (docs/ARCHITECTURE.md §11, step 1).
extension AnswerImage {
    public struct Stream: Sendable {
        let responder: Responder
        let maxSections: Int
        let walks: [Walk]

        /// The negative answer at every anchor of every zone, in the image's order of zones: the
        /// names of an anchor's zone point at it (`Name.apexLength`), so whoever makes their
        /// records numbers these first.
        public let negatives: [(name: [UInt8], negative: Negative)]

        /// The stream of the image `build` would make of `responder`'s zones.
        public init(responder: Responder, maxSections: Int) {
            self.responder = responder
            self.maxSections = maxSections
            walks = AnswerImage.walks(responder: responder, maxSections: maxSections)
            negatives = walks.flatMap { w in
                w.context.anchors.names.compactMap { a in w.context.negatives[a].map { (a.lowercased().wire, $0) } }
            }
        }

        /// The names in all (those `build` makes).
        public var count: Int { walks.reduce(0) { $0 + $1.total } }

        /// Makes every name on `parts` threads and hands each to `take` with the sink of its
        /// thread (made by `sink`), in the image's order within each zone's share. A zone too
        /// small to share (`Walk.shares`) is made whole by one thread, the zones taken in turn.
        /// Returns the sinks by thread, and the answers left out as too big.
        public func run<Sink: Sendable>(
            parts: Int, sink: @escaping @Sendable (Int) -> Sink, take: @escaping @Sendable (inout Sink, Name) -> Void
        ) -> (sinks: [Sink], tooBig: Int) {
            let parts = max(1, parts)
            let made = ParallelWork.map(Array(0..<parts), parts: parts, smallest: 1) { mine -> (Sink, Int) in
                let k = mine.first!
                var out = sink(k)
                var tooBig = 0
                var whole = 0  // zones made whole so far, by any thread
                for w in walks where w.total > 0 {
                    let shares = w.shares(parts)
                    if shares == 1 {
                        defer { whole += 1 }
                        guard whole % parts == k else { continue }
                    } else if k >= shares {
                        continue
                    }
                    w.make(share: shares == 1 ? 0 : k, of: shares, responder: responder, tooBig: &tooBig) { _, n in
                        take(&out, n)
                    }
                }
                return (out, tooBig)
            }
            return (made.map(\.0), made.reduce(0) { $0 + $1.1 })
        }

        /// The whole image, as `build` makes it.
        public func image(parts: Int) -> AnswerImage {
            AnswerImage.build(responder: responder, maxSections: maxSections, parts: parts)
        }
    }
}
