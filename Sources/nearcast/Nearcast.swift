import ArgumentParser
import Foundation
import NearcastBasics
import NearcastConfiguration
import NearcastGeo
import TerminalUI

/// `nearcast`: the operator's command line.
@main
struct Nearcast: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "nearcast",
        abstract: "Operate a nearcast GeoDNS server.",
        subcommands: [
            Status.self, CheckConfig.self, Stats.self, Explain.self, Nodes.self, NodeCommand.self, Report.self,
            Reload.self, Zones.self, Records.self, RecordCommand.self, TSIG.self, DNSSEC.self, Store.self, Audit.self,
        ]
    )
}

/// `nearcast check-config FILE`: every problem in the config and its zones, with file and line.
struct CheckConfig: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check-config",
        abstract: "Check a config file and every zone it names; print each error as file:line: message."
    )

    @Argument(help: "The YAML config file.")
    var file: String

    func run() throws {
        do throws(DiagnosticsError) {
            let cfg = try NearcastConfig.load(path: file)
            if cfg.listen.isEmpty {
                throw DiagnosticsError([
                    Diagnostic(file: file, line: 0, message: "no 'listen' addresses: nearcastd would need --listen")
                ])
            }
            // What nearcastd reads at its start: not a secondary zone not transferred yet, nor a
            // catalog it makes then (its file is nearcastd's to write).
            var served = cfg.servable().config
            served.zones.removeAll { $0.catalog == .produce }
            let zones = try served.loadZones()
            _ = try cfg.api.loadTokens()
            let database = try cfg.geo.openDatabase()
            let records = zones.map(\.recordCount).reduce(0, +)
            var summary =
                "\(file): ok: \(counted(zones.count, "zone")), \(counted(records, "record")), \(counted(cfg.listen.count, "listen address", plural: "listen addresses"))"
            if let db = database, !cfg.geo.names.isEmpty {
                // The compile nearcastd will do at start, so its figures (and time) are known now.
                let bar = TerminalProgress("geo compile: networks", expected: db.nodeCount)
                let table: GeoTable
                do { table = try GeoTable.build(cfg.geo, database: db, progress: bar.update) } catch {
                    throw DiagnosticsError([Diagnostic(file: db.path, line: 0, message: "geo compile: \(error)")])
                }
                bar.finish(table.image.report.networks)
                let r = table.image.report
                summary +=
                    ", \(counted(cfg.geo.names.count, "geo name")) over \(counted(cfg.geo.nodes.count, "node")) (\(db.databaseType): \(r.networks) networks, \(counted(r.classes, "location class", plural: "location classes")), \(r.ipv4After + r.ipv6After) prefixes, \(r.uncoveredAfter) of them for uncovered blocks, \(r.aliases) IPv6 prefixes looked up as IPv4)"
            }
            if let etcd = cfg.store.etcd {
                summary +=
                    ", store: etcd at \(etcd.endpoints.joined(separator: " "))\(etcd.prefix == "/nearcast/" ? "" : " under \(etcd.prefix)")"
            }
            if !cfg.tsigKeys.isEmpty { summary += ", \(counted(cfg.tsigKeys.keys.count, "TSIG key"))" }
            if cfg.rrl.enabled {
                let r = cfg.rrl
                summary +=
                    ", rrl: \(r.responsesPerSecond) responses/s per /\(r.ipv4Prefix) and /\(r.ipv6Prefix), slip \(r.slip)"
            }
            print(summary)
        } catch {
            for d in error.diagnostics { FileHandle.standardError.write((d.description + "\n").data(using: .utf8)!) }
            FileHandle.standardError.write("\(counted(error.diagnostics.count, "error"))\n".data(using: .utf8)!)
            throw ExitCode(1)
        }
    }
}
