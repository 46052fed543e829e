import DNSWire
import NearcastTestSupport
import Testing

@testable import NearcastZones

/// The NSEC chain a signed zone answers its proofs from, kept in chunks: after thousands of
/// owners inserted and removed at random (chunks split and emptied), every lookup agrees with
/// the chain kept as one sorted array, and a copy changed leaves the original as it was.
@Suite(.timeLimit(.minutes(1))) struct DenialChainTests {
    static func name(_ i: Int) -> DNSName { try! DNSName("n\(i).example.test.") }

    /// What the chain says of `name`, from a sorted array of its owners.
    static func expected(_ owners: [DNSName], _ name: DNSName) -> (
        covering: DNSName?, previous: DNSName?, next: DNSName?
    ) {
        guard !owners.isEmpty else { return (nil, nil, nil) }
        let i = owners.firstIndex { !($0 < name) } ?? owners.count
        let here = i < owners.count && owners[i] == name
        let previous = owners[(i + owners.count - 1) % owners.count]
        return (here ? name : previous, previous, owners[(here ? i + 1 : i) % owners.count])
    }

    @Test func lookupsAgreeWithASortedArrayThroughInsertionsAndRemovals() {
        var rng = SplitMix(seed: 34)
        var chain = DenialChain(hashed: false, owners: (0..<700).map { Self.name($0 * 3) })
        var model = Set((0..<700).map { $0 * 3 })
        let original = chain
        for step in 0..<6000 {
            let k = Int.random(in: 0..<2500, using: &rng)
            if Bool.random(using: &rng) {
                chain.insert(Self.name(k))
                model.insert(k)
            } else {
                chain.remove(Self.name(k))
                model.remove(k)
            }
            guard step % 300 == 0 else { continue }
            let owners = model.map(Self.name).sorted()
            #expect(chain.count == owners.count)
            for probe in [k, k + 1, Int.random(in: 0..<2600, using: &rng)] {
                let n = Self.name(probe)
                let want = Self.expected(owners, n)
                #expect(chain.matchingOrCovering(n) == want.covering, "step \(step), \(n)")
                #expect(
                    chain.neighbours(of: n)?.previous == want.previous && chain.neighbours(of: n)?.next == want.next)
                #expect(chain.contains(n) == model.contains(probe))
            }
        }
        // Emptied, and filled again.
        for k in model { chain.remove(Self.name(k)) }
        #expect(chain.isEmpty && chain.matchingOrCovering(Self.name(1)) == nil)
        chain.insert(Self.name(5))
        #expect(chain.neighbours(of: Self.name(5))! == (Self.name(5), Self.name(5)))
        // The copy taken first is untouched.
        #expect(original.count == 700 && original.contains(Self.name(3)) && !original.contains(Self.name(4)))
    }

    /// A type taken out of an NSEC's bitmap leaves it canonical: no trailing zero octet, no
    /// empty window, the other types as they were.
    @Test func aTypeTakenOutOfAnNSECBitmapLeavesItCanonical() throws {
        // A (1), AAAA (28), RRSIG (46), NSEC (47) in window 0; CAA (257) in window 1.
        let bitmap: [UInt8] = [0, 6, 0x40, 0, 0, 0x08, 0, 0x03, 1, 1, 0x40]
        #expect(NSECBitmap.removing(.a, from: bitmap) == [0, 6, 0, 0, 0, 0x08, 0, 0x03, 1, 1, 0x40])
        #expect(NSECBitmap.removing(.caa, from: bitmap) == [0, 6, 0x40, 0, 0, 0x08, 0, 0x03])
        let noSigs = try #require(NSECBitmap.removing(RRType(rawValue: 47), from: [0, 6, 0x40, 0, 0, 0, 0, 0x01]))
        #expect(noSigs == [0, 1, 0x40])
        #expect(NSECBitmap.removing(.a, from: [0, 1, 0x40]) == [])
        #expect(NSECBitmap.removing(.mx, from: bitmap) == bitmap, "a type not there")
        #expect(NSECBitmap.removing(.a, from: [0, 9, 0x40]) == nil, "a window longer than its bytes")
    }
}
