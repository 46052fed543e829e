import DNSWire
import Foundation
import NearcastBasics
import NearcastTSIG
import NearcastZones

#if canImport(Glibc)
import Glibc
#endif

/// A zone transfer in, as a secondary asks its primary (RFC 5936 AXFR, RFC 1995 IXFR): one TCP
/// connection, the request signed with the zone's key when it has one and every reply checked
/// against it, the records read into the whole zone or its changes. Blocking, with one deadline
/// for all of it: the caller runs it on a thread of its own.
public enum TransferIn {
    /// What the primary sent.
    public enum Outcome: Sendable {
        /// Nothing newer than the serial asked from (IXFR).
        case upToDate(serial: UInt32)
        /// The whole zone (AXFR, or an IXFR answered in AXFR's form): its records, the SOA once.
        case zone([ResourceRecord], serial: UInt32)
        /// The changes from the serial asked from, in order (IXFR).
        case changes([ZoneChangeset])
    }

    /// Why a transfer failed, in words for the log and `nearcast zones`.
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
        public init(_ description: String) { self.description = description }
    }

    /// Transfers zone `origin` from the primary at `address` (4 or 16 octets) and `port`: an IXFR
    /// from `serial` when given, otherwise an AXFR; signed with `key` when given.
    public static func fetch(
        _ origin: DNSName, from address: [UInt8], port: UInt16, key: TSIGKey?, serial: UInt32?,
        timeout: Duration = .seconds(60)
    ) throws(Failure) -> Outcome {
        let deadline = ContinuousClock.now + timeout
        let id = UInt16.random(in: 0...UInt16.max)
        var header = DNSHeader()
        header.id = id
        var request = DNSMessage(
            header: header, questions: [DNSQuestion(name: origin, type: serial == nil ? .axfr : .ixfr)])
        if let serial {
            // RFC 1995 §3: the secondary's SOA; the primary reads its serial.
            request.authority = [
                ResourceRecord(
                    name: origin, type: .soa, ttl: 0,
                    rdata: .soa(
                        .init(
                            mname: .root, rname: .root, serial: serial, refresh: 0, retry: 0, expire: 0, minimum: 0)))
            ]
        }
        guard var bytes = try? request.serialize() else { throw Failure("the request cannot be made") }
        var verifier: TSIGStreamVerifier?
        if let key {
            bytes = key.sign(query: bytes, now: now())
            guard let mac = TSIGKey.mac(ofSigned: bytes) else { throw Failure("the request cannot be signed") }
            verifier = TSIGStreamVerifier(key: key, requestMAC: mac)
        }
        let connection = try Connection(address: address, port: port, deadline: deadline)
        defer { connection.close() }
        try connection.send([UInt8(bytes.count >> 8), UInt8(bytes.count & 0xFF)] + bytes)
        var reader = RecordReader(ixfrFrom: serial)
        while true {
            let length = try connection.receive(2)
            let message = try connection.receive(Int(length[0]) << 8 | Int(length[1]))
            if var v = verifier {
                do { try v.check(message, now: now()) } catch { throw Failure("TSIG: \(error)") }
                verifier = v
            }
            let m: DNSMessage
            do { m = try DNSMessage(wire: message) } catch { throw Failure("a message does not read: \(error)") }
            guard m.header.id == id, m.header.qr else { throw Failure("a message that answers another request") }
            guard m.rcode == .noError else { throw Failure("the primary answered \(m.rcode)") }
            for r in m.answers { try reader.take(r) }
            if let outcome = reader.outcome(atEndOfMessage: true) {
                if let verifier, !verifier.lastWasSigned { throw Failure("TSIG: the last message is not signed") }
                return outcome
            }
        }
    }

    static func now() -> UInt64 { UInt64(Date().timeIntervalSince1970) }

    /// Reads a transfer's records in order into its outcome (RFC 1995 §4, RFC 5936 §2.2).
    struct RecordReader {
        let ixfrFrom: UInt32?
        /// The serial of the first SOA: the zone's, which the last SOA repeats.
        var serial: UInt32?
        var count = 0
        var incremental: Bool?
        var records: [ResourceRecord] = []
        var changesets: [ZoneChangeset] = []
        /// In an IXFR, the changeset being read and whether its additions have begun.
        var current: ZoneChangeset?
        var adding = false
        var done = false

        init(ixfrFrom: UInt32?) { self.ixfrFrom = ixfrFrom }

        mutating func take(_ r: ResourceRecord) throws(Failure) {
            guard !done else { throw Failure("records after the transfer's last SOA") }
            count += 1
            let soaSerial: UInt32? = if case .soa(let s) = r.rdata, r.type == .soa { s.serial } else { nil }
            guard let serial else {
                guard let s = soaSerial else { throw Failure("the transfer does not begin with the zone's SOA") }
                self.serial = s
                records.append(r)
                return
            }
            if incremental == nil {
                // The second record tells an incremental answer (an SOA: the first change's old
                // one) from the whole zone.
                incremental = ixfrFrom != nil && soaSerial != nil && soaSerial != serial
            }
            if incremental == false {
                if soaSerial == serial {
                    done = true
                } else {
                    records.append(r)
                }
                return
            }
            // An IXFR's changes: old SOA, removals, new SOA, additions, and so on; the zone's SOA ends them.
            if let s = soaSerial {
                if var c = current, !adding {
                    c.serialAfter = s
                    c.added = [r]
                    current = c
                    adding = true
                    return
                }
                if let c = current { changesets.append(c) }
                current = nil
                adding = false
                if s == serial {
                    done = true
                    return
                }
                current = ZoneChangeset(serialBefore: s, serialAfter: s, removed: [r], added: [])
                return
            }
            guard current != nil else { throw Failure("a change without its SOA") }
            if adding { current!.added.append(r) } else { current!.removed.append(r) }
        }

        /// What the transfer gave, once its records have ended.
        func outcome(atEndOfMessage: Bool) -> Outcome? {
            guard let serial else { return nil }
            if done {
                if incremental == true { return .changes(changesets) }
                return .zone(records, serial: serial)
            }
            // A message of the SOA alone, to an IXFR: nothing newer.
            if count == 1, let from = ixfrFrom, atEndOfMessage, !ZoneHistory.isNewer(serial, than: from) {
                return .upToDate(serial: serial)
            }
            return nil
        }
    }

    /// A TCP connection with one deadline for everything on it.
    final class Connection {
        let fd: Int32
        let deadline: ContinuousClock.Instant

        init(address: [UInt8], port: UInt16, deadline: ContinuousClock.Instant) throws(Failure) {
            self.deadline = deadline
            let v4 = address.count == 4
            fd = socket(
                v4 ? AF_INET : AF_INET6,
                Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue),
                0)
            guard fd >= 0 else { throw Failure("no socket: errno \(errno)") }
            let r = SocketAddressOctets.withSockaddr(address, port: port) { connect(fd, $0, $1) }
            if r != 0 && errno != EINPROGRESS {
                let e = errno
                Glibc.close(fd)
                throw Failure("cannot connect: \(String(cString: strerror(e)))")
            }
            do { try wait(POLLOUT) } catch {
                Glibc.close(fd)
                throw error
            }
            var error: Int32 = 0
            var size = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &size)
            if error != 0 {
                Glibc.close(fd)
                throw Failure("cannot connect: \(String(cString: strerror(error)))")
            }
        }

        func close() { Glibc.close(fd) }

        /// Waits until the socket is ready for `events`, or the deadline passes.
        func wait(_ events: Int32) throws(Failure) {
            while true {
                let left = deadline - ContinuousClock.now
                guard left > .zero else { throw Failure("timed out") }
                var p = pollfd(fd: fd, events: Int16(events), revents: 0)
                // Rounded up, so a wait never ends before the deadline it was given.
                let ms = Int32(min((left.seconds * 1000).rounded(.up), 600_000))
                let ready = poll(&p, 1, ms)
                if ready > 0 { return }
                if ready < 0 && errno != EINTR { throw Failure("poll: \(String(cString: strerror(errno)))") }
            }
        }

        func send(_ bytes: [UInt8]) throws(Failure) {
            var sent = 0
            while sent < bytes.count {
                try wait(POLLOUT)
                let n = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                if n < 0 && errno != EAGAIN && errno != EINTR {
                    throw Failure("send: \(String(cString: strerror(errno)))")
                }
                if n > 0 { sent += n }
            }
        }

        func receive(_ count: Int) throws(Failure) -> [UInt8] {
            var out = [UInt8](repeating: 0, count: count)
            var got = 0
            while got < count {
                try wait(POLLIN)
                let n = out[got...].withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                if n == 0 { throw Failure("the primary closed the connection in the middle of the transfer") }
                if n < 0 && errno != EAGAIN && errno != EINTR {
                    throw Failure("recv: \(String(cString: strerror(errno)))")
                }
                if n > 0 { got += n }
            }
            return out
        }
    }
}
