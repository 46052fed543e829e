import DNSWire
import EtcdClient
import Foundation
import NearcastBasics
import NearcastZones

/// A zone as store layout 2 keeps it (docs/ARCHITECTURE.md §13): a key per RRset, so that a
/// change writes the RRsets it changes and nothing else, and writes to different RRsets never
/// touch a common key (and never conflict), and a zone of millions of names fits etcd's limits
/// on a request and a value.
///
/// | key (under `P zones/ORIGIN/`) | value |
/// |---|---|
/// | `meta` | JSON: the serial's base, the import's state and checksum (`Meta`) |
/// | `rr/OWNER TYPE` | the RRset as master-file lines, owner absolute; empty: removed |
///
/// OWNER is the owner lower-cased in presentation form, which escapes a space, so the space
/// before TYPE ends it, and all of an owner's RRsets lie under the prefix `rr/OWNER ` (a
/// transaction can condition on them as one range). A removed RRset keeps its key with an
/// empty value (a tombstone): the zone's serial is derived from the latest revision among its
/// keys, and a key deleted outright would take its revision with it.
///
/// The SOA serial a server serves is not the stored one: it is `Meta.serialBase` plus the
/// revisions since the import (the latest modification revision among the zone's keys minus the
/// meta's), modulo 2^32 (RFC 1982), so every write to the zone raises it on every server alike
/// without writing the SOA's key (the one key every change would otherwise touch).
public enum StoredZone {
    /// What an import writes first (importing) and last (ready), and nothing else writes.
    public struct Meta: Codable, Equatable, Sendable {
        /// The serial served right after the import: the imported SOA's.
        public var serialBase: UInt32
        /// `importing` while an import writes the zone's keys; `ready` once it has written all.
        public var state: State
        /// `Zone.checksum` of what the import wrote (ready only).
        public var checksum: String?
        /// The RRsets the import wrote (ready only).
        public var rrsets: Int?
        /// For a secondary zone of the fleet (ARCHITECTURE §17): its primaries, as
        /// `ADDRESS[:PORT] [key NAME]`, from which the server holding `P transferrer` transfers
        /// it into the store. nil: a zone of the store's own.
        public var primaries: [String]?

        public enum State: String, Codable, Sendable {
            case importing, ready
        }

        public init(
            serialBase: UInt32, state: State, checksum: String? = nil, rrsets: Int? = nil, primaries: [String]? = nil
        ) {
            self.serialBase = serialBase
            self.state = state
            self.checksum = checksum
            self.rrsets = rrsets
            self.primaries = primaries
        }

        enum CodingKeys: String, CodingKey {
            case serialBase = "serial-base"
            case state, checksum, rrsets, primaries
        }

        public var json: [UInt8] {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            return Array((try? encoder.encode(self)) ?? Data())
        }

        public init?(json: [UInt8]) {
            guard let m = try? JSONDecoder().decode(Meta.self, from: Data(json)) else { return nil }
            self = m
        }
    }

    /// Where a zone's served serial starts and counts from: the import's serial and the meta's
    /// modification revision. The one formula of the derived serial (see above).
    public struct SerialBase: Equatable, Sendable {
        public var base: UInt32
        /// The meta key's modification revision (0: none).
        public var metaRevision: Int64

        public init(_ meta: Meta?, metaRevision: Int64) {
            base = meta?.serialBase ?? 0
            self.metaRevision = metaRevision
        }

        /// The serial served once the latest modification revision among the zone's keys is
        /// `revision`: the base plus the revisions since the import, modulo 2^32 (RFC 1982).
        public func serial(at revision: Int64) -> UInt32 {
            base &+ UInt32(truncatingIfNeeded: revision - metaRevision)
        }
    }

    /// `P zones/ORIGIN/`: every key of the zone.
    public static func prefix(_ layout: StoreLayout, _ origin: DNSName) -> String {
        layout.zones + origin.lowercased().description + "/"
    }

    public static func metaKey(_ layout: StoreLayout, _ origin: DNSName) -> String { prefix(layout, origin) + "meta" }

    /// `P zones/ORIGIN/rr/`: the zone's RRsets.
    public static func rrsetsPrefix(_ layout: StoreLayout, _ origin: DNSName) -> String {
        prefix(layout, origin) + "rr/"
    }

    /// `P zones/ORIGIN/rr/OWNER `: every RRset of `owner`.
    public static func ownerPrefix(_ layout: StoreLayout, _ origin: DNSName, _ owner: DNSName) -> String {
        rrsetsPrefix(layout, origin) + owner.lowercased().description + " "
    }

    public static func rrsetKey(_ layout: StoreLayout, _ origin: DNSName, _ owner: DNSName, _ type: RRType) -> String {
        ownerPrefix(layout, origin, owner) + type.description
    }

    /// The owner and type a key under `rrsetsPrefix` names; nil for any other key.
    public static func rrset(ofKey key: String, _ layout: StoreLayout, _ origin: DNSName) -> (DNSName, RRType)? {
        let p = rrsetsPrefix(layout, origin)
        guard key.hasPrefix(p), let space = key.lastIndex(of: " ") else { return nil }
        let body = key[key.index(key.startIndex, offsetBy: p.count)...]
        guard space >= body.startIndex, let owner = try? DNSName(String(key[body.startIndex..<space])),
            let type = RRType(mnemonic: String(key[key.index(after: space)...]))
        else { return nil }
        return (owner, type)
    }

    /// The origin of the zone a key under `P zones/` belongs to (the text up to the first `/`
    /// after the origin's final dot); nil for another key.
    public static func origin(ofKey key: String, _ layout: StoreLayout) -> DNSName? {
        guard key.hasPrefix(layout.zones) else { return nil }
        let rest = key.dropFirst(layout.zones.count)
        guard let slash = rest.range(of: "./") else { return nil }
        return try? DNSName(String(rest[..<slash.lowerBound]) + ".")
    }

    /// An RRset's value: its records as master-file lines (owner absolute), each ending in a
    /// newline, so that the values of a zone's keys one after another are its master file.
    public static func value(_ set: RRSet) -> [UInt8] {
        var out: [UInt8] = []
        for r in set.records() { out += Array((ZoneText.line(r) + "\n").utf8) }
        return out
    }

    /// The RRset a key's `value` holds (nil: a tombstone), read as a master file is; an error
    /// when its records are not all of `owner` and `type`.
    public static func rrset(_ value: [UInt8], owner: DNSName, type: RRType, origin: DNSName)
        throws(DiagnosticsError) -> RRSet?
    {
        guard !value.isEmpty else { return nil }
        let file = "store \(owner) \(type)"
        let records = try ZoneFileParser.parse(
            text: String(decoding: value, as: UTF8.self), fileName: file, origin: origin)
        guard let first = records.first?.record else { return nil }
        guard records.allSatisfy({ $0.record.name == owner && $0.record.type == type }) else {
            throw DiagnosticsError([
                Diagnostic(file: file, line: 0, message: "the key's records are not all \(owner) \(type)")
            ])
        }
        return RRSet(name: owner, type: type, ttl: first.ttl, rdatas: records.map(\.record.rdata))
    }

    /// Every RRset of `zone` as its key and value.
    public static func entries(of zone: Zone, _ layout: StoreLayout) -> [(key: String, value: [UInt8])] {
        var out: [(key: String, value: [UInt8])] = []
        out.reserveCapacity(zone.recordCount)
        for owner in zone.owners {
            for type in zone.types(at: owner) {
                guard let set = zone.rrset(owner, type) else { continue }
                out.append((rrsetKey(layout, zone.origin, owner, type), value(set)))
            }
        }
        return out
    }

    /// One owner's RRsets as the store holds them (a range of `ownerPrefix` and the zone's meta,
    /// at one revision): what a change through the API is made from and conditioned on.
    public struct Owner: Sendable {
        public var origin: DNSName
        public var owner: DNSName
        /// The revision they were read at.
        public var revision: Int64
        public var meta: Meta?
        public var metaRevision: Int64
        /// Each type's value (empty: a tombstone) and modification revision.
        public var values: [RRType: (value: [UInt8], modRevision: Int64)]

        public init(
            origin: DNSName, owner: DNSName, revision: Int64, kvs: [KeyValue], meta: KeyValue?, layout: StoreLayout
        ) {
            (self.origin, self.owner, self.revision) = (origin, owner, revision)
            self.meta = meta.flatMap { Meta(json: $0.value) }
            metaRevision = meta?.modRevision ?? 0
            values = [:]
            for kv in kvs {
                guard let (_, type) = StoredZone.rrset(ofKey: kv.keyString, layout, origin) else { continue }
                values[type] = (kv.value, kv.modRevision)
            }
        }

        /// The RRset of `type` as stored; nil when there is none (or a tombstone).
        public func rrset(_ type: RRType) throws(DiagnosticsError) -> RRSet? {
            try StoredZone.rrset(values[type]?.value ?? [], owner: owner, type: type, origin: origin)
        }

        /// The conditions of a write of the RRset of `type` made from this read: the zone's import
        /// as read (a new import, or one under way, refuses it), the RRset as read (of two writes
        /// to one RRset, one wins), and RFC 1034's CNAME rule, which is the owner's: a CNAME only
        /// if nothing at the owner changed or appeared since the read; anything else only if no
        /// CNAME did. Writes to other owners, and to other RRsets of this one, never conflict.
        public func conditions(writing type: RRType, _ layout: StoreLayout) -> [EtcdCompare] {
            let key = { (t: RRType) in Array(StoredZone.rrsetKey(layout, origin, owner, t).utf8) }
            var out: [EtcdCompare] = [
                .modRevision(Array(StoredZone.metaKey(layout, origin).utf8), equals: metaRevision),
                .modRevision(key(type), equals: values[type]?.modRevision ?? 0),
            ]
            if type == .cname {
                out.append(
                    .unchangedSince(
                        prefix: Array(StoredZone.ownerPrefix(layout, origin, owner).utf8), before: revision + 1))
            } else {
                out.append(.modRevision(key(.cname), equals: values[.cname]?.modRevision ?? 0))
            }
            return out
        }

        /// The serial served once the zone's keys are at `revision`.
        public func serial(at revision: Int64) -> UInt32 {
            SerialBase(meta, metaRevision: metaRevision).serial(at: revision)
        }
    }

    /// A zone read from the store: its keys (`kvs`, a range of `prefix`, at one revision).
    public struct Read: Sendable {
        public var origin: DNSName
        public var meta: Meta?
        /// The meta key's modification revision (0: none).
        public var metaRevision: Int64
        /// The latest modification revision among the zone's keys, tombstones included.
        public var revision: Int64
        /// The RRsets' values, tombstones left out.
        public var values: [[UInt8]]

        public init(origin: DNSName, kvs: [KeyValue], layout: StoreLayout) {
            self.origin = origin
            let metaKey = StoredZone.metaKey(layout, origin)
            (meta, metaRevision, revision, values) = (nil, 0, 0, [])
            for kv in kvs {
                revision = max(revision, kv.modRevision)
                if kv.keyString == metaKey {
                    meta = Meta(json: kv.value)
                    metaRevision = kv.modRevision
                } else if !kv.value.isEmpty {
                    values.append(kv.value)
                }
            }
        }

        /// Whether an import has written the whole zone (`ready`).
        public var isReady: Bool { meta?.state == .ready }

        /// Where the serial served counts from.
        public var serialBase: SerialBase { SerialBase(meta, metaRevision: metaRevision) }

        /// The serial served: `serialBase` plus the revisions since the import (RFC 1982).
        public var serial: UInt32 { serialBase.serial(at: revision) }

        /// The zone as master-file text, its SOA's serial the one served. Throws what the SOA's
        /// value says wrong (none, or not one SOA record).
        public func text() throws(DiagnosticsError) -> String {
            var soaLine: String?
            var rest: [UInt8] = []
            for v in values {
                if let line = Self.soaLine(v) {
                    soaLine = line
                } else {
                    rest += v
                }
            }
            guard let soaLine,
                let records = try? ZoneFileParser.parse(text: soaLine, fileName: "store", origin: origin),
                records.count == 1, case .soa(var soa) = records[0].record.rdata
            else {
                throw DiagnosticsError([
                    Diagnostic(
                        file: "store \(origin)", line: 0, message: "the zone has no SOA record (one, at its apex)")
                ])
            }
            soa.serial = serial
            var apex = records[0].record
            apex.rdata = .soa(soa)
            // With a `$TTL` first, a large zone is read in parts on every core, as a file is.
            return "$ORIGIN \(origin)\n$TTL \(apex.ttl)\n" + ZoneText.line(apex) + "\n"
                + String(decoding: rest, as: UTF8.self)
        }

        /// The line of a value that is an SOA RRset (` IN SOA ` after the owner and TTL).
        static func soaLine(_ value: [UInt8]) -> String? {
            let text = String(decoding: value, as: UTF8.self)
            let fields = text.split(separator: " ", maxSplits: 4)
            guard fields.count >= 4, fields[2] == "IN", fields[3] == "SOA" else { return nil }
            return text
        }
    }
}
