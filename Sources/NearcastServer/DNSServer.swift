import Logging
import NIOCore
import NIOPosix
import NearcastAnswers
import NearcastConfiguration
import NearcastTransfer
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The slow path: UDP and TCP listeners on every configured address, answering from the current
/// `Responder` of its source (which a reload replaces).
///
/// Each UDP address gets one socket per event loop (SO_REUSEPORT), so every core reads its own queue,
/// read by a thread of its own (`DNSUDPListener`); TCP runs on the event loops.
public final class DNSServer: Sendable {
    public let responders: ResponderSource
    let metrics: NearcastMetrics?
    /// Response rate limiting of UDP replies, if on.
    let limiter: ResponseRateLimiter?
    /// The query log (dnstap), if on.
    let log: QueryLog?
    let group: any EventLoopGroup
    let tcpIdleTimeout: TimeAmount
    let logger: Logger
    /// Transfers out running at once, across all listeners and connections.
    let transferSlots = TransferSlots()
    /// Where the NOTIFY accepted from secondary zones' primaries go.
    public let notifies = NotifyInbox()
    private let listeners = Mutex(Listeners())

    /// The bound listeners, and whether `stop` closed them.
    private struct Listeners {
        var tcp: [any Channel] = []
        var udp: [DNSUDPListener] = []
        var stopped = false
    }

    public convenience init(
        responder: Responder, group: any EventLoopGroup, tcpIdleTimeout: TimeAmount = .seconds(10), logger: Logger
    ) {
        self.init(responders: ResponderSource(responder), group: group, tcpIdleTimeout: tcpIdleTimeout, logger: logger)
    }

    /// `metrics`: where replies are counted (by transport and rcode), if anywhere; `limiter`: the
    /// response rate limiting of UDP replies, if on; `log`: where queries and replies are logged.
    public init(
        responders: ResponderSource, metrics: NearcastMetrics? = nil, limiter: ResponseRateLimiter? = nil,
        log: QueryLog? = nil, group: any EventLoopGroup, tcpIdleTimeout: TimeAmount = .seconds(10),
        logger: Logger
    ) {
        self.responders = responders
        self.metrics = metrics
        self.limiter = limiter
        self.log = log
        self.group = group
        self.tcpIdleTimeout = tcpIdleTimeout
        self.logger = logger
    }

    /// Binds UDP and TCP on `address`. Port 0 picks a free port, the same one for UDP and TCP.
    /// - Returns: the bound address.
    @discardableResult
    public func listen(on address: ListenAddress) async throws -> SocketAddress {
        var target = try SocketAddress.makeAddressResolvingHost(address.host, port: address.port)
        // IPv6 sockets serve IPv6 only, so `[::]:53` and `0.0.0.0:53` can both be listened on.
        let v6only = target.protocol == .inet6 ? 1 : 0
        let v6onlyOption = ChannelOptions.socket(SocketOptionLevel(IPPROTO_IPV6), IPV6_V6ONLY)
        if isWildcard(target) {
            logger.warning(
                "listening on a wildcard address: UDP replies leave from the source address the kernel's routing picks; on a host with several addresses, list each address instead",
                metadata: ["address": "\(address)"])
        }
        // TCP first, so that with port 0 the UDP sockets take the port TCP got.
        let responders = self.responders
        let metrics = self.metrics
        let limiter = self.limiter
        let log = self.log
        let logger = self.logger
        let transferSlots = self.transferSlots
        let notifies = self.notifies
        let idle = tcpIdleTimeout
        var tcpBootstrap = ServerBootstrap(group: group)
        if v6only == 1 { tcpBootstrap = tcpBootstrap.serverChannelOption(v6onlyOption, value: v6only) }
        let tcp =
            try await tcpBootstrap
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .serverChannelOption(.backlog, value: 256)
            .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(IdleStateHandler(readTimeout: idle))
                    try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(DNSTCPFrameDecoder()))
                    try channel.pipeline.syncOperations.addHandler(
                        DNSTCPHandler(
                            responders: responders, metrics: metrics, log: log, logger: logger,
                            transferSlots: transferSlots, notifies: notifies))
                }
            }
            .bind(to: target).get()
        if let port = tcp.localAddress?.port { target.port = port }
        // One UDP socket and thread per event loop: as many readers as the daemon has threads.
        var udp: [DNSUDPListener] = []
        do {
            for (i, _) in group.makeIterator().enumerated() {
                let answerer = DatagramAnswerer(
                    responders: responders, metrics: metrics, limiter: limiter, notifies: notifies)
                udp.append(try DNSUDPListener(address: target, name: "nc-udp-\(i)", answerer: answerer, log: log))
            }
        } catch {
            for l in udp { await l.stop() }
            try? await tcp.close()
            throw error
        }
        listeners.withLock {
            $0.tcp.append(tcp)
            $0.udp += udp
        }
        let bound = ListenAddress(host: address.host, port: target.port ?? address.port)
        logger.info("listening", metadata: ["address": "\(bound)", "udp-sockets": "\(udp.count)"])
        return target
    }

    private func isWildcard(_ a: SocketAddress) -> Bool {
        switch a {
        case .v4(let v4): return v4.address.sin_addr.s_addr == 0
        case .v6(let v6): return withUnsafeBytes(of: v6.address.sin6_addr) { $0.allSatisfy { $0 == 0 } }
        default: return false
        }
    }

    /// Returns once any TCP listener has closed, by `stop` (before this was called too) or under
    /// the server; waits until cancelled while none has.
    public func anyListenerClosed() async throws {
        let (closes, stopped) = listeners.withLock { ($0.tcp.map(\.closeFuture), $0.stopped) }
        if stopped { return }
        let closed = group.next().makePromise(of: Void.self)
        for close in closes { close.cascade(to: closed) }  // the first completes it; the rest are ignored
        try await withTaskCancellationHandler {
            try await closed.futureResult.get()
        } onCancel: {
            closed.fail(CancellationError())
        }
    }

    /// Closes every listener; in-flight TCP connections end with their event loops.
    public func stop() async {
        let all = listeners.withLock { l in
            defer { l = Listeners(stopped: true) }
            return l
        }
        for c in all.tcp { try? await c.close() }
        for l in all.udp { await l.stop() }
    }
}
