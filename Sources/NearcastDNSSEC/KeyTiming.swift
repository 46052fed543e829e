import Foundation

/// When a key is in the zone's DNSKEY RRset and when it signs (RFC 7583 §3), as BIND's key files
/// say it: `Publish`, `Activate`, `Inactive` and `Delete`, seconds since 1970. A key with none of
/// them (ldns writes none) is published and signs from ever to ever; a key published with no
/// activation yet is one a rollover brought in, which the daemon schedules (`KeyRollover`).
public struct KeyTiming: Equatable, Sendable {
    public var publish: Date?
    public var activate: Date?
    public var inactive: Date?
    public var delete: Date?

    public init(publish: Date? = nil, activate: Date? = nil, inactive: Date? = nil, delete: Date? = nil) {
        (self.publish, self.activate, self.inactive, self.delete) = (publish, activate, inactive, delete)
    }

    /// Whether the key is in the DNSKEY RRset at `now`.
    public func isPublished(at now: Date) -> Bool {
        (publish ?? activate ?? .distantPast) <= now && now < (delete ?? .distantFuture)
    }

    /// Whether the key signs at `now`: activated (or, with no time at all, always) and not yet inactive.
    public func isActive(at now: Date) -> Bool {
        let from: Date? = activate ?? (publish == nil ? .distantPast : nil)
        guard let from else { return false }
        return from <= now && now < (inactive ?? .distantFuture)
    }

    /// Whether a rollover brought the key in and its activation is not scheduled yet.
    public var awaitsSchedule: Bool { publish != nil && activate == nil }

    /// The times after `now` at which the key changes state: when the daemon must look again.
    public func events(after now: Date) -> [Date] {
        [publish, activate, inactive, delete].compactMap { $0 }.filter { $0 > now }
    }
}
