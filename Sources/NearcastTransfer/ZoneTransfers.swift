import DNSWire
import NearcastZones

/// What the zones served allow of transfers out: each zone's `allow-transfer` rules and its recent
/// changes (for IXFR). A value, carried by the responder it was made for, so that a transfer reads
/// the rules and the history of the zones it transfers, never a mix of two generations.
public struct ZoneTransfers: Sendable {
    /// Each zone's rules, by origin; a zone without any is transferred to nobody.
    public var rules: [DNSName: [TransferRule]]
    /// Each zone's recent changes, by origin.
    public var histories: [DNSName: ZoneHistory]
    /// Each secondary zone's primaries, by origin (served or not yet): who may NOTIFY it.
    public var primaries: [DNSName: [TransferPeer]]

    public init(
        rules: [DNSName: [TransferRule]] = [:], histories: [DNSName: ZoneHistory] = [:],
        primaries: [DNSName: [TransferPeer]] = [:]
    ) {
        self.rules = rules
        self.histories = histories
        self.primaries = primaries
    }

    /// Whether a NOTIFY of zone `origin` from `address`, signed with `signer` (verified; nil:
    /// unsigned), comes from one of its primaries (RFC 1996 §3.10): the address one of theirs,
    /// signed with that primary's key when it has one.
    public func acceptsNotify(_ origin: DNSName, address: [UInt8], signer: DNSName?) -> Bool {
        primaries[origin]?.contains { $0.address == address && ($0.key == nil || $0.key == signer) } ?? false
    }

    /// Whether zone `origin` may be transferred to `address`, asked with a query signed with
    /// `signer` (verified; nil: unsigned).
    public func allows(_ origin: DNSName, address: [UInt8], signer: DNSName?) -> Bool {
        rules[origin]?.contains { $0.allows(address: address, signer: signer) } ?? false
    }
}
