import Foundation
import Hummingbird
import NearcastAPIModel
import NearcastBasics
import NearcastConfiguration

extension ManagementAPI {
    /// Nodes and pools: their health and TTL state (read), operators' overrides (write), node
    /// agents' reports (the node's agent, or write).
    static func addHealthRoutes(to v1: RouterGroup<APIRequestContext>, desks: APIDesks) {
        v1.get("nodes") { _, context -> Response in
            try context.require(.read)
            guard let health = desks.health else { throw HTTPError(.notFound, message: "no geo nodes are configured") }
            return try jsonResponse(await health.nodes())
        }
        v1.post("nodes/:id/report") { request, context -> Response in
            let id = context.parameters.get("id") ?? ""
            try context.requireAgent(of: id)
            guard let health = desks.health else { throw HTTPError(.notFound, message: "no geo nodes are configured") }
            let body = try await request.body.collect(upTo: 4096)
            var report = NodeReport()
            if body.readableBytes > 0 {
                do { report = try JSONDecoder().decode(NodeReport.self, from: body) } catch {
                    throw HTTPError(
                        .badRequest,
                        message:
                            "the report must be JSON {\"ok\": true|false, \"detail\": \"...\"}: \(Self.decodingProblem(error))"
                    )
                }
            }
            switch await health.report(
                id, NodeReport(ok: report.ok, detail: report.detail.map { String($0.prefix(200)) }))
            {
            case .recorded(let status): return try jsonResponse(status)
            case .unknownNode: throw HTTPError(.notFound, message: "no node has the id '\(id)'")
            case .notExpected:
                throw HTTPError(
                    .conflict, message: "node \(id) has no report check: add { type: report } to its checks")
            }
        }
        addRegistrationRoutes(to: v1, desks: desks)
        v1.get("pools") { _, context -> Response in
            try context.require(.read)
            guard let health = desks.health else { throw HTTPError(.notFound, message: "no geo pools are configured") }
            return try jsonResponse(await health.pools())
        }
        for (action, kind) in [
            ("drain", "drain"), ("force-up", "force-up"), ("force-down", "force-down"), ("undrain", nil),
        ] {
            v1.post("nodes/:id/\(action)") { request, context -> Response in
                try context.require(.write)
                guard let health = desks.health else {
                    throw HTTPError(.notFound, message: "no geo nodes are configured")
                }
                let id = context.parameters.get("id") ?? ""
                var seconds: Double?
                if let text = request.uri.queryParameters["for"] {
                    guard let s = Double(String(text)), s > 0, s <= 365 * 86400 else {
                        throw HTTPError(.badRequest, message: "for must be a number of seconds, more than 0")
                    }
                    seconds = s
                }
                let who = Self.who(context)
                let result: NodeStatus?
                do { result = try await health.setOverride(id, kind: kind, seconds: seconds, by: who) } catch {
                    throw HTTPError(.internalServerError, message: "\(error)")
                }
                guard let status = result else { throw HTTPError(.notFound, message: "no node has the id '\(id)'") }
                context.logger.notice(
                    "node override",
                    metadata: ["node": "\(id)", "action": "\(action)", "by": "\(context.caller?.source ?? "?")"])
                return try jsonResponse(status)
            }
        }
    }

    /// The registration to make of `text` for `caller`: as it is, or, for an agent token with
    /// scopes, the JSON object it was checked against (written anew, so that what is registered is
    /// what was checked: no second key of a name, no YAML the check did not read), within the
    /// pools and networks the token allows (403 outside them, saying which).
    static func withinScopes(_ text: String, _ object: [String: Any]?, _ caller: APITokens.Entry?) throws -> String {
        guard let caller, caller.pools != nil || caller.networks != nil else { return text }
        guard let object, let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
        else { throw HTTPError(.badRequest, message: "a registration is a JSON object") }
        guard let pools = (object["pools"] ?? [String]()) as? [String] else {
            throw HTTPError(.badRequest, message: "pools must be a list of pool ids")
        }
        var addresses: [[UInt8]] = []
        for key in ["ipv4", "ipv6"] where object[key] != nil {
            guard let text = object[key] as? String, let a = AddressPrefix.address(text) else {
                throw HTTPError(.badRequest, message: "\(key) must be an address")
            }
            addresses.append(a)
        }
        if let why = caller.refusal(registering: pools, at: addresses) { throw HTTPError(.forbidden, message: why) }
        return String(decoding: data, as: UTF8.self)
    }

    /// Nodes registering themselves with a fleet (the node's agent, or write): POST /v1/nodes with
    /// the registration, DELETE /v1/nodes/ID.
    static func addRegistrationRoutes(to v1: RouterGroup<APIRequestContext>, desks: APIDesks) {
        @Sendable func refusal(_ e: RegistrationError) -> HTTPError {
            switch e {
            case .invalid: HTTPError(.badRequest, message: e.description)
            case .notFound: HTTPError(.notFound, message: e.description)
            case .conflict: HTTPError(.conflict, message: e.description)
            case .unavailable: HTTPError(.serviceUnavailable, message: e.description)
            }
        }
        v1.post("nodes") { request, context -> Response in
            let body = try await request.body.collect(upTo: 16384)
            let text = String(buffer: body)
            let object = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any]
            let id = object?["id"] as? String ?? ""
            try context.requireAgent(of: id)
            let registration = try Self.withinScopes(text, object, context.caller)
            guard let registrations = desks.registrations else {
                throw HTTPError(.notFound, message: "nodes register with a fleet: this server follows no store")
            }
            do {
                let status = try await registrations.register(registration, by: Self.who(context))
                context.logger.notice(
                    "node registered", metadata: ["node": "\(id)", "by": "\(context.caller?.source ?? "?")"])
                return try jsonResponse(status ?? NodeStatus(id: id, state: "unknown"), status: .created)
            } catch let e as RegistrationError { throw refusal(e) }
        }
        v1.delete("nodes/:id") { _, context -> Response in
            let id = context.parameters.get("id") ?? ""
            try context.requireAgent(of: id)
            guard let registrations = desks.registrations else {
                throw HTTPError(.notFound, message: "nodes register with a fleet: this server follows no store")
            }
            do { try await registrations.deregister(id, by: Self.who(context)) } catch let e as RegistrationError {
                throw refusal(e)
            }
            return try jsonResponse(["deregistered": id])
        }
    }
}
