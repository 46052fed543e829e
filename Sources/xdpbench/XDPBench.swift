import ArgumentParser
import BPFKit
import DNSWire
import Foundation
import MaxMindDB
import NearcastAnswers
import NearcastBasics
import NearcastConfiguration
import NearcastDNSSEC
import NearcastDataPath
import NearcastGeo
import NearcastZones

/// `xdpbench`: nanoseconds per packet of the XDP program, beside a minimal reflect program (the
/// ceiling), the same growing the frame by an answer's size (the ceiling with the one helper call
/// any responder makes) and an empty one (the cost of measuring), run by `make bench`.
///
/// How the figure is taken (ARCHITECTURE §9): `BPF_PROG_TEST_RUN` with `repeat N` would run the program N
/// times on a buffer the first run already rewrote into a reply, so later runs would take an early
/// exit. Instead each packet is run once per call, many times; the kernel's own duration of each
/// single run is collected, and each program's figure is the interquartile mean of its runs. The
/// programs take turns in rounds of `runs / 20` runs each.
@main
struct XDPBench: ParsableCommand {
    @Option(help: "nearcast's XDP object.") var object = ".build/bpf/nearcast.bpf.o"
    @Option(help: "The reflect ceiling.") var reflect = ".build/bpf/reflect.bpf.o"
    @Option(help: "The reflect ceiling that grows the frame.") var reflectGrow = ".build/bpf/reflect_grow.bpf.o"
    @Option(help: "The empty (pass) program.") var empty = ".build/bpf/xdp_pass.bpf.o"
    @Option(help: "Zone to answer from.") var zone = "Tests/Fixtures/example.test.zone"
    @Option(help: "Origin of the zone.") var origin = "example.test."
    @Option(help: "Single runs per program and packet.") var runs = 200_000
    @Option(help: "The MaxMind database for the geo name.") var geoDatabase = ".build/geo/test-city.mmdb"
    @Option(
        help:
            "Only run nearcast on the packet of this row, `runs` times, for a profiler (tools/profile-xdp-program.sh).")
    var profile: String?
    @Flag(help: "With --profile: the program with response rate limiting (never reached) and DNS cookies on.")
    var defences = false
    @Option(
        help:
            "Another build of nearcast's object to measure in the same rounds (repeatable): an A/B of two builds free of the noise between runs."
    )
    var versus: [String] = []

    func run() throws {
        let o = try DNSName(origin)
        let z = try Zone.load(path: zone, origin: o)
        // A geo name over four nodes, on the test City database (the client 198.51.100.7 is in Paris).
        let geoConfig = try NearcastConfig.parse(
            yaml: """
                listen: ["127.0.0.1:53"]
                geo:
                  database: \(geoDatabase)
                  nodes:
                    - { id: fra1, ipv4: 192.0.2.10, latitude: 50.11, longitude: 8.68 }
                    - { id: par1, ipv4: 192.0.2.20, latitude: 48.86, longitude: 2.35 }
                    - { id: nyc1, ipv4: 192.0.2.30, latitude: 40.71, longitude: -74.01 }
                    - { id: tyo1, ipv4: 192.0.2.40, latitude: 35.68, longitude: 139.65 }
                  pools: [{ id: web, members: [fra1, par1, nyc1, tyo1] }]
                  names:
                    - { name: geo.\(origin), type: A, pool: web, answers: 2 }
                    - { name: geo.signed.\(origin), type: A, pool: web, answers: 2 }
                """, fileName: "xdpbench", baseDirectory: "")
        let geo = try GeoTable.build(geoConfig.geo, database: try MaxMindDatabase(path: geoDatabase))
        let (signed, signer) = try Self.signedCopy(of: zone, origin: o, online: geo.onlineTypes)
        // The signed copy's geo name: its variants signed ahead, as nearcastd signs them.
        let online = OnlineSignatures()
        online.use([
            signed.origin: OnlineSignatures.Signer(
                keyTags: signer.keys.map(\.keyTag), renewBefore: 3600,
                sign: { try signer.signatures($0, origin: signed.origin) })
        ])
        let now = UInt32(Date().timeIntervalSince1970)
        online.sign(geo.answerVariants(), now: now)
        var responder = Responder(authority: Authority(zones: [z, signed]), geo: geo)
        responder.onlineSignatures = online
        let image = AnswerImage.build(responder: responder, maxSections: FastPath.sectionsCapacity)
        // Each object twice: as it is, and with the defences on: a rate limit no row reaches (so
        // every run pays for its bucket), and DNS cookies.
        func load(_ path: String, defended: Bool) throws -> FastPath {
            let fast = try FastPath(objectPath: path, geoCapacity: .sized(for: geo))
            try fast.configure(dnsPort: 53, udpPayload: responder.maxUDPPayload)
            try fast.answer(queriesTo: Frame.servers)
            if defended {
                try fast.configureRateLimit(RateLimit(rate: 1_000_000_000))
                try fast.configureCookies(.init(current: Array(0..<16)))
            }
            try fast.write(image, geo: geo)
            try fast.writeGeoSignatures(FastPath.geoSignatures(online, geo: geo, now: now))
            return fast
        }
        let fast = try load(object, defended: false)
        let defended = try load(object, defended: true)
        let others = try versus.map { (try load($0, defended: false), try load($0, defended: true)) }
        defer { withExtendedLifetime(others) {} }  // their programs run after the last use of them
        let reflectProgram = try BPFObject(path: reflect)
        let growProgram = try BPFObject(path: reflectGrow)
        let emptyProgram = try BPFObject(path: empty)
        let programs: [(String, BPFProgram)] = [
            ("empty", try emptyProgram.program("xdp_pass")), ("reflect", try reflectProgram.program("reflect")),
            ("grow", try growProgram.program("reflect")), ("nearcast", fast.program), ("defended", defended.program),
        ]
        // The other builds' programs, in the same rounds.
        let versusPrograms = others.enumerated().flatMap { i, o in
            [("versus \(i)", o.0.program), ("versus \(i) defended", o.1.program)]
        }
        var comparisons: [String] = []
        let packets: [(String, [UInt8])] = [
            ("A, IPv4", Frame.make(ipv6: false, try query("www.\(origin)", .a, edns: nil))),
            ("AAAA, IPv6", Frame.make(ipv6: true, try query("www.\(origin)", .aaaa, edns: nil))),
            (
                "A, IPv4, EDNS + cookie",
                Frame.make(
                    ipv6: false,
                    try query(
                        "www.\(origin)", .a,
                        edns: EDNS(options: [EDNSOption(code: 10, data: Array(repeating: 1, count: 8))])))
            ),
            (
                "A, IPv4, EDNS + client and server cookie",
                Frame.make(
                    ipv6: false,
                    try query(
                        "www.\(origin)", .a,
                        edns: EDNS(options: [
                            EDNSOption(
                                code: EDNSOption.cookieCode,
                                data: [UInt8](repeating: 1, count: 8)
                                    + ServerCookies(.init(current: Array(0..<16))).serverCookie(
                                        client: [UInt8](repeating: 1, count: 8), address: [198, 18, 0, 2],
                                        now: UInt32(Date().timeIntervalSince1970)))
                        ])))
            ),
            ("A, IPv4, DO", Frame.make(ipv6: false, try query("www.\(origin)", .a, edns: EDNS(dnssecOK: true)))),
            (
                "signed A, IPv4, DO",
                Frame.make(ipv6: false, try query("www.\(signed.origin)", .a, edns: EDNS(dnssecOK: true)))
            ),
            (
                "signed NODATA (HTTPS of www), IPv4, DO",
                Frame.make(ipv6: false, try query("www.\(signed.origin)", .https, edns: EDNS(dnssecOK: true)))
            ),
            ("NODATA (HTTPS of www), IPv4", Frame.make(ipv6: false, try query("www.\(origin)", .https, edns: nil))),
            (
                "NXDOMAIN (a name below the apex), IPv4",
                Frame.make(ipv6: false, try query("k3x9q2.\(origin)", .a, edns: nil))
            ),
            (
                "miss (a wildcard's: passed), IPv4",
                Frame.make(ipv6: false, try query("x.wild.\(origin)", .a, edns: nil))
            ),
            (
                "signed geo A, IPv4, DO, by source",
                Frame.make(
                    ipv6: false, try query("geo.\(signed.origin)", .a, edns: EDNS(dnssecOK: true)),
                    source: [198, 51, 100, 7])
            ),
            (
                "geo A, IPv4, by source",
                Frame.make(ipv6: false, try query("geo.\(origin)", .a, edns: nil), source: [198, 51, 100, 7])
            ),
            (
                "geo A, IPv4, ECS /24",
                Frame.make(
                    ipv6: false,
                    try query(
                        "geo.\(origin)", .a,
                        edns: EDNS(options: [
                            ClientSubnet(
                                family: 1, sourcePrefixLength: 24, scopePrefixLength: 0, address: [198, 51, 100]
                            ).option
                        ])))
            ),
            (
                "geo A, IPv4, ECS /24, the fullest /16",
                Frame.make(
                    ipv6: false,
                    try query(
                        "geo.\(origin)", .a,
                        edns: EDNS(options: [
                            ClientSubnet(
                                family: 1, sourcePrefixLength: 24, scopePrefixLength: 0,
                                address: Self.inFullestSixteen(geo.image.ipv4)
                            ).option
                        ])))
            ),
        ]
        if let profile {
            guard let packet = packets.first(where: { $0.0 == profile })?.1 else {
                throw ValidationError("no packet row '\(profile)'; rows: \(packets.map(\.0).joined(separator: ", "))")
            }
            let program = defences ? defended.program : fast.program
            FileHandle.standardOutput.write(
                Data("profiling: nearcast_xdp (id \(try program.id())), \(runs) runs of '\(profile)'\n".utf8))
            for _ in 0..<runs { _ = try program.testRun(packet) }
            return
        }
        print("verifier: nearcast \(fast.verifiedInstructions ?? 0) instructions processed")
        print(
            "| packet | empty (ns) | reflect (ns) | reflect + grow (ns) | nearcast (ns) | reflect - empty | nearcast - empty | nearcast / reflect | nearcast / (reflect + grow) | with the defences (ns) | defended - empty |"
        )
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        // A warm-up, not counted: without it the first row paid for cold caches and a CPU not yet
        // at speed, and read 20-30 ns above rows that do more work.
        let warmUp = runs / 20
        for (_, packet) in packets {
            for (_, program) in programs + versusPrograms {
                for _ in 0..<warmUp { _ = try program.testRun(packet) }
            }
        }
        for (what, packet) in packets {
            // The programs take turns in rounds, so a noisy spell of this shared machine falls on
            // all alike rather than on whichever ran then.
            var samples: [String: [UInt32]] = [:]
            let rounds = 20
            for _ in 0..<rounds {
                for (name, program) in programs + versusPrograms {
                    for _ in 0..<(runs / rounds) {
                        samples[name, default: []].append(try program.testRun(packet).duration)
                    }
                }
            }
            // The interquartile mean: the timer steps by about 10 ns, so a median jumps a whole step
            // on a small shift, while the mean of the middle half resolves less (the steps dither)
            // and still leaves out the preempted and cold runs.
            var means: [String: Double] = [:]
            for (name, d) in samples {
                let middle = d.sorted()[(d.count / 4)..<(d.count * 3 / 4)]
                means[name] = Double(middle.reduce(0) { $0 + UInt64($1) }) / Double(middle.count)
            }
            let e = means["empty"]!
            let r = means["reflect"]!
            let g = means["grow"]!
            let n = means["nearcast"]!
            let d = means["defended"]!
            // The ratio of totals: both carry the same fixed cost of a test run. The subtracted
            // columns show the programs' own work, where the reflect program's is at the timer's
            // resolution (~10 ns).
            let ratio = String(format: "%.2f", n / r)
            let growRatio = String(format: "%.2f", n / g)
            print(
                "| \(what) | \(Int(e)) | \(Int(r)) | \(Int(g)) | \(Int(n)) | \(Int(r - e)) | \(Int(n - e)) | \(ratio) | \(growRatio) | \(Int(d)) | \(Int(d - e)) |"
            )
            for (i, path) in versus.enumerated() {
                let vn = means["versus \(i)"]!
                let vd = means["versus \(i) defended"]!
                comparisons.append(
                    "| \(what) | \(path) | \(Int(vn - e)) | \(Int(vn - n)) | \(Int(vd - e)) | \(Int(vd - d)) |")
            }
        }
        if !comparisons.isEmpty {
            print("\nThe other builds, in the same rounds (minus: against \(object)):")
            print("| packet | object | nearcast - empty | minus | defended - empty | minus |")
            print("|---|---|---:|---:|---:|---:|")
            for line in comparisons { print(line) }
        }
        // Failover cost: a node's health flipped, as the health monitor does it (the board, then
        // one nodes-map write per change), timed from the decision to the write's return.
        var flips: [Double] = []
        for i in 0..<10_000 {
            let t0 = ContinuousClock.now
            geo.board.set("par1", i % 2 == 1 ? .up : .down)
            try fast.writeNodeHealth("par1")
            let d = ContinuousClock.now - t0
            flips.append(Double(d.components.attoseconds) / 1e12 + Double(d.components.seconds) * 1e6)
        }
        flips.sort()
        print(
            String(
                format:
                    "health change -> map write (10000 flips, one write each): p50 %.1f us, p99 %.1f us, max %.1f us",
                flips[flips.count / 2], flips[flips.count * 99 / 100], flips.last!))
        let s = try fast.statistics()
        let other = s.passShape + s.passEDNS + s.passTooBig + s.dropMalformed + s.passGeo
        print(
            "nearcast verdicts: answered \(s.answered), geo \(s.answeredGeo), NXDOMAIN \(s.answeredNXDomain), passed as miss \(s.passMiss), other \(other)"
        )
        // Every row but the miss is an answer: a program that passes them measures nothing.
        guard other == 0, s.answeredNXDomain == UInt64(runs / 20 * 20 + warmUp) else {
            FileHandle.standardError.write(Data("xdpbench: \(other) packets were neither answered nor missed\n".utf8))
            throw ExitCode(1)
        }
    }

    /// The zone file `path` of origin `origin` under another origin (`signed.` before it), signed
    /// whole by a new ECDSA P-256 key (NSEC): the signed rows' zone, the same names as the others'.
    static func signedCopy(of path: String, origin: DNSName, online: [DNSName: Set<RRType>]) throws -> (
        Zone, ZoneSigner
    ) {
        let other = try origin.prepending(Array("signed".utf8))
        let text = try String(contentsOfFile: path, encoding: .utf8).replacingOccurrences(
            of: origin.description, with: other.description)
        let unsigned = try Zone.build(
            origin: other, records: try ZoneFileParser.parse(text: text, fileName: path, origin: other),
            sourceName: path)
        let now = UInt32(Date().timeIntervalSince1970)
        let signer = ZoneSigner(
            keys: [DNSSECKey.generate(zone: other)], inception: now - 3600, expiration: now + 14 * 86400,
            online: online)
        return (try signer.signWhole(unsigned), signer)
    }

    /// A /24 in the middle of the /16 that holds the most prefixes of the compile: the deepest
    /// binary search of the program's IPv4 prefix array (with GeoLite2-City, a dense one).
    static func inFullestSixteen(_ prefixes: [ClassPrefix]) -> [UInt8] {
        let starts = prefixes.filter { $0.length > 16 }.map { UInt32(truncatingIfNeeded: $0.address >> 96) }
        let groups = Dictionary(grouping: starts, by: { $0 >> 16 })
        guard let fullest = groups.max(by: { $0.value.count < $1.value.count })?.value else { return [198, 51, 100] }
        let a = fullest[fullest.count / 2]
        return [UInt8(a >> 24), UInt8((a >> 16) & 255), UInt8((a >> 8) & 255)]
    }

    func query(_ name: String, _ type: RRType, edns: EDNS?) throws -> [UInt8] {
        var h = DNSHeader()
        h.id = 0x1234
        h.rd = true
        return try DNSMessage(header: h, questions: [DNSQuestion(name: try DNSName(name), type: type)], edns: edns)
            .serialize()
    }
}

/// A minimal Ethernet/IP/UDP frame to port 53 around a DNS payload.
enum Frame {
    /// The addresses the frames are sent to.
    static let servers: Set<LocalAddress> = [
        LocalAddress(octets: [198, 18, 0, 1])!,
        LocalAddress(octets: [0x20, 0x01, 0, 2] + Array(repeating: 0, count: 11) + [1])!,
    ]

    static func make(ipv6: Bool, _ payload: [UInt8], source: [UInt8] = [198, 18, 0, 2]) -> [UInt8] {
        var f: [UInt8] = [2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2] + (ipv6 ? [0x86, 0xDD] : [0x08, 0x00])
        let udpLen = 8 + payload.count
        let udp: [UInt8] = [0x9C, 0x40, 0, 53, UInt8(udpLen >> 8), UInt8(udpLen & 0xFF), 0, 0] + payload
        if ipv6 {
            let a: [UInt8] = [0x20, 0x01, 0, 2] + Array(repeating: 0, count: 11)
            f += [0x60, 0, 0, 0, UInt8(udpLen >> 8), UInt8(udpLen & 0xFF), 17, 64] + a + [2] + a + [1]
        } else {
            let total = 20 + udpLen
            var ip: [UInt8] =
                [0x45, 0, UInt8(total >> 8), UInt8(total & 0xFF), 0, 0, 0, 0, 64, 17, 0, 0] + source + [198, 18, 0, 1]
            // The header checksum, right: the program passes a header the kernel would drop.
            var sum: UInt32 = 0
            for i in stride(from: 0, to: 20, by: 2) { sum += UInt32(ip[i]) << 8 | UInt32(ip[i + 1]) }
            while sum >> 16 != 0 { sum = (sum & 0xFFFF) + (sum >> 16) }
            ip[10] = UInt8(~sum >> 8 & 0xFF)
            ip[11] = UInt8(~sum & 0xFF)
            f += ip
        }
        return f + udp
    }
}
