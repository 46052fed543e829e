// swift-tools-version:6.0
// nearcast: an authoritative GeoDNS server with an XDP fast path. docs/ARCHITECTURE.md describes the modules and who may import whom.
import Foundation
import PackageDescription

let package = Package(
    name: "nearcast",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "nearcastd", targets: ["nearcastd"]),
        .executable(name: "nearcast", targets: ["nearcast"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/jpsim/Yams.git", from: "5.0.1"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/apple/swift-crypto.git", "3.12.3"..<"5.0.0"),
        // Persistent hash tries (TreeDictionary): a changed zone shares every untouched part with the one before.
        .package(url: "https://github.com/apple/swift-collections.git", from: "1.6.0"),
    ],
    targets: [
        // Pure Swift DNS wire format: names, messages, RRs, EDNS, ECS. No dependencies.
        .target(name: "DNSWire"),
        // libbpf (Debian: libbpf-dev); only BPFKit imports it.
        .systemLibrary(name: "CLibBPF", pkgConfig: "libbpf", providers: [.apt(["libbpf-dev"])]),
        // Capabilities narrowed in every thread, names from libcap (Debian: libcap-dev); only nearcastd imports it.
        .target(name: "CCapabilities", linkerSettings: [.linkedLibrary("cap")]),
        // libmaxminddb (Debian: libmaxminddb-dev); only MaxMindDB imports it.
        .systemLibrary(name: "CMaxMindDB", pkgConfig: "libmaxminddb", providers: [.apt(["libmaxminddb-dev"])]),
        // A small Swift reader of MaxMind DB files over libmaxminddb: lookups and a walk of every network.
        .target(name: "MaxMindDB", dependencies: ["CMaxMindDB"]),
        // The one header the XDP program and Swift share (structs, map names, ABI version).
        .target(name: "CNearcastABI"),
        // recvmmsg(2) and sendmmsg(2), which glibc declares only under _GNU_SOURCE; only NearcastServer imports it.
        .target(name: "CDatagrams"),
        // Memory hints Swift has no words for (prefetch).
        .target(name: "CMemoryHints"),
        // dnstap over fstrm and protobuf-c (Debian: libfstrm-dev, libprotobuf-c-dev), as Knot and BIND write it;
        // dnstap.pb-c.c is protoc-c's output for dnstap.proto (`make dnstap-proto`). Only NearcastServer imports it.
        .target(
            name: "CDnstap", exclude: ["dnstap.proto"],
            linkerSettings: [.linkedLibrary("fstrm"), .linkedLibrary("protobuf-c")]),
        // A small generic Swift wrapper over libbpf: objects, maps, programs, test runs.
        .target(name: "BPFKit", dependencies: ["CLibBPF"]),
        // The vocabulary every module shares: a problem in an input file (file, line, message), durations in seconds.
        .target(name: "NearcastBasics"),
        // Zones: the master-file parser and writer, the zone (persistent: a change shares what it does not touch) and
        // its lookup (with a signed zone's signatures and proofs), record changes and their journal, which zone is authoritative.
        .target(
            name: "NearcastZones",
            dependencies: [
                "CMemoryHints", "DNSWire", "NearcastBasics",
                .product(name: "HashTreeCollections", package: "swift-collections"),
                // SHA-1, for NSEC3's hashed owner names (RFC 5155 §5)
                .product(name: "Crypto", package: "swift-crypto"),
            ]),
        // The geo section (nodes, pools, names, their checks), the policy, the compiler over a MaxMind database,
        // the compiled table with explain, and the health board answers follow.
        .target(
            name: "NearcastGeo",
            dependencies: [
                "DNSWire", "MaxMindDB", "NearcastBasics", "NearcastZones", .product(name: "Yams", package: "Yams"),
            ]
        ),
        // A small etcd v3 client over etcd's JSON gateway (AsyncHTTPClient): keys, transactions, leases, watches.
        .target(
            name: "EtcdClient",
            dependencies: [
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
            ]
        ),
        // A fleet's shared state in etcd: the key layout, and the zones and geo section as they are imported and exported.
        .target(
            name: "NearcastStore",
            dependencies: [
                "DNSWire", "EtcdClient", "NearcastBasics", "NearcastConfiguration", "NearcastDNSSEC", "NearcastGeo",
                "NearcastZones",
                .product(name: "Yams", package: "Yams"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
        // A fleet's parts in a server: the store's follower, health views, registrations (§13).
        .target(
            name: "NearcastFleet",
            dependencies: [
                "DNSWire", "EtcdClient", "NearcastAPIModel", "NearcastBasics", "NearcastConfiguration",
                "NearcastDNSSEC", "NearcastGeo", "NearcastHealth", "NearcastServer", "NearcastStore", "NearcastZones",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // Transaction signatures (RFC 8945): keys, verifying a signed query, signing its reply (HMAC from swift-crypto).
        .target(name: "NearcastTSIG", dependencies: ["DNSWire", .product(name: "Crypto", package: "swift-crypto")]),
        // DNSSEC keys (ECDSA P-256, Ed25519 from swift-crypto): made, read and written as BIND's key files,
        // kept in the state directory; their DNSKEY, key tag and DS; a zone signed with them.
        .target(
            name: "NearcastDNSSEC",
            dependencies: [
                "DNSWire", "NearcastBasics", "NearcastZones", .product(name: "Crypto", package: "swift-crypto"),
            ]),
        // Zone transfers out (AXFR, IXFR): who may transfer a zone, its recent changes, the messages.
        .target(
            name: "NearcastTransfer", dependencies: ["DNSWire", "NearcastBasics", "NearcastZones", "NearcastTSIG"]),
        // What a query is answered: the responder (zones and geo names), its reply cache, the answer image for XDP.
        .target(
            name: "NearcastAnswers",
            dependencies: [
                "DNSWire", "NearcastBasics", "NearcastZones", "NearcastGeo", "NearcastTSIG", "NearcastTransfer",
            ]
        ),
        // The config file: listen addresses, zones, XDP, API settings and tokens, with the geo section.
        .target(
            name: "NearcastConfiguration",
            dependencies: [
                "DNSWire", "NearcastBasics", "NearcastZones", "NearcastGeo", "NearcastTSIG", "NearcastTransfer",
                .product(name: "Yams", package: "Yams"), .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // The management API's wire types, shared by the daemon and the CLI.
        .target(name: "NearcastAPIModel", dependencies: ["NearcastBasics", "NearcastZones"]),
        // A progress bar on a terminal.
        .target(name: "TerminalUI"),
        // Loads the XDP program, writes its maps, reads its counters; the only user of the ABI structs.
        .target(
            name: "NearcastDataPath",
            dependencies: [
                "BPFKit", "CNearcastABI", "DNSWire", "NearcastBasics", "NearcastGeo", "NearcastAnswers",
                "NearcastConfiguration", "NearcastAPIModel", .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // Health: the state machine of a node's checks and overrides, and the checkers (NIOSSL for HTTPS checks).
        .target(
            name: "NearcastHealth",
            dependencies: [
                "DNSWire", "NearcastBasics", "NearcastGeo", "NearcastAPIModel",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
        // The SwiftNIO UDP + TCP slow path, and the Hummingbird management API with /metrics (swift-prometheus),
        // its audit log (SHA-256 digests from swift-crypto) and the state it keeps across restarts.
        .target(
            name: "NearcastServer",
            dependencies: [
                "DNSWire", "NearcastZones", "NearcastGeo", "NearcastAnswers", "NearcastConfiguration",
                "NearcastAPIModel", "NearcastBasics", "NearcastTransfer", "CDatagrams", "CDnstap",
                "MaxMindDB",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            // The dashboard's page, in the binary (no files beside it, nothing fetched from elsewhere).
            resources: [
                .embedInCode("UI/index.html"), .embedInCode("UI/app.js"), .embedInCode("UI/app.css"),
                .embedInCode("UI/world.path"),
            ]
        ),
        // What changes what is served, and who owns it: the live geo compile, reloads and record edits
        // (ServedConfig), operators' overrides kept on disk, the health monitor wired to the board and maps.
        .target(
            name: "NearcastControl",
            dependencies: [
                "DNSWire", "MaxMindDB", "NearcastBasics", "NearcastZones", "NearcastGeo", "NearcastAnswers",
                "NearcastTransfer", "NearcastConfiguration", "NearcastAPIModel", "NearcastDataPath", "NearcastHealth",
                "NearcastServer", "NearcastDNSSEC",
                "NearcastFleet", "NearcastStore", "EtcdClient", "TerminalUI",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // The daemon: its parts built from the config in their order and run as one ServiceGroup.
        .target(
            name: "NearcastDaemon",
            dependencies: [
                "DNSWire", "NearcastBasics", "NearcastZones", "NearcastGeo", "NearcastAnswers", "NearcastConfiguration",
                "NearcastAPIModel", "NearcastControl", "NearcastServer", "NearcastDataPath", "NearcastHealth",
                "NearcastFleet", "NearcastStore", "NearcastTransfer", "NearcastDNSSEC",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        .executableTarget(
            name: "nearcastd",
            dependencies: [
                "NearcastBasics", "NearcastConfiguration", "NearcastDaemon", "CCapabilities",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
            ]
        ),
        // Benchmark harness for `make bench`: ns per packet of the XDP program vs reflect and empty.
        .executableTarget(
            name: "xdpbench",
            dependencies: [
                "BPFKit", "DNSWire", "MaxMindDB", "NearcastBasics", "NearcastZones", "NearcastGeo", "NearcastAnswers",
                "NearcastConfiguration", "NearcastDataPath", "NearcastDNSSEC",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // `make fuzz-xdp`: millions of generated and mutated frames through the real XDP program.
        .executableTarget(
            name: "xdpfuzz",
            dependencies: ["XDPFuzz", "DNSWire", .product(name: "ArgumentParser", package: "swift-argument-parser")]
        ),
        // Benchmark harness for `make bench-geo`: the geo compile of a whole GeoLite2-City database.
        .executableTarget(
            name: "geobench",
            dependencies: [
                "MaxMindDB", "NearcastBasics", "NearcastZones", "NearcastGeo", "NearcastAnswers",
                "NearcastConfiguration", "NearcastDNSSEC", "DNSWire",
                "NearcastDataPath",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // `make bench-image`: a zone's load and answer image, timed in one process.
        .executableTarget(
            name: "imagebench",
            dependencies: [
                "CNearcastABI", "DNSWire", "NearcastBasics", "NearcastZones", "NearcastAnswers",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .executableTarget(
            name: "nearcast",
            dependencies: [
                "DNSWire", "NearcastBasics", "NearcastZones", "NearcastTSIG", "NearcastStore", "NearcastGeo",
                "NearcastConfiguration", "NearcastDNSSEC",
                "NearcastAPIModel",
                "TerminalUI",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Yams", package: "Yams"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
        // What every test target shares: repository paths, the child-process launcher with deadlines,
        // the daemon launcher, polling, a raw DNS client, questions to a Responder, seeded generators.
        .target(
            name: "NearcastTestSupport", dependencies: ["DNSWire", "NearcastAnswers"], path: "Tests/NearcastTestSupport"
        ),
        // The XDP program fuzzed: frames generated and mutated, each checked against the slow path
        // (`make fuzz-xdp`, and a shorter run in the tests); the test frames it builds, for the XDP tests.
        .target(
            name: "XDPFuzz",
            dependencies: [
                "NearcastTestSupport", "BPFKit", "DNSWire", "MaxMindDB", "NearcastZones", "NearcastGeo",
                "NearcastAnswers", "NearcastConfiguration", "NearcastDataPath",
            ], path: "Tests/XDPFuzz"),
        .testTarget(name: "NearcastTestSupportTests", dependencies: ["NearcastTestSupport"]),
        .testTarget(name: "DNSWireTests", dependencies: ["DNSWire", "NearcastTestSupport"]),
        .testTarget(
            name: "EtcdClientTests",
            dependencies: [
                "EtcdClient", "NearcastTestSupport", .product(name: "AsyncHTTPClient", package: "async-http-client"),
            ]),
        .testTarget(name: "BPFKitTests", dependencies: ["BPFKit", "NearcastTestSupport"]),
        .testTarget(name: "MaxMindDBTests", dependencies: ["MaxMindDB", "NearcastTestSupport"]),
        .testTarget(
            name: "NearcastHealthTests",
            dependencies: [
                "NearcastHealth", "NearcastGeo", "NearcastAPIModel", "DNSWire", "NearcastTestSupport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"), .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
        .testTarget(
            name: "NearcastDNSSECTests",
            dependencies: [
                "NearcastDNSSEC", "NearcastZones", "DNSWire", "NearcastBasics", "NearcastTestSupport",
                .product(name: "Crypto", package: "swift-crypto"),
            ]),
        .testTarget(
            name: "NearcastZonesTests",
            dependencies: ["NearcastZones", "NearcastBasics", "DNSWire", "NearcastTestSupport"]),
        .testTarget(
            name: "NearcastGeoTests",
            dependencies: ["NearcastGeo", "NearcastConfiguration", "DNSWire", "MaxMindDB", "NearcastTestSupport"]),
        .testTarget(
            name: "NearcastAnswersTests",
            dependencies: [
                "NearcastAnswers", "NearcastZones", "NearcastGeo", "NearcastConfiguration", "NearcastTSIG", "DNSWire",
                "NearcastTransfer", "MaxMindDB", "NearcastTestSupport", "NearcastDNSSEC",
            ]),
        .testTarget(
            name: "NearcastConfigurationTests",
            dependencies: [
                "NearcastConfiguration", "NearcastBasics", "NearcastTSIG", "NearcastTransfer", "NearcastZones",
                "DNSWire",
                "NearcastTestSupport",
            ]),
        .testTarget(
            name: "NearcastDataPathTests",
            dependencies: [
                "NearcastDataPath", "BPFKit", "CNearcastABI", "NearcastZones", "NearcastGeo", "NearcastAnswers",
                "NearcastConfiguration", "NearcastTSIG", "DNSWire", "MaxMindDB", "NearcastTestSupport", "XDPFuzz",
                "NearcastDNSSEC",
            ]
        ),
        .testTarget(
            name: "NearcastControlTests",
            dependencies: [
                "NearcastControl", "NearcastConfiguration", "NearcastZones", "NearcastAnswers", "NearcastGeo",
                "NearcastServer", "NearcastFleet", "NearcastStore", "NearcastHealth", "NearcastAPIModel", "DNSWire",
                "EtcdClient", "NearcastTransfer", "NearcastDNSSEC",
                "NearcastTestSupport",
                .product(name: "Logging", package: "swift-log"), .product(name: "Yams", package: "Yams"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]),
        .testTarget(
            name: "NearcastDaemonTests",
            dependencies: [
                "NearcastDaemon", "NearcastTestSupport", "DNSWire", "NearcastAnswers",
                "NearcastConfiguration", "NearcastServer", "NearcastZones",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .testTarget(
            name: "NearcastServerTests",
            dependencies: [
                "NearcastServer", "NearcastConfiguration", "NearcastAPIModel", "NearcastZones", "DNSWire",
                "NearcastTransfer", "NearcastTSIG", "NearcastTestSupport",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Yams", package: "Yams"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
    ]
)

// A module's README (what it does, beside its code) is documentation, not a source or a resource.
for target in package.targets where target.type != .system {
    let folder = target.path ?? (target.type == .test ? "Tests/" : "Sources/") + target.name
    if FileManager.default.fileExists(atPath: Context.packageDirectory + "/" + folder + "/README.md") {
        target.exclude.append("README.md")
    }
}
