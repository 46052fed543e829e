import DNSWire
import Foundation

/// Paths in the repository and in its build, found from this file's place in the tree.
public enum Repository {
    /// The repository's root folder.
    public static let root: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// A path under the root.
    public static func path(_ relative: String) -> String { root.appendingPathComponent(relative).path }

    /// Tests/Fixtures: zones and configs the tests share.
    public static func fixture(_ name: String) -> String { path("Tests/Fixtures/\(name)") }

    /// A BPF object `make bpf` built (.build/bpf/NAME).
    public static func bpfObject(_ name: String) -> String { path(".build/bpf/\(name)") }

    /// The XDP program.
    public static var program: String { bpfObject("nearcast.bpf.o") }

    /// The City database `make test` writes from tools/geo/test-city.json.
    public static var testCityDatabase: String { path(".build/geo/test-city.mmdb") }

    /// The folder holding the built products (nearcastd, nearcast), next to the test bundle.
    public static var productsDirectory: URL {
        let bundle = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        var dir = bundle.deletingLastPathComponent()
        // Swift Testing may run from inside the .xctest bundle on some toolchains.
        if dir.lastPathComponent.hasSuffix(".xctest") { dir = dir.deletingLastPathComponent() }
        return dir
    }

    /// A product of this package (nearcastd, nearcast), built beside the tests.
    public static func product(_ name: String) throws -> String {
        let path = productsDirectory.appendingPathComponent(name).path
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw TestFailure("\(name) is not built at \(path); run `swift build --build-tests` first")
        }
        return path
    }

    /// An installed program (dig, kdig, nsd, ip, bpftool…).
    public static func tool(_ name: String) throws -> String {
        for dir in ["/usr/bin", "/usr/sbin", "/bin", "/sbin", "/usr/local/bin", "/usr/local/sbin"] {
            let p = dir + "/" + name
            if FileManager.default.isExecutableFile(atPath: p) { return p }
        }
        throw TestFailure("\(name) is not installed; run tools/install-deps.sh")
    }
}

/// Polls `condition` every `interval` seconds until it holds; fails after `timeout` seconds with
/// `what` (and the condition's last error, if it threw). Conditions are polled, never slept for.
/// It blocks its thread between polls: async tests use `eventually`, which suspends instead (a
/// blocked thread of Swift's small cooperative pool can stall what the test waits for).
@available(*, noasync, message: "use eventually(_:_:) in async code: poll blocks its thread")
public func poll(
    _ what: @autoclosure () -> String, timeout: Double = 10, interval: Double = 0.05, _ condition: () throws -> Bool
) throws {
    let deadline = Date().addingTimeInterval(timeout)
    var lastError: (any Error)?
    while true {
        do {
            if try condition() { return }
        } catch { lastError = error }
        if Date() >= deadline { break }
        usleep(useconds_t(interval * 1_000_000))
    }
    throw TestFailure("\(what()) did not happen within \(timeout) s" + (lastError.map { " (last: \($0))" } ?? ""))
}

/// `poll` for async tests: suspends between polls rather than blocking a thread.
///
/// Time in which the test process's tasks could not run does not count against `timeout`: while
/// synchronous tests hold every thread of the cooperative pool (as wide as the machine has cores),
/// what the condition waits for cannot happen either. Such a stall shows as a sleep that overran
/// by far, and the deadline moves by the overrun. (In CI a ready that took no time waited 17 s
/// behind the fuzz and differential tests, and failed at 10 s.) The suite's time limit still
/// bounds the wait.
public func eventually(
    _ what: @autoclosure () -> String, timeout: Double = 10, interval: Double = 0.05,
    _ condition: () async throws -> Bool
) async throws {
    let clock = ContinuousClock()
    let pause = Duration.milliseconds(Int(interval * 1000))
    var deadline = clock.now + .milliseconds(Int(timeout * 1000))
    var lastError: (any Error)?
    while true {
        do {
            if try await condition() { return }
        } catch { lastError = error }
        if clock.now >= deadline { break }
        let slept = try await clock.measure { try await Task.sleep(for: pause) }
        let stalled = slept - pause
        if stalled > .milliseconds(250) { deadline += stalled }
    }
    throw TestFailure("\(what()) did not happen within \(timeout) s" + (lastError.map { " (last: \($0))" } ?? ""))
}

/// Runs `run` (a service group, say) as a child task while `body` drives it, and gives how `run`
/// ended once it has. Structured, so the test's time limit, which cancels the test, cancels `run`
/// too, where an unstructured `Task` awaited by `value` would hold the test process forever.
public func outcome(
    of run: @escaping @Sendable () async throws -> Void, meanwhile body: () async throws -> Void
) async throws -> Result<Void, any Error> {
    try await withThrowingTaskGroup(of: Result<Void, any Error>.self) { tasks in
        tasks.addTask {
            do { return .success(try await run()) } catch { return .failure(error) }
        }
        try await body()
        return try await tasks.next() ?? .success(())
    }
}

/// The fixtures that tests compose their configs from.
public enum Fixtures {
    /// Writes a MaxMind City database of `networks` (CIDR text -> a city of tools/geo/test-city.json,
    /// or nil for a network with a country and no coordinates) at `path`, with MaxMind's writer
    /// (tools/make-test-mmdb.pl), as `make` writes the test database.
    public static func writeCityDatabase(_ networks: [(String, String?)], to path: String) throws {
        let base =
            try JSONSerialization.jsonObject(
                with: Data(contentsOf: URL(fileURLWithPath: Repository.path("tools/geo/test-city.json"))))
            as? [String: Any]
        let list: [[String: Any]] = networks.map { network, city in
            city.map { ["network": network, "city": $0] } ?? ["network": network, "country": "DE", "continent": "EU"]
        }
        let json = path + ".json"
        try JSONSerialization.data(withJSONObject: ["cities": base?["cities"] ?? [:], "networks": list])
            .write(to: URL(fileURLWithPath: json))
        let out = try TestSupport.run(
            "/usr/bin/perl", [Repository.path("tools/make-test-mmdb.pl"), json, path], timeout: 120)
        guard out.status == 0 else { throw TestFailure("make-test-mmdb.pl: \(out.stderr)") }
    }

    /// Tests/Fixtures/four-nodes.yaml (its comments left out), each line indented by `indent`
    /// spaces: the `nodes:` and `pools:` of a geo section.
    public static func fourNodes(indent: Int) -> String {
        let text = (try? String(contentsOfFile: Repository.fixture("four-nodes.yaml"), encoding: .utf8)) ?? ""
        let pad = String(repeating: " ", count: indent)
        return text.split(separator: "\n").filter { !$0.hasPrefix("#") }.map { pad + $0 }.joined(separator: "\n")
    }

    /// The queries the reference-server differential test and the XDP program's test ask of
    /// `example.test.zone`: every owner, names that do not exist, wildcard and ENT names, other
    /// zones, in mixed case, for each type, with and without EDNS.
    public static var differentialQueries: [(String, RRType, EDNS?)] {
        let names = [
            "example.test.", "ns1.example.test.", "ns2.example.test.", "mail.example.test.", "www.example.test.",
            "alias.example.test.", "chain1.example.test.", "chain2.example.test.", "dangling.example.test.",
            "external.example.test.", "a.b.c.example.test.", "b.c.example.test.", "c.example.test.",
            "x.wild.example.test.", "x.y.wild.example.test.", "wild.example.test.", "sub.wild.example.test.",
            "x.sub.wild.example.test.", "*.wild.example.test.", "q.cw.example.test.", "sub.example.test.",
            "host.sub.example.test.", "ns.sub.example.test.", "_dns._udp.example.test.", "ptr.example.test.",
            "caa.example.test.", "unk.example.test.", "big.example.test.", "nope.example.test.",
            "deep.nope.example.test.", "WwW.ExAmPlE.TeSt.", "example.org.", "test.", ".", "types.example.test.",
            // DNAME: its owner, names below it, a chain back into the zone,
            // a substitution too long for a name.
            "dn.example.test.", "x.dn.example.test.", "a.b.dn.example.test.", "below.dn.example.test.",
            "www.home.example.test.", "WwW.HoMe.ExAmPlE.TeSt.", "alias.home.example.test.", "nope.home.example.test.",
            "x.home.home.example.test.", "sub.home.example.test.", "svc.example.test.",
            "\(String(repeating: "y", count: 63)).long.example.test.",
        ]
        // The types of the zone's `types` name (RDataLayout) too: their RDATA is compared byte for byte.
        let types: [RRType] =
            [.a, .aaaa, .ns, .soa, .cname, .dname, .mx, .txt, .srv, .ptr, .caa, RRType(65280), .ds, .any]
            + [.maila, .mailb, .opt, .tsig]  // meta-types asked as questions (docs/CONFORMANCE.md)
            + [13, 17, 18, 29, 35, 37, 44, 48, 51, 52, 53, 59, 60, 61, 62, 63, 64, 65, 99, 256].map { RRType($0) }
        let ednsVariants: [EDNS?] = [nil, EDNS(udpPayloadSize: 1232), EDNS(udpPayloadSize: 4096, dnssecOK: true)]
        var out: [(String, RRType, EDNS?)] = []
        for n in names { for t in types { for e in ednsVariants { out.append((n, t, e)) } } }
        return out
    }

    /// The zone the responder's query table runs against (and the zone editor's tests edit): every kind
    /// of name a lookup meets, with answers too big for UDP.
    public static let queryTableZone = """
        $ORIGIN example.test.
        $TTL 300
        @        SOA   ns1 hostmaster 2026112201 3600 600 1209600 60
        @        NS    ns1
        @        NS    ns.other.test.
        @        MX    10 mail
        ns1      A     192.0.2.53
        mail     A     192.0.2.25
        mail     AAAA  2001:db8::25
        www      A     192.0.2.1
        www      A     192.0.2.2
        www      AAAA  2001:db8::1
        alias    CNAME www
        chain1   CNAME chain2
        chain2   CNAME www
        loop1    CNAME loop2
        loop2    CNAME loop1
        dangling CNAME nothere
        external CNAME www.other.test.
        a.b.c    TXT   "deep"
        *.wild   A     192.0.2.100
        *.wild   TXT   "wild"
        sub.wild A     192.0.2.101
        *.cw     CNAME www
        sub      NS    ns.sub
        sub      NS    ns.other.test.
        ns.sub   A     192.0.2.77
        _dns._udp SRV  0 1 53 ns1
        dn       DNAME www.other.test.
        back     DNAME example.test.
        \((0..<4).map { "big TXT \"\(String(repeating: "x", count: 200))\($0)\"\n" }.joined())
        \((0..<30).map { "huge TXT \"\(String(repeating: "y", count: 250))\($0)\"\n" }.joined())
        """
}
