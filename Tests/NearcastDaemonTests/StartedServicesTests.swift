import Logging
import NearcastTestSupport
import ServiceLifecycle
import Synchronization
import Testing

@testable import NearcastDaemon

/// The daemon's start and its group, as an operator relies on them: a start that fails or is
/// asked to stop leaves nothing running, the parts stop in the reverse of their start with the
/// services of their own in their place, and any part that fails stops the others in that order.
@Suite(.timeLimit(.minutes(1))) struct StartedServicesTests {
    let logger = Logger(label: "test")

    /// The parts' stops as they happen, in order.
    final class Stops: Sendable {
        let names = Mutex<[String]>([])
        func note(_ name: String) { names.withLock { $0.append(name) } }
        var order: [String] { names.withLock { $0 } }
    }

    /// A part that holds something from its start (a socket, say): its stop is noted. It can be
    /// made to end on its own while the group runs.
    struct Held: DaemonPart {
        var name: String
        var stops: Stops
        var endsOnItsOwn: AsyncStream<Void>? = nil

        func stop() { stops.note(name) }
        func ended() async throws {
            guard let endsOnItsOwn else { while true { try await Task.sleep(for: .seconds(3600)) } }
            for await _ in endsOnItsOwn { return }
            try Task.checkCancellation()
        }
    }

    /// A part that is a service of its own: it runs until the group shuts down (or fails at once).
    struct Part: Service {
        var name: String
        var stops: Stops
        var fails = false
        struct Failed: Error {}

        func run() async throws {
            if fails { throw Failed() }
            try? await gracefulShutdown()
            stops.note(name)
        }
    }

    /// Runs the group of what started, then, once it is ready, `meanwhile`; gives how the run ended.
    func runUntilReady(
        _ started: StartedServices, meanwhile: () async throws -> Void
    ) async throws -> Result<Void, any Error> {
        let (ready, isReady) = AsyncStream<Void>.makeStream()
        let run: @Sendable () async throws -> Void = { [logger] in
            try await started.runUntilStopped(onReady: { isReady.yield() }, onHangup: {}, logger: logger)
        }
        return try await outcome(of: run) {
            for await _ in ready { break }  // the suite's time limit bounds the wait
            try await meanwhile()
        }
    }

    @Test func aStopAskedForBeforeReadyEndsTheStartAtItsNextStepAndStopsWhatStartedInReverse() async throws {
        let started = StartedServices()
        let stops = Stops()
        await started.add("event loops", Held(name: "event loops", stops: stops))
        try await started.checkpoint(logger: logger)  // no stop asked for: the start goes on
        await started.add("DNS listeners", Held(name: "DNS listeners", stops: stops))
        await started.stopRequested()
        await #expect(throws: Daemon.Exit.stoppedBeforeReady) { try await started.checkpoint(logger: logger) }
        #expect(stops.order == ["DNS listeners", "event loops"])
    }

    @Test func aStartThatGivesUpStopsWhatStartedInReverseAndFails() async throws {
        let started = StartedServices()
        let stops = Stops()
        await started.add("event loops", Held(name: "event loops", stops: stops))
        await started.add("DNS listeners", Held(name: "DNS listeners", stops: stops))
        await #expect(throws: Daemon.Exit.failed) {
            try await started.giveUp("cannot start the XDP fast path", [:], logger: logger)
        }
        #expect(stops.order == ["DNS listeners", "event loops"])
    }

    @Test func aStopOnceReadyStopsEveryPartInReverseWithServicesInTheirPlace() async throws {
        let started = StartedServices()
        let stops = Stops()
        await started.add("event loops", Held(name: "event loops", stops: stops))
        await started.add("cookie secrets", Part(name: "cookie secrets", stops: stops))
        await started.add("health checks", Held(name: "health checks", stops: stops))
        await started.add("management API", Part(name: "management API", stops: stops))
        try await runUntilReady(started) { await started.stopRequested() }.get()
        #expect(stops.order == ["management API", "health checks", "cookie secrets", "event loops"])
    }

    @Test func aPartThatFailsStopsTheOthersInReverseAndTheRunFails() async throws {
        let started = StartedServices()
        let stops = Stops()
        await started.add("event loops", Held(name: "event loops", stops: stops))
        await started.add("health checks", Held(name: "health checks", stops: stops))
        await started.add("fleet health views", Part(name: "fleet health views", stops: stops, fails: true))
        await started.add("management API", Part(name: "management API", stops: stops))
        await #expect(throws: Part.Failed.self) {
            try await started.runUntilStopped(onReady: {}, onHangup: {}, logger: logger)
        }
        #expect(stops.order == ["management API", "health checks", "event loops"])
    }

    @Test func aStopAskedForAfterTheLastStepShutsTheGroupDownAsSoonAsItRuns() async throws {
        let started = StartedServices()
        let stops = Stops()
        await started.add("event loops", Held(name: "event loops", stops: stops))
        await started.add("management API", Part(name: "management API", stops: stops))
        await started.stopRequested()
        try await started.runUntilStopped(onReady: {}, onHangup: {}, logger: logger)
        #expect(stops.order == ["management API", "event loops"])
    }

    @Test func aPartThatEndsOnItsOwnStopsTheOthersInReverseAndTheRunFails() async throws {
        let started = StartedServices()
        let stops = Stops()
        let (ends, end) = AsyncStream<Void>.makeStream()
        await started.add("event loops", Held(name: "event loops", stops: stops))
        await started.add("DNS listeners", Held(name: "DNS listeners", stops: stops, endsOnItsOwn: ends))
        await started.add("health checks", Held(name: "health checks", stops: stops))
        await started.add("management API", Part(name: "management API", stops: stops))
        let ended = try await runUntilReady(started) { end.yield() }
        #expect(throws: DaemonPartEnded.self) { try ended.get() }
        #expect(stops.order == ["DNS listeners", "management API", "health checks", "event loops"])
    }
}
