import Logging
import NearcastAPIModel
import NearcastConfiguration
import NearcastControl
import NearcastServer

/// A reload, whoever asks for it (SIGHUP, `systemctl reload`, the API's `POST /v1/reload`): the
/// API's tokens file read again, then the config and zones (ZoneReloads). A tokens file with an
/// error refuses the whole reload and nothing changes; a reload ZoneReloads refuses leaves the
/// tokens as they were. So a token is revoked by removing its line and reloading.
struct Reloads: Sendable {
    let zones: ZoneReloads
    let tokens: LiveTokens
    /// The tokens file's settings (`api` applies at a restart: its path stays that of the start).
    let api: APISettings
    let logger: Logger

    func reload(by: String) async throws(ReloadError) -> ReloadReport {
        let fresh: APITokens
        do { fresh = try api.loadTokens() } catch {
            logger.error("reload refused", metadata: ["by": "\(by)", "why": "\(ReloadError.invalid(error))"])
            throw .invalid(error)
        }
        let report = try await zones.reload(by: by)
        let before = tokens.current.entries.count
        tokens.replaceEntries(fresh.entries)
        if api.tokensPath != nil {
            logger.info(
                "API tokens read again", metadata: ["tokens": "\(fresh.entries.count)", "before": "\(before)"])
        }
        return report
    }
}
