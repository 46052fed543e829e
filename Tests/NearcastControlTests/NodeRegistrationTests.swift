import Foundation
import Logging
import NIOPosix
import NearcastAPIModel
import NearcastBasics
import NearcastConfiguration
import NearcastFleet
import NearcastGeo
import NearcastHealth
import NearcastServer
import NearcastStore
import NearcastTestSupport
import Testing
import Yams

@testable import NearcastControl

/// Nodes registering themselves with a fleet (issue 18): a registration is checked as the geo
/// section checks a node, joins existing pools only, never replaces a declared node, and is served
/// as if the section declared it. The store here is a stand-in; FleetTests registers through a
/// real etcd and three servers.
@Suite(.timeLimit(.minutes(1))) struct NodeRegistrationTests {
    static let geo = """
        database: test.mmdb
        nodes:
          - { id: fra1, ipv4: 192.0.2.10, latitude: 50.11, longitude: 8.68 }
        pools:
          - { id: web, members: [fra1] }
          - { id: api, members: [fra1] }
        names:
          - { name: www.example.test, type: A, pool: web }
        """

    static func problems(_ json: String) -> String {
        do {
            _ = try NodeRegistration.parse(json, joining: geo, fileName: "registration")
            return ""
        } catch { return error.description }
    }

    @Test func aRegistrationIsCheckedAsTheGeoSectionChecksANode() throws {
        let r = try NodeRegistration.parse(
            #"{"id": "edge7", "ipv4": "192.0.2.70", "latitude": 50.0, "longitude": 8.0, "pools": ["web"], "checks": [{"type": "tcp", "port": 443}]}"#,
            joining: Self.geo, fileName: "registration")
        #expect(r.id == "edge7" && r.pools == ["web"])
        #expect(Self.problems("[1, 2]").contains("a registration is a JSON object"))
        #expect(
            Self.problems(#"{"id": "edge7", "ipv4": "192.0.2.300", "latitude": 50, "longitude": 8, "pools": ["web"]}"#)
                .contains("registration:1: node edge7: ipv4 '192.0.2.300' is not an IPv4 address"))
        #expect(
            Self.problems(#"{"id": "edge7", "ipv4": "192.0.2.70", "latitude": 50, "longitude": 8}"#)
                .contains("a registration needs pools"))
        #expect(
            Self.problems(#"{"id": "edge7", "ipv4": "192.0.2.70", "latitude": 50, "longitude": 8, "pools": ["img"]}"#)
                .contains("pool img is not in the fleet's geo section (pools: api, web)"))
        #expect(
            Self.problems(#"{"id": "fra1", "ipv4": "192.0.2.70", "latitude": 50, "longitude": 8, "pools": ["web"]}"#)
                .contains("node fra1 is declared in the fleet's geo section"))
        #expect(
            Self.problems(
                #"{"id": "edge7", "ipv4": "192.0.2.70", "latitude": 50, "longitude": 8, "pools": ["web"], "colour": 1}"#
            )
            .contains("unknown key 'colour' in geo nodes"))
    }

    /// As a server serves them: kept beside the geo section in its snapshot of the store, added
    /// to the section when the snapshot's config is read, and again after a registration leaves.
    @Test func registeredNodesAreServedAsMembersOfTheirPools() throws {
        let edge = NodeRegistration(
            stored: #"{"id": "edge7", "ipv4": "192.0.2.70", "latitude": 50, "longitude": 8, "pools": ["web", "gone"]}"#)!
        let shadow = NodeRegistration(
            stored: #"{"id": "fra1", "ipv4": "192.0.2.99", "latitude": 0, "longitude": 0, "pools": ["api"]}"#)!
        let broken = NodeRegistration(stored: #"{"id": "bad1", "latitude": 0, "longitude": 0, "pools": ["api"]}"#)!
        #expect(edge.node?.ipv4 == [192, 0, 2, 70] && broken.node == nil, "no address: not a node")
        let dir = try TemporaryDirectory()
        let snapshot = StoreSnapshot(directory: dir.file("store"))
        var files = FleetFiles(geo: Self.geo)
        for r in [edge, shadow, broken] { files.registered[r.id] = r }
        try snapshot.write(files, revision: 7)
        var config = try snapshot.config(over: NearcastConfig())
        #expect(config.geo.nodes.map(\.id) == ["fra1", "edge7"])
        #expect(config.geo.nodes[0].ipv4 == [192, 0, 2, 10], "a declared node is never replaced by a registration")
        #expect(config.geo.pools.map(\.members) == [["fra1", "edge7"], ["fra1"]], "joins the pools that exist")
        #expect(config.geo.nodes[1].declaredAt == "registration of edge7")
        #expect(try String(contentsOfFile: snapshot.configPath, encoding: .utf8).contains("edge7") == false)

        files.registered["edge7"] = nil
        _ = try snapshot.replaceShared(files, zones: [])
        config = try snapshot.config(over: NearcastConfig())
        #expect(config.geo.nodes.map(\.id) == ["fra1"] && config.geo.pools.map(\.members) == [["fra1"], ["fra1"]])

        // Without a geo section, registered nodes are not served (nothing to compile them into).
        files.geo = nil
        files.registered["edge7"] = edge
        _ = try snapshot.replaceShared(files, zones: [])
        #expect(try snapshot.config(over: NearcastConfig()).geo.isEmpty)
    }

    /// A stand-in store: the geo section and registrations, with revisions; `raceOnce` makes the
    /// first conditional write find something changed.
    actor Store: SharedNodes {
        var nodes: [String: (json: String, modRevision: Int64)] = [:]
        var revision: Int64 = 10
        var raceOnce = false
        var audit: [AuditLog.Entry] = []

        func geoText() async throws -> (text: String?, modRevision: Int64) { (NodeRegistrationTests.geo, 3) }
        func registration(_ id: String) async throws -> (json: String, modRevision: Int64)? { nodes[id] }
        func putRegistration(_ r: NodeRegistration, ifGeoAt: Int64, ifNodeAt: Int64, audit entry: AuditLog.Entry)
            async throws -> Int64?
        {
            if raceOnce {
                raceOnce = false
                return nil
            }
            guard ifGeoAt == 3, ifNodeAt == (nodes[r.id]?.modRevision ?? 0) else { return nil }
            revision += 1
            nodes[r.id] = (r.json, revision)
            audit.append(entry)
            return revision
        }
        func deleteRegistration(_ id: String, ifAt: Int64, audit entry: AuditLog.Entry) async throws -> Int64? {
            guard nodes[id]?.modRevision == ifAt else { return nil }
            revision += 1
            nodes[id] = nil
            audit.append(entry)
            return revision
        }
        func waitServed(_ revision: Int64, timeout: Duration) async -> Bool { true }
        func loseNextRace() { raceOnce = true }
        func json(_ id: String) -> String? { nodes[id]?.json }
    }

    @Test func aRegistrationIsOneConditionedWriteWithItsAuditLine() async throws {
        let store = Store()
        let monitor = HealthMonitor(
            checker: HealthChecker(group: MultiThreadedEventLoopGroup.singleton), nodes: [:], onChange: { _ in })
        let registry = NodeRegistry(store: store, monitor: monitor, logger: Logger(label: "test"))
        let json = #"{"id": "edge7", "ipv4": "192.0.2.70", "latitude": 50, "longitude": 8, "pools": ["web"]}"#
        await store.loseNextRace()
        do {
            _ = try await registry.register(json, by: "agent edge7")
            Issue.record("a registration that lost a race must be refused")
        } catch {
            guard case .conflict(let why) = error else { throw error }
            #expect(why.contains("changed in the store while this registration was checked"), "\(why)")
        }
        _ = try await registry.register(json, by: "agent edge7")
        #expect(await store.json("edge7") == json)
        await #expect(throws: RegistrationError.self) {
            try await registry.register(#"{"id": "edge8", "latitude": 1, "longitude": 1, "pools": ["web"]}"#, by: "x")
        }
        try await registry.deregister("edge7", by: "write ops")
        #expect(await store.json("edge7") == nil)
        #expect(await store.audit.map(\.action) == ["register", "deregister"])
        do {
            try await registry.deregister("edge7", by: "write ops")
            Issue.record("deregistering a node that is not registered must be refused")
        } catch {
            guard case .notFound = error else { throw error }
        }
    }
}
