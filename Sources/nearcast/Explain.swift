import ArgumentParser
import Foundation
import NearcastGeo

/// `nearcast explain NAME TYPE --client ADDR [--ecs PREFIX]`: why a client gets the answer it
/// gets for a geo name, from the daemon's API.
struct Explain: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract:
            "Explain a geo answer: the client's location, its class and prefix, the ranked candidates, the answer."
    )

    @OptionGroup var options: APIOptions

    @Argument(help: "The geo name.") var name: String
    @Argument(help: "A or AAAA.") var type: String

    @Option(help: ArgumentHelp("The client's (or resolver's) address.", valueName: "ADDR")) var client: String
    @Option(help: ArgumentHelp("A Client Subnet the resolver sends, e.g. 198.51.100.0/24.", valueName: "PREFIX"))
    var ecs: String?

    @Flag(help: "Print the JSON the API returns.") var json = false

    func run() async throws {
        do {
            let api = try options.client(role: .read)
            var items = [
                URLQueryItem(name: "name", value: name), URLQueryItem(name: "type", value: type),
                URLQueryItem(name: "client", value: client),
            ]
            if let ecs { items.append(URLQueryItem(name: "ecs", value: ecs)) }
            var c = URLComponents()
            c.path = "/v1/explain"
            c.queryItems = items
            let e = try await api.get(c.string!, as: GeoExplanation.self)
            if json {
                let enc = JSONEncoder()
                enc.outputFormatting = [.prettyPrinted, .sortedKeys]
                print(String(decoding: try enc.encode(e), as: UTF8.self))
            } else {
                print(Self.render(e), terminator: "")
            }
        } catch let e as APIClient.Failure {
            FileHandle.standardError.write(("nearcast: " + e.description + "\n").data(using: .utf8)!)
            throw ExitCode(1)
        }
    }

    static func render(_ e: GeoExplanation) -> String {
        var out = "\(e.name) \(e.type) for \(e.lookupAddress)\n"
        let l = e.location
        if let network = l.network {
            var place = [l.country, l.subdivision, l.continent].compactMap { $0 }.joined(separator: ", ")
            if let lat = l.latitude, let lon = l.longitude { place += String(format: " at %.4f, %.4f", lat, lon) }
            out += "  location:  \(place.isEmpty ? "no details" : place) (database network \(network))\n"
        } else {
            out += "  location:  unknown (no record in the database)\n"
        }
        out += "  class:     \(e.locationClass)\(e.locationClass == 0 ? " (unknown location: the fallback order)" : "")"
        out += e.classPrefix.map { ", prefix \($0)\n" } ?? ", no prefix\n"
        out += "  candidates:\n"
        for (i, c) in e.candidates.enumerated() {
            let score = c.score.map { String(format: "score %.4f", $0) } ?? "fallback"
            let km = c.distanceKm.map { String(format: ", %.0f km", $0) } ?? ""
            out += "    \(i + 1). \(c.node) \(c.address ?? "-")  \(score)\(km)  \(c.healthy ? "up" : "DOWN")\n"
        }
        out +=
            "  answer:    \(e.outcome == "answered" ? e.answer.joined(separator: " ") : e.outcome.uppercased())  (TTL \(e.ttl))\n"
        out += "  ECS scope: \(e.ecsScope.map(String.init) ?? "- (no ECS)")\n"
        return out
    }
}
