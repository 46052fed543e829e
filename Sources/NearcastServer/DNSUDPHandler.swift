import NIOCore
import NearcastAnswers

/// Answers each UDP datagram with the responder's reply; replies are flushed once per read batch.
final class DNSUDPHandler: ChannelInboundHandler {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    typealias OutboundOut = AddressedEnvelope<ByteBuffer>

    let responders: ResponderSource
    /// This handler's own cache: a handler lives on one event loop, so it needs no lock. It holds
    /// replies of one responder generation, and is emptied when a reload brings another.
    var cache = ReplyCache()
    var generation = 0

    let metrics: NearcastMetrics?
    let limiter: ResponseRateLimiter?

    init(responders: ResponderSource, metrics: NearcastMetrics?, limiter: ResponseRateLimiter? = nil) {
        self.responders = responders
        self.metrics = metrics
        self.limiter = limiter
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let (generation, responder) = responders.current
        if generation != self.generation {
            cache = ReplyCache()
            self.generation = generation
        }
        let envelope = Self.unwrapInboundIn(data)
        let query = Array(envelope.data.readableBytesView)
        let client = envelope.remoteAddress.addressBytes
        guard var reply = cache.reply(to: query, transport: .udp, responder: responder, client: client) else { return }
        if let limiter, let client, !responder.provesAddress(query, client: client) {
            switch limiter.verdict(reply, client: client) {
            case .send: break
            case .slip:
                reply = responder.truncatedReply(to: query, client: client) ?? ResponseRateLimiter.truncated(reply)
                metrics?.countLimited(slipped: true)
            case .drop:
                metrics?.countLimited(slipped: false)
                return
            }
        }
        metrics?.countReply(reply, transport: .udp)
        let buffer = context.channel.allocator.buffer(bytes: reply)
        context.write(
            Self.wrapOutboundOut(AddressedEnvelope(remoteAddress: envelope.remoteAddress, data: buffer)), promise: nil)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        context.flush()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A UDP socket error (e.g. ICMP port unreachable reported on a later read) concerns one
        // peer only; the socket goes on serving.
    }
}

extension SocketAddress {
    /// The address as 4 or 16 bytes (an IPv4-mapped IPv6 address as IPv4), for geo answers.
    var addressBytes: [UInt8]? {
        switch self {
        case .v4(let a):
            return withUnsafeBytes(of: a.address.sin_addr.s_addr) { Array($0) }
        case .v6(let a):
            let b = withUnsafeBytes(of: a.address.sin6_addr) { Array($0) }
            if b[0..<10].allSatisfy({ $0 == 0 }) && b[10] == 0xFF && b[11] == 0xFF { return Array(b[12..<16]) }
            return b
        default:
            return nil
        }
    }
}
