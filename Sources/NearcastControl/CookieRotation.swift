import Logging
import NearcastAnswers
import NearcastConfiguration
import NearcastDataPath
import ServiceLifecycle
import Synchronization

/// The server secret of DNS cookies over time (bpf/README.md, "DNS Cookies"): the configured one
/// (`cookies: secret`, which a fleet's servers share, rolled by a reload that makes the old one
/// `previous-secret`), or this server's own, made at its start and anew every `secret-lifetime`,
/// the one before still accepted. `ServerCookies` holds the secrets (every responder reads them
/// there); this sets them, and writes them to the fast path with its wall clock, which it puts
/// right every minute (single map writes, as health changes are). A Service: the minute loop runs
/// until the daemon's group shuts down.
package final class CookieRotation: Service {
    package let cookies: ServerCookies
    let fastPath: FastPath?
    let logger: Logger
    struct State {
        var settings: CookieSettings
        var made: ContinuousClock.Instant
    }
    let state: Mutex<State>
    /// Held over a write to the fast path, so that two never cross (the later secrets last).
    let writing = Mutex(())

    /// The cookies `settings` ask for: nil when they are off.
    package static func cookies(_ settings: CookieSettings) -> ServerCookies? {
        guard settings.enabled else { return nil }
        return ServerCookies(secrets(settings) ?? .init(current: randomSecret()))
    }

    /// The configured secrets, if any.
    static func secrets(_ settings: CookieSettings) -> ServerCookies.Secrets? {
        settings.secret.map { ServerCookies.Secrets(current: $0, previous: settings.previousSecret) }
    }

    static func randomSecret() -> [UInt8] {
        var rng = SystemRandomNumberGenerator()  // getrandom(2)
        return (0..<16).map { _ in UInt8.random(in: 0...255, using: &rng) }
    }

    package init(cookies: ServerCookies, settings: CookieSettings, fastPath: FastPath?, logger: Logger) {
        self.cookies = cookies
        self.fastPath = fastPath
        self.logger = logger
        state = Mutex(State(settings: settings, made: .now))
    }

    /// The minute loop, until the group shuts down (or the task is cancelled): the fast path's
    /// clock put right, and a secret of this server's own made anew when its lifetime is over.
    package func run() async {
        while (try? await cancelWhenGracefulShutdown({ try await Task.sleep(for: .seconds(60)) })) != nil {
            tick(now: .now)
        }
    }

    /// One turn of the loop at `now`.
    func tick(now: ContinuousClock.Instant) {
        let rotate = state.withLock { s -> Bool in
            guard s.settings.secret == nil, now - s.made >= .seconds(s.settings.secretLifetime) else { return false }
            s.made = now
            return true
        }
        if rotate {
            cookies.rotate(to: Self.randomSecret())
            logger.info("DNS cookie secret made anew; the one before is still accepted until the next")
        }
        writeFastPath()
    }

    /// A reload's settings: a configured secret that changed (or was added or removed) is set at
    /// once; whether cookies are on takes a restart.
    package func apply(_ settings: CookieSettings) {
        let changed = state.withLock { s -> Bool in
            defer { s.settings = settings }
            return s.settings.secret != settings.secret || s.settings.previousSecret != settings.previousSecret
        }
        guard changed else { return }
        if let configured = Self.secrets(settings) {
            cookies.secrets = configured
        } else {
            cookies.rotate(to: Self.randomSecret())
            state.withLock { $0.made = .now }
        }
        logger.info(
            "DNS cookie secret changed by the config",
            metadata: ["previous-accepted": "\(cookies.secrets.previous != nil)"])
        writeFastPath()
    }

    /// The secrets and the clock, to the fast path.
    func writeFastPath() {
        guard let fastPath else { return }
        writing.withLock { _ in
            do { try fastPath.configureCookies(cookies.secrets) } catch {
                logger.error("cannot write the DNS cookie secret to the fast path", metadata: ["error": "\(error)"])
            }
        }
    }
}
