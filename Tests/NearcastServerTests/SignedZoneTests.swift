import DNSWire
import Foundation
import NearcastTestSupport
import Testing

/// A zone signed ahead (issue 34), served as NSD and Knot serve it: nearcastd, NSD and Knot serve
/// the fixture signed by ldns-signzone, with NSEC and with NSEC3, and are asked the fixture's
/// questions with the DO bit, the DNSSEC types at every name and questions at the hashed owner
/// names; nearcast's replies (signatures, NSEC and NSEC3 proofs of NXDOMAIN, NODATA, wildcards,
/// referrals with DS or the proof of none) must equal each reference's but for the listed
/// differences.
@Suite(.timeLimit(.minutes(4))) struct SignedZoneTests {
    typealias Reference = ReferenceServerDifferentialTests.Reference

    /// The differences each reference shows on the signed zone.
    static func differences(_ reference: Reference, nsec3: Bool) -> [ReferenceServerDifferentialTests.KnownDifference] {
        switch (reference, nsec3) {
        case (.nsd, false): [.minimalResponses, .anyPicksOneRRset, .dnssecTypeAtCNAME, .dnameNXDOMAINHalfProved]
        case (.nsd, true): [.minimalResponses, .anyPicksOneRRset, .dnssecTypeAtCNAME, .belowHashedOwner]
        case (.knot, false): [.anyPicksOneRRset, .yxdomainExplained, .rrsigAnsweredInPart, .wildcardNSECUnproved]
        case (.knot, true): [.anyPicksOneRRset, .yxdomainExplained, .rrsigAnsweredInPart, .wildcardOwnNameNoData]
        }
    }

    @Test(arguments: [false, true], Reference.allCases)
    func agreesWithTheReferenceServer(nsec3: Bool, reference: Reference) async throws {
        let (compared, mismatches, used) = try await TestSupport.blocking {
            try Self.compareServing(reference, nsec3: nsec3)
        }
        #expect(compared > 1500)
        let report =
            "\(mismatches.count) differences:\n"
            + mismatches.prefix(ProcessInfo.processInfo.environment["NC_DIFF_ALL"] == nil ? 8 : 500).joined(
                separator: "\n")
        #expect(mismatches.count == 0, "\(report)")
        for d in Self.differences(reference, nsec3: nsec3) {
            #expect(used[d, default: 0] > 0, "\(d) never occurred with \(reference)")
        }
    }

    /// Signs the fixture, starts `reference` and nearcastd on it and compares their replies.
    static func compareServing(_ reference: Reference, nsec3: Bool) throws -> (
        Int, [String], [ReferenceServerDifferentialTests.KnownDifference: Int]
    ) {
        let dir = try TemporaryDirectory.url("nearcast-signed-\(reference)")
        defer { try? FileManager.default.removeItem(at: dir) }
        let signed = try SignedFixture.make(in: dir, nsec3: nsec3)
        let port = try TestSupport.unusedPort()
        let server = try reference.start(dir: dir, port: port, file: signed.zoneFile)
        defer { server.stop() }
        let nearcast = try Daemon([
            "--zone", "example.test=\(signed.zoneFile.path)", "--listen", "127.0.0.1:0", "--threads", "2",
        ])
        defer { nearcast.stop() }
        try server.waitUntilReady {
            RawClient.udp(RawClient.query("example.test.", .soa), port: port, timeout: 0.2).map {
                (try? DNSMessage(wire: $0))?.rcode == .noError
            } == true
        }
        // What NSD adds to positive answers (`minimalResponses`): the apex NS RRset and the
        // addresses of its servers, each with its signatures.
        func answers(_ name: String, _ type: RRType) -> [String] {
            let q = RawClient.query(name, type, edns: EDNS(udpPayloadSize: 1232, dnssecOK: true))
            let reply = RawClient.udp(q, port: port).flatMap { try? DNSMessage(wire: $0) }
            return reply?.answers.map { $0.description.lowercased() } ?? []
        }
        let apexNS = answers("example.test.", .ns)
        let addresses = [("ns1", RRType.a), ("ns1", .aaaa), ("ns2", .a)].flatMap {
            answers("\($0.0).example.test.", $0.1)
        }
        #expect(apexNS.count == 3 && addresses.count == 6, "\(apexNS) \(addresses)")

        let withDO = signed.queries().filter { $0.2?.dnssecOK == true }
        return try ReferenceServerDifferentialTests.compare(
            withDO, nearcast: nearcast.dnsPort, reference, at: port, apexNS: apexNS, nsAddresses: Set(addresses),
            differences: differences(reference, nsec3: nsec3))
    }
}
