import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The service manager's notification protocol (sd_notify(3)), which `Type=notify` units use: a
/// datagram of `KEY=value` lines to the socket systemd names in `NOTIFY_SOCKET` (a path, or an
/// abstract address written with a leading `@`). Without `NOTIFY_SOCKET` nothing is sent.
public enum SystemdNotify {
    /// Sends `fields` (`READY=1`, `STATUS=…`) as one datagram; whether it was sent.
    @discardableResult
    public static func send(_ fields: [String]) -> Bool {
        guard let socketPath = ProcessInfo.processInfo.environment["NOTIFY_SOCKET"], !socketPath.isEmpty else {
            return false
        }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var path = Array(socketPath.utf8)
        if path.first == UInt8(ascii: "@") { path[0] = 0 }  // the abstract namespace
        guard path.count < MemoryLayout.size(ofValue: address.sun_path) else { return false }
        withUnsafeMutableBytes(of: &address.sun_path) { for (i, b) in path.enumerated() { $0[i] = b } }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + path.count + (path.first == 0 ? 0 : 1))
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        let message = Array(fields.joined(separator: "\n").utf8)
        let sent = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(fd, message, message.count, 0, $0, length) }
        }
        return sent == message.count
    }

    /// The service is ready (its sockets bound, its fast path attached).
    public static func ready(status: String) {
        // One line: the message's fields are its lines (a refused reload's reasons come several).
        let line = status.split(whereSeparator: \.isNewline).joined(separator: "; ")
        send(["READY=1", "STATUS=\(line)", "MAINPID=\(getpid())"])
    }

    /// A reload has begun; `ready(status:)` says when it has ended.
    public static func reloading() {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        send(["RELOADING=1", "MONOTONIC_USEC=\(UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1000)"])
    }

    /// The service is stopping.
    public static func stopping() { send(["STOPPING=1", "STATUS=stopping"]) }
}
