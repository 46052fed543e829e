import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import NearcastAPIModel
import NearcastBasics

extension ManagementAPI {
    /// The dashboard's files, embedded in the binary (Package.swift, `Sources/NearcastServer/UI`):
    /// name -> content type and bytes.
    static let uiFiles: [String: (type: String, bytes: [UInt8])] = [
        "app.js": ("text/javascript; charset=utf-8", PackageResources.app_js),
        "app.css": ("text/css; charset=utf-8", PackageResources.app_css),
        "world.path": ("text/plain; charset=utf-8", PackageResources.world_path),
    ]

    /// Nothing the page loads comes from elsewhere, and it runs no script but its own.
    static let uiPolicy =
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; "
        + "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

    /// The dashboard (`/ui/`, no token: the page asks for one and sends it with every API call),
    /// and the API calls only it makes: who a token is, the last audit entries, the live events.
    static func addUIRoutes(
        to router: Router<APIRequestContext>, v1: RouterGroup<APIRequestContext>, feed: DashboardFeed?,
        audit: AuditSource?
    ) {
        router.get("ui") { _, _ in uiResponse(type: "text/html; charset=utf-8", bytes: PackageResources.index_html) }
        router.get("ui/:file") { _, context -> Response in
            guard let file = uiFiles[context.parameters.get("file") ?? ""] else {
                throw HTTPError(.notFound, message: "no such file in the dashboard")
            }
            return uiResponse(type: file.type, bytes: file.bytes)
        }
        v1.get("whoami") { _, context -> Response in
            try context.require(.agent)
            guard let c = context.caller else { throw HTTPError(.unauthorized) }
            return try jsonResponse(CallerInfo(role: "\(c.role)", source: c.source, mayChangeNodes: c.role >= .write))
        }
        v1.get("audit") { request, context -> Response in
            try context.require(.read)
            guard let audit else {
                throw HTTPError(.notFound, message: "no audit log: nearcastd runs without a state-dir")
            }
            let text = request.uri.queryParameters.get("last") ?? "20"
            guard let count = Int(text), (1...1000).contains(count) else {
                throw HTTPError(.badRequest, message: "last must be a number of entries from 1 to 1000")
            }
            return try jsonResponse(try await audit.last(count))
        }
        v1.get("events") { _, context -> Response in
            try context.require(.read)
            guard let feed else { throw HTTPError(.notFound, message: "no live events") }
            return Response(
                status: .ok,
                headers: [.contentType: "text/event-stream", .cacheControl: "no-store"],
                body: ResponseBody(asyncSequence: await feed.subscribe()))
        }
    }

    static func uiResponse(type: String, bytes: [UInt8]) -> Response {
        var headers: HTTPFields = [.contentType: type, .cacheControl: "no-cache"]
        headers[HTTPField.Name("Content-Security-Policy")!] = uiPolicy
        headers[HTTPField.Name("X-Content-Type-Options")!] = "nosniff"
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
    }
}
