import Foundation
import Logging
import NIOCore
import NearcastAnswers
import NearcastBasics
import NearcastTransfer

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
/// together. An idle connection is closed (RFC 7766 §6.2.3). A zone transfer's messages are made
/// on a thread of their own and written as the connection takes them (`ZoneTransferWriter`);
/// queries that come meanwhile are answered after its last message, so no reply lands inside it,
/// and the connection is not idle while it runs.
final class DNSTCPHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    /// No reply cache here: this handler lives as long as one connection, and a cache per
    /// connection would cost memory per client for the few queries a connection carries.
    let responders: ResponderSource

    let metrics: NearcastMetrics?
    let log: QueryLog?
    /// Where transfers out are logged.
    let logger: Logger?
    /// The server's transfers out running at once (`TransferSlots`).
    let transferSlots: TransferSlots
    let notifies: NotifyInbox?
    /// Whether a transfer is being written, and the queries read meanwhile (in the event loop).
    var transferring = false
    var waiting: [[UInt8]] = []

    init(
        responders: ResponderSource, metrics: NearcastMetrics?, log: QueryLog? = nil, logger: Logger? = nil,
        transferSlots: TransferSlots = TransferSlots(), notifies: NotifyInbox? = nil
    ) {
        self.notifies = notifies
        self.responders = responders
        self.metrics = metrics
        self.log = log
        self.logger = logger
        self.transferSlots = transferSlots
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let query = Array(Self.unwrapInboundIn(data).readableBytesView)
        if transferring {
            waiting.append(query)
            return
        }
        answer(query, context: context)
    }

    func answer(_ query: [UInt8], context: ChannelHandlerContext) {
        let arrived = log == nil ? 0 : QueryLog.now()
        let responder = responders.current.responder
        let client = context.channel.remoteAddress?.addressBytes
        var reply: [UInt8]?
        switch responder.transfer(query, client: client ?? [], slots: transferSlots) {
        case .messages(let messages):
            transferring = true
            ZoneTransferWriter.start(
                messages, to: client ?? [], handler: self, context: context, slots: transferSlots, metrics: metrics,
                logger: logger)
            return
        case .reply(let r): reply = r
        case nil: reply = responder.respond(to: query, transport: .tcp, client: client)
        }
        if let log, let client = QueryLog.Endpoint(context.channel.remoteAddress),
            let server = QueryLog.Endpoint(context.channel.localAddress)
        {
            log.record(query: query, reply: reply, client: client, server: server, tcp: true, arrived: arrived)
        }
        guard let reply else { return }
        notifies?.received(query, reply: reply)
        metrics?.countReply(reply, transport: .tcp, counts: responder.counts)
        context.write(Self.wrapOutboundOut(Self.framed(reply, context.channel.allocator)), promise: nil)
    }

    static func framed(_ message: [UInt8], _ allocator: ByteBufferAllocator) -> ByteBuffer {
        var buffer = allocator.buffer(capacity: message.count + 2)
        buffer.writeInteger(UInt16(message.count))
        buffer.writeBytes(message)
        return buffer
    }

    /// After a transfer's last message: the queries that came meanwhile are answered.
    func transferEnded(context: ChannelHandlerContext) {
        transferring = false
        while !transferring, !waiting.isEmpty { answer(waiting.removeFirst(), context: context) }
        context.flush()
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        context.flush()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is IdleStateHandler.IdleStateEvent {
            if !transferring { context.close(promise: nil) }
        } else {
            context.fireUserInboundEventTriggered(event)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}

/// Writes a zone transfer's messages to its connection: made on a thread of the transfer's own
/// (a zone of a million names takes a second or more to walk, which must not hold an event loop),
/// a batch at a time, one batch written while the next is made and none made before the one
/// before it has gone to the socket, so a slow secondary holds two batches in memory, never the
/// zone. A connection that fails ends it. Transfers are logged here, not in the query log.
enum ZoneTransferWriter {
    /// Octets of messages made before they are written and waited for.
    static let batchBytes = 256 * 1024

    static func start(
        _ messages: TransferMessages, to client: [UInt8], handler: DNSTCPHandler, context: ChannelHandlerContext,
        slots: TransferSlots, metrics: NearcastMetrics?, logger: Logger?
    ) {
        let loop = context.eventLoop
        let bound = NIOLoopBound((handler, context), eventLoop: loop)
        OwnThread.start(name: "nc-transfer") {
            defer { slots.release() }  // the slot the responder took for these messages
            let began = ContinuousClock.now
            var messages = messages
            func metadata() -> Logger.Metadata {
                [
                    "zone": "\(messages.origin)", "serial": "\(messages.serial)", "type": "\(messages.form.rawValue)",
                    "to": "\(AddressPrefix.text(client))", "messages": "\(messages.messageCount)",
                    "records": "\(messages.recordCount)", "seconds": "\((ContinuousClock.now - began).seconds)",
                ]
            }
            var ended = false
            // One batch is written while the next is made; a third waits for the first to have gone.
            var inFlight: EventLoopFuture<Void>?
            func wait(_ f: EventLoopFuture<Void>?) -> Bool {
                do { try f?.wait() } catch {
                    logger?.warning("zone transfer out cut short: the connection failed", metadata: metadata())
                    metrics?.countTransferOut(messages.form, done: false)
                    loop.execute { bound.value.1.close(promise: nil) }
                    return false
                }
                return true
            }
            while !ended {
                var batch: [[UInt8]] = []
                var bytes = 0
                while bytes < batchBytes, let m = messages.next() {
                    bytes += m.count
                    batch.append(m)
                }
                ended = messages.isDone || batch.isEmpty
                let sent = batch  // the loop's copy: this thread makes the next batch meanwhile
                let written = loop.flatSubmit { () -> EventLoopFuture<Void> in
                    let (_, context) = bound.value
                    func framed(_ m: [UInt8]) -> NIOAny {
                        DNSTCPHandler.wrapOutboundOut(DNSTCPHandler.framed(m, context.channel.allocator))
                    }
                    for m in sent.dropLast() { context.write(framed(m), promise: nil) }
                    // Written in order: once the last has gone, the batch has.
                    let last = sent.last.map { context.write(framed($0)) } ?? loop.makeSucceededVoidFuture()
                    context.flush()
                    return last
                }
                guard wait(inFlight) else { return }
                inFlight = written
            }
            guard wait(inFlight) else { return }
            logger?.info("zone transferred out", metadata: metadata())
            metrics?.countTransferOut(messages.form, done: true)
            loop.execute {
                let (handler, context) = bound.value
                handler.transferEnded(context: context)
            }
        }
    }
}
