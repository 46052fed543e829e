import Testing

@testable import DNSWire

@Suite(.timeLimit(.minutes(1))) struct DNSNameTests {
    @Test func parsesAndPrintsAbsoluteNames() throws {
        let n = try DNSName("www.Example.NET.")
        #expect(n.description == "www.Example.NET.")
        #expect(n.labelCount == 3)
        #expect(n.wire == [3, 119, 119, 119, 7, 69, 120, 97, 109, 112, 108, 101, 3, 78, 69, 84, 0])
    }

    @Test func relativeNamesTakeTheOrigin() throws {
        let origin = try DNSName("example.net.")
        #expect(try DNSName("www", origin: origin) == DNSName("www.example.net."))
        #expect(try DNSName("@", origin: origin) == origin)
        #expect(try DNSName("a.b.", origin: origin).description == "a.b.")
        #expect(try DNSName("a.b", origin: .root).wire == [1, 97, 1, 98, 0])
        #expect(try DNSName("a.b").description == "a.b.", "no origin: taken as absolute")
        #expect(
            try DNSName("x\\.", origin: origin).labels == [Array("x.".utf8)] + origin.labels,
            "an escaped dot ends no name")
        let label63 = String(repeating: "a", count: 63)
        #expect(try DNSName(label63, origin: origin).labelCount == 3)
        #expect(throws: DNSWireError.self, "255 octets passed only once the origin is added") {
            // 3 × 64 + 51 + 1 = 244 alone, 256 with example.net.'s 12 octets
            try DNSName(
                [label63, label63, label63, String(repeating: "b", count: 50)].joined(separator: "."), origin: origin)
        }
        #expect(throws: DNSWireError.self) { try DNSName(".a", origin: origin) }
    }

    @Test func comparesCaseInsensitivelyAndHashesAlike() throws {
        let a = try DNSName("WWW.example.net.")
        let b = try DNSName("www.EXAMPLE.net.")
        #expect(a == b)
        #expect(Set([a, b]).count == 1)
        #expect(a.lowercased().description == "www.example.net.")
    }

    /// Names are compared and hashed eight bytes at a time: every byte value, at every place of
    /// the word, folds as one byte alone does; only ASCII letters ignore case ("@" and "`", "["
    /// and "{" differ in the same bit and are different bytes).
    @Test func caseIsFoldedEightBytesAtATimeAsOneByteAtATime() throws {
        for place in 0..<8 {
            for b in 0...255 {
                var bytes = [UInt8]("xY9-Q_z@".utf8)
                bytes[place] = UInt8(b)
                let word = bytes.withUnsafeBufferPointer { DNSName.load8($0, 0) }
                let folded = bytes.map(DNSName.fold).withUnsafeBufferPointer { DNSName.load8($0, 0) }
                #expect(DNSName.fold8(word) == folded, "byte \(b) at \(place)")
            }
        }
        for (a, b, same) in [
            ("a-long-label.Example.NET.", "A-LONG-LABEL.example.net.", true), ("x@y.test.", "x`y.test.", false),
            ("abcdefg[.test.", "abcdefg{.test.", false), ("abcdefgh.test.", "abcdefgi.test.", false),
            ("ab.test.", "AB.TEST.", true),
        ] {
            let (x, y) = (try DNSName(a), try DNSName(b))
            #expect((x == y) == same, "\(a) \(b)")
            if same { #expect(x.hashValue == y.hashValue, "\(a) \(b)") }
        }
    }

    @Test func escapesRoundTrip() throws {
        let n = try DNSName("a\\.b\\065\\032c.example.")
        #expect(n.labels[0] == Array("a.bA c".utf8))
        #expect(n.description == "a\\.bA\\032c.example.")
        #expect(try DNSName(n.description) == n)
    }

    @Test func subdomainRespectsLabelBoundaries() throws {
        let zone = try DNSName("example.net.")
        #expect(try DNSName("a.example.net.").isSubdomain(of: zone))
        #expect(zone.isSubdomain(of: zone))
        #expect(!(try DNSName("aexample.net.").isSubdomain(of: zone)))
        #expect(try DNSName("x.y.").isSubdomain(of: .root))
        #expect(!zone.isSubdomain(of: try DNSName("a.example.net.")))
    }

    @Test func rejectsOverlongLabelsAndNames() {
        let label63 = String(repeating: "a", count: 63)
        #expect(throws: DNSWireError.self) { try DNSName(String(repeating: "a", count: 64) + ".") }
        // 4 × (63+1) + 1 = 257 > 255
        #expect(throws: DNSWireError.self) {
            try DNSName([label63, label63, label63, label63].joined(separator: ".") + ".")
        }
        #expect(throws: DNSWireError.self) { try DNSName("a..b.") }
        #expect(throws: DNSWireError.self) { try DNSName("a\\25") }
        #expect(throws: DNSWireError.self) { try DNSName("a\\300.") }
    }

    @Test func aLabelIsPrependedWithinTheLimits() throws {
        let zone = try DNSName("example.net.")
        #expect(try zone.prepending(Array("www".utf8)) == DNSName("www.example.net."))
        #expect(throws: DNSWireError.self) { try zone.prepending([]) }
        #expect(throws: DNSWireError.self) { try zone.prepending([UInt8](repeating: 0x61, count: 64)) }
        // 3 × 64 + 60 + 1 = 253 octets; one more label of 1 + 1 makes 255, of 1 + 2 makes 256.
        let label63 = String(repeating: "a", count: 63)
        let long = try DNSName(
            [label63, label63, label63, String(repeating: "b", count: 59)].joined(separator: ".") + ".")
        #expect(try long.prepending([0x63]).wire.count == 255)
        #expect(throws: DNSWireError.self) { try long.prepending([0x63, 0x63]) }
    }

    @Test func wildcardsAndAncestors() throws {
        let zone = try DNSName("example.net.")
        let n = try DNSName("a.b.example.net.")
        #expect(n.ancestors(upTo: zone).map(\.description) == ["b.example.net.", "example.net."])
        #expect(zone.wildcardChild?.description == "*.example.net.")
        #expect(zone.wildcardChild!.isWildcard)
    }

    @Test func canonicalOrder() throws {
        let names = try ["b.example.", "example.", "A.example.", "z.a.example.", "\\001.example."].map {
            try DNSName($0)
        }
        #expect(
            names.sorted().map(\.description) == [
                "example.", "\\001.example.", "A.example.", "z.a.example.", "b.example.",
            ])
    }
}

@Suite(.timeLimit(.minutes(1))) struct AddressTextTests {
    @Test(arguments: [
        ("2001:db8::1", "2001:db8::1"), ("::", "::"), ("::1", "::1"), ("2001:DB8:0:0:1:0:0:1", "2001:db8::1:0:0:1"),
        ("::ffff:192.0.2.1", "::ffff:c000:201"), ("1:2:3:4:5:6:7:8", "1:2:3:4:5:6:7:8"), ("fe80::", "fe80::"),
        ("1:2:3:4:5:6:1.2.3.4", "1:2:3:4:5:6:102:304"), ("::1.2.3.4", "::102:304"), ("1::", "1::"),
        ("aBcD::Ef", "abcd::ef"), ("0:0:0:0:0:0:0:0", "::"),
    ])
    func ipv6ParsesAndPrintsRFC5952(input: String, printed: String) throws {
        let a = try #require(IPv6Address(input))
        #expect(a.description == printed)
    }

    @Test(arguments: [
        "1::2::3", "12345::", "1:2:3:4:5:6:7:8:9", ":", "g::1", "1:2:3:4:5:6:7::8", "1:", ":1", ":::",
        "1:2:3:4:5:6:7:8:", "1.2.3.4", "::1.2.3", "1:2:3:4:5:6:7:1.2.3.4", "1.2.3.4::", "", " ::1", "::1 ",
    ])
    func ipv6RejectsMalformed(input: String) {
        #expect(IPv6Address(input) == nil)
    }

    @Test func ipv4() {
        #expect(IPv4Address("192.0.2.1")?.description == "192.0.2.1")
        #expect(IPv4Address("255.255.0.010") == IPv4Address(255, 255, 0, 10))
        #expect(IPv4Address("10.0.0.1") != IPv4Address("10.0.1.0"))
        for bad in [
            "1.2.3", "1.2.3.256", "1.2.3.4.5", "a.b.c.d", "01234.1.1.1", "", "1..2.3", "1.2.3.4.", " 1.2.3.4",
            "1.2.3.-4",
        ] {
            #expect(IPv4Address(bad) == nil)
        }
    }
}
