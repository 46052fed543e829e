import Foundation
import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import Logging
import MaxMindDB
import NIOCore
import NIOPosix
import NIOSSL
import NearcastAPIModel
import NearcastBasics
import NearcastConfiguration
import NearcastGeo
import NearcastZones
import ServiceLifecycle
import Synchronization

/// The daemon's HTTP management API (Hummingbird), on a loopback address by default. Every route
/// but the liveness one, `GET /healthz`, needs a bearer token from the tokens file whose role is
/// high enough: 401 without a valid token, 403 with one of too low a role.
///
/// Routes so far: `GET /healthz`, `GET /metrics` (read; Prometheus), `GET /v1/status` (read), `GET /v1/stats` (read), `GET /v1/explain?name=&type=&client=[&ecs=]`
/// (read), `GET /v1/nodes` (read), `GET /v1/pools` (read), `POST /v1/nodes/ID/report` (the node's
/// agent, or write), `POST /v1/reload` (admin), `GET /v1/zones`, `GET /v1/zones/ORIGIN/records[?name=&type=]`
/// (read), `POST /v1/zones/ORIGIN/records`, `DELETE /v1/zones/ORIGIN/records?name=&type=[&data=]` (write), `POST /v1/nodes/ID/{drain,undrain,force-up,force-down}[?for=SECONDS]`
/// (write), `GET /v1/whoami` (agent), `GET /v1/map`, `GET /v1/audit?last=N`, `GET /v1/events` (read; server-sent events), and the
/// dashboard's page, `GET /ui/` and its files (no token: the page asks for one).
///
/// A Service (swift-service-lifecycle): `run` listens until the group shuts down gracefully, then
/// ends the dashboard's event streams and lets the requests in flight finish. The port it bound
/// is handed on in `bound` (port 0: the kernel's choice), or the error that kept it from binding.
public final class ManagementAPI: Service {
    /// The port it listens on, once it does; or why it could not bind.
    public let bound = Handoff<Int>()
    private let app: any Service
    /// The dashboard's live events.
    let feed: DashboardFeed

    /// The API for `address`, not listening yet. With `tls` (certificate chain and key, PEM files),
    /// over HTTPS: a certificate or key that cannot be read throws here.
    public init(
        on address: ListenAddress, tokens: LiveTokens, desks: APIDesks, tls: (certificate: String, key: String)? = nil,
        logger: Logger
    ) throws {
        let feed = DashboardFeed(desks: desks)
        let router = Self.makeRouter(tokens: tokens, desks: desks, logger: logger, feed: feed)
        var server = HTTPServerBuilder.http1()
        if let tls {
            let chain = try NIOSSLCertificate.fromPEMFile(tls.certificate).map {
                NIOSSLCertificateSource.certificate($0)
            }
            server = try .tls(
                .http1(),
                tlsConfiguration: .makeServerConfiguration(
                    certificateChain: chain, privateKey: .privateKey(try NIOSSLPrivateKey(file: tls.key, format: .pem)))
            )
        }
        let bound = bound
        app = Application(
            router: router, server: server,
            configuration: .init(address: .hostname(address.host, port: address.port), serverName: "nearcast"),
            onServerRunning: { channel in
                let port = channel.localAddress?.port ?? address.port
                logger.info(
                    "management API listening",
                    metadata: [
                        "address": "\(address.host)", "port": "\(port)", "tokens": "\(tokens.current.entries.count)",
                        "tls": "\(tls != nil)",
                    ])
                bound.hand(.success(port))
            },
            logger: logger)
        self.feed = feed
    }

    /// Listens until the group shuts down gracefully (or the task is cancelled); throws when it
    /// cannot bind. The event streams are ended as the shutdown begins: they would never finish.
    public func run() async throws {
        await feed.start()
        async let streamsEnded: Void = endStreamsOnShutdown()
        do { try await app.run() } catch {
            bound.hand(.failure(error))
            throw error
        }
        bound.hand(.failure(CancellationError()))  // stopped before it ever listened
        await streamsEnded
    }

    private func endStreamsOnShutdown() async {
        try? await gracefulShutdown()  // or cancelled: the run ended without a shutdown
        await feed.close()
    }

    /// Every route, with its handler (docs/openapi.yaml documents each; a test holds them to it).
    static func makeRouter(
        tokens: LiveTokens, desks: APIDesks, logger: Logger, feed: DashboardFeed? = nil
    ) -> Router<APIRequestContext> {
        let router = Router(context: APIRequestContext.self)
        router.get("healthz") { _, _ in "ok\n" }
        // Prometheus scrapes with a bearer token too (`authorization:` in its scrape config).
        router.group("metrics").add(middleware: BearerAuth(tokens: tokens, logger: logger)).get {
            _, context -> Response in
            try context.require(.read)
            return Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(bytes: try await desks.daemon.metrics())))
        }
        let v1 = router.group("v1").add(middleware: BearerAuth(tokens: tokens, logger: logger))
        v1.get("stats") { _, context -> Response in
            try context.require(.read)
            return try jsonResponse(try desks.daemon.stats())
        }
        addHealthRoutes(to: v1, desks: desks)
        addZoneRoutes(to: v1, desks: desks)
        addUIRoutes(to: router, v1: v1, feed: feed, audit: desks.audit)
        v1.get("map") { _, context -> Response in
            try context.require(.read)
            guard let geo = desks.geo else { throw HTTPError(.notFound, message: "no geo nodes are configured") }
            return try jsonResponse(geo.layout())
        }
        v1.get("status") { _, context -> Response in
            try context.require(.read)
            return try jsonResponse(try await desks.daemon.status())
        }
        v1.get("explain") { request, context -> Response in
            try context.require(.read)
            guard let geo = desks.geo else { throw HTTPError(.notFound, message: "no geo names are configured") }
            let q = request.uri.queryParameters
            guard let name = q["name"].map(String.init), let type = q["type"].map(String.init),
                let client = q["client"].map(String.init)
            else {
                throw HTTPError(.badRequest, message: "name, type and client are required (ecs is optional)")
            }
            do {
                return try jsonResponse(
                    try geo.explain(name: name, type: type, client: client, ecs: q["ecs"].map(String.init)))
            } catch let e as GeoExplainError {
                throw HTTPError(e.notConfigured ? .notFound : .badRequest, message: e.description)
            } catch let e as MaxMindError {
                throw HTTPError(.badRequest, message: e.description)
            }
        }
        return router
    }

    /// Who made a request, for logs and the audit log: the token's role and where it is declared.
    static func who(_ context: APIRequestContext) -> String { context.caller.map { "\($0.role) \($0.source)" } ?? "?" }

    /// A refused zone change as the status that says why.
    static func httpError(_ e: ZoneEditError) -> HTTPError {
        switch e {
        case .invalid, .zone: return HTTPError(.badRequest, message: e.description)
        case .notFound: return HTTPError(.notFound, message: e.description)
        case .conflict: return HTTPError(.conflict, message: e.description)
        case .failed: return HTTPError(.internalServerError, message: e.description)
        case .unavailable: return HTTPError(.serviceUnavailable, message: e.description)
        case .versionChanged: return HTTPError(.preconditionFailed, message: e.description)
        }
    }

    /// The JSON body of `request` as `type`; a 400 that says `shape` and what was wrong otherwise.
    static func body<T: Decodable>(of request: Request, as type: T.Type, _ shape: String) async throws -> T {
        let body = try await request.body.collect(upTo: 65536)
        do { return try JSONDecoder().decode(type, from: body) } catch {
            throw HTTPError(.badRequest, message: "\(shape): \(Self.decodingProblem(error))")
        }
    }

    /// A JSON decoding error in words that name the field.
    static func decodingProblem(_ error: any Error) -> String {
        switch error as? DecodingError {
        case .typeMismatch(_, let c), .valueNotFound(_, let c), .dataCorrupted(let c):
            let path = c.codingPath.map(\.stringValue).joined(separator: ".")
            return (path.isEmpty ? "" : "field \(path): ") + c.debugDescription
        case .keyNotFound(let key, _):
            return "field \(key.stringValue) is missing"
        default:
            return "\(error)"
        }
    }

    static func jsonResponse(_ value: some Encodable, status: HTTPResponse.Status = .ok) throws -> Response {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        var body = try encoder.encode(value)
        body.append(0x0A)
        return Response(
            status: status, headers: [.contentType: "application/json"],
            body: .init(byteBuffer: ByteBuffer(bytes: body)))
    }
}

/// The request context of the management API: who the bearer token says the caller is.
public struct APIRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The matching token's entry, once BearerAuth has checked it.
    public var caller: APITokens.Entry?

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        caller = nil
    }

    /// Throws 401 without a caller, 403 unless it is `node`'s agent (agent or agent:NODE) or has a
    /// token of role write or above: what a node's own calls need (its reports, its registration).
    func requireAgent(of node: String) throws {
        guard let c = caller else { throw HTTPError(.unauthorized, message: "a bearer token is needed") }
        guard c.mayReport(for: node) else {
            throw HTTPError(
                .forbidden,
                message: "this needs the node's agent token (agent or agent:\(node)) or a token of role write or above")
        }
    }

    /// Throws 403 unless the caller's role is at least `role`.
    func require(_ role: APIRole) throws {
        guard let c = caller else { throw HTTPError(.unauthorized, message: "a bearer token is needed") }
        guard c.role >= role else {
            throw HTTPError(.forbidden, message: "this needs a token of role \(role) or above; this one is \(c.role)")
        }
    }
}

/// The API's tokens as they are now: this server's tokens file, and, in a fleet, the store's tokens
/// (by their SHA-256) as the store follower reads them.
public final class LiveTokens: Sendable {
    private let state: Mutex<APITokens>

    public init(_ tokens: APITokens) { state = Mutex(tokens) }

    public var current: APITokens { state.withLock { $0 } }

    /// Replaces the fleet's tokens (SHA-256 hex -> entry).
    public func setShared(_ hashed: [String: APITokens.Entry]) { state.withLock { $0.hashed = hashed } }

    /// Replaces the tokens file's (a reload read it again); the fleet's stay.
    public func replaceEntries(_ entries: [APITokens.Entry]) { state.withLock { $0.entries = entries } }
}

/// Checks `Authorization: Bearer TOKEN` against the tokens (the file's, and a fleet's): 401 (with
/// WWW-Authenticate) when it is missing or unknown; otherwise the context carries the caller's entry.
struct BearerAuth: RouterMiddleware {
    typealias Context = APIRequestContext
    let tokens: LiveTokens
    let logger: Logger

    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        let header = request.headers[.authorization] ?? ""
        let prefix = "Bearer "
        guard header.hasPrefix(prefix), let entry = tokens.current.match(header.dropFirst(prefix.count)) else {
            logger.notice(
                "management API: refused a request without a valid token", metadata: ["path": "\(request.uri.path)"])
            throw HTTPError(
                .unauthorized, headers: [.wwwAuthenticate: "Bearer realm=\"nearcast\""],
                message: header.isEmpty ? "a bearer token is needed" : "the bearer token is not valid")
        }
        var context = context
        context.caller = entry
        return try await next(request, context)
    }
}
