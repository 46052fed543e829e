import DNSWire
import NIOCore
import NIOPosix
import NIOSSL
import Synchronization

/// One check of a node (ARCHITECTURE §6): a TCP connect, an HTTP GET expecting a status range (and,
/// optionally, a string in the body), or a DNS query expecting an rcode, run by HealthChecker; or
/// the passive `report`, whose results are the reports the node's agent posts (HealthMonitor).
public enum HealthCheck: Hashable, Sendable, CustomStringConvertible {
    case tcp(host: String, port: Int)
    case http(host: String, port: Int, path: String, status: ClosedRange<Int>, bodyContains: String?)
    case https(host: String, port: Int, path: String, status: ClosedRange<Int>, bodyContains: String?, tls: TLSCheck)
    case dns(host: String, port: Int, name: DNSName, type: RRType, rcode: RCode)
    case report

    public var description: String {
        switch self {
        case .tcp(let h, let p): return "tcp \(h):\(p)"
        case .http(let h, let p, let path, let s, _): return "http \(h):\(p)\(path) \(s.lowerBound)-\(s.upperBound)"
        case .https(let h, let p, let path, let s, _, _):
            return "https \(h):\(p)\(path) \(s.lowerBound)-\(s.upperBound)"
        case .dns(let h, let p, let n, let t, let r): return "dns \(h):\(p) \(n) \(t) \(r)"
        case .report: return "report"
        }
    }
}

/// How an HTTPS check treats the server's certificate.
public struct TLSCheck: Hashable, Sendable {
    /// Verify the chain (against `caFile`, else the system's roots) and the name.
    public var verify: Bool
    /// The name the certificate must hold, sent as SNI; nil: the host when it is a name.
    public var serverName: String?
    public var caFile: String?

    public init(verify: Bool = true, serverName: String? = nil, caFile: String? = nil) {
        self.verify = verify
        self.serverName = serverName
        self.caFile = caFile
    }
}

/// Runs checks over SwiftNIO, each bounded by its timeout: a slow or hanging target costs its own
/// check that long and delays nothing else.
public struct HealthChecker: Sendable {
    let group: any EventLoopGroup
    /// TLS contexts, one per distinct TLSCheck: loading trust roots is not a per-check cost.
    let contexts = TLSContexts()

    public init(group: any EventLoopGroup) { self.group = group }

    /// Whether `check` passes within `timeout`; any error, refusal or timeout is a failure, with
    /// the reason.
    public func run(_ check: HealthCheck, timeout: TimeAmount) async -> (passed: Bool, reason: String) {
        do {
            switch check {
            case .tcp(let host, let port):
                let ch = try await ClientBootstrap(group: group).connectTimeout(timeout).connect(host: host, port: port)
                    .get()
                try? await ch.close()
                return (true, "connected")
            case .http(let host, let port, let path, let status, let body):
                let (code, text) = try await http(host: host, port: port, path: path, tls: nil, timeout: timeout)
                return Self.judge(code, text, status: status, body: body)
            case .https(let host, let port, let path, let status, let body, let tls):
                let (code, text) = try await http(host: host, port: port, path: path, tls: tls, timeout: timeout)
                return Self.judge(code, text, status: status, body: body)
            case .dns(let host, let port, let name, let type, let rcode):
                let got = try await dns(host: host, port: port, name: name, type: type, timeout: timeout)
                return got == rcode ? (true, "rcode \(got)") : (false, "rcode \(got), expected \(rcode)")
            case .report:
                return (false, "a report check is passive: its results are the node agent's reports")
            }
        } catch {
            return (false, "\(error)")
        }
    }

    /// Whether an HTTP reply's status and body are what the check expects.
    static func judge(_ code: Int, _ text: String, status: ClosedRange<Int>, body: String?) -> (
        passed: Bool, reason: String
    ) {
        guard status.contains(code) else {
            return (false, "status \(code), expected \(status.lowerBound)-\(status.upperBound)")
        }
        if let body, !text.contains(body) { return (false, "status \(code), body without '\(body)'") }
        return (true, "status \(code)")
    }

    /// A GET over HTTP/1.1 (over TLS with `tls`) with `Connection: close`: the status code and up
    /// to 64 KiB of the reply.
    func http(host: String, port: Int, path: String, tls: TLSCheck?, timeout: TimeAmount) async throws -> (Int, String)
    {
        let collector = ReplyCollector<ByteBuffer>.stream(limit: 65536)
        let ssl = try tls.map { try contexts.context(for: $0) }
        let sni = tls.flatMap { $0.serverName ?? (Self.isAddress(host) ? nil : host) }
        let channel = try await ClientBootstrap(group: group).connectTimeout(timeout)
            .channelInitializer { ch in
                ch.eventLoop.makeCompletedFuture {
                    if let ssl {
                        try ch.pipeline.syncOperations.addHandler(
                            try NIOSSLClientHandler(context: ssl, serverHostname: sni))
                    }
                    try ch.pipeline.syncOperations.addHandler(collector)
                }
            }
            .connect(host: host, port: port).get()
        let deadline = channel.eventLoop.scheduleTask(in: timeout) { channel.close(promise: nil) }
        defer { deadline.cancel() }
        let request =
            "GET \(path) HTTP/1.1\r\nHost: \(sni ?? host)\r\nUser-Agent: nearcast-health\r\nConnection: close\r\n\r\n"
        try await channel.writeAndFlush(channel.allocator.buffer(string: request)).get()
        let bytes = try await collector.done.futureResult.get()
        let text = String(decoding: bytes, as: UTF8.self)
        // "HTTP/1.1 200 OK"
        let statusLine = text.split(separator: "\r\n", maxSplits: 1).first ?? ""
        let parts = statusLine.split(separator: " ")
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/"), let code = Int(parts[1]) else {
            throw HealthCheckError("not an HTTP reply")
        }
        return (code, text)
    }

    static func isAddress(_ host: String) -> Bool { (try? SocketAddress(ipAddress: host, port: 0)) != nil }

    /// One UDP query: the reply's rcode.
    func dns(host: String, port: Int, name: DNSName, type: RRType, timeout: TimeAmount) async throws -> RCode {
        let collector = ReplyCollector<AddressedEnvelope<ByteBuffer>>.datagram()
        let channel = try await DatagramBootstrap(group: group)
            .channelInitializer { ch in ch.pipeline.addHandler(collector) }
            .bind(host: host.contains(":") ? "::" : "0.0.0.0", port: 0).get()
        defer { channel.close(promise: nil) }
        let deadline = channel.eventLoop.scheduleTask(in: timeout) {
            collector.fail(channel.eventLoop, HealthCheckError("no reply in time"))
        }
        defer { deadline.cancel() }
        var header = DNSHeader()
        header.id = UInt16.random(in: 0...UInt16.max)
        let query = try DNSMessage(header: header, questions: [DNSQuestion(name: name, type: type)]).serialize()
        let target = try SocketAddress.makeAddressResolvingHost(host, port: port)
        try await channel.writeAndFlush(
            AddressedEnvelope(remoteAddress: target, data: channel.allocator.buffer(bytes: query))
        ).get()
        let reply = try DNSMessage(wire: try await collector.done.futureResult.get())
        guard reply.header.id == header.id else { throw HealthCheckError("a reply to another query") }
        return reply.rcode
    }
}

/// Why a check failed, in words for the log.
public struct HealthCheckError: Error, CustomStringConvertible, Sendable {
    public var description: String
    init(_ d: String) { description = d }
}

/// Collects what a channel reads: a stream's bytes until it closes (or `limit`), or one datagram.
/// `@unchecked Sendable`: touched only on its channel's event loop (and `fail` hops onto it).
final class ReplyCollector<In>: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = In
    let limit: Int
    /// The bytes of one read, and whether that read completes the reply (a datagram does).
    let extract: (In) -> (bytes: [UInt8], complete: Bool)
    private var bytes: [UInt8] = []
    private var promise: EventLoopPromise<[UInt8]>?

    init(limit: Int, extract: @escaping (In) -> (bytes: [UInt8], complete: Bool)) {
        self.limit = limit
        self.extract = extract
    }

    /// Completed when the reply is in (or the channel closed, or `fail`), exactly once.
    var done: EventLoopPromise<[UInt8]> { promise! }
    private var completed = false

    private func finish(_ r: Result<[UInt8], any Error>) {
        guard !completed else { return }
        completed = true
        promise?.completeWith(r)
    }

    func handlerAdded(context: ChannelHandlerContext) {
        promise = context.eventLoop.makePromise()
    }

    /// A connection that failed, or a channel torn down, still completes the promise (NIO requires
    /// every promise to be completed).
    func handlerRemoved(context: ChannelHandlerContext) {
        finish(.failure(HealthCheckError("connection closed")))
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let (b, complete) = extract(Self.unwrapInboundIn(data))
        if complete {
            finish(.success(b))
            return
        }
        bytes += b.prefix(max(0, limit - bytes.count))
        if bytes.count >= limit { context.close(promise: nil) }
    }

    func channelInactive(context: ChannelHandlerContext) {
        finish(bytes.isEmpty ? .failure(HealthCheckError("closed without a reply")) : .success(bytes))
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A server that closes after its reply without TLS's close_notify has still replied.
        if case .uncleanShutdown? = error as? NIOSSLError, !bytes.isEmpty {
            finish(.success(bytes))
        } else {
            finish(.failure(error))
        }
        context.close(promise: nil)
    }

    func fail(_ loop: any EventLoop, _ error: any Error) {
        loop.execute { self.finish(.failure(error)) }
    }
}

extension ReplyCollector where In == ByteBuffer {
    static func stream(limit: Int) -> ReplyCollector {
        ReplyCollector(limit: limit) { (Array($0.readableBytesView), false) }
    }
}

extension ReplyCollector where In == AddressedEnvelope<ByteBuffer> {
    static func datagram() -> ReplyCollector {
        ReplyCollector(limit: 65536) { (Array($0.data.readableBytesView), true) }
    }
}

/// The TLS client contexts of HTTPS checks, made once per distinct TLSCheck.
/// `@unchecked Sendable`: NIOSSLContext is thread-safe; the dictionary is guarded by the mutex.
final class TLSContexts: @unchecked Sendable {
    private let cache = Mutex<[TLSCheck: NIOSSLContext]>([:])

    func context(for tls: TLSCheck) throws -> NIOSSLContext {
        try cache.withLock { (c: inout [TLSCheck: NIOSSLContext]) throws -> NIOSSLContext in
            if let ctx = c[tls] { return ctx }
            var config = TLSConfiguration.makeClientConfiguration()
            config.certificateVerification = tls.verify ? .fullVerification : .none
            if let ca = tls.caFile { config.trustRoots = .file(ca) }
            let ctx = try NIOSSLContext(configuration: config)
            c[tls] = ctx
            return ctx
        }
    }
}
