import CDatagrams
import DNSWire
import Foundation
import Logging
import NearcastBasics
import NearcastTSIG
import NearcastTransfer
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Tells a zone's secondaries of its changes by NOTIFY over UDP (RFC 1996), on a thread of its
/// own. Each NOTIFY is sent again until the secondary answers (any RCODE: its answer says it
/// heard), 2 s after the first, then 4, 8, 16: five in all over a minute, as RFC 1996 §3.6 asks
/// ("periodically resend ... until too many copies have been sent"). A newer change of the zone
/// replaces the NOTIFY not yet answered: a secondary is told of the newest serial only. A
/// secondary that never answers delays nobody else.
public final class ZoneNotifier: Sendable {
    /// What to tell: zone `origin` is now at `soa`, to each of `targets`, signed with their keys
    /// from `keys`.
    public struct Request: Sendable {
        public var origin: DNSName
        public var soa: ResourceRecord
        public var targets: [TransferPeer]
        public var keys: TSIGKeyring

        public init(origin: DNSName, soa: ResourceRecord, targets: [TransferPeer], keys: TSIGKeyring) {
            self.origin = origin
            self.soa = soa
            self.targets = targets
            self.keys = keys
        }
    }

    /// Copies sent of one NOTIFY, and the wait after the first (doubled after each).
    public static let copies = 5
    public static let firstWait: Duration = .seconds(2)

    private struct Shared {
        var queued: [Request] = []
        var stopped = false
    }
    private let shared = Mutex(Shared())
    /// A pipe whose read end the thread polls beside its sockets: written when a request or the
    /// stop comes.
    private let wake: (read: Int32, write: Int32)
    /// The thread that sends them.
    private let thread = OwnThread(name: "nc-notify")
    let logger: Logger

    public init(logger: Logger) {
        self.logger = logger
        var ends: [Int32] = [-1, -1]
        _ = ncd_wake_pipe(&ends)  // without it (no file descriptors left), copies are sent on time alone
        wake = (ends[0], ends[1])
        thread.start { [self] in run() }
    }

    /// Sends `request`'s NOTIFYs, and their copies until answered.
    public func notify(_ request: Request) {
        guard !request.targets.isEmpty else { return }
        shared.withLock { $0.queued.append(request) }
        var one: UInt8 = 1
        _ = write(wake.write, &one, 1)
    }

    /// Ends the thread (NOTIFYs not answered yet are not sent again) and waits for it.
    public func stop() {
        let first = shared.withLock { s in
            defer { s.stopped = true }
            return !s.stopped
        }
        guard first else { return }
        var one: UInt8 = 1
        _ = write(wake.write, &one, 1)
        thread.join()
        close(wake.read)
        close(wake.write)
    }

    /// One NOTIFY not answered yet.
    struct Pending {
        var origin: DNSName
        var serial: UInt32
        var target: TransferPeer
        var id: UInt16
        var message: [UInt8]
        var sent = 0
        var due = ContinuousClock.now
    }

    /// A zone and a secondary: one NOTIFY outstanding for each.
    struct Key: Hashable {
        var origin: DNSName
        var target: TransferPeer
    }

    private func run() {
        let sockets = [Self.socket(AF_INET), Self.socket(AF_INET6)]
        defer { for fd in sockets where fd >= 0 { close(fd) } }
        var pending: [Key: Pending] = [:]
        var generator = SystemRandomNumberGenerator()
        while true {
            let (requests, stopped) = shared.withLock { s in
                defer { s.queued = [] }
                return (s.queued, s.stopped)
            }
            if stopped { return }
            for r in requests {
                guard case .soa(let fields) = r.soa.rdata else { continue }
                for target in r.targets {
                    let id = UInt16.random(in: 0...UInt16.max, using: &generator)
                    let key = target.key.flatMap { r.keys.key(named: $0) }
                    let message = NotifyMessage.make(
                        origin: r.origin, soa: r.soa, id: id, key: key, now: UInt64(Date().timeIntervalSince1970))
                    pending[Key(origin: r.origin, target: target)] = Pending(
                        origin: r.origin, serial: fields.serial, target: target, id: id, message: message)
                }
            }
            // Sent, or sent again, when due; given up after the last copy's wait.
            let now = ContinuousClock.now
            for (key, p) in pending where p.due <= now {
                if p.sent == Self.copies {
                    logger.warning(
                        "NOTIFY not answered: the secondary finds the change at its SOA refresh",
                        metadata: [
                            "zone": "\(p.origin)", "serial": "\(p.serial)", "to": "\(p.target)",
                            "copies": "\(p.sent)",
                        ])
                    pending[key] = nil
                    continue
                }
                let fd = sockets[p.target.address.count == 4 ? 0 : 1]
                Self.send(p.message, to: p.target, on: fd)
                var next = p
                next.sent += 1
                next.due = now + Self.firstWait * (1 << (next.sent - 1))
                pending[key] = next
            }
            // Until the next copy is due, a request comes, or a secondary answers.
            let wait = pending.values.map(\.due).min().map { max(0, ($0 - ContinuousClock.now).milliseconds) } ?? -1
            var fds = [pollfd(fd: wake.read, events: Int16(POLLIN), revents: 0)]
            fds += sockets.filter { $0 >= 0 }.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            // Without a pipe, new requests are looked at every 100 ms.
            let most = wake.read >= 0 ? 60_000 : 100
            _ = poll(&fds, nfds_t(fds.count), Int32(wait < 0 ? most : min(wait, most)))
            if fds[0].revents & Int16(POLLIN) != 0 {
                var drained = [UInt8](repeating: 0, count: 64)
                _ = read(wake.read, &drained, drained.count)
            }
            for fd in sockets where fd >= 0 {
                while let (reply, from) = Self.receive(on: fd) {
                    guard
                        let (key, p) = pending.first(where: {
                            $0.value.target.address == from.address && $0.value.target.port == from.port
                                && NotifyMessage.answers(reply, id: $0.value.id)
                        })
                    else { continue }
                    pending[key] = nil
                    let rcode = NotifyMessage.rcode(reply)
                    if rcode == 0 {
                        logger.info(
                            "NOTIFY answered",
                            metadata: ["zone": "\(p.origin)", "serial": "\(p.serial)", "to": "\(p.target)"])
                    } else {
                        logger.warning(
                            "NOTIFY refused by the secondary",
                            metadata: [
                                "zone": "\(p.origin)", "serial": "\(p.serial)", "to": "\(p.target)",
                                "rcode": "\(RCode(rawValue: UInt16(rcode)))",
                            ])
                    }
                }
            }
        }
    }

    /// A UDP socket of `family` on an ephemeral port, non-blocking; -1 when the host has none.
    static func socket(_ family: Int32) -> Int32 {
        Glibc.socket(family, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue), 0)
    }

    static func send(_ message: [UInt8], to target: TransferPeer, on fd: Int32) {
        guard fd >= 0 else { return }
        _ = SocketAddressOctets.withSockaddr(target.address, port: target.port) {
            sendto(fd, message, message.count, 0, $0, $1)
        }
    }

    /// A datagram waiting on `fd`, and the address and port it came from; nil when none waits.
    static func receive(on fd: Int32) -> ([UInt8], (address: [UInt8], port: UInt16))? {
        var buffer = [UInt8](repeating: 0, count: 4096)
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let n = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(fd, &buffer, buffer.count, 0, $0, &length) }
        }
        guard n > 0 else { return nil }
        let from: (address: [UInt8], port: UInt16)
        switch Int32(storage.ss_family) {
        case AF_INET:
            from = withUnsafeBytes(of: storage) { raw in
                let a = raw.load(as: sockaddr_in.self)
                return (withUnsafeBytes(of: a.sin_addr) { Array($0) }, UInt16(bigEndian: a.sin_port))
            }
        case AF_INET6:
            from = withUnsafeBytes(of: storage) { raw in
                let a = raw.load(as: sockaddr_in6.self)
                return (withUnsafeBytes(of: a.sin6_addr) { Array($0) }, UInt16(bigEndian: a.sin6_port))
            }
        default: return nil
        }
        return (Array(buffer[0..<n]), from)
    }
}

extension Duration {
    /// Whole milliseconds, rounded up.
    fileprivate var milliseconds: Int {
        let (s, atto) = components
        return Int(s) * 1000 + Int((atto + 999_999_999_999_999) / 1_000_000_000_000_000)
    }
}
