import Foundation
import NearcastBasics
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Says when the host's addresses change: a socket bound to rtnetlink's address notifications
/// (RTMGRP_IPV4_IFADDR, RTMGRP_IPV6_IFADDR), and a thread of its own that, after each burst of
/// them, reads the addresses again (`HostAddresses.current()`) and gives them to `changed` if they
/// differ from the last it gave. Reading them whole rather than applying each message is what
/// makes a lost message (a full socket buffer: ENOBUFS) harmless.
public final class HostAddressWatch: Sendable {
    /// The host's addresses read once the socket listened: a change after them is given to
    /// `changed`, even one made before `start`.
    public let initial: Set<LocalAddress>
    private let fd: Int32
    private let control = Control()

    /// What the watch's thread and `stop` share.
    private final class Control: Sendable {
        let started = Atomic<Bool>(false)
        let stopping = Atomic<Bool>(false)
        /// The watch's thread.
        let thread = OwnThread(name: "nc-addresses")
    }

    /// Listens for changes, and reads the addresses (`initial`); nothing is given to anyone
    /// before `start`.
    public init() throws(WatchError) {
        let fd = socket(AF_NETLINK, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue), Self.netlinkRoute)
        guard fd >= 0 else { throw WatchError(operation: "socket(AF_NETLINK)", errno: errno) }
        var local = SockaddrNetlink(groups: Self.ipv4Addresses | Self.ipv6Addresses)
        let bound = withUnsafePointer(to: &local) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<SockaddrNetlink>.size))
            }
        }
        guard bound == 0 else {
            let e = errno
            close(fd)
            throw WatchError(operation: "bind(RTMGRP_IPV4_IFADDR|RTMGRP_IPV6_IFADDR)", errno: e)
        }
        self.fd = fd
        initial = HostAddresses.current()
    }

    deinit {
        // A watch let go without `stop`: its thread ends too.
        if control.started.load(ordering: .relaxed) { stop() } else { close(fd) }
    }

    /// Starts the thread: from now on `changed` is given each new set of addresses, one call at a
    /// time, in the order they came.
    public func start(changed: @escaping @Sendable (Set<LocalAddress>) -> Void) {
        guard !control.started.exchange(true, ordering: .relaxed) else { return }
        let (fd, control, first) = (fd, control, initial)
        control.thread.start {
            defer { close(fd) }
            var last = first
            var buffer = [UInt8](repeating: 0, count: 65536)
            while !control.stopping.load(ordering: .relaxed) {
                // A fifth of a second at most between looks at `stopping`.
                var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                guard poll(&p, 1, 200) > 0 else { continue }
                // The burst drained (an address added to a host often comes with several messages);
                // what was read is not parsed: the addresses are read whole below.
                while recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT)) > 0 || errno == ENOBUFS {}
                let now = HostAddresses.current()
                if now != last {
                    last = now
                    changed(now)
                }
            }
        }
    }

    /// Stops the watch and waits for its thread (a fifth of a second at most).
    public func stop() {
        guard control.started.load(ordering: .relaxed), !control.stopping.exchange(true, ordering: .relaxed) else {
            return
        }
        control.thread.join()
    }

    public struct WatchError: Error, CustomStringConvertible {
        public var operation: String
        public var errno: Int32
        public var description: String { "\(operation): \(String(cString: strerror(errno)))" }
    }

    // <linux/netlink.h> and <linux/rtnetlink.h>, which Glibc's module does not bring: the kernel's
    // ABI, fixed.
    private static let netlinkRoute: Int32 = 0  // NETLINK_ROUTE
    private static let ipv4Addresses: UInt32 = 0x10  // RTMGRP_IPV4_IFADDR
    private static let ipv6Addresses: UInt32 = 0x100  // RTMGRP_IPV6_IFADDR

    /// struct sockaddr_nl.
    private struct SockaddrNetlink {
        var family = sa_family_t(AF_NETLINK)
        var pad: UInt16 = 0
        var pid: UInt32 = 0
        var groups: UInt32

        init(groups: UInt32) { self.groups = groups }
    }
}
