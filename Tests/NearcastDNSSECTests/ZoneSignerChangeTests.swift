import DNSWire
import Foundation
import NearcastTestSupport
import NearcastZones
import Testing

@testable import NearcastDNSSEC

/// A change signed where it reaches: after names added, removed and changed, a delegation made
/// and one undone, the zone signed change by change is the zone signed whole (the same NSEC
/// chain, a signature on the same RRsets), ldns-verify-zone passes it, and a change re-signs
/// the names it touches and their predecessors, not the zone.
@Suite(.timeLimit(.minutes(1))) struct ZoneSignerChangeTests {
    static let origin = try! DNSName("example.test.")

    static func name(_ s: String) -> DNSName { try! DNSName(s + ".example.test.") }

    static func set(_ owner: String, _ type: RRType, _ rdatas: [RData]) -> (name: DNSName, type: RRType, set: RRSet?) {
        (name(owner), type, rdatas.isEmpty ? nil : RRSet(name: name(owner), type: type, ttl: 300, rdatas: rdatas))
    }

    /// Each change, as its RRsets after it (none: the RRset removed).
    static let changes: [[(name: DNSName, type: RRType, set: RRSet?)]] = [
        [set("new", .a, [.a(IPv4Address(192, 0, 2, 50))])],  // a name added
        [set("www", .a, [.a(IPv4Address(192, 0, 2, 9))])],  // an RRset changed
        [set("ptr", .ptr, [])],  // a name removed
        [set("x.y.z", .txt, [.txt([Array("deep".utf8)])])],  // a name below empty non-terminals
        [set("del", .ns, [.ns(name("ns.del"))]), set("ns.del", .a, [.a(IPv4Address(192, 0, 2, 60))])],  // a delegation
        [set("sub", .ns, []), set("sub", .ns, [])],  // a delegation undone: its glue becomes data
        [set("a.b.c", .txt, [])],  // empty non-terminals gone with the name below them
    ]

    static func serial(_ zone: Zone, plus n: UInt32) -> (name: DNSName, type: RRType, set: RRSet?) {
        guard case .soa(var soa) = zone.soa.rdatas[0] else { fatalError() }
        soa.serial += n
        return (origin, .soa, RRSet(name: origin, type: .soa, ttl: zone.soa.ttl, rdatas: [.soa(soa)]))
    }

    /// The NSEC records of `zone`, and the types each name's signatures cover.
    static func shape(_ zone: Zone) -> (nsec: Set<String>, covered: Set<String>) {
        var (nsec, covered) = (Set<String>(), Set<String>())
        for set in zone.rrsets {
            if set.type == .nsec { for r in set.records() { nsec.insert(ZoneText.line(r)) } }
            if set.type == .rrsig {
                for rd in set.rdatas { covered.insert("\(set.name) \(Signature(rd)!.typeCovered)") }
            }
        }
        return (nsec, covered)
    }

    @Test func aZoneSignedChangeByChangeIsTheZoneSignedWhole() throws {
        let dir = try TemporaryDirectory("nearcast-sign-change")
        var source = try Zone.load(
            path: TestSupport.fixtures.appendingPathComponent("example.test.zone").path, origin: Self.origin)
        let now = UInt32(Date().timeIntervalSince1970)
        let signer = ZoneSigner(
            keys: [DNSSECKey.generate(zone: Self.origin, algorithm: .ecdsaP256SHA256)], inception: now - 3600,
            expiration: now + 86400)
        var signed = try signer.signWhole(source)
        #expect(signed.isSigned)
        for (i, change) in Self.changes.enumerated() {
            let next = try source.changing(change + [Self.serial(source, plus: 1)], source: "change \(i)")
            let owners = Set(change.map(\.name))
            let made = try signer.signChange(signed, to: next, owners: owners)
            // What it re-signed: the names changed, the apex, and a predecessor or so; not the zone.
            #expect(made.owners.isSuperset(of: owners.union([Self.origin])))
            #expect(made.owners.count <= owners.count + 4 || i == 4 || i == 5, "change \(i): \(made.owners)")
            (source, signed) = (next, made.zone)
            let whole = try signer.signWhole(source)
            let (a, b) = (Self.shape(signed), Self.shape(whole))
            #expect(
                a.nsec.symmetricDifference(b.nsec).isEmpty,
                "change \(i): \(a.nsec.symmetricDifference(b.nsec).sorted())")
            #expect(
                a.covered.symmetricDifference(b.covered).isEmpty,
                "change \(i): \(a.covered.symmetricDifference(b.covered).sorted())")
            // The data is the source's, record for record.
            let data = { (z: Zone) in
                Set(
                    z.rrsets.filter { !ZoneSigner.replaces($0.type, at: $0.name, origin: Self.origin) }.flatMap {
                        $0.records()
                    }.map(ZoneText.line))
            }
            #expect(data(signed) == data(source), "change \(i)")
        }
        let file = try dir.write(ZoneText.render(signed), to: "signed.zone")
        let verify = try TestSupport.run(try TestSupport.tool("ldns-verify-zone"), [file])
        #expect(verify.status == 0, "\(verify.stdout)\(verify.stderr)")
    }

    /// The signer's own records are not data: a change that gives the apex a DNSKEY of its own
    /// is overridden by the keys'.
    @Test func theApexKeysAreTheSignersKeys() throws {
        let source = try Zone.load(
            path: TestSupport.fixtures.appendingPathComponent("example.test.zone").path, origin: Self.origin)
        let key = DNSSECKey.generate(zone: Self.origin, algorithm: .ed25519)
        let signer = ZoneSigner(keys: [key], inception: 0, expiration: UInt32.max)
        let signed = try signer.signWhole(source)
        let stray = RRSet(name: Self.origin, type: .dnskey, ttl: 300, rdatas: [.unknown([1, 1, 3, 13, 9, 9])])
        let next = try source.changing([(Self.origin, .dnskey, stray), Self.serial(source, plus: 1)], source: "stray")
        let made = try signer.signChange(signed, to: next, owners: [Self.origin])
        #expect(made.zone.rrset(Self.origin, .dnskey)?.rdatas == [.unknown(key.dnskeyRData)])
    }

    /// Names answered online (geo names) are in the chain with the types they answer: a name the
    /// zone does not hold gets an NSEC of its own, one it holds has the types added, one below a
    /// delegation none; and a change of them signed where it reaches is the zone signed whole.
    @Test func namesAnsweredOnlineAreInTheChain() throws {
        let source = try Zone.load(
            path: TestSupport.fixtures.appendingPathComponent("example.test.zone").path, origin: Self.origin)
        let now = UInt32(Date().timeIntervalSince1970)
        let keys = [DNSSECKey.generate(zone: Self.origin, algorithm: .ecdsaP256SHA256)]
        func signer(_ online: [String: Set<RRType>]) -> ZoneSigner {
            ZoneSigner(
                keys: keys, inception: now - 3600, expiration: now + 86400,
                online: Dictionary(uniqueKeysWithValues: online.map { (Self.name($0.key), $0.value) }))
        }
        let first = signer(["geo": [.a, .aaaa], "mail": [.srv], "x.sub": [.a]])
        let signed = try first.signWhole(source)
        func types(_ zone: Zone, _ owner: String) -> String? {
            zone.rrset(Self.name(owner), .nsec).map { ZoneText.line($0.records()[0]) }
        }
        #expect(types(signed, "geo")?.hasSuffix("A AAAA RRSIG NSEC") == true, "\(types(signed, "geo") ?? "none")")
        #expect(types(signed, "mail")?.contains("SRV") == true, "\(types(signed, "mail") ?? "none")")
        #expect(types(signed, "x.sub") == nil)  // below the delegation sub.
        #expect(signed.rrset(Self.name("geo"), .rrsig) != nil)

        // geo gone, geo2 come: signed where it reaches, the zone signed whole.
        let second = signer(["geo2": [.a], "mail": [.srv]])
        let made = try second.signChange(signed, to: source, owners: [Self.name("geo"), Self.name("geo2")])
        let whole = try second.signWhole(source)
        let (a, b) = (Self.shape(made.zone), Self.shape(whole))
        #expect(a.nsec == b.nsec, "\(a.nsec.symmetricDifference(b.nsec).sorted())")
        #expect(a.covered == b.covered, "\(a.covered.symmetricDifference(b.covered).sorted())")
        #expect(!made.zone.exists(Self.name("geo")))
        let dir = try TemporaryDirectory("nearcast-sign-online")
        let verify = try TestSupport.run(
            try TestSupport.tool("ldns-verify-zone"), [try dir.write(ZoneText.render(made.zone), to: "signed.zone")])
        // (The chain says geo2 has an A, which the zone's data does not hold: no one can check that.)
        #expect(verify.status == 0, "\(verify.stdout)\(verify.stderr)")
    }
}
