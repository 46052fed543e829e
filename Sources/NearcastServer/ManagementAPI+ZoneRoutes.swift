import Foundation
import Hummingbird
import NearcastAPIModel
import NearcastZones

extension ManagementAPI {
    /// Zones and records (read, and write to change records), and reloads (admin).
    static func addZoneRoutes(to v1: RouterGroup<APIRequestContext>, desks: APIDesks) {
        v1.get("zones") { _, context -> Response in
            try context.require(.read)
            guard let zones = desks.zones else { throw HTTPError(.notFound, message: "no zones") }
            return try jsonResponse(await zones.zoneList())
        }
        v1.get("zones/:origin/records") { request, context -> Response in
            try context.require(.read)
            guard let zones = desks.zones else { throw HTTPError(.notFound, message: "no zones") }
            let q = request.uri.queryParameters
            let origin = context.parameters.get("origin") ?? ""
            let (name, type) = (q["name"].map(String.init), q["type"].map(String.init))
            let list: [RecordInput]
            var version: String?
            do throws(ZoneEditError) {
                list = try await zones.records(origin, name: name, type: type)
                // One RRset asked for: its version, for a change made for it (If-Match).
                if let name, let type { version = try await zones.version(origin, name: name, type: type) }
            } catch { throw Self.httpError(error) }
            var response = try jsonResponse(list)
            if let version { response.headers[.eTag] = "\"\(version)\"" }
            return response
        }
        v1.post("zones/:origin/records") { request, context -> Response in
            try context.require(.write)
            guard let zones = desks.zones else { throw HTTPError(.notFound, message: "no zones") }
            let input = try await Self.body(
                of: request, as: RecordInput.self,
                "the record must be JSON {\"name\", \"type\", \"ttl\" (optional), \"data\"}")
            let change: RecordChange
            do throws(ZoneEditError) {
                change = try await zones.edit(
                    context.parameters.get("origin") ?? "", .add(input), by: Self.who(context),
                    ifMatch: Self.ifMatch(request))
            } catch { throw Self.httpError(error) }
            return try jsonResponse(change)
        }
        v1.delete("zones/:origin/records") { request, context -> Response in
            try context.require(.write)
            guard let zones = desks.zones else { throw HTTPError(.notFound, message: "no zones") }
            let q = request.uri.queryParameters
            guard let name = q["name"].map(String.init), let type = q["type"].map(String.init) else {
                throw HTTPError(
                    .badRequest,
                    message: "name and type are required (data is optional: without it, the whole RRset goes)")
            }
            let change: RecordChange
            do throws(ZoneEditError) {
                change = try await zones.edit(
                    context.parameters.get("origin") ?? "",
                    .delete(name: name, type: type, data: q["data"].map(String.init)), by: Self.who(context),
                    ifMatch: Self.ifMatch(request))
            } catch { throw Self.httpError(error) }
            return try jsonResponse(change)
        }
        v1.put("zones/:origin/records") { request, context -> Response in
            try context.require(.write)
            guard let zones = desks.zones else { throw HTTPError(.notFound, message: "no zones") }
            let q = request.uri.queryParameters
            guard let name = q["name"].map(String.init), let type = q["type"].map(String.init) else {
                throw HTTPError(.badRequest, message: "name and type are required: the RRset to replace")
            }
            let input = try await Self.body(
                of: request, as: RRSetInput.self,
                "the records must be JSON {\"ttl\" (optional), \"data\": [each record's data]}")
            let change: RecordChange
            do throws(ZoneEditError) {
                change = try await zones.edit(
                    context.parameters.get("origin") ?? "", .replace(name: name, type: type, input),
                    by: Self.who(context), ifMatch: Self.ifMatch(request))
            } catch { throw Self.httpError(error) }
            return try jsonResponse(change)
        }
        v1.post("reload") { _, context -> Response in
            try context.require(.admin)
            let report: ReloadReport
            do throws(ReloadError) {
                report = try await desks.daemon.reload(by: Self.who(context))
            } catch {
                switch error {
                case .invalid: throw HTTPError(.badRequest, message: error.description)
                case .needsRestart: throw HTTPError(.conflict, message: error.description)
                case .fastPath: throw HTTPError(.internalServerError, message: error.description)
                }
            }
            return try jsonResponse(report)
        }
    }

    /// The RRset version a change is made for: the request's If-Match (an entity tag, its quotes
    /// taken off); nil when there is none, or `*` (any).
    static func ifMatch(_ request: Request) -> String? {
        guard let raw = request.headers[.ifMatch]?.trimmingCharacters(in: .whitespaces), raw != "*" else { return nil }
        var tag = raw.hasPrefix("W/") ? String(raw.dropFirst(2)) : raw
        if tag.hasPrefix("\""), tag.hasSuffix("\""), tag.count >= 2 { tag = String(tag.dropFirst().dropLast()) }
        return tag
    }
}
