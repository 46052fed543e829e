import NIOCore

/// Splits a TCP stream into DNS messages by their two-byte length prefix (RFC 1035 §4.2.2).
struct DNSTCPFrameDecoder: ByteToMessageDecoder {
    typealias InboundOut = ByteBuffer

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard let length = buffer.getInteger(at: buffer.readerIndex, as: UInt16.self),
            buffer.readableBytes >= 2 + Int(length)
        else { return .needMoreData }
        buffer.moveReaderIndex(forwardBy: 2)
        let message = buffer.readSlice(length: Int(length))!
        context.fireChannelRead(Self.wrapInboundOut(message))
        return .continue
    }
}

/// Answers each framed query in order; pipelined queries are all read and answered, replies flushed
/// together. An idle connection is closed (RFC 7766 §6.2.3).
final class DNSTCPHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    /// No reply cache here: this handler lives as long as one connection, and a cache per
    /// connection would cost memory per client for the few queries a connection carries.
    let responders: ResponderSource

    let metrics: NearcastMetrics?
    let log: QueryLog?

    init(responders: ResponderSource, metrics: NearcastMetrics?, log: QueryLog? = nil) {
        self.responders = responders
        self.metrics = metrics
        self.log = log
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let query = Array(Self.unwrapInboundIn(data).readableBytesView)
        let arrived = log == nil ? 0 : QueryLog.now()
        let responder = responders.current.responder
        let reply = responder.respond(to: query, transport: .tcp, client: context.channel.remoteAddress?.addressBytes)
        if let log, let client = QueryLog.Endpoint(context.channel.remoteAddress),
            let server = QueryLog.Endpoint(context.channel.localAddress)
        {
            log.record(query: query, reply: reply, client: client, server: server, tcp: true, arrived: arrived)
        }
        guard let reply else { return }
        metrics?.countReply(reply, transport: .tcp, counts: responder.counts)
        var buffer = context.channel.allocator.buffer(capacity: reply.count + 2)
        buffer.writeInteger(UInt16(reply.count))
        buffer.writeBytes(reply)
        context.write(Self.wrapOutboundOut(buffer), promise: nil)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        context.flush()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is IdleStateHandler.IdleStateEvent {
            context.close(promise: nil)
        } else {
            context.fireUserInboundEventTriggered(event)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
