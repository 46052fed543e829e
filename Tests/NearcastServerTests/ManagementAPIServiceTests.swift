import Logging
import NearcastConfiguration
import NearcastTestSupport
import ServiceLifecycle
import Testing

@testable import NearcastServer

#if canImport(Glibc)
import Glibc
#endif

/// The management API as a service of its own, as the daemon's service group runs it: it listens
/// once the group runs, hands on its port, and stops when the group shuts down, open event streams
/// and all; a port it cannot bind fails the service and is handed on as the failure.
///
/// (Its time limit counts from when it is started, and its async steps run on Swift's cooperative
/// threads, which the synchronous daemon tests of its run hold while they wait on their daemons:
/// it can wait behind them for more than a minute while itself taking a second.)
@Suite(.timeLimit(.minutes(3))) struct ManagementAPIServiceTests {
    static let token = "0123456789abcdef0123456789abcdef"

    static func api(port: Int = 0) throws -> ManagementAPI {
        let tokens = LiveTokens(APITokens(entries: [.init(role: .read, token: token, source: "test")]))
        return try ManagementAPI(
            on: ListenAddress(host: "127.0.0.1", port: port), tokens: tokens, desks: APIDesks(daemon: IdleDaemonDesk()),
            logger: Logger(label: "test"))
    }

    @Test func itListensUntilTheGroupShutsDownAndEndsItsEventStreams() async throws {
        let api = try Self.api()
        let group = ServiceGroup(configuration: .init(services: [api], logger: Logger(label: "test")))
        let curl = try TestSupport.tool("curl")
        var (port, opened): (Int, ServerProcess?) = (0, nil)
        defer { opened?.stop(signal: SIGKILL) }
        try await outcome(of: group.run) {
            let bound = try await api.bound.value
            port = bound
            let healthz = try await TestSupport.blocking {
                try TestSupport.run(curl, ["-s", "http://127.0.0.1:\(bound)/healthz"])
            }
            #expect(healthz.stdout == "ok\n", "\(healthz.stdout) \(healthz.stderr)")
            // A page's event stream, open until the API ends it.
            let events = try ServerProcess(
                curl, ["-s", "-N", "-H", "Authorization: Bearer \(Self.token)", "http://127.0.0.1:\(bound)/v1/events"])
            opened = events
            try await eventually("the stream sends its first sample") { events.log.contains("event: sample") }
            await group.triggerGracefulShutdown()
        }.get()
        let stream = try #require(opened)
        try await eventually("the stream ended with the API") { !stream.isRunning }
        let after = try await TestSupport.blocking { [port] in
            try TestSupport.run(
                curl, ["-s", "-o", "/dev/null", "-w", "%{http_code}", "http://127.0.0.1:\(port)/healthz"])
        }
        #expect(after.stdout == "000", "no longer listening: \(after.stdout)")
    }

    @Test func aPortItCannotBindFailsTheServiceAndIsHandedOn() async throws {
        let taken = try RefusingPort()
        let api = try Self.api(port: taken.port)
        await #expect(throws: (any Error).self) { try await api.run() }
        await #expect(throws: (any Error).self) { try await api.bound.value }
    }
}
