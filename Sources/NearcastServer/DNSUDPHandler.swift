import NIOCore
import NearcastCore

/// Answers each UDP datagram with the responder's reply; replies are flushed once per read batch.
final class DNSUDPHandler: ChannelInboundHandler {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    typealias OutboundOut = AddressedEnvelope<ByteBuffer>

    let responder: Responder
    /// This handler's own cache: a handler lives on one event loop, so it needs no lock.
    var cache = ReplyCache()

    init(responder: Responder) {
        self.responder = responder
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let envelope = Self.unwrapInboundIn(data)
        let query = Array(envelope.data.readableBytesView)
        guard let reply = cache.reply(to: query, transport: .udp, responder: responder) else { return }
        let buffer = context.channel.allocator.buffer(bytes: reply)
        context.write(Self.wrapOutboundOut(AddressedEnvelope(remoteAddress: envelope.remoteAddress, data: buffer)), promise: nil)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        context.flush()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A UDP socket error (e.g. ICMP port unreachable reported on a later read) concerns one
        // peer only; the socket goes on serving.
    }
}
