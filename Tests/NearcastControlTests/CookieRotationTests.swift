import Logging
import NearcastAnswers
import NearcastConfiguration
import NearcastTestSupport
import ServiceLifecycle
import Testing

@testable import NearcastControl

/// The cookie secret over time: a server's own made anew once its lifetime is over (the one before
/// still accepted), a configured one kept, and changed by a reload.
@Suite(.timeLimit(.minutes(1))) struct CookieRotationTests {
    static let logger = Logger(label: "test")

    @Test func aServersOwnSecretIsMadeAnewWhenItsLifetimeIsOver() throws {
        let settings = CookieSettings()
        let cookies = try #require(CookieRotation.cookies(settings))
        let rotation = CookieRotation(cookies: cookies, settings: settings, fastPath: nil, logger: Self.logger)
        let first = cookies.secrets.current
        rotation.tick(now: .now + .seconds(25 * 3600))
        #expect(cookies.secrets.current == first, "not before its lifetime")
        rotation.tick(now: .now + .seconds(26 * 3600 + 1))
        #expect(cookies.secrets.current != first && cookies.secrets.previous == first)
    }

    @Test func aConfiguredSecretIsKeptAndAReloadChangesIt() throws {
        var settings = CookieSettings()
        settings.secret = Array(repeating: 1, count: 16)
        let cookies = try #require(CookieRotation.cookies(settings))
        let rotation = CookieRotation(cookies: cookies, settings: settings, fastPath: nil, logger: Self.logger)
        rotation.tick(now: .now + .seconds(40 * 86400))
        #expect(cookies.secrets == .init(current: Array(repeating: 1, count: 16)))
        settings.secret = Array(repeating: 2, count: 16)
        settings.previousSecret = Array(repeating: 1, count: 16)
        rotation.apply(settings)
        #expect(
            cookies.secrets == .init(current: Array(repeating: 2, count: 16), previous: Array(repeating: 1, count: 16)))
        var off = CookieSettings()
        off.enabled = false
        #expect(CookieRotation.cookies(off) == nil)
    }

    /// As the daemon's group runs it: its minute loop ends when the group shuts down, not at the
    /// next minute.
    @Test func itRunsUntilTheGroupShutsDown() async throws {
        let settings = CookieSettings()
        let cookies = try #require(CookieRotation.cookies(settings))
        let rotation = CookieRotation(cookies: cookies, settings: settings, fastPath: nil, logger: Self.logger)
        let group = ServiceGroup(configuration: .init(services: [rotation], logger: Self.logger))
        let started = ContinuousClock.now
        try await outcome(of: group.run) { await group.triggerGracefulShutdown() }.get()
        #expect(ContinuousClock.now - started < .seconds(30), "ended with the group, not after a minute's sleep")
    }
}
