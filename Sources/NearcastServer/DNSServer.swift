#if canImport(Glibc)
import Glibc
#endif
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NearcastCore

/// The slow path: UDP and TCP listeners on every configured address, answering from a `Responder`.
///
/// Each UDP address gets one socket per event loop (SO_REUSEPORT), so every core reads its own queue.
public final class DNSServer: Sendable {
    public let responder: Responder
    let group: any EventLoopGroup
    let tcpIdleTimeout: TimeAmount
    let logger: Logger
    private let channels: NIOLockedValueBox<[any Channel]> = .init([])

    public init(responder: Responder, group: any EventLoopGroup, tcpIdleTimeout: TimeAmount = .seconds(10), logger: Logger) {
        self.responder = responder
        self.group = group
        self.tcpIdleTimeout = tcpIdleTimeout
        self.logger = logger
    }

    /// Binds UDP and TCP on `address`. Port 0 picks a free port, the same one for UDP and TCP.
    /// - Returns: the bound address.
    @discardableResult
    public func listen(on address: ListenAddress) async throws -> SocketAddress {
        var target = try SocketAddress.makeAddressResolvingHost(address.host, port: address.port)
        // TCP first, so that with port 0 the UDP sockets take the port TCP got.
        let responder = self.responder
        let idle = tcpIdleTimeout
        let tcp = try await ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .serverChannelOption(.backlog, value: 256)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(IdleStateHandler(readTimeout: idle))
                    try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(DNSTCPFrameDecoder()))
                    try channel.pipeline.syncOperations.addHandler(DNSTCPHandler(responder: responder))
                }
            }
            .bind(to: target).get()
        if let port = tcp.localAddress?.port { target.port = port }
        var opened: [any Channel] = [tcp]
        for loop in group.makeIterator() {
            let udp = try await DatagramBootstrap(group: loop)
                .channelOption(.socketOption(.so_reuseaddr), value: 1)
                .channelOption(ChannelOptions.socket(SocketOptionLevel(SOL_SOCKET), SO_REUSEPORT), value: 1)
                .channelOption(.datagramVectorReadMessageCount, value: 32)
                .channelOption(.maxMessagesPerRead, value: 4)
                .channelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: 65536))
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(DNSUDPHandler(responder: responder))
                    }
                }
                .bind(to: target).get()
            opened.append(udp)
        }
        channels.withLockedValue { $0 += opened }
        logger.info("listening", metadata: ["address": "\(address.host):\(target.port ?? 0)", "udp-sockets": "\(opened.count - 1)"])
        return target
    }

    /// Closes every listener; in-flight TCP connections end with their event loops.
    public func stop() async {
        let all = channels.withLockedValue { c in
            defer { c = [] }
            return c
        }
        for c in all { try? await c.close() }
    }
}
