import DNSWire
import Foundation
import NearcastTestSupport
import Testing

/// nearcastd, NSD and Knot serve the same zone; for every query of a generated set, nearcast's
/// answers must agree with each reference server's except for the differences listed in
/// `KnownDifference`, each allowed by an RFC.
@Suite(.timeLimit(.minutes(3))) struct ReferenceServerDifferentialTests {
    /// The reference servers, as Debian ships them.
    enum Reference: String, CaseIterable, CustomStringConvertible {
        case nsd, knot
        var description: String { rawValue }
        /// The differences this server shows against nearcast on the queries.
        var differences: [KnownDifference] {
            switch self {
            case .nsd: [.minimalResponses, .anyPicksOneRRset]
            case .knot: [.anyPicksOneRRset, .yxdomainExplained]  // Knot's positive answers are minimal too
            }
        }

        /// Starts the server on 127.0.0.1:`port`, serving `file` as `origin` (default: the fixture).
        func start(dir: URL, port: Int, origin: String = "example.test", file: URL = zoneFile) throws
            -> ServerProcess
        {
            switch self {
            case .nsd: try ReferenceServerDifferentialTests.startNSD(dir: dir, port: port, origin: origin, file: file)
            case .knot: try ReferenceServerDifferentialTests.startKnot(dir: dir, port: port, origin: origin, file: file)
            }
        }
    }
    /// Where nearcast and NSD are allowed to differ, and why.
    enum KnownDifference: String, CaseIterable {
        /// NSD adds the apex NS RRset to the authority section of positive answers (and their addresses
        /// to the additional section); nearcast sends minimal responses. The authority section of a
        /// positive answer is optional (RFC 1034 §4.3.2 step 3a: "... and possibly the authority
        /// section"; RFC 2181 §6.1), and a minimal reply is what the XDP fast path writes, byte for byte.
        case minimalResponses = "NS RRset in the authority section of positive answers (RFC 1034 §4.3.2)"
        /// Both answer ANY with one RRset (RFC 8482 §4.1); which one is the responder's choice.
        case anyPicksOneRRset = "ANY answered with a different single RRset (RFC 8482 §4.1)"
        /// A DNAME substitution too long for a name is YXDOMAIN (RFC 6672 §2.2); nearcast says why in
        /// an Extended DNS Error, as NSD does (RFC 8914 allows it on any reply with EDNS); Knot does not.
        case yxdomainExplained = "EDE on a YXDOMAIN from a DNAME (RFC 8914)"
        /// NSEC or NSEC3 asked at a CNAME's owner: no RFC says whether the CNAME is followed.
        /// nearcast answers the name's own RRSIG and NSEC (the types RFC 4035 §2.5 puts beside a
        /// CNAME) and follows the CNAME for every other type, as Knot does; NSD follows it for
        /// NSEC where the name has none, and answers NSEC3 at the name.
        case dnssecTypeAtCNAME = "NSEC or NSEC3 asked at a CNAME's owner (no RFC says)"
        /// RRSIG asked: Knot answers with some of the name's signatures, nearcast (and NSD) with
        /// all of them; RFC 4035 §3.1.5 leaves the question to the server.
        case rrsigAnsweredInPart = "RRSIG asked: Knot answers with some of the signatures"
        /// NSEC asked at a name a wildcard stands for: Knot leaves out the NSEC that proves no
        /// closer name matched (RFC 4035 §3.1.3.3 asks for it), which nearcast and NSD send.
        case wildcardNSECUnproved = "NSEC of a wildcard: Knot sends no proof that no closer name matched"
        /// NXDOMAIN for the name a DNAME leads to: NSD proves only that no wildcard matches it, and
        /// not that the name itself does not exist (RFC 4035 §3.1.3.2 asks for both); nearcast
        /// and Knot send both.
        case dnameNXDOMAINHalfProved = "NXDOMAIN after a DNAME: NSD leaves out the NSEC that covers the name"
        /// A name below a hashed owner name of NSEC3: NSD keeps hashed owner names among the
        /// zone's names, so it takes one as the closest encloser; nearcast and Knot prove the name
        /// as any other that does not exist (RFC 5155 §7.2.8).
        case belowHashedOwner = "a name below an NSEC3 owner: NSD takes the owner as its closest encloser"
        /// NODATA at a wildcard's own name: Knot sends the NSEC3 that matches it, as for any
        /// name; nearcast and NSD prove it as a wildcard's NODATA (RFC 5155 §7.2.5), which adds
        /// the closest encloser's. Both are proofs.
        case wildcardOwnNameNoData = "NODATA at a wildcard's own name: Knot sends only its matching NSEC3"
    }

    static let zoneFile = TestSupport.fixtures.appendingPathComponent("example.test.zone")

    static func startNSD(dir: URL, port: Int, origin: String, file: URL) throws -> ServerProcess {
        let conf = try nsdConfig(dir: dir, port: port, origin: origin, file: file)
        return try ServerProcess(try TestSupport.tool("nsd"), ["-d", "-c", conf.path])
    }

    /// An NSD config serving `origin` from `file` on `address` at `port`, its files in `dir`;
    /// `sections` (keys) go before the zone, and `zoneOptions` (lines indented as the zone's)
    /// into it.
    static func nsdConfig(
        dir: URL, address: String = "127.0.0.1", port: Int, origin: String, file: URL, sections: String = "",
        zoneOptions: String = ""
    ) throws -> URL {
        let conf = dir.appendingPathComponent("nsd.conf")
        try """
        server:
          ip-address: \(address)@\(port)
          username: ""
          chroot: ""
          zonesdir: "\(dir.path)"
          pidfile: "\(dir.path)/nsd.pid"
          database: ""
          zonelistfile: "\(dir.path)/zone.list"
          xfrdfile: "\(dir.path)/xfrd.state"
          xfrdir: "\(dir.path)"
          server-count: 1
          hide-version: yes
          hide-identity: yes
          rrl-ratelimit: 0
          rrl-whitelist-ratelimit: 0
        remote-control:
          control-enable: no
        \(sections)
        zone:
          name: \(origin)
          zonefile: "\(file.path)"
        \(zoneOptions)
        """.write(to: conf, atomically: true, encoding: .utf8)
        return conf
    }

    /// Knot serving `file` as `origin`; `sections` (keys, ACLs, remotes) go before the zone, and
    /// `zoneOptions` (lines indented as the zone's) into it.
    static func startKnot(
        dir: URL, port: Int, origin: String, file: URL, sections: String = "", zoneOptions: String = ""
    ) throws -> ServerProcess {
        let conf = dir.appendingPathComponent("knot.conf")
        try FileManager.default.createDirectory(at: dir.appendingPathComponent("db"), withIntermediateDirectories: true)
        try """
        server:
            listen: 127.0.0.1@\(port)
            rundir: "\(dir.path)"
        database:
            storage: "\(dir.path)/db"
        template:
          - id: default
            storage: "\(file.deletingLastPathComponent().path)"
            zonefile-sync: -1
            journal-content: none
        \(sections)
        zone:
          - domain: \(origin)
            file: "\(file.lastPathComponent)"
        \(zoneOptions)
        log:
          - target: stderr
            any: warning
        """.write(to: conf, atomically: true, encoding: .utf8)
        return try ServerProcess(try TestSupport.tool("knotd"), ["-c", conf.path])
    }

    /// The queries (shared with the XDP program's test over the same zone).
    static var queries: [(String, RRType, EDNS?)] { Fixtures.differentialQueries }

    struct Normalized: Equatable, CustomStringConvertible {
        var rcode: RCode
        var aa: Bool
        var tc: Bool
        var answer: [String]
        var authority: [String]
        var additional: [String]
        var edns: String?
        var description: String {
            "\(rcode) aa=\(aa) tc=\(tc)\n  an=\(answer)\n  ns=\(authority)\n  ar=\(additional)\n  opt=\(edns ?? "-")"
        }
    }

    static func normalize(_ m: DNSMessage) -> Normalized {
        Normalized(
            rcode: m.rcode, aa: m.header.aa, tc: m.header.tc, answer: m.answers.map(\.description).sorted(),
            // Owner names in these sections may carry the client's case through compression; the
            // question check covers case echoing, so compare them case-folded.
            authority: m.authority.map { $0.description.lowercased() }.sorted(),
            additional: m.additional.map { $0.description.lowercased() }.sorted(),
            edns: m.edns.map {
                "size=\($0.udpPayloadSize) do=\($0.dnssecOK) v=\($0.version) opts=\($0.options.map(\.code))"
            })
    }

    /// Removes what `minimalResponses` allows NSD to add: the apex NS RRset in the authority section of
    /// a positive answer, and the addresses of those name servers in the additional section.
    static func withoutApexNS(_ n: Normalized, apexNS: [String], nsAddresses: Set<String>, keep: Set<String>)
        -> Normalized
    {
        var r = n
        if !r.answer.isEmpty { r.authority = r.authority.filter { !apexNS.contains($0) } }
        r.additional = r.additional.filter { !nsAddresses.contains($0) || keep.contains($0) }
        return r
    }

    /// Asks nearcast (at `nearcast`) and `reference` (at `nsdPort`) each query, over UDP and
    /// every third one over TCP too, and compares the replies, allowing only the reference's listed
    /// differences (`apexNS`, `nsAddresses`: what `minimalResponses` lets it add). Returns how many
    /// replies were compared, each unexplained difference, and how often each difference was used.
    /// `differences`: those allowed, the reference's own unless given.
    static func compare(
        _ queries: [(String, RRType, EDNS?)], nearcast port: Int, _ reference: Reference, at nsdPort: Int,
        apexNS: [String], nsAddresses: Set<String>, differences: [KnownDifference]? = nil
    ) throws -> (compared: Int, mismatches: [String], used: [KnownDifference: Int]) {
        let differences = differences ?? reference.differences
        var used: [KnownDifference: Int] = [:]
        var mismatches: [String] = []
        var compared = 0
        for (i, (name, type, edns)) in queries.enumerated() {
            let q = RawClient.query(name, type, id: UInt16(truncatingIfNeeded: i), edns: edns)
            for tcp in [false, true] where !tcp || i % 3 == 0 {
                let send = { (p: Int) in tcp ? RawClient.tcp(q, port: p) : RawClient.udp(q, port: p) }
                guard let a = send(port), let b = send(nsdPort) else {
                    mismatches.append(
                        "\(name) \(type) tcp=\(tcp): no reply from \(send(port) == nil ? "nearcast" : "\(reference)")")
                    continue
                }
                let ours = try DNSMessage(wire: a)
                let theirs = try DNSMessage(wire: b)
                #expect(ours.header.id == UInt16(truncatingIfNeeded: i))
                #expect(
                    ours.questions.map(\.name.description) == theirs.questions.map(\.name.description),
                    "the question is echoed as sent (0x20 case)")
                #expect(ours.questions.map(\.name.description) == [name] || ours.questions.isEmpty)
                compared += 1
                let n1 = Self.normalize(ours)
                var n2 = Self.normalize(theirs)
                if n1 == n2 { continue }
                let keep = Set(n1.additional)
                let trimmed = Self.withoutApexNS(n2, apexNS: apexNS, nsAddresses: nsAddresses, keep: keep)
                if differences.contains(.minimalResponses), trimmed == n1 {
                    used[.minimalResponses, default: 0] += 1
                    continue
                }
                n2 = trimmed
                // (With the DO bit each RRset comes with its signatures.)
                func types(_ m: DNSMessage) -> Set<RRType> {
                    let all = Set(m.answers.map(\.type))
                    return all == [.rrsig] ? all : all.subtracting([.rrsig])
                }
                let (ourTypes, theirTypes) = (types(ours), types(theirs))
                if type == .any, n1.rcode == n2.rcode, n1.aa == n2.aa, !n1.answer.isEmpty, !n2.answer.isEmpty,
                    ourTypes.count == 1, theirTypes.count == 1
                {
                    used[.anyPicksOneRRset, default: 0] += 1
                    continue
                }
                var explained = n1
                explained.edns = explained.edns?.replacingOccurrences(of: "opts=[15]", with: "opts=[]")
                if differences.contains(.yxdomainExplained), n1.rcode == .yxDomain, explained == n2 {
                    used[.yxdomainExplained, default: 0] += 1
                    continue
                }
                if let d = dnssecDifferences(name, type, ours, theirs, n1, n2).first(where: differences.contains) {
                    used[d, default: 0] += 1
                    continue
                }
                mismatches.append(
                    "\(name) \(type) edns=\(edns.map { "\($0.udpPayloadSize)" } ?? "-") tcp=\(tcp)\n nearcast: \(n1)\n \(reference):      \(n2)"
                )
            }
        }
        return (compared, mismatches, used)
    }

    /// The DNSSEC differences that explain `ours` against `theirs` (asked `name` and `type`).
    static func dnssecDifferences(
        _ name: String, _ type: RRType, _ ours: DNSMessage, _ theirs: DNSMessage, _ n1: Normalized, _ n2: Normalized
    ) -> [KnownDifference] {
        var out: [KnownDifference] = []
        let fewer =
            n1.rcode == n2.rcode && n1.answer == n2.answer && n1.authority != n2.authority
            && Set(n2.authority).isSubset(of: n1.authority)
        func cnames(_ m: DNSMessage) -> Int { m.answers.count { $0.type == .cname } }
        if type == .nsec || type == .nsec3, cnames(ours) != cnames(theirs) { out.append(.dnssecTypeAtCNAME) }
        if type == .rrsig, n1.rcode == n2.rcode, n1.tc || Set(n2.answer).isSubset(of: n1.answer) {
            out.append(.rrsigAnsweredInPart)
        }
        if type == .nsec, fewer { out.append(.wildcardNSECUnproved) }
        if fewer, n1.rcode == .nxDomain, ours.answers.contains(where: { $0.type == .dname }) {
            out.append(.dnameNXDOMAINHalfProved)
        }
        let labels = name.split(separator: ".")
        if n1.rcode == .nxDomain, n1.rcode == n2.rcode, n1.answer.isEmpty, labels.count > 2, labels[1].count == 32 {
            out.append(.belowHashedOwner)
        }
        if fewer, name.hasPrefix("*."), n1.answer.isEmpty { out.append(.wildcardOwnNameNoData) }
        return out
    }

    /// Thousands of blocking exchanges: on a thread of its own, never one of the cooperative pool
    /// (both cases at once held both of a two-core machine's, and every other test waited).
    @Test(arguments: Reference.allCases)
    func agreesWithTheReferenceServerExceptForListedDifferences(_ reference: Reference) async throws {
        let (compared, mismatches, used) = try await TestSupport.blocking { try Self.compareServing(reference) }
        #expect(compared > 1000)
        let report = "\(mismatches.count) differences:\n" + mismatches.prefix(8).joined(separator: "\n")
        #expect(mismatches.count == 0, "\(report)")
        // The listed differences are real: each one was needed (else it should be removed from the list).
        for d in reference.differences { #expect(used[d, default: 0] > 0, "\(d) never occurred with \(reference)") }
    }

    /// Starts `reference` and nearcast on the fixture zone and compares their answers to `queries`.
    static func compareServing(_ reference: Reference) throws -> (Int, [String], [KnownDifference: Int]) {
        let dir = try TemporaryDirectory.url("nearcast-\(reference)")
        let nsdPort = try TestSupport.unusedPort()
        let nsd = try reference.start(dir: dir, port: nsdPort)
        defer { nsd.stop() }
        let (nearcast, port) = try DaemonTests.startDaemon()
        defer { nearcast.stop() }
        try nsd.waitUntilReady {
            RawClient.udp(RawClient.query("example.test.", .soa), port: nsdPort, timeout: 0.2).map {
                (try? DNSMessage(wire: $0))?.rcode == .noError
            } == true
        }

        let apexNS = ["example.test. 300 in ns ns1.example.test.", "example.test. 300 in ns ns2.example.test."]
        let nsAddresses: Set<String> = [
            "ns1.example.test. 300 in a 127.0.0.1", "ns1.example.test. 300 in aaaa ::1",
            "ns2.example.test. 300 in a 127.0.0.2",
        ]
        let (compared, mismatches, used) = try compare(
            queries, nearcast: port, reference, at: nsdPort, apexNS: apexNS, nsAddresses: nsAddresses)
        return (compared, mismatches, used)
    }
}
