import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOSSL
import NearcastConfiguration

/// The CLI's side of the daemon's management API: where it is and which token to present. Requests
/// go through AsyncHTTPClient (SwiftNIO), which waits for a slow answer (a reload compiling a whole
/// GeoLite2-City) without using the CPU; Foundation's URLSession on Linux spins on both cores while
/// it waits, taking them from the daemon it is talking to.
struct APIClient {
    var address: ListenAddress
    var token: String?
    /// HTTPS (the server's certificate is checked against the system's CAs, or `caFile`'s).
    var tls = false
    /// A PEM file of the CA certificates to trust instead of the system's (a private CA's).
    var caFile: String?

    /// What went wrong, said as the operator should read it.
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// GETs `path` (with `query` parameters, percent-encoded) and decodes its JSON.
    func get<T: Decodable>(_ path: String, query: [(String, String?)] = [], as type: T.Type) async throws -> T {
        try await call("GET", Self.withQuery(path, query), as: type)
    }

    /// DELETEs `path` (with `query` parameters; `ifMatch`: see `call`) and decodes its JSON.
    func delete<T: Decodable>(_ path: String, query: [(String, String?)], ifMatch: String? = nil, as type: T.Type)
        async throws -> T
    {
        try await call("DELETE", Self.withQuery(path, query), ifMatch: ifMatch, as: type)
    }

    /// `path?k=v&…` for the parameters that have values, each percent-encoded.
    static func withQuery(_ path: String, _ query: [(String, String?)]) -> String {
        let items = query.compactMap { k, v in v.map { URLQueryItem(name: k, value: $0) } }
        guard !items.isEmpty else { return path }
        var c = URLComponents()
        c.queryItems = items
        // `+` would read as a space: encode it too.
        return path + "?" + (c.percentEncodedQuery ?? "").replacingOccurrences(of: "+", with: "%2B")
    }

    /// A path segment percent-encoded (a zone origin).
    static func segment(_ s: String) -> String {
        s.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.subtracting(["/"])) ?? s
    }

    /// POSTs to `path` (with `body` as JSON, if any) and decodes its JSON; `timeout` for the
    /// whole exchange.
    func post<T: Decodable>(
        _ path: String, body: (some Encodable)? = Optional<Int>.none, ifMatch: String? = nil,
        timeout: Duration = Self.timeout, as type: T.Type
    ) async throws -> T {
        try await call(
            "POST", path, body: try body.map { try JSONEncoder().encode($0) }, ifMatch: ifMatch, timeout: timeout,
            as: type)
    }

    /// PUTs `body` as JSON to `path` (with `query` parameters) and decodes its JSON.
    func put<T: Decodable>(
        _ path: String, query: [(String, String?)], body: some Encodable, ifMatch: String? = nil, as type: T.Type
    ) async throws -> T {
        try await call(
            "PUT", Self.withQuery(path, query), body: try JSONEncoder().encode(body), ifMatch: ifMatch, as: type)
    }

    /// GETs `path` (with `query` parameters) and decodes its JSON, with the answer's entity tag
    /// (ETag, its quotes taken off; nil: none).
    func getTagged<T: Decodable>(_ path: String, query: [(String, String?)], as type: T.Type) async throws -> (
        T, String?
    ) {
        let (value, headers) = try await exchange("GET", Self.withQuery(path, query), as: type)
        let tag = headers.first(name: "ETag").map { $0.trimmingCharacters(in: CharacterSet(charactersIn: "\"")) }
        return (value, tag)
    }

    /// Runs `body` with a client of its own (shut down after): one that trusts `caFile` alone if
    /// given, and that does not try a failed connection again. A CLI makes one request and should
    /// say at once that the daemon is not there or not trusted; AsyncHTTPClient's default retries
    /// the connection until the request's deadline, ten seconds of silence before the same error.
    func withClient<T>(_ body: (HTTPClient) async throws -> T) async throws -> T {
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool.retryConnectionEstablishment = false
        if let caFile {
            var tls = TLSConfiguration.makeClientConfiguration()
            tls.trustRoots = .file(caFile)
            configuration.tlsConfiguration = tls
        }
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        do {
            let result = try await body(client)
            try await client.shutdown()
            return result
        } catch {
            try? await client.shutdown()
            throw error
        }
    }

    /// How long an answer may take, unless a call says otherwise.
    static let timeout = Duration.seconds(10)
    /// The most bytes of an answer read.
    static let maxAnswer = 64 << 20

    /// Sends a request (with `ifMatch` as If-Match: the version a change is made for) and decodes
    /// its JSON answer.
    func call<T: Decodable>(
        _ method: String, _ path: String, body: Data? = nil, ifMatch: String? = nil, timeout: Duration = Self.timeout,
        as type: T.Type
    ) async throws -> T {
        try await exchange(method, path, body: body, ifMatch: ifMatch, timeout: timeout, as: type).0
    }

    /// `call`, with the answer's headers.
    func exchange<T: Decodable>(
        _ method: String, _ path: String, body: Data? = nil, ifMatch: String? = nil, timeout: Duration = Self.timeout,
        as type: T.Type
    ) async throws -> (T, HTTPHeaders) {
        let host = address.host.contains(":") ? "[\(address.host)]" : address.host
        var request = HTTPClientRequest(url: "\(tls ? "https" : "http")://\(host):\(address.port)\(path)")
        request.method = .init(rawValue: method)
        if let body {
            request.body = .bytes(ByteBuffer(bytes: body))
            request.headers.add(name: "Content-Type", value: "application/json")
        }
        if let token { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
        if let ifMatch { request.headers.add(name: "If-Match", value: "\"\(ifMatch)\"") }
        let data: Data
        let status: UInt
        let headers: HTTPHeaders
        do {
            (status, data, headers) = try await withClient { client in
                let response = try await client.execute(
                    request, timeout: .nanoseconds(timeout.components.seconds * 1_000_000_000))
                return (
                    response.status.code, Data(try await response.body.collect(upTo: Self.maxAnswer).readableBytesView),
                    response.headers
                )
            }
        } catch let e as HTTPClientError where e == .deadlineExceeded {
            throw Failure(description: "the management API at \(address) did not answer within \(timeout)")
        } catch {
            let why = "\(error)".contains("Connection refused") ? "connection refused" : "\(error)"
            if tls && (error is NIOSSLError || why.contains("SSL") || why.contains("certificate")) {
                throw Failure(
                    description:
                        "the management API at \(address) is not trusted (\(why)); its certificate must come from a CA this system trusts (update-ca-certificates), or give its CA with --ca-file"
                )
            }
            throw Failure(
                description:
                    "cannot reach the management API at \(address) (\(why)); is nearcastd running with --api \(address)?"
            )
        }
        guard (200..<300).contains(status) else {
            let message =
                (try? JSONDecoder().decode(ErrorBody.self, from: data).error.message)
                ?? String(decoding: data, as: UTF8.self)
            throw Failure(description: "the management API answered \(status): \(message)")
        }
        do {
            return (try JSONDecoder().decode(T.self, from: data), headers)
        } catch {
            throw Failure(
                description: "the management API's answer to \(path) is not what this nearcast reads: \(error)")
        }
    }
}

/// The body of the API's errors (Hummingbird's): `{"error":{"message":"..."}}`.
private struct ErrorBody: Decodable {
    struct Inner: Decodable { var message: String }
    var error: Inner
}
