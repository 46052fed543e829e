import ArgumentParser
import DNSWire
import Foundation
import NearcastBasics
import NearcastConfiguration
import NearcastDNSSEC
import NearcastStore
import NearcastZones

/// `nearcast dnssec ...`: a zone's signing keys, kept in the server's state directory.
struct DNSSEC: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dnssec", abstract: "DNSSEC keys (RFC 4034), kept in the state directory or a fleet's store.",
        subcommands: [KeyGen.self, DS.self, Import.self, Sign.self, Roll.self])

    /// Where the keys are: the config's state directory, or one given; or, when the config's
    /// store has a `key-secret`, the fleet's store.
    struct Place: ParsableArguments {
        @Option(
            name: .long, help: "The server's config file: its state-dir holds the keys (its store, with key-secret).")
        var config: String?

        @Option(name: .long, help: "The state directory (instead of --config).")
        var stateDir: String?

        func keys() throws -> KeyPlace {
            if let stateDir { return .local(DNSSECKeyStore(stateDirectory: stateDir)) }
            guard let config else { throw ValidationError("say where the keys are: --config FILE or --state-dir DIR") }
            let cfg: NearcastConfig
            do { cfg = try NearcastConfig.load(path: config) } catch { throw ValidationError("\(error)") }
            if let etcd = cfg.store.etcd, let file = cfg.store.keySecretFile {
                do { return .fleet(etcd, try FleetKeySecret.load(path: file)) } catch {
                    throw ValidationError("\(error)")
                }
            }
            guard let dir = cfg.stateDirectory else {
                throw ValidationError("\(config) has no state-dir: the keys are kept there")
            }
            return .local(DNSSECKeyStore(stateDirectory: dir))
        }
    }

    /// Where a zone's keys are kept: a state directory, or a fleet's store (sealed with its secret).
    enum KeyPlace {
        case local(DNSSECKeyStore)
        case fleet(EtcdSettings, FleetKeySecret)

        /// The keys of `zone`, in the order of their tags.
        func keys(of zone: DNSName) async throws -> [DNSSECKey] { try await keysRead(of: zone).keys }

        /// The keys of `zone`, in the order of their tags, and the store's revision they were read
        /// at (nil: a state directory).
        func keysRead(of zone: DNSName) async throws -> (keys: [DNSSECKey], revision: Int64?) {
            switch self {
            case .local(let store): return (try store.keys(of: zone), nil)
            case .fleet(let settings, let secret):
                let read = try await Self.connected(settings) { try await $0.storedKeys(of: zone) }
                if let bad = read.unreadable.first { throw ValidationError("\(bad) is not a key nearcast kept") }
                let keys = try read.keys.map { try $0.sealed.open(with: secret, at: $0.at, zone: zone) }
                return (keys.sorted { $0.keyTag < $1.keyTag }, read.revision)
            }
        }

        /// Keeps `key` beside the zone's others; says where. `keysReadAt`: in a store, only if
        /// none of the zone's keys changed since that revision.
        func add(_ key: DNSSECKey, keysReadAt: Int64? = nil) async throws -> String {
            switch self {
            case .local(let store): return try store.add(key).privateFile
            case .fleet(let settings, let secret):
                let (written, at) = try await Self.connected(settings) { store in
                    let put = try await store.putKey(key, secret: secret, new: true, keysReadAt: keysReadAt)
                    return (
                        put.written,
                        store.layout.dnssecKey(key.zone, algorithm: key.algorithm.rawValue, tag: key.keyTag)
                    )
                }
                guard written else {
                    throw ValidationError(
                        keysReadAt == nil
                            ? "the store keeps a key with tag \(key.keyTag) of \(key.zone) already"
                            : "\(key.zone)'s keys changed in the store meanwhile (another rollover?): nothing written; run it again"
                    )
                }
                return at + " (sealed; every server of the fleet takes it)"
            }
        }

        /// `body` with a connection to the store, closed whatever happens.
        static func connected<T>(_ settings: EtcdSettings, _ body: (FleetStoreConnection) async throws -> T)
            async throws -> T
        {
            let store = try FleetStoreConnection(settings)
            do {
                let out = try await body(store)
                await store.close()
                return out
            } catch {
                await store.close()
                throw error
            }
        }
    }

    static func zone(_ text: String) throws -> DNSName {
        do { return try DNSName(text.hasSuffix(".") ? text : text + ".") } catch {
            throw ValidationError("'\(text)' is not a domain name: \(error)")
        }
    }

    /// `nearcast dnssec keygen ZONE`: a new key, kept, and its DS printed.
    struct KeyGen: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "keygen",
            abstract: "Make a signing key for a zone, keep it (state directory or fleet's store) and print its DS.",
            discussion: """
                A combined signing key (flags 257) unless --zsk. The private key is written to \
                STATE-DIR/dnssec/ZONE/ as BIND's K<zone>+<alg>+<tag>.private (mode 0600) beside its .key file.
                """)

        @Argument(help: "The zone (e.g. example.com).")
        var zone: String

        @Option(name: [.short, .long], help: "ecdsap256sha256 (13, the default) or ed25519 (15).")
        var algorithm: String = "ecdsap256sha256"

        @Flag(help: "A zone-signing key (flags 256) instead of a combined one.")
        var zsk = false

        @OptionGroup var place: Place

        func run() async throws {
            guard let alg = DNSSECKey.Algorithm(name: algorithm) else {
                throw ValidationError("algorithm '\(algorithm)' is not supported (ecdsap256sha256, ed25519)")
            }
            let key = DNSSECKey.generate(
                zone: try DNSSEC.zone(zone), algorithm: alg, flags: zsk ? DNSSECKey.zsk : DNSSECKey.csk)
            let privateFile = try await place.keys().add(key)
            print("; key \(key.keyTag), \(key.algorithm), flags \(key.flags): \(privateFile)")
            if !zsk { print(key.dsText) }
        }
    }

    /// `nearcast dnssec roll ZONE`: a ZSK rollover by pre-publication, begun.
    struct Roll: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "roll",
            abstract: "Begin a rollover of a zone's zone-signing key (RFC 7583 pre-publication).",
            discussion: """
                A new ZSK of the current one's algorithm is kept in the state directory, published from \
                now and not active. nearcastd carries the rollover through (at its next round of \
                signatures, or at once after a reload): it activates the new key once it has been \
                published for the DNSKEY TTL and the propagation delay, re-signs the zone with it, and \
                removes the old key once its signatures have expired from caches. The steps' times are \
                written into the keys' files, so a restart carries on. With a config whose store has a \
                key-secret, the new key goes into the fleet's store (only if no other rollover began \
                meanwhile); every server takes it, and the one holding the fleet's signing duty sets \
                the steps' times for all.
                """)

        @Argument(help: "The zone.")
        var zone: String

        @OptionGroup var place: Place

        func run() async throws {
            let place = try place.keys()
            let origin = try DNSSEC.zone(zone)
            let (keys, revision) = try await place.keysRead(of: origin)
            switch KeyRollover.successor(in: keys, at: Date()) {
            case .failure(let refusal): throw ValidationError("\(origin): \(refusal)")
            case .success(let key):
                // In a store, only if no other rollover began from the same keys meanwhile.
                let privateFile = try await place.add(key, keysReadAt: revision)
                print("; key \(key.keyTag), \(key.algorithm), a ZSK published from now: \(privateFile)")
                if case .local = place {
                    print("; reload nearcastd to begin at once (`nearcast reload`), or it begins at its next round")
                } else {
                    print("; every server takes it from the store; the one that drives the fleet's rollovers begins it")
                }
            }
        }
    }

    /// `nearcast dnssec ds ZONE`: the DS records of the zone's key-signing keys.
    struct DS: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "ds", abstract: "Print the DS records (SHA-256) of a zone's key-signing keys, for its parent.")

        @Argument(help: "The zone.")
        var zone: String

        @OptionGroup var place: Place

        func run() async throws {
            let name = try DNSSEC.zone(zone)
            let keys = try await place.keys().keys(of: name).filter { $0.flags & 1 == 1 }
            guard !keys.isEmpty else {
                throw ValidationError("\(name) has no key-signing key (nearcast dnssec keygen)")
            }
            for k in keys { print(k.dsText) }
        }
    }

    /// `nearcast dnssec import ZONE FILE.private`: a key made elsewhere (BIND, ldns), kept.
    struct Import: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "import",
            abstract: "Keep a key from BIND's or ldns's key files (K...private, with its .key beside it).")

        @Argument(help: "The zone.")
        var zone: String

        @Argument(help: "The .private file.")
        var file: String

        @OptionGroup var place: Place

        func run() async throws {
            let key = try DNSSECKeyFile.read(privateFile: file, zone: try DNSSEC.zone(zone))
            let privateFile = try await place.keys().add(key)
            print("; key \(key.keyTag), \(key.algorithm), flags \(key.flags): \(privateFile)")
            if key.flags & 1 == 1 { print(key.dsText) }
        }
    }

    /// `nearcast dnssec sign ZONE FILE`: the zone file signed with the zone's keys.
    struct Sign: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "sign",
            abstract: "Sign a zone file with the zone's keys (DNSKEY, NSEC chain, RRSIGs) and write the signed zone.",
            discussion: """
                Signatures are valid from an hour ago for --days days. Any DNSSEC records the file holds \
                (signatures, NSEC, NSEC3, the apex's DNSKEY and NSEC3PARAM) are replaced.
                """)

        @Argument(help: "The zone.")
        var zone: String

        @Argument(help: "Its zone file.")
        var file: String

        @Option(name: [.short, .long], help: "Where to write the signed zone (default: standard output).")
        var output: String?

        @Option(help: "How many days the signatures are valid.")
        var days: Int = 14

        @OptionGroup var place: Place

        func run() async throws {
            let origin = try DNSSEC.zone(zone)
            let keys = try await place.keys().keys(of: origin)
            guard !keys.isEmpty else { throw ValidationError("\(origin) has no keys (nearcast dnssec keygen)") }
            guard (1...365).contains(days) else { throw ValidationError("--days must be 1 to 365") }
            let loaded = try Zone.load(path: file, origin: origin)
            let now = UInt32(Date().timeIntervalSince1970)
            let signer = ZoneSigner(keys: keys, inception: now - 3600, expiration: now + UInt32(days) * 86400)
            let text = ZoneText.render(origin: origin, records: try signer.sign(loaded))
            if let output {
                try DurableFile.replace(output, with: Array(text.utf8))
            } else {
                print(text, terminator: "")
            }
        }
    }
}
