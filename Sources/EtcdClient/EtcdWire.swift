// swift-format-ignore-file: AlwaysUseLowerCamelCase

// The JSON of etcd's gateway, its fields named as etcd's protobuf JSON mapping spells them.
import Foundation

struct Header: Decodable {
    var revision: String?
    var revisionValue: Int64 { revision.flatMap(Int64.init) ?? 0 }
    struct Wrapped: Decodable { var header: Header }
}

struct WireKeyValue: Decodable {
    init() {}
    var key: String?
    var value: String?
    var create_revision: String?
    var mod_revision: String?
    var lease: String?
}

struct RangeRequest: Codable {
    var key: String
    var range_end: String?
    var revision: String? = nil
    /// At most this many keys (int64 as a JSON string).
    var limit: String? = nil
    /// `DESCEND` with `sort_target` `KEY`: the last keys first.
    var sort_order: String? = nil
    var sort_target: String? = nil
}

struct RangeResponse: Decodable {
    var header: Header
    var kvs: [WireKeyValue]?
    /// More keys lie in the range than `limit` let through.
    var more: Bool?
}

struct PutRequest: Codable {
    var key: String
    var value: String
    var lease: String?
}

struct WireCompare: Encodable {
    var key: String
    var target: String
    var result: String
    var mod_revision: String?
    var value: String?
    /// The comparison holds for every key from `key` to this (and for none, as for a key that
    /// does not exist: its revisions are 0).
    var range_end: String? = nil
}

struct WireOperation: Encodable {
    var request_put: PutRequest?
    var request_delete_range: RangeRequest?
}

struct TxnRequest: Encodable {
    var compare: [WireCompare]
    var success: [WireOperation]
    var failure: [WireOperation]
}

struct TxnResponse: Decodable {
    var header: Header
    var succeeded: Bool?
}

/// Lease messages spell their fields `ID` and `TTL`.
enum LeaseKeys: String, CodingKey {
    case id = "ID"
    case ttl = "TTL"
}

struct LeaseGrantRequest: Encodable {
    var ttl: String
    var id: String
    typealias CodingKeys = LeaseKeys
}

struct LeaseGrantResponse: Decodable {
    var id: String?
    var ttl: String?
    typealias CodingKeys = LeaseKeys
}

struct LeaseKeepAliveRequest: Encodable {
    var id: String
    enum CodingKeys: String, CodingKey { case id = "ID" }
}

struct LeaseKeepAliveResponse: Decodable {
    struct Result: Decodable {
        var id: String?
        var ttl: String?
        typealias CodingKeys = LeaseKeys
    }
    var result: Result?
}

struct AuthResponse: Decodable {
    var token: String?
}

struct ErrorResponse: Decodable {
    var error: String?
    var message: String?
}

struct WatchRequest: Encodable {
    struct Create: Encodable {
        var key: String
        var range_end: String
        var start_revision: String
    }
    var create_request: Create
}

struct WatchMessage: Decodable {
    struct Result: Decodable {
        var header: Header?
        var events: [Event]?
        var compact_revision: String?
        var canceled: Bool?
        var cancel_reason: String?
        var created: Bool?
    }
    struct Event: Decodable {
        var type: String?
        var kv: WireKeyValue?
    }
    struct Failure: Decodable {
        var http_code: Int?
        var message: String?
    }
    var result: Result?
    var error: Failure?
}
