import ArgumentParser
import Foundation
import NearcastBasics
import NearcastConfiguration
import NearcastStore

/// `nearcast store ...`: a fleet's shared state in etcd (the config's `store` section).
struct Store: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "A fleet's shared store in etcd: seed it from files, or write it back as files.",
        subcommands: [Import.self, Export.self])

    /// The etcd settings of the config at `path`, or a clear refusal.
    static func settings(_ path: String) throws -> EtcdSettings {
        let config: NearcastConfig
        do { config = try NearcastConfig.load(path: path) } catch {
            for d in error.diagnostics { FileHandle.standardError.write(Data((d.description + "\n").utf8)) }
            throw ExitCode(1)
        }
        guard let etcd = config.store.etcd else {
            throw ValidationError("\(path) has no store section: name the etcd cluster there (store: { etcd: ... })")
        }
        return etcd
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
            let store = try FleetStoreConnection(settings)
            do {
                let revision = try await store.importFiles(files)
                print(
                    "imported \(counted(files.zones.count, "zone"))\(files.geo == nil ? "" : " and the geo section") into \(settings.prefix) (revision \(revision))"
                )
            } catch {
                await store.close()
                FileHandle.standardError.write(Data("nearcast store import: \(error)\n".utf8))
                throw ExitCode(1)
            }
            await store.close()
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
            let store = try FleetStoreConnection(try Store.settings(config))
            do {
                let files = try await store.exportFiles()
                try files.write(to: directory)
                print(
                    "exported \(counted(files.zones.count, "zone"))\(files.geo == nil ? "" : " and the geo section") to \(directory)"
                )
            } catch {
                await store.close()
                FileHandle.standardError.write(Data("nearcast store export: \(error)\n".utf8))
                throw ExitCode(1)
            }
            await store.close()
        }
    }
}
