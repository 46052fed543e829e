import ArgumentParser
import Foundation
import NearcastBasics
import NearcastConfiguration
import NearcastDNSSEC
import NearcastStore

#if canImport(Glibc)
import Glibc
#endif

/// `nearcast store ...`: a fleet's shared state in etcd (the config's `store` section).
struct Store: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "A fleet's shared store in etcd: seed it from files, or write it back as files.",
        subcommands: [Import.self, Export.self, Migrate.self, Secret.self, Rekey.self])

    /// The etcd settings of the config at `path`, or a clear refusal.
    static func settings(_ path: String) throws -> EtcdSettings {
        let config: NearcastConfig
        do { config = try FleetFiles.config(at: path) } catch {
            for d in error.diagnostics { FileHandle.standardError.write(Data((d.description + "\n").utf8)) }
            throw ExitCode(1)
        }
        guard let etcd = config.store.etcd else {
            throw ValidationError("\(path) has no store section: name the etcd cluster there (store: { etcd: ... })")
        }
        return etcd
    }

    /// Runs `body` with a connection to the store, closed whatever happens; a failure is said
    /// as `nearcast store WHAT: why` and exits 1.
    static func connected(
        _ settings: EtcdSettings, _ what: String, _ body: (FleetStoreConnection) async throws -> Void
    ) async throws {
        let store = try FleetStoreConnection(settings)
        do { try await body(store) } catch {
            await store.close()
            FileHandle.standardError.write(Data("nearcast store \(what): \(error)\n".utf8))
            throw ExitCode(1)
        }
        await store.close()
    }

    /// "1 zone and the geo section", as the commands report what they moved.
    static func contents(_ files: FleetFiles) -> String {
        counted(files.zones.count, "zone") + (files.geo == nil ? "" : " and the geo section")
    }

    /// `nearcast store import nearcast.yaml`: the config's zones and geo section into etcd.
    struct Import: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Put the zones and the geo section of a config into its store (replacing what is there).")

        @Argument(help: "The YAML config: its store section names etcd, its zones and geo section are imported.")
        var config: String

        func run() async throws {
            let settings = try Store.settings(config)
            let files: FleetFiles
            do { files = try FleetFiles.read(config: config) } catch {
                for d in error.diagnostics { FileHandle.standardError.write(Data((d.description + "\n").utf8)) }
                throw ExitCode(1)
            }
            try await Store.connected(settings, "import") { store in
                let revision = try await store.importFiles(files)
                print("imported \(Store.contents(files)) into \(settings.prefix) (revision \(revision))")
            }
        }
    }

    /// `nearcast store migrate --config nearcast.yaml`: a store of layout 1 made layout 2.
    struct Migrate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Turn a store of layout 1 (a zone one value) into layout 2 (a key per RRset).",
            discussion: """
                Each zone is written a key per RRset, then the old keys are deleted and the layout's \
                version set at once. Servers of an older nearcast keep serving what they hold; run it \
                again after an interruption: it writes only what is still missing.
                """)

        @Option(name: .long, help: "The config whose store section names etcd.")
        var config: String

        func run() async throws {
            let settings = try Store.settings(config)
            try await Store.connected(settings, "migrate") { store in
                let zones = try await store.migrate()
                print(
                    zones.isEmpty
                        ? "the store at \(settings.prefix) is of layout \(StoreLayout.version) already"
                        : "migrated \(counted(zones.count, "zone")) of \(settings.prefix) to layout \(StoreLayout.version)"
                )
            }
        }
    }

    /// `nearcast store export DIR`: the store's zones and geo section as files.
    struct Export: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write the store's zones and geo section into a directory: nearcast.yaml and zones/.")

        @Argument(help: "The directory to write (made if missing).")
        var directory: String

        @Option(name: .long, help: "The config whose store section names etcd.")
        var config: String

        func run() async throws {
            try await Store.connected(try Store.settings(config), "export") { store in
                let files = try await store.exportFiles()
                try files.write(to: directory)
                print("exported \(Store.contents(files)) to \(directory)")
            }
        }
    }

    /// `nearcast store secret FILE`: a new secret to seal a fleet's DNSSEC keys with.
    struct Secret: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Make the secret a fleet's DNSSEC keys are sealed with in the store (store: { key-secret: FILE }).",
            discussion: """
                Writes 32 random bytes in base64 to FILE, mode 0600, and never over a file that is there. \
                Copy it to every server of the fleet (as their etcd credentials are): a server \
                without it cannot open the keys, and etcd, its backups and whoever reads them never \
                see a private key in the clear.
                """)

        @Argument(help: "The file to write.")
        var file: String

        func run() throws {
            let text = Array((FleetKeySecret.generate().text + "\n").utf8)
            // Made 0600 from the first byte, and never over a file that is there.
            let fd = open(file, O_WRONLY | O_CREAT | O_EXCL, 0o600)
            guard fd >= 0 else {
                throw ValidationError(
                    errno == EEXIST
                        ? "\(file) is there already: a fleet's secret is made once"
                        : "\(file) cannot be made: \(String(cString: strerror(errno)))")
            }
            let wrote = text.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            let synced = fsync(fd) == 0
            close(fd)
            guard wrote == text.count, synced else {
                unlink(file)
                throw ValidationError("\(file) cannot be written")
            }
            print("; the fleet's key secret: \(file) (0600); name it as store: { key-secret: \(file) } on every server")
        }
    }

    /// `nearcast store rekey NEW-SECRET --config CONFIG`: the fleet's keys sealed under a new secret.
    struct Rekey: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Seal the fleet's DNSSEC keys in the store under a new secret (the config names the old one).",
            discussion: """
                Make the new secret with `nearcast store secret`, run this, then give each server the \
                new file as its key-secret and restart it. Meanwhile every server goes on signing \
                with the keys its state directory keeps: one still on the old secret cannot open \
                what changes in the store, and says so. Run again after an interruption: keys \
                sealed under the new secret already are left.
                """)

        @Argument(help: "The new secret's file.")
        var secret: String

        @Option(name: .long, help: "The config whose store section names etcd and the current key-secret.")
        var config: String

        func run() async throws {
            let settings = try Store.settings(config)
            let cfg: NearcastConfig
            do { cfg = try FleetFiles.config(at: config) } catch { throw ValidationError("\(error)") }
            guard let oldFile = cfg.store.keySecretFile else {
                throw ValidationError("\(config) names no store key-secret: the keys' current secret")
            }
            let (old, new): (FleetKeySecret, FleetKeySecret)
            do { (old, new) = (try FleetKeySecret.load(path: oldFile), try FleetKeySecret.load(path: secret)) } catch {
                throw ValidationError("\(error)")
            }
            try await Store.connected(settings, "rekey") { store in
                let done = try await store.reseal(from: old, to: new)
                print("sealed \(counted(done.resealed, "key")) anew (\(done.already) under the new secret already)")
                guard done.failed.isEmpty else {
                    throw RekeyFailure(
                        description:
                            "not sealed anew (open with neither secret, or changed meanwhile: run it again): \(done.failed.joined(separator: ", "))"
                    )
                }
                print("; give every server \(secret) as its store key-secret and restart it")
            }
        }
    }

    struct RekeyFailure: Error, CustomStringConvertible {
        var description: String
    }
}
