import DNSWire
import Foundation
import Logging
import NIOCore
import NIOPosix
import NearcastAnswers
import NearcastConfiguration
import NearcastServer
import NearcastTestSupport
import NearcastZones
import ServiceLifecycle
import Testing

@testable import NearcastDaemon

/// Each part of the daemon that holds what it serves with from its start, run on its own as the
/// daemon's group runs it: it serves while the group runs, lets go of what it holds when the
/// group shuts down, and a part that ends under the daemon fails the group.
@Suite(.timeLimit(.minutes(1))) struct DaemonPartTests {
    let logger = Logger(label: "test")

    /// A DNS server listening on a free port of 127.0.0.1 for the fixture zone, and its TCP port.
    func listening(on group: MultiThreadedEventLoopGroup) async throws -> (DNSServer, Int) {
        let text = try String(contentsOfFile: Repository.fixture("example.test.zone"), encoding: .utf8)
        let origin = try DNSName("example.test.")
        let records = try ZoneFileParser.parse(text: text, fileName: "example.test.zone", origin: origin)
        let zone = try Zone.build(origin: origin, records: records, sourceName: "example.test.zone")
        let server = DNSServer(
            responder: Responder(authority: Authority(zones: [zone])), group: group, logger: logger)
        let bound = try await server.listen(on: ListenAddress(host: "127.0.0.1", port: 0))
        return (server, try #require(bound.port))
    }

    /// Runs `body` with event loops of its own, shut down after it whatever happened.
    func withLoops(_ body: (MultiThreadedEventLoopGroup) async throws -> Void) async throws {
        let loops = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        do { try await body(loops) } catch {
            try? await loops.shutdownGracefully()
            throw error
        }
        try await loops.shutdownGracefully()
    }

    /// The group the daemon makes, of one part.
    func group(_ name: String, _ part: any DaemonPart) -> ServiceGroup {
        ServiceGroup(
            configuration: .init(
                services: [StartedServices.inGroup(PartService(name: name, part: part, logger: logger))],
                logger: logger))
    }

    /// Whether www's two A records are answered over UDP and over TCP (asked off the cooperative
    /// pool: the client blocks).
    func answers(_ port: Int) async throws -> (udp: Bool, tcp: Bool) {
        try await TestSupport.blocking {
            let query = RawClient.query("www.example.test.", .a)
            let answered = { (reply: [UInt8]?) in
                reply.flatMap { try? DNSMessage(wire: $0) }.map { $0.answers.count == 2 } ?? false
            }
            return (answered(RawClient.udp(query, port: port)), answered(RawClient.tcp(query, port: port)))
        }
    }

    /// The listeners as a part in a group of their own, answering; then `meanwhile`. Gives how
    /// the group ended, and the port.
    func runListeners(
        on loops: MultiThreadedEventLoopGroup,
        meanwhile: (ServiceGroup, DNSServer) async throws -> Void
    ) async throws -> (Result<Void, any Error>, Int) {
        let (server, port) = try await listening(on: loops)
        let group = group("DNS listeners", DNSListeners(server: server))
        let ended = try await outcome(of: group.run) {
            let answered = try await answers(port)
            #expect(answered == (udp: true, tcp: true))
            try await meanwhile(group, server)
        }
        return (ended, port)
    }

    @Test func theListenersAnswerWhileTheGroupRunsAndCloseWhenItShutsDown() async throws {
        try await withLoops { loops in
            let (ended, port) = try await runListeners(on: loops) { group, _ in await group.triggerGracefulShutdown() }
            try ended.get()
            let connected = try await TestSupport.blocking { RawClient.tcpConnect(port: port, timeout: 1) }
            #expect(connected == nil)
            if let connected { close(connected) }
        }
    }

    @Test func listenersClosedUnderTheDaemonFailTheGroup() async throws {
        try await withLoops { loops in
            // The listeners closed as a listener that dies would: nobody asked the daemon to stop.
            let (ended, _) = try await runListeners(on: loops) { _, server in await server.stop() }
            #expect(throws: DaemonPartEnded.self) { try ended.get() }
        }
    }
}
