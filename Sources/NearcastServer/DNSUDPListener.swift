import CDatagrams
import Foundation
import NIOCore
import NearcastAnswers
import NearcastBasics
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// One UDP socket of the slow path, read and answered by a thread of its own: each wake-up takes a
/// batch of queries with one recvmmsg(2), answers them (`DatagramAnswerer`) and sends the replies
/// with one sendmmsg(2) (ARCHITECTURE §4).
///
/// Not on NIO's event loops: there each datagram became an envelope, a buffer and a trip through a
/// pipeline, which cost about twice the CPU of answering it (the slow path then took 1.3x NSD's CPU
/// per query, `make bench-slowpath`). Here a batch's buffers are allocated once, and a reply goes
/// back to the address its query came from without being converted.
final class DNSUDPListener: Sendable {
    private let fd: Int32
    /// A pipe whose read end the thread polls beside the socket: `stop()` writes to it.
    private let wake: (read: Int32, write: Int32)
    private let stopping = Atomic<Bool>(false)
    /// The thread that serves the socket.
    private let thread: OwnThread
    /// The query log, and this socket's side of each exchange as it says it.
    private let log: (QueryLog, server: QueryLog.Endpoint)?

    /// Binds a UDP socket to `address` (SO_REUSEPORT, so every listener of one address reads its own
    /// queue; IPv6 sockets serve IPv6 only) and starts its thread, named `name`.
    init(address: SocketAddress, name: String, answerer: DatagramAnswerer, log: QueryLog? = nil) throws {
        self.log = log.flatMap { l in QueryLog.Endpoint(address).map { (l, $0) } }
        fd = try Self.bind(address)
        var ends: [Int32] = [0, 0]
        guard ncd_wake_pipe(&ends) == 0 else {
            let e = errno
            close(fd)
            throw IOError(errnoCode: e, reason: "pipe2")
        }
        wake = (ends[0], ends[1])
        thread = OwnThread(name: name)
        thread.start { [self] in
            var answerer = answerer
            serve(&answerer)
            close(fd)
            close(wake.read)
            close(wake.write)
        }
    }

    /// Stops the thread and closes the socket; returns once the thread has ended.
    func stop() async {
        stopping.store(true, ordering: .sequentiallyConsistent)
        var byte: UInt8 = 1
        _ = write(wake.write, &byte, 1)
        await thread.ended()
    }

    private static func bind(_ address: SocketAddress) throws -> Int32 {
        let family: Int32 = address.protocol == .inet6 ? AF_INET6 : AF_INET
        let fd = socket(family, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw IOError(errnoCode: errno, reason: "socket") }
        var one: Int32 = 1
        let size = socklen_t(MemoryLayout<Int32>.size)
        var failed: (Int32, String)?
        if setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, size) != 0 { failed = (errno, "SO_REUSEADDR") }
        if failed == nil, setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, size) != 0 { failed = (errno, "SO_REUSEPORT") }
        if failed == nil, family == AF_INET6, setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &one, size) != 0 {
            failed = (errno, "IPV6_V6ONLY")
        }
        if failed == nil {
            let bound = address.withSockAddr { Glibc.bind(fd, $0, socklen_t($1)) }
            if bound != 0 { failed = (errno, "bind(\(address))") }
        }
        if let (code, what) = failed {
            close(fd)
            throw IOError(errnoCode: code, reason: what)
        }
        return fd
    }

    /// The thread's loop: a batch whenever the socket has one, a poll(2) when it has none.
    private func serve(_ answerer: inout DatagramAnswerer) {
        let batch = DatagramBatch()
        var fds = [
            pollfd(fd: fd, events: Int16(POLLIN), revents: 0), pollfd(fd: wake.read, events: Int16(POLLIN), revents: 0),
        ]
        while !stopping.load(ordering: .relaxed) {
            let count = batch.receive(from: fd)
            if count > 0 {
                let arrived = log == nil ? 0 : QueryLog.now()
                answerer.begin()
                for i in 0..<count {
                    guard let query = batch.query(i) else { continue }
                    let reply = answerer.reply(to: query, client: batch.client(i))
                    if let reply { batch.add(reply, to: i, sendingFrom: fd) }
                    if let (log, server) = log, let client = batch.endpoint(i) {
                        log.record(
                            query: query, reply: reply, client: client, server: server, tcp: false, arrived: arrived)
                    }
                }
                batch.send(from: fd)
                answerer.end()
            } else if count == 0 {
                // Nothing waiting (EAGAIN): sleep until a query comes or stop() writes.
                fds[0].revents = 0
                fds[1].revents = 0
                _ = poll(&fds, 2, -1)
            } else {
                // A receive error (the kernel short of memory, say): wait a millisecond rather than
                // spin on one that lasts, then read again.
                usleep(1000)
            }
        }
    }
}

/// What a UDP listener's thread does with each query: the reply from its own cache or the current
/// responder, then response rate limiting and the counters. One per thread, so the cache needs no
/// lock; it holds replies of one responder generation and is emptied when a reload brings another.
struct DatagramAnswerer: Sendable {
    let responders: ResponderSource
    let metrics: NearcastMetrics?
    let limiter: ResponseRateLimiter?
    let notifies: NotifyInbox?
    private var cache = ReplyCache()
    private var generation = 0
    private var responder: Responder?

    init(
        responders: ResponderSource, metrics: NearcastMetrics?, limiter: ResponseRateLimiter?,
        notifies: NotifyInbox? = nil
    ) {
        self.notifies = notifies
        self.responders = responders
        self.metrics = metrics
        self.limiter = limiter
    }

    /// Takes the current responder for the batch that follows: a reload is seen between batches.
    mutating func begin() {
        let (generation, responder) = responders.current
        if generation != self.generation {
            cache = ReplyCache()
            self.generation = generation
        }
        self.responder = responder
    }

    /// Lets the batch's responder go: a thread that reads nothing for a while must not keep a
    /// responder a reload replaced, with its zones (GiBs at 10M names).
    mutating func end() { responder = nil }

    /// The reply to send to `query` from `client`, or nil for none (no reply, or dropped by RRL).
    mutating func reply(to query: [UInt8], client: [UInt8]?) -> [UInt8]? {
        guard let responder else { return nil }
        guard var reply = cache.reply(to: query, transport: .udp, responder: responder, client: client) else {
            return nil
        }
        if let limiter, let client, !responder.provesAddress(query, client: client) {
            switch limiter.verdict(reply, client: client) {
            case .send: break
            case .slip:
                reply = responder.truncatedReply(to: query, client: client) ?? ResponseRateLimiter.truncated(reply)
                metrics?.countLimited(slipped: true)
            case .drop:
                metrics?.countLimited(slipped: false)
                return nil
            }
        }
        notifies?.received(query, reply: reply)
        metrics?.countReply(reply, transport: .udp, counts: responder.counts)
        return reply
    }
}

/// The buffers of one listener's batches, allocated once: `capacity` receive slots of `slotSize`
/// bytes, each with the address it came from, and the replies' headers, pointing into an arena
/// the replies are copied to and at the addresses their queries came from.
private final class DatagramBatch {
    static let capacity = 64
    /// Larger than any query a client sends over UDP; a longer datagram (MSG_TRUNC) is not answered.
    static let slotSize = 4096
    /// Room for a batch of replies; one that does not fit sends those before it first.
    static let arenaSize = 1 << 17

    private let received = UnsafeMutablePointer<ncd_mmsghdr>.allocate(capacity: capacity)
    private let receivedData = UnsafeMutablePointer<iovec>.allocate(capacity: capacity)
    private let addresses = UnsafeMutablePointer<sockaddr_storage>.allocate(capacity: capacity)
    private let slots = UnsafeMutableRawPointer.allocate(byteCount: capacity * slotSize, alignment: 16)
    private let replies = UnsafeMutablePointer<ncd_mmsghdr>.allocate(capacity: capacity)
    private let replyData = UnsafeMutablePointer<iovec>.allocate(capacity: capacity)
    private let arena = UnsafeMutableRawPointer.allocate(byteCount: arenaSize, alignment: 16)
    private var replyCount = 0
    private var arenaUsed = 0

    init() {
        received.initialize(repeating: ncd_mmsghdr(), count: Self.capacity)
        receivedData.initialize(repeating: iovec(), count: Self.capacity)
        addresses.initialize(repeating: sockaddr_storage(), count: Self.capacity)
        replies.initialize(repeating: ncd_mmsghdr(), count: Self.capacity)
        replyData.initialize(repeating: iovec(), count: Self.capacity)
        for i in 0..<Self.capacity {
            receivedData[i].iov_base = slots + i * Self.slotSize
            replyData[i].iov_base = nil
            received[i].msg_hdr.msg_iov = receivedData + i
            received[i].msg_hdr.msg_iovlen = 1
            received[i].msg_hdr.msg_name = UnsafeMutableRawPointer(addresses + i)
            replies[i].msg_hdr.msg_iov = replyData + i
            replies[i].msg_hdr.msg_iovlen = 1
        }
    }

    deinit {
        received.deallocate()
        receivedData.deallocate()
        addresses.deallocate()
        slots.deallocate()
        replies.deallocate()
        replyData.deallocate()
        arena.deallocate()
    }

    /// Receives what is waiting, without waiting: the number of datagrams, 0 when none is (or the
    /// call was interrupted), -1 for an error.
    func receive(from fd: Int32) -> Int {
        for i in 0..<Self.capacity {
            receivedData[i].iov_len = Self.slotSize
            received[i].msg_hdr.msg_namelen = socklen_t(MemoryLayout<sockaddr_storage>.size)
            received[i].msg_hdr.msg_flags = 0
            received[i].msg_len = 0
        }
        let n = ncd_recvmmsg(fd, received, UInt32(Self.capacity), Int32(MSG_DONTWAIT))
        if n >= 0 { return Int(n) }
        return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : -1
    }

    /// The bytes of datagram `i`, or nil when it was longer than its slot.
    func query(_ i: Int) -> [UInt8]? {
        guard received[i].msg_hdr.msg_flags & Int32(MSG_TRUNC) == 0 else { return nil }
        return Array(UnsafeRawBufferPointer(start: receivedData[i].iov_base, count: Int(received[i].msg_len)))
    }

    /// The address datagram `i` came from, as `SocketAddress.addressBytes` gives it.
    func client(_ i: Int) -> [UInt8]? {
        guard let address = endpoint(i)?.address else { return nil }
        return address.count == 16 ? clientAddressBytes(v6: address) : address
    }

    /// The address and port datagram `i` came from, as the query log says them.
    func endpoint(_ i: Int) -> QueryLog.Endpoint? {
        let a = UnsafeRawPointer(addresses + i)
        switch Int32(addresses[i].ss_family) {
        case AF_INET:
            let v4 = a.load(as: sockaddr_in.self)
            return QueryLog.Endpoint(
                address: withUnsafeBytes(of: v4.sin_addr.s_addr) { Array($0) }, port: UInt16(bigEndian: v4.sin_port))
        case AF_INET6:
            let v6 = a.load(as: sockaddr_in6.self)
            return QueryLog.Endpoint(
                address: withUnsafeBytes(of: v6.sin6_addr) { Array($0) }, port: UInt16(bigEndian: v6.sin6_port))
        default:
            return nil
        }
    }

    /// Queues `reply` to the address datagram `i` came from; sends the queued ones first when it
    /// does not fit.
    func add(_ reply: [UInt8], to i: Int, sendingFrom fd: Int32) {
        guard reply.count <= Self.arenaSize else { return }
        if replyCount == Self.capacity || arenaUsed + reply.count > Self.arenaSize { send(from: fd) }
        let at = arena + arenaUsed
        reply.withUnsafeBytes { at.copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
        replyData[replyCount].iov_base = at
        replyData[replyCount].iov_len = reply.count
        replies[replyCount].msg_hdr.msg_name = UnsafeMutableRawPointer(addresses + i)
        replies[replyCount].msg_hdr.msg_namelen = received[i].msg_hdr.msg_namelen
        replyCount += 1
        arenaUsed += reply.count
    }

    /// Sends the queued replies. One the kernel refuses (a route gone, a full buffer) is skipped:
    /// it concerns its client alone, as a lost datagram would.
    func send(from fd: Int32) {
        var sent = 0
        while sent < replyCount {
            let n = ncd_sendmmsg(fd, replies + sent, UInt32(replyCount - sent), 0)
            if n > 0 {
                sent += Int(n)
            } else if n < 0 && errno == EINTR {
                continue
            } else {
                sent += 1
            }
        }
        replyCount = 0
        arenaUsed = 0
    }
}

/// A client's address as 4 bytes (IPv4, or an IPv4-mapped IPv6 address) or 16, from its IPv6 form.
func clientAddressBytes(v6 b: [UInt8]) -> [UInt8] {
    if b[0..<10].allSatisfy({ $0 == 0 }) && b[10] == 0xFF && b[11] == 0xFF { return Array(b[12..<16]) }
    return b
}

extension SocketAddress {
    /// The address as 4 or 16 bytes (an IPv4-mapped IPv6 address as IPv4), for geo answers.
    var addressBytes: [UInt8]? {
        switch self {
        case .v4(let a):
            return withUnsafeBytes(of: a.address.sin_addr.s_addr) { Array($0) }
        case .v6(let a):
            return clientAddressBytes(v6: withUnsafeBytes(of: a.address.sin6_addr) { Array($0) })
        default:
            return nil
        }
    }
}
