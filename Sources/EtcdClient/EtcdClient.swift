import AsyncHTTPClient
import Foundation
import NIOCore
import NIOFoundationCompat
import NIOHTTP1

/// A small client of etcd's v3 API, spoken through etcd's own JSON gateway (the gRPC API's JSON
/// mapping, served on the client port at `/v3/...`): key ranges, puts, deletes, transactions
/// conditioned on revisions, leases and watches. Keys and values are bytes.
///
/// Endpoints are tried in order; a request that cannot reach one goes to the next. Nothing here
/// blocks a thread: every call is an async HTTP exchange with a deadline.
public final class EtcdClient: Sendable {
    public let endpoints: [String]
    let http: HTTPClient
    let credentials: (user: String, password: String)?
    let token = NIOLockedToken()
    /// The deadline of one unary call.
    public let timeout: Duration

    /// A client of the etcd cluster at `endpoints` (`http://host:port` or `https://...`), through
    /// `http` (which the caller owns and shuts down).
    public init(
        endpoints: [String], http: HTTPClient, username: String? = nil, password: String? = nil,
        timeout: Duration = .seconds(5)
    ) {
        self.endpoints = endpoints.map { $0.hasSuffix("/") ? String($0.dropLast()) : $0 }
        self.http = http
        self.credentials = username.map { ($0, password ?? "") }
        self.timeout = timeout
    }

    // MARK: Keys

    /// Every key that starts with `prefix`, in key order, and the store's revision they were read at
    /// (as of `revision`, when given: several reads of one moment). Read in pages of `pageSize`
    /// keys, each at the revision of the first: one answer of a zone's million keys would be
    /// hundreds of MB of JSON, held at once on both sides. Pages are large because etcd (3.4)
    /// walks every key from a page's start to the prefix's end to count them, whatever the
    /// limit: 1.45 million keys in pages of 10,000 kept etcd busy for minutes, in pages of
    /// 100,000 (about 25 MB of JSON each) for seconds.
    public func range(prefix: [UInt8], revision: Int64? = nil, pageSize: Int = 100_000) async throws(EtcdError) -> (
        revision: Int64, kvs: [KeyValue]
    ) {
        var at = revision
        var start = prefix
        var kvs: [KeyValue] = []
        while true {
            let r: RangeResponse = try await call(
                "/v3/kv/range",
                RangeRequest(
                    key: Self.b64(start), range_end: Self.b64(Self.prefixEnd(prefix)), revision: at.map(String.init),
                    limit: String(pageSize)), timeout: max(timeout, Self.pageTimeout))
            let page = (r.kvs ?? []).map(KeyValue.init)
            kvs += page
            // Every page at the first one's revision: the pages are one moment.
            if at == nil { at = r.header.revisionValue }
            guard r.more == true, let last = page.last else { break }
            start = last.key + [0]  // the next key after the last one read
        }
        return (at ?? 0, kvs)
    }

    /// How long a page of `range` may take at least: seconds for etcd to walk a million keys
    /// and send 25 MB, more while other servers read the same.
    static let pageTimeout = Duration.seconds(120)

    /// The last `count` keys that start with `prefix`, last first (a log kept under keys that
    /// sort by time, newest first).
    public func last(_ count: Int, prefix: [UInt8]) async throws(EtcdError) -> [KeyValue] {
        let r: RangeResponse = try await call(
            "/v3/kv/range",
            RangeRequest(
                key: Self.b64(prefix), range_end: Self.b64(Self.prefixEnd(prefix)), limit: String(count),
                sort_order: "DESCEND", sort_target: "KEY"))
        return (r.kvs ?? []).map(KeyValue.init)
    }

    /// The key `key`, if it exists, and the store's revision (as of `revision`, when given).
    public func get(_ key: [UInt8], revision: Int64? = nil) async throws(EtcdError) -> (revision: Int64, kv: KeyValue?)
    {
        let r: RangeResponse = try await call(
            "/v3/kv/range", RangeRequest(key: Self.b64(key), range_end: nil, revision: revision.map(String.init)))
        return (r.header.revisionValue, r.kvs?.first.map(KeyValue.init))
    }

    /// Writes `value` at `key` (attached to `lease`, if given); returns the new revision.
    @discardableResult
    public func put(_ key: [UInt8], _ value: [UInt8], lease: Int64? = nil) async throws(EtcdError) -> Int64 {
        let r: Header.Wrapped = try await call(
            "/v3/kv/put", PutRequest(key: Self.b64(key), value: Self.b64(value), lease: lease.map(String.init)))
        return r.header.revisionValue
    }

    /// Deletes `key`, or every key under it with `prefix`; returns the new revision.
    @discardableResult
    public func delete(_ key: [UInt8], prefix: Bool = false) async throws(EtcdError) -> Int64 {
        let r: Header.Wrapped = try await call(
            "/v3/kv/deleterange",
            RangeRequest(key: Self.b64(key), range_end: prefix ? Self.b64(Self.prefixEnd(key)) : nil))
        return r.header.revisionValue
    }

    /// Runs `success` if every comparison holds, else `failure`, as one transaction (etcd's Txn).
    public func txn(_ compares: [EtcdCompare], success: [EtcdOperation], failure: [EtcdOperation] = [])
        async throws(EtcdError)
        -> TxnResult
    {
        let r: TxnResponse = try await call(
            "/v3/kv/txn",
            TxnRequest(
                compare: compares.map(\.wire), success: success.map(\.wire), failure: failure.map(\.wire)))
        return TxnResult(succeeded: r.succeeded ?? false, revision: r.header.revisionValue)
    }

    // MARK: Leases

    /// A new lease that expires `ttl` seconds after its last keep-alive; its id.
    public func grantLease(ttl: Int) async throws(EtcdError) -> Int64 {
        let r: LeaseGrantResponse = try await call("/v3/lease/grant", LeaseGrantRequest(ttl: String(ttl), id: "0"))
        guard let id = r.id.flatMap(Int64.init) else { throw .malformed("lease grant without an ID") }
        return id
    }

    /// Renews `lease`; the seconds it now has left (0: it has expired, its keys are gone).
    public func keepAlive(_ lease: Int64) async throws(EtcdError) -> Int {
        do {
            let r: LeaseKeepAliveResponse = try await call(
                "/v3/lease/keepalive", LeaseKeepAliveRequest(id: String(lease)))
            return r.result?.ttl.flatMap(Int.init) ?? 0
        } catch .server(404, let message) where message.contains("lease not found") {
            return 0  // a lease etcd no longer has (expired or revoked) is said both ways
        }
    }

    /// Ends `lease` now; its keys are deleted.
    public func revoke(_ lease: Int64) async throws(EtcdError) {
        let _: Header.Wrapped = try await call("/v3/lease/revoke", LeaseKeepAliveRequest(id: String(lease)))
    }

    // MARK: Calls

    /// POSTs `body` to `path` at each endpoint in turn until one answers, within `timeout` (the
    /// client's, unless given) each.
    func call<Request: Encodable, Response: Decodable>(_ path: String, _ body: Request, timeout: Duration? = nil)
        async throws(EtcdError) -> Response
    {
        let payload: Data
        do { payload = try JSONEncoder().encode(body) } catch { throw .malformed("cannot encode \(path): \(error)") }
        var lastError = EtcdError.unreachable(endpoints.joined(separator: ", "), "no endpoints")
        for endpoint in endpoints {
            for attempt in 0..<2 {
                do {
                    let (status, data) = try await exchange(endpoint + path, payload, timeout: timeout ?? self.timeout)
                    if status == 401 || (status == 400 && Self.isAuthError(data)), attempt == 0, credentials != nil {
                        await token.set(nil)  // expired: authenticate again
                        continue
                    }
                    guard status == 200 else { throw EtcdError.server(status: status, message: Self.message(data)) }
                    do { return try JSONDecoder().decode(Response.self, from: data) } catch {
                        throw EtcdError.malformed("\(path): \(error)")
                    }
                } catch let e as EtcdError {
                    if case .unreachable = e {
                        lastError = e
                        break
                    }
                    throw e
                } catch {
                    lastError = .unreachable(endpoint, "\(error)")
                    break
                }
            }
        }
        throw lastError
    }

    /// One POST with the deadline; the status and the body.
    func exchange(_ url: String, _ payload: Data, timeout: Duration) async throws -> (Int, Data) {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        if let auth = try await authToken(url) { request.headers.add(name: "Authorization", value: auth) }
        request.body = .bytes(ByteBuffer(data: payload))
        let response: HTTPClientResponse
        do { response = try await http.execute(request, timeout: .seconds(timeout.components.seconds)) } catch {
            throw EtcdError.unreachable(url, "\(error)")
        }
        let body = try await response.body.collect(upTo: 256 << 20)
        return (Int(response.status.code), Data(buffer: body))
    }

    /// The token of an authenticated session, when the cluster asks for a user.
    func authToken(_ url: String) async throws -> String? {
        guard let credentials else { return nil }
        if let t = await token.get() { return t }
        let base = String(url[..<(url.range(of: "/v3/")?.lowerBound ?? url.endIndex)])
        var request = HTTPClientRequest(url: base + "/v3/auth/authenticate")
        request.method = .POST
        let body = try JSONEncoder().encode(["name": credentials.user, "password": credentials.password])
        request.body = .bytes(ByteBuffer(data: body))
        let response = try await http.execute(request, timeout: .seconds(timeout.components.seconds))
        let data = Data(buffer: try await response.body.collect(upTo: 1 << 20))
        guard response.status == .ok, let t = try? JSONDecoder().decode(AuthResponse.self, from: data).token else {
            throw EtcdError.authentication(Self.message(data))
        }
        await token.set(t)
        return t
    }

    static func isAuthError(_ data: Data) -> Bool { message(data).contains("invalid auth token") }

    static func message(_ data: Data) -> String {
        (try? JSONDecoder().decode(ErrorResponse.self, from: data)).flatMap { $0.message ?? $0.error }
            ?? String(decoding: data.prefix(300), as: UTF8.self)
    }

    static func b64(_ bytes: [UInt8]) -> String { Data(bytes).base64EncodedString() }

    /// The end of the range of keys that start with `prefix`: the prefix with its last byte below
    /// 0xFF incremented (etcd's rule; an empty or all-0xFF prefix means every key: "\0").
    public static func prefixEnd(_ prefix: [UInt8]) -> [UInt8] {
        var end = prefix
        while let last = end.last {
            if last < 0xFF {
                end[end.count - 1] = last + 1
                return end
            }
            end.removeLast()
        }
        return [0]
    }
}

/// The token of an authenticated session, shared by concurrent calls.
actor NIOLockedToken {
    private var value: String?
    func get() -> String? { value }
    func set(_ v: String?) { value = v }
}

/// What went wrong with a call to etcd.
public enum EtcdError: Error, CustomStringConvertible, Sendable, Equatable {
    /// No endpoint could be reached (the last one tried, and why).
    case unreachable(String, String)
    /// etcd answered with an error.
    case server(status: Int, message: String)
    /// The user or password was refused.
    case authentication(String)
    /// A watch asked for a revision etcd has compacted away: read everything again.
    case compacted(Int64)
    /// An answer that does not read as etcd's.
    case malformed(String)

    public var description: String {
        switch self {
        case .unreachable(let e, let why): "etcd at \(e) cannot be reached: \(why)"
        case .server(let status, let message): "etcd answered \(status): \(message)"
        case .authentication(let why): "etcd refused the user: \(why)"
        case .compacted(let r): "etcd has compacted the history up to revision \(r)"
        case .malformed(let why): "etcd's answer cannot be read: \(why)"
        }
    }
}
