import AsyncHTTPClient
import Foundation
import NearcastTestSupport
import Testing

@testable import EtcdClient

/// The etcd client against a real etcd (Debian's etcd-server): what it reads and writes, its
/// transactions, leases and watches.
@Suite(.timeLimit(.minutes(2))) struct EtcdClientTests {
    static func withEtcd(_ body: (EtcdClient, EtcdServer) async throws -> Void) async throws {
        let server = try EtcdServer()
        defer { server.stop() }
        let http = HTTPClient(eventLoopGroupProvider: .singleton)
        let client = EtcdClient(endpoints: [server.endpoint], http: http)
        do { try await body(client, server) } catch {
            try await http.shutdown()
            throw error
        }
        try await http.shutdown()
    }

    static func b(_ s: String) -> [UInt8] { Array(s.utf8) }

    @Test func keysAreWrittenReadByPrefixAndDeleted() async throws {
        try await Self.withEtcd { etcd, _ in
            let r1 = try await etcd.put(Self.b("/nc/zones/a"), Self.b("one"))
            try await etcd.put(Self.b("/nc/zones/b"), [0, 255, 7])
            try await etcd.put(Self.b("/nc/zonesX"), Self.b("not under /nc/zones/"))
            let (rev, kvs) = try await etcd.range(prefix: Self.b("/nc/zones/"))
            #expect(kvs.map(\.keyString) == ["/nc/zones/a", "/nc/zones/b"] && kvs[1].value == [0, 255, 7])
            #expect(rev == r1 + 2 && kvs[0].modRevision == r1)
            #expect(try await etcd.get(Self.b("/nc/zones/a")).kv?.value == Self.b("one"))
            try await etcd.delete(Self.b("/nc/zones/"), prefix: true)
            #expect(try await etcd.range(prefix: Self.b("/nc/")).kvs.map(\.keyString) == ["/nc/zonesX"])
            #expect(try await etcd.get(Self.b("/nc/zones/a")).kv == nil)
        }
    }

    /// A range larger than a page is read in pages, all at the first one's revision: a write
    /// between two pages is not in what they return.
    @Test func aLargeRangeIsReadInPagesAtOneRevision() async throws {
        try await Self.withEtcd { etcd, _ in
            for i in 0..<10 { try await etcd.put(Self.b("/nc/rr/\(i)"), Self.b("v\(i)")) }
            let (rev, kvs) = try await etcd.range(prefix: Self.b("/nc/rr/"), pageSize: 3)
            #expect(kvs.map(\.keyString) == (0..<10).map { "/nc/rr/\($0)" })
            try await etcd.put(Self.b("/nc/rr/5"), Self.b("changed"))
            try await etcd.put(Self.b("/nc/rr/99"), Self.b("added"))
            let then = try await etcd.range(prefix: Self.b("/nc/rr/"), revision: rev, pageSize: 4)
            #expect(then.revision == rev && then.kvs == kvs, "as of the revision asked, whatever came after")
            #expect(try await etcd.range(prefix: Self.b("/nc/rr/"), pageSize: 4).kvs.count == 11)
        }
    }

    /// A condition on a whole prefix: no key under it changed or appeared since a read.
    @Test func aTransactionCanRequireAPrefixUnchanged() async throws {
        try await Self.withEtcd { etcd, _ in
            let owner = Self.b("/nc/rr/www ")
            try await etcd.put(Self.b("/nc/rr/www A"), [1])
            let read = try await etcd.put(Self.b("/nc/rr/wwx A"), [1])  // another owner's
            let kept = try await etcd.txn(
                [.unchangedSince(prefix: owner, before: read + 1)], success: [.put(Self.b("/nc/rr/www CNAME"), [2])])
            #expect(kept.succeeded)
            let stale = try await etcd.txn(
                [.unchangedSince(prefix: owner, before: read + 1)], success: [.put(Self.b("/nc/rr/www TXT"), [3])])
            #expect(!stale.succeeded, "the CNAME written after the read")
            let none = try await etcd.txn(
                [.unchangedSince(prefix: Self.b("/nc/rr/nobody "), before: 1)], success: [.put(Self.b("/nc/x"), [4])])
            #expect(none.succeeded, "no key under the prefix: nothing changed")
        }
    }

    /// The last keys of a prefix, last first: a log whose keys sort by time, read from its end.
    @Test func theLastKeysOfAPrefixComeLastFirst() async throws {
        try await Self.withEtcd { etcd, _ in
            for t in ["10:00", "10:02", "10:01", "10:03"] { try await etcd.put(Self.b("/nc/log/\(t)"), Self.b(t)) }
            try await etcd.put(Self.b("/nc/logZ"), Self.b("not under /nc/log/"))
            #expect(
                try await etcd.last(2, prefix: Self.b("/nc/log/")).map(\.keyString) == [
                    "/nc/log/10:03", "/nc/log/10:02",
                ])
            #expect(try await etcd.last(10, prefix: Self.b("/nc/log/")).count == 4)
            #expect(try await etcd.last(5, prefix: Self.b("/nc/none/")).isEmpty)
        }
    }

    /// A transaction conditioned on the revision a value was read at: the first writer wins, the
    /// second learns it lost and changes nothing.
    @Test func transactionsRefuseAWriteAgainstAStaleRevision() async throws {
        try await Self.withEtcd { etcd, _ in
            let key = Self.b("/nc/geo")
            let read = try await etcd.put(key, Self.b("v1"))
            let first = try await etcd.txn([.modRevision(key, equals: read)], success: [.put(key, Self.b("v2"))])
            let second = try await etcd.txn([.modRevision(key, equals: read)], success: [.put(key, Self.b("v3"))])
            #expect(first.succeeded && !second.succeeded && second.revision == first.revision)
            #expect(try await etcd.get(key).kv?.value == Self.b("v2"))
            // Revision 0: create only if absent.
            let create = try await etcd.txn(
                [.modRevision(Self.b("/nc/new"), equals: 0)], success: [.put(Self.b("/nc/new"), [1])])
            let again = try await etcd.txn(
                [.modRevision(Self.b("/nc/new"), equals: 0)], success: [.put(Self.b("/nc/new"), [2])])
            #expect(create.succeeded && !again.succeeded)
        }
    }

    /// Keys under a lease go with it when it is revoked, and a revoked lease is not renewed.
    @Test func keysUnderALeaseGoWithIt() async throws {
        try await Self.withEtcd { etcd, _ in
            let lease = try await etcd.grantLease(ttl: 60)  // long enough for a slow etcd under a busy suite
            try await etcd.put(Self.b("/nc/health/a/fra1"), Self.b("up"), lease: lease)
            #expect(try await etcd.get(Self.b("/nc/health/a/fra1")).kv?.lease == lease)
            #expect(try await etcd.keepAlive(lease) > 0)
            try await etcd.revoke(lease)
            #expect(try await etcd.get(Self.b("/nc/health/a/fra1")).kv == nil)
            #expect(try await etcd.keepAlive(lease) == 0, "a revoked lease is not renewed")
        }
    }

    /// A watch from a revision brings every later change under its prefix, in order, deletes too.
    @Test func aWatchBringsEveryChangeFromItsRevision() async throws {
        try await Self.withEtcd { etcd, _ in
            let start = try await etcd.put(Self.b("/nc/x/before"), [0])
            var events: [WatchEvent] = []
            let stream = etcd.watch(prefix: Self.b("/nc/x/"), from: start + 1)
            try await etcd.put(Self.b("/nc/x/a"), [1])
            try await etcd.put(Self.b("/nc/y"), [9])  // not under the prefix
            try await etcd.delete(Self.b("/nc/x/before"))
            for try await batch in stream {
                events += batch.events
                if events.count >= 2 { break }
            }
            #expect(events.map(\.kind) == [.put, .delete])
            #expect(events.map(\.kv.keyString) == ["/nc/x/a", "/nc/x/before"])
        }
    }

    /// A watch from a revision etcd has compacted away ends with `.compacted`: read again.
    @Test func aCompactedRevisionEndsTheWatch() async throws {
        try await Self.withEtcd { etcd, server in
            try await etcd.put(Self.b("/nc/a"), [1])
            let latest = try await etcd.put(Self.b("/nc/a"), [2])
            let out = try TestSupport.run(
                try TestSupport.tool("etcdctl"), ["--endpoints", server.endpoint, "compact", "\(latest)"],
                environment: ["ETCDCTL_API": "3"])
            #expect(out.status == 0, "\(out.stderr)")
            await #expect(throws: EtcdError.compacted(latest)) {
                for try await _ in etcd.watch(prefix: Self.b("/nc/"), from: 1) {}
            }
        }
    }

    /// No endpoint that answers: the error names it.
    @Test func anUnreachableClusterSaysWhere() async throws {
        let http = HTTPClient(eventLoopGroupProvider: .singleton)
        let port = try TestSupport.unusedPort()
        let etcd = EtcdClient(endpoints: ["http://127.0.0.1:\(port)"], http: http, timeout: .seconds(2))
        await #expect {
            _ = try await etcd.get(Self.b("/nc/a"))
        } throws: { error in
            guard case .unreachable(let where_, _) = error as? EtcdError else { return false }
            return where_.contains("127.0.0.1:\(port)")
        }
        try await http.shutdown()
    }
}
