import DNSWire
import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import NearcastTestSupport
import Testing

@testable import NearcastHealth

/// The checkers against real sockets on 127.0.0.1: listeners that answer, refuse, or hang.
@Suite(.timeLimit(.minutes(1))) struct HealthCheckerTests {
    static let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
    let checker = HealthChecker(group: HealthCheckerTests.group)

    /// Answers every connection with `reply` (nil: reads and never answers) and closes.
    final class Canned: ChannelInboundHandler, Sendable {
        typealias InboundIn = ByteBuffer
        let reply: String?
        init(_ reply: String?) { self.reply = reply }
        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            guard let reply else { return }
            let channel = context.channel
            context.writeAndFlush(NIOAny(channel.allocator.buffer(string: reply))).whenComplete { _ in
                channel.close(promise: nil)
            }
        }
    }

    /// A TCP listener on a free port of 127.0.0.1.
    func listen(_ reply: String?) async throws -> (any Channel, Int) {
        let ch = try await ServerBootstrap(group: Self.group)
            .childChannelInitializer { $0.pipeline.addHandler(Canned(reply)) }
            .bind(host: "127.0.0.1", port: 0).get()
        return (ch, ch.localAddress!.port!)
    }

    /// Answers every DNS query over UDP with `rcode`.
    final class DNSResponder: ChannelInboundHandler, Sendable {
        typealias InboundIn = AddressedEnvelope<ByteBuffer>
        let rcode: RCode
        init(_ rcode: RCode) { self.rcode = rcode }
        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let env = Self.unwrapInboundIn(data)
            guard let q = try? DNSMessage(wire: Array(env.data.readableBytesView)) else { return }
            var r = DNSMessage(questions: q.questions)
            r.header.id = q.header.id
            r.header.qr = true
            r.rcode = rcode
            let out = AddressedEnvelope(
                remoteAddress: env.remoteAddress, data: context.channel.allocator.buffer(bytes: try! r.serialize()))
            context.writeAndFlush(NIOAny(out), promise: nil)
        }
    }

    @Test func tcpPassesOnAListenerAndFailsOnAClosedPort() async throws {
        let (server, port) = try await listen("")
        #expect(await checker.run(.tcp(host: "127.0.0.1", port: port), timeout: .seconds(2)).passed)
        try await server.close()
        let closed = try RefusingPort()
        defer { withExtendedLifetime(closed) {} }
        let refused = await checker.run(.tcp(host: "127.0.0.1", port: closed.port), timeout: .seconds(2))
        #expect(!refused.passed && !refused.reason.isEmpty)
    }

    @Test func httpChecksTheStatusRangeAndTheBody() async throws {
        let (ok, okPort) = try await listen("HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\nhealthy")
        let (busy, busyPort) = try await listen("HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n")
        let (junk, junkPort) = try await listen("SSH-2.0-OpenSSH\r\n")
        defer {
            ok.close(promise: nil)
            busy.close(promise: nil)
            junk.close(promise: nil)
        }
        func http(_ port: Int, _ body: String? = nil) async -> (passed: Bool, reason: String) {
            await checker.run(
                .http(host: "127.0.0.1", port: port, path: "/health", status: 200...299, bodyContains: body),
                timeout: .seconds(2))
        }
        #expect(await http(okPort) == (true, "status 200"))
        #expect(await http(okPort, "healthy").passed)
        #expect(await http(okPort, "ready") == (false, "status 200, body without 'ready'"))
        #expect(await http(busyPort) == (false, "status 503, expected 200-299"))
        #expect(await http(junkPort) == (false, "not an HTTP reply"))
        // A refused connection is a failure, not a crash (its reply promise is completed too).
        let gone = try RefusingPort()
        defer { withExtendedLifetime(gone) {} }
        let gonePort = gone.port
        #expect(await !http(gonePort).passed)
        let dnsGone = await checker.run(
            .dns(host: "127.0.0.1", port: gonePort, name: .root, type: .soa, rcode: .noError),
            timeout: .milliseconds(300))
        #expect(!dnsGone.passed)
    }

    /// A certificate for node.test (not for its address, as fog nodes' often are not), its own CA,
    /// made by openssl for this run.
    static func makeCertificate() throws -> (cert: String, key: String) {
        try TestSupport.selfSignedCertificate(commonName: "node.test", subjectAltName: "DNS:node.test")
    }

    @Test func httpsVerifiesTheCertificateAndItsName() async throws {
        let (cert, key) = try Self.makeCertificate()
        let context = try NIOSSLContext(
            configuration: .makeServerConfiguration(
                certificateChain: try NIOSSLCertificate.fromPEMFile(cert).map { .certificate($0) },
                privateKey: .privateKey(try NIOSSLPrivateKey(file: key, format: .pem))))
        let server = try await ServerBootstrap(group: Self.group)
            .childChannelInitializer { ch in
                ch.eventLoop.makeCompletedFuture {
                    try ch.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: context))
                    try ch.pipeline.syncOperations.addHandler(
                        Canned("HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\nhealthy"))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        defer { server.close(promise: nil) }
        let port = server.localAddress!.port!
        func https(_ tls: TLSCheck, body: String? = "healthy") async -> (passed: Bool, reason: String) {
            await checker.run(
                .https(host: "127.0.0.1", port: port, path: "/", status: 200...299, bodyContains: body, tls: tls),
                timeout: .seconds(3))
        }
        #expect(
            await https(TLSCheck(serverName: "node.test", caFile: cert)) == (true, "status 200"),
            "the name is in the certificate")
        let byAddress = await https(TLSCheck(caFile: cert))
        #expect(!byAddress.passed, "without server-name the address must be in it, and is not: \(byAddress.reason)")
        let wrongName = await https(TLSCheck(serverName: "other.test", caFile: cert))
        #expect(!wrongName.passed, "a name the certificate does not hold: \(wrongName.reason)")
        let untrusted = await https(TLSCheck())
        #expect(!untrusted.passed, "not signed by a CA the system trusts: \(untrusted.reason)")
        #expect(await https(TLSCheck(verify: false)).passed, "verify: false takes any certificate")
        // Plain HTTP to a TLS port is no pass.
        #expect(
            await !checker.run(
                .http(host: "127.0.0.1", port: port, path: "/", status: 200...299, bodyContains: nil),
                timeout: .seconds(1)
            ).passed)
        try? FileManager.default.removeItem(atPath: URL(fileURLWithPath: cert).deletingLastPathComponent().path)
    }

    @Test func dnsChecksTheRcode() async throws {
        let server = try await DatagramBootstrap(group: Self.group)
            .channelInitializer { $0.pipeline.addHandler(DNSResponder(.nxDomain)) }
            .bind(host: "127.0.0.1", port: 0).get()
        defer { server.close(promise: nil) }
        let port = server.localAddress!.port!
        let name = try DNSName("node.example.")
        #expect(
            await checker.run(
                .dns(host: "127.0.0.1", port: port, name: name, type: .a, rcode: .nxDomain), timeout: .seconds(2)
            ).passed)
        let wrong = await checker.run(
            .dns(host: "127.0.0.1", port: port, name: name, type: .a, rcode: .noError), timeout: .seconds(2))
        #expect(!wrong.passed && wrong.reason.hasPrefix("rcode"))
    }

    @Test func aHangingTargetTimesOutAndDelaysNoOtherCheck() async throws {
        let (hang, hangPort) = try await listen(nil)
        let (ok, okPort) = try await listen("HTTP/1.1 204 No Content\r\n\r\n")
        defer {
            hang.close(promise: nil)
            ok.close(promise: nil)
        }
        // Both at once: the quick one finishes first, whatever the hanging one does.
        let order = await withTaskGroup(of: String.self) { tasks -> [String] in
            tasks.addTask {
                // A timeout far above what the quick check takes even on a loaded machine.
                let r = await checker.run(
                    .http(host: "127.0.0.1", port: hangPort, path: "/", status: 200...299, bodyContains: nil),
                    timeout: .seconds(6))
                #expect(!r.passed, "a target that never answers fails at its timeout")
                return "hanging"
            }
            tasks.addTask {
                let r = await checker.run(
                    .http(host: "127.0.0.1", port: okPort, path: "/", status: 200...299, bodyContains: nil),
                    timeout: .seconds(5))
                #expect(r.passed)
                return "quick"
            }
            var done: [String] = []
            for await name in tasks { done.append(name) }
            return done
        }
        #expect(order == ["quick", "hanging"])
    }
}
