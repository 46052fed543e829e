import AsyncHTTPClient
import Foundation
import NIOCore
import NIOFoundationCompat

/// A change a watch reports.
public struct WatchEvent: Hashable, Sendable {
    public enum Kind: Sendable { case put, delete }
    public var kind: Kind
    /// The key after a put; after a delete, the key with an empty value and the delete's revision.
    public var kv: KeyValue
}

/// The changes of one revision range, as one message of the watch brings them.
public struct WatchBatch: Hashable, Sendable {
    /// The store's revision when the message was sent.
    public var revision: Int64
    public var events: [WatchEvent]
    /// etcd's first message, with no events: the watch is set up (the store is reachable).
    public var created = false
}

extension EtcdClient {
    /// The changes of every key under `prefix` from `revision` on (the revision a range was read at,
    /// plus one), until the stream is dropped; first, a batch with none (`created`) once etcd has
    /// set the watch up. A revision etcd has compacted away ends the stream
    /// with `EtcdError.compacted`: the caller reads everything again. A lost connection ends it
    /// with `.unreachable`.
    public func watch(prefix: [UInt8], from revision: Int64) -> AsyncThrowingStream<WatchBatch, any Error> {
        AsyncThrowingStream { continuation in
            let task = Task {
                do {
                    try await self.runWatch(prefix: prefix, from: revision, continuation)
                    continuation.finish(
                        throwing: EtcdError.unreachable(self.endpoints.joined(separator: ", "), "the watch ended"))
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    private func runWatch(
        prefix: [UInt8], from revision: Int64, _ continuation: AsyncThrowingStream<WatchBatch, any Error>.Continuation
    ) async throws {
        var lastError: EtcdError = .unreachable(endpoints.joined(separator: ", "), "no endpoints")
        for endpoint in endpoints {
            let url = endpoint + "/v3/watch"
            var request = HTTPClientRequest(url: url)
            request.method = .POST
            request.headers.add(name: "Content-Type", value: "application/json")
            if let auth = try await authToken(url) { request.headers.add(name: "Authorization", value: auth) }
            let body = WatchRequest(
                create_request: .init(
                    key: Self.b64(prefix), range_end: Self.b64(Self.prefixEnd(prefix)), start_revision: String(revision)
                ))
            request.body = .bytes(ByteBuffer(data: try JSONEncoder().encode(body)))
            let response: HTTPClientResponse
            do {
                // The stream lives until it is dropped (cancellation), so no deadline but a far one.
                response = try await http.execute(request, deadline: .now() + .hours(24 * 365))
            } catch {
                lastError = .unreachable(endpoint, "\(error)")
                continue
            }
            guard response.status == .ok else {
                let data = Data(buffer: try await response.body.collect(upTo: 1 << 20))
                throw EtcdError.server(status: Int(response.status.code), message: Self.message(data))
            }
            // Messages are JSON objects, one per line.
            var pending: [UInt8] = []
            for try await chunk in response.body {
                pending += chunk.readableBytesView
                while let nl = pending.firstIndex(of: UInt8(ascii: "\n")) {
                    let line = Array(pending[..<nl])
                    pending.removeSubrange(...nl)
                    if let batch = try Self.decodeWatch(line) { continuation.yield(batch) }
                }
            }
            if let batch = try Self.decodeWatch(pending) { continuation.yield(batch) }
            return
        }
        throw lastError
    }

    /// One watch message: its events (nil for a message without any, such as the creation's).
    static func decodeWatch(_ line: [UInt8]) throws -> WatchBatch? {
        guard line.contains(where: { $0 > 0x20 }) else { return nil }
        let message = try JSONDecoder().decode(WatchMessage.self, from: Data(line))
        if let e = message.error {
            throw EtcdError.server(status: e.http_code ?? 0, message: e.message ?? "watch error")
        }
        guard let r = message.result else { return nil }
        if let compact = r.compact_revision.flatMap(Int64.init), compact > 0 { throw EtcdError.compacted(compact) }
        if r.canceled == true {
            throw EtcdError.server(status: 0, message: r.cancel_reason ?? "the watch was canceled")
        }
        if r.created == true && (r.events ?? []).isEmpty {
            return WatchBatch(revision: r.header?.revisionValue ?? 0, events: [], created: true)
        }
        guard let events = r.events, !events.isEmpty else { return nil }
        return WatchBatch(
            revision: r.header?.revisionValue ?? 0,
            events: events.map {
                WatchEvent(kind: $0.type == "DELETE" ? .delete : .put, kv: KeyValue($0.kv ?? WireKeyValue()))
            })
    }
}
