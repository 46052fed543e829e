import DNSWire
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A minimal blocking DNS client over UDP and TCP, for tests that need exact bytes.
public enum RawClient {
    public static func sockaddr(_ host: String, _ port: Int) -> (Int32, Data) {
        if host.contains(":") {
            var a = sockaddr_in6()
            a.sin6_family = sa_family_t(AF_INET6)
            a.sin6_port = in_port_t(port).bigEndian
            _ = inet_pton(AF_INET6, host, &a.sin6_addr)
            return (AF_INET6, Data(bytes: &a, count: MemoryLayout<sockaddr_in6>.size))
        }
        var a = sockaddr_in()
        a.sin_family = sa_family_t(AF_INET)
        a.sin_port = in_port_t(port).bigEndian
        a.sin_addr.s_addr = inet_addr(host)
        return (AF_INET, Data(bytes: &a, count: MemoryLayout<sockaddr_in>.size))
    }

    public static func setTimeout(_ fd: Int32, _ seconds: Double) {
        var tv = timeval(tv_sec: Int(seconds), tv_usec: Int((seconds - Double(Int(seconds))) * 1e6))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    }

    /// Sends one datagram and returns the reply whose ID and question match the query (as a resolver
    /// would: a stray late datagram on a reused port is ignored). Resends up to `tries` times.
    public static func udp(_ query: [UInt8], host: String = "127.0.0.1", port: Int, timeout: Double = 1, tries: Int = 3)
        -> [UInt8]?
    {
        let (family, addr) = sockaddr(host, port)
        let fd = socket(family, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        setTimeout(fd, timeout)
        var buf = [UInt8](repeating: 0, count: 65536)
        for _ in 0..<tries {
            let sent = addr.withUnsafeBytes { a in
                query.withUnsafeBytes { q in
                    sendto(
                        fd, q.baseAddress, q.count, 0, a.baseAddress!.assumingMemoryBound(to: Glibc.sockaddr.self),
                        socklen_t(a.count))
                }
            }
            guard sent == query.count else { return nil }
            while true {
                let n = recv(fd, &buf, buf.count, 0)
                if n <= 0 { break }  // timeout: send again
                let reply = Array(buf[0..<n])
                if matches(reply, query) { return reply }
            }
        }
        return nil
    }

    /// Sends every query from one socket at once, then gathers the replies that come within
    /// `wait` seconds of the last (none is sent again: what a flood sees).
    public static func burst(_ queries: [[UInt8]], host: String = "127.0.0.1", port: Int, wait: Double = 1)
        -> [[UInt8]]
    {
        burst(queries, clients: 1, host: host, port: port, wait: wait)[0]
    }

    /// Sends every query at once from `clients` sockets (query i from socket i % clients), then
    /// gathers each socket's replies that come within `wait` seconds of the last: element k holds
    /// what socket k received.
    public static func burst(
        _ queries: [[UInt8]], clients: Int, host: String = "127.0.0.1", port: Int, wait: Double = 1
    ) -> [[[UInt8]]] {
        let (family, addr) = sockaddr(host, port)
        let fds = (0..<clients).map { _ in socket(family, Int32(SOCK_DGRAM.rawValue), 0) }
        defer { for fd in fds where fd >= 0 { close(fd) } }
        guard fds.allSatisfy({ $0 >= 0 }) else { return Array(repeating: [], count: clients) }
        for (i, query) in queries.enumerated() {
            _ = addr.withUnsafeBytes { a in
                query.withUnsafeBytes { q in
                    sendto(
                        fds[i % clients], q.baseAddress, q.count, 0,
                        a.baseAddress!.assumingMemoryBound(to: Glibc.sockaddr.self), socklen_t(a.count))
                }
            }
        }
        var buf = [UInt8](repeating: 0, count: 65536)
        return fds.enumerated().map { (k, fd) -> [[UInt8]] in
            setTimeout(fd, wait)
            let expected = (queries.count - k + clients - 1) / clients
            var replies: [[UInt8]] = []
            while replies.count < expected {
                let n = recv(fd, &buf, buf.count, 0)
                if n <= 0 { break }
                replies.append(Array(buf[0..<n]))
            }
            return replies
        }
    }

    /// Whether `reply` answers `query`: same ID and, when both carry one, the same question
    /// (compared case-insensitively).
    public static func matches(_ reply: [UInt8], _ query: [UInt8]) -> Bool {
        guard reply.count >= 12, reply[0] == query[0], reply[1] == query[1] else { return false }
        guard let q = try? DNSMessage(wire: query), let r = try? DNSMessage(wire: reply) else { return true }
        return r.questions.isEmpty || q.questions.isEmpty || r.questions == q.questions
    }

    /// A TCP socket on 127.0.0.1 that listens but never accepts or answers: a primary that has
    /// gone quiet. Connections complete in the kernel's backlog. Returns the socket (the caller
    /// closes it) and its port.
    public static func silentTCPListener() -> (fd: Int32, port: Int)? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        let (_, addr) = sockaddr("127.0.0.1", 0)
        let bound = addr.withUnsafeBytes { a in
            bind(fd, a.baseAddress!.assumingMemoryBound(to: Glibc.sockaddr.self), socklen_t(a.count))
        }
        var local = sockaddr_in()
        var size = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &local) {
            $0.withMemoryRebound(to: Glibc.sockaddr.self, capacity: 1) { getsockname(fd, $0, &size) }
        }
        guard bound == 0, listen(fd, 8) == 0, named == 0 else {
            close(fd)
            return nil
        }
        return (fd, Int(UInt16(bigEndian: local.sin_port)))
    }

    /// Opens a TCP connection; the caller closes it.
    public static func tcpConnect(host: String = "127.0.0.1", port: Int, timeout: Double = 2) -> Int32? {
        let (family, addr) = sockaddr(host, port)
        let fd = socket(family, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        setTimeout(fd, timeout)
        let ok = addr.withUnsafeBytes { a in
            connect(fd, a.baseAddress!.assumingMemoryBound(to: Glibc.sockaddr.self), socklen_t(a.count))
        }
        if ok != 0 {
            close(fd)
            return nil
        }
        return fd
    }

    public static func tcpSend(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } == bytes.count
    }

    /// Reads exactly `count` bytes, or nil on EOF or timeout.
    public static func tcpRead(_ fd: Int32, _ count: Int) -> [UInt8]? {
        var out: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: count)
        while out.count < count {
            let n = recv(fd, &buf, count - out.count, 0)
            if n <= 0 { return nil }
            out += buf[0..<n]
        }
        return out
    }

    /// Reads one length-prefixed DNS message.
    public static func tcpReadMessage(_ fd: Int32) -> [UInt8]? {
        guard let len = tcpRead(fd, 2) else { return nil }
        return tcpRead(fd, Int(len[0]) << 8 | Int(len[1]))
    }

    public static func tcp(_ query: [UInt8], host: String = "127.0.0.1", port: Int) -> [UInt8]? {
        guard let fd = tcpConnect(host: host, port: port) else { return nil }
        defer { close(fd) }
        guard tcpSend(fd, [UInt8(query.count >> 8), UInt8(query.count & 0xFF)] + query) else { return nil }
        return tcpReadMessage(fd)
    }

    public static func query(_ name: String, _ type: RRType, id: UInt16 = 1, edns: EDNS? = nil, qclass: RRClass = .in)
        -> [UInt8]
    {
        var h = DNSHeader()
        h.id = id
        return try! DNSMessage(
            header: h, questions: [DNSQuestion(name: try! DNSName(name), type: type, qclass: qclass)], edns: edns
        ).serialize()
    }
}
