import Foundation

/// A key and its value as etcd holds them, with the revisions that order changes.
public struct KeyValue: Hashable, Sendable {
    public var key: [UInt8]
    public var value: [UInt8]
    /// The revision of the key's creation and of its last change.
    public var createRevision: Int64
    public var modRevision: Int64
    /// The lease the key lives under (0: none).
    public var lease: Int64

    public init(key: [UInt8], value: [UInt8], createRevision: Int64, modRevision: Int64, lease: Int64 = 0) {
        self.key = key
        self.value = value
        self.createRevision = createRevision
        self.modRevision = modRevision
        self.lease = lease
    }

    init(_ w: WireKeyValue) {
        key = w.key.flatMap { Data(base64Encoded: $0) }.map { Array($0) } ?? []
        value = w.value.flatMap { Data(base64Encoded: $0) }.map { Array($0) } ?? []
        createRevision = w.create_revision.flatMap(Int64.init) ?? 0
        modRevision = w.mod_revision.flatMap(Int64.init) ?? 0
        lease = w.lease.flatMap(Int64.init) ?? 0
    }

    /// The key as text (keys in nearcast's layout are UTF-8 paths).
    public var keyString: String { String(decoding: key, as: UTF8.self) }
}

/// A condition of a transaction on one key's state.
public enum EtcdCompare: Sendable {
    /// The key was last changed at this revision (0: it does not exist).
    case modRevision([UInt8], equals: Int64)
    /// The key's value is this.
    case value([UInt8], equals: [UInt8])
    /// Every key under the prefix was last changed before this revision (none was created or
    /// changed since a read at the revision before it); holds when there is no key.
    case unchangedSince(prefix: [UInt8], before: Int64)

    var wire: WireCompare {
        switch self {
        case .unchangedSince(let prefix, let rev):
            WireCompare(
                key: EtcdClient.b64(prefix), target: "MOD", result: "LESS", mod_revision: String(rev), value: nil,
                range_end: EtcdClient.b64(EtcdClient.prefixEnd(prefix)))
        case .modRevision(let key, let rev):
            WireCompare(
                key: EtcdClient.b64(key), target: "MOD", result: "EQUAL", mod_revision: String(rev), value: nil)
        case .value(let key, let v):
            WireCompare(
                key: EtcdClient.b64(key), target: "VALUE", result: "EQUAL", mod_revision: nil, value: EtcdClient.b64(v))
        }
    }
}

/// One write inside a transaction.
public enum EtcdOperation: Sendable {
    case put([UInt8], [UInt8], lease: Int64? = nil)
    case delete([UInt8])
    case deletePrefix([UInt8])

    /// The bytes of its key and value (what counts toward etcd's request limit).
    public var byteCount: Int {
        switch self {
        case .put(let k, let v, _): k.count + v.count
        case .delete(let k), .deletePrefix(let k): k.count
        }
    }

    var wire: WireOperation {
        switch self {
        case .put(let k, let v, let lease):
            WireOperation(
                request_put: PutRequest(
                    key: EtcdClient.b64(k), value: EtcdClient.b64(v), lease: lease.map(String.init)),
                request_delete_range: nil)
        case .delete(let k):
            WireOperation(request_put: nil, request_delete_range: RangeRequest(key: EtcdClient.b64(k), range_end: nil))
        case .deletePrefix(let k):
            WireOperation(
                request_put: nil,
                request_delete_range: RangeRequest(
                    key: EtcdClient.b64(k), range_end: EtcdClient.b64(EtcdClient.prefixEnd(k))))
        }
    }
}

/// Whether a transaction's conditions held, and the store's revision after it.
public struct TxnResult: Equatable, Sendable {
    public var succeeded: Bool
    public var revision: Int64
}
