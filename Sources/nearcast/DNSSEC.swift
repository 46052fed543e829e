import ArgumentParser
import DNSWire
import Foundation
import NearcastBasics
import NearcastConfiguration
import NearcastDNSSEC
import NearcastZones

/// `nearcast dnssec ...`: a zone's signing keys, kept in the server's state directory.
struct DNSSEC: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dnssec", abstract: "DNSSEC keys (RFC 4034), kept in the state directory.",
        subcommands: [KeyGen.self, DS.self, Import.self, Sign.self, Roll.self])

    /// Where the keys are: the config's state directory, or one given.
    struct Place: ParsableArguments {
        @Option(name: .long, help: "The server's config file: its state-dir holds the keys.")
        var config: String?

        @Option(name: .long, help: "The state directory (instead of --config).")
        var stateDir: String?

        func store() throws -> DNSSECKeyStore {
            if let stateDir { return DNSSECKeyStore(stateDirectory: stateDir) }
            guard let config else { throw ValidationError("say where the keys are: --config FILE or --state-dir DIR") }
            let cfg: NearcastConfig
            do { cfg = try NearcastConfig.load(path: config) } catch { throw ValidationError("\(error)") }
            guard let dir = cfg.stateDirectory else {
                throw ValidationError("\(config) has no state-dir: the keys are kept there")
            }
            return DNSSECKeyStore(stateDirectory: dir)
        }
    }

    static func zone(_ text: String) throws -> DNSName {
        do { return try DNSName(text.hasSuffix(".") ? text : text + ".") } catch {
            throw ValidationError("'\(text)' is not a domain name: \(error)")
        }
    }

    /// `nearcast dnssec keygen ZONE`: a new key, kept, and its DS printed.
    struct KeyGen: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "keygen",
            abstract: "Make a signing key for a zone, keep it in the state directory and print its DS.",
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

        func run() throws {
            guard let alg = DNSSECKey.Algorithm(name: algorithm) else {
                throw ValidationError("algorithm '\(algorithm)' is not supported (ecdsap256sha256, ed25519)")
            }
            let key = DNSSECKey.generate(
                zone: try DNSSEC.zone(zone), algorithm: alg, flags: zsk ? DNSSECKey.zsk : DNSSECKey.csk)
            let (privateFile, _) = try place.store().add(key)
            print("; key \(key.keyTag), \(key.algorithm), flags \(key.flags): \(privateFile)")
            if !zsk { print(key.dsText) }
        }
    }

    /// `nearcast dnssec roll ZONE`: a ZSK rollover by pre-publication, begun.
    struct Roll: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "roll",
            abstract: "Begin a rollover of a zone's zone-signing key (RFC 7583 pre-publication).",
            discussion: """
                A new ZSK of the current one's algorithm is kept in the state directory, published from \
                now and not active. nearcastd carries the rollover through (at its next round of \
                signatures, or at once after a reload): it activates the new key once it has been \
                published for the DNSKEY TTL and the propagation delay, re-signs the zone with it, and \
                removes the old key once its signatures have expired from caches. The steps' times are \
                written into the keys' files, so a restart carries on.
                """)

        @Argument(help: "The zone.")
        var zone: String

        @OptionGroup var place: Place

        func run() throws {
            let store = try place.store()
            let origin = try DNSSEC.zone(zone)
            let keys = try store.keys(of: origin)
            switch KeyRollover.successor(in: keys, at: Date()) {
            case .failure(let refusal): throw ValidationError("\(origin): \(refusal)")
            case .success(let key):
                let (privateFile, _) = try store.add(key)
                print("; key \(key.keyTag), \(key.algorithm), a ZSK published from now: \(privateFile)")
                print("; reload nearcastd to begin at once (`nearcast reload`), or it begins at its next round")
            }
        }
    }

    /// `nearcast dnssec ds ZONE`: the DS records of the zone's key-signing keys.
    struct DS: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "ds", abstract: "Print the DS records (SHA-256) of a zone's key-signing keys, for its parent.")

        @Argument(help: "The zone.")
        var zone: String

        @OptionGroup var place: Place

        func run() throws {
            let name = try DNSSEC.zone(zone)
            let keys = try place.store().keys(of: name).filter { $0.flags & 1 == 1 }
            guard !keys.isEmpty else {
                throw ValidationError("\(name) has no key-signing key (nearcast dnssec keygen)")
            }
            for k in keys { print(k.dsText) }
        }
    }

    /// `nearcast dnssec import ZONE FILE.private`: a key made elsewhere (BIND, ldns), kept.
    struct Import: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "import",
            abstract: "Keep a key from BIND's or ldns's key files (K...private, with its .key beside it).")

        @Argument(help: "The zone.")
        var zone: String

        @Argument(help: "The .private file.")
        var file: String

        @OptionGroup var place: Place

        func run() throws {
            let key = try DNSSECKeyFile.read(privateFile: file, zone: try DNSSEC.zone(zone))
            let (privateFile, _) = try place.store().add(key)
            print("; key \(key.keyTag), \(key.algorithm), flags \(key.flags): \(privateFile)")
            if key.flags & 1 == 1 { print(key.dsText) }
        }
    }

    /// `nearcast dnssec sign ZONE FILE`: the zone file signed with the zone's keys.
    struct Sign: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "sign",
            abstract: "Sign a zone file with the zone's keys (DNSKEY, NSEC chain, RRSIGs) and write the signed zone.",
            discussion: """
                Signatures are valid from an hour ago for --days days. Any DNSSEC records the file holds                 (signatures, NSEC, NSEC3, the apex's DNSKEY and NSEC3PARAM) are replaced.
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

        func run() throws {
            let origin = try DNSSEC.zone(zone)
            let keys = try place.store().keys(of: origin)
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
