import DNSWire
import Foundation
import NearcastBasics
import NearcastTestSupport
import NearcastZones
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Reloads that must be refused leave the running daemon as it was, and say why (issue 6).
@Suite(.timeLimit(.minutes(2))) struct ReloadTests {
    @Test func aRefusedReloadChangesNothingAndSaysWhy() throws {
        let dir = try TemporaryDirectory.url("nearcast-reload")
        let zone = dir.appendingPathComponent("z.zone")
        let fixture = try String(contentsOf: URL(fileURLWithPath: DaemonTests.zone), encoding: .utf8)
        try (fixture + "\nnew.example.test. 300 IN A 192.0.2.77\n").write(to: zone, atomically: true, encoding: .utf8)
        let config = dir.appendingPathComponent("c.yaml")
        func writeConfig(listen: String) throws {
            try """
            listen: ["\(listen)"]
            zones: [{ origin: example.test., file: z.zone }]
            api: { listen: "127.0.0.1:0", tokens: tokens }
            """.write(to: config, atomically: true, encoding: .utf8)
        }
        try writeConfig(listen: "127.0.0.1:0")
        let admin = "abcdefabcdefabcdefabcdefabcdef00"
        let writer = "abcdefabcdefabcdefabcdefabcdef11"
        try "admin \(admin)\nwrite \(writer)\n".write(
            to: dir.appendingPathComponent("tokens"), atomically: true, encoding: .utf8)
        let server = try Daemon(["--config", config.path])
        defer { server.stop() }
        func reload(_ token: String) throws -> TestSupport.Output { try server.cli(["reload"], token: token) }
        #expect(try server.ask("new.example.test") == "192.0.2.77\n")

        // A zone with an error: refused with file and line, the old data still served.
        try (fixture + "\nnew.example.test. 300 IN A 192.0.2.78\nbroken.example.test. 300 IN A 300.1.1.1\n").write(
            to: zone, atomically: true, encoding: .utf8)
        let bad = try reload(admin)
        #expect(
            bad.status == 1 && bad.stderr.contains("answered 400: the new config is not valid, nothing was changed"),
            "\(bad.stderr)")
        #expect(bad.stderr.contains("z.zone:"), "the file and line at fault: \(bad.stderr)")
        #expect(try server.ask("new.example.test") == "192.0.2.77\n")

        // Only admins reload.
        #expect(try reload(writer).stderr.contains("answered 403"))

        // A setting only a restart applies: refused as a conflict, nothing changed.
        try (fixture + "\nnew.example.test. 300 IN A 192.0.2.79\n").write(to: zone, atomically: true, encoding: .utf8)
        try writeConfig(listen: "127.0.0.2:0")
        let conflict = try reload(admin)
        #expect(
            conflict.status == 1 && conflict.stderr.contains("answered 409: listen changed: those apply at a restart"),
            "\(conflict.stderr)")
        #expect(try server.ask("new.example.test") == "192.0.2.77\n")

        // Put back, it goes through; SIGHUP does the same.
        try writeConfig(listen: "127.0.0.1:0")
        let ok = try reload(admin)
        #expect(ok.status == 0 && ok.stdout.hasPrefix("reloaded: 1 zone,"), "\(ok.stdout) \(ok.stderr)")
        #expect(ok.stdout.contains("(1 RRset changed)"), "the file compared with the zone served: \(ok.stdout)")
        #expect(try server.ask("new.example.test") == "192.0.2.79\n")
        let again = try reload(admin)
        #expect(again.status == 0 && again.stdout.contains("(0 RRsets changed)"), "\(again.stdout) \(again.stderr)")
        try (fixture + "\nnew.example.test. 300 IN A 192.0.2.80\n").write(to: zone, atomically: true, encoding: .utf8)
        kill(server.pid, SIGHUP)
        try server.waitUntilReady(timeout: 10) { (try? server.ask("new.example.test")) == "192.0.2.80\n" }
        try server.waitUntilReady(timeout: 5) {
            server.log.split(separator: "\n").contains { $0.contains("reloaded") && $0.contains("by=SIGHUP") }
        }
        #expect(
            server.log.split(separator: "\n").contains { $0.contains("by=SIGHUP") && $0.contains("rrsets-changed=1") },
            "\(server.log)")
    }
}

/// Changes through the API are durable (issue 6): audited before they are acknowledged, kept in
/// the state directory, and applied again by a restarted daemon.
@Suite(.timeLimit(.minutes(2))) struct DurableChangeTests {
    struct AuditLine: Decodable {
        var who: String
        var action: String
        var target: String
        var before: String
        var after: String
        var outcome: String
    }

    @Test func overridesAreAuditedKeptAndRestoredAfterARestart() throws {
        // The state directory is the daemon's to make.
        let state = try TemporaryDirectory.url("nearcast-state").appendingPathComponent("state")
        let writer = "fedcba9876543210fedcba9876543210"
        let admin = "00112233445566778899aabbccddeeff"
        let tokens = try TemporaryDirectory.file("tokens", holding: "write \(writer)\nadmin \(admin)\n")
        var api = 0  // the API's port, new at each start
        func start() throws -> (Daemon, Int, URL) {
            let s = try GeoDaemonTests.start(extraArgs: [
                "--api", "127.0.0.1:0", "--api-tokens", tokens.path, "--state-dir", state.path,
            ])
            api = try #require(s.0.apiPort)
            return s
        }
        func cli(_ args: [String], _ token: String) throws -> TestSupport.Output {
            var env = ProcessInfo.processInfo.environment
            env["NEARCAST_TOKEN"] = token
            return try TestSupport.run(
                try TestSupport.product("nearcast"), args + ["--api", "127.0.0.1:\(api)"], environment: env)
        }
        func paris(_ port: Int) throws -> Substring? {
            try TestSupport.run(
                try TestSupport.tool("dig"),
                ["@127.0.0.1", "-p", "\(port)", "geo.example.test", "A", "+subnet=198.51.100.0/24", "+short"]
            )
            .stdout.split(separator: "\n").first
        }
        func audit() throws -> [AuditLine] {
            try String(contentsOf: state.appendingPathComponent("audit.log"), encoding: .utf8).split(separator: "\n")
                .map { try JSONDecoder().decode(AuditLine.self, from: Data($0.utf8)) }
        }

        var (server, port, dir) = try start()
        #expect(try cli(["node", "drain", "par1"], writer).status == 0)
        #expect(try cli(["node", "drain", "nyc1", "--for", "1h"], writer).status == 0)
        #expect(try paris(port) == "192.0.2.10")
        var lines = try audit()
        #expect(
            lines.count == 2 && lines.map(\.action) == ["drain", "drain"] && lines.map(\.target) == ["par1", "nyc1"],
            "\(lines)")
        #expect(lines.allSatisfy { $0.who.hasPrefix("write ") && $0.who.contains(tokens.path) && $0.outcome == "done" })
        #expect(
            lines[0].after == lines[1].before && lines[0].before != lines[0].after,
            "digests chain from change to change")

        // A restart keeps both, the timed one with its time.
        server.stop()
        (server, port, dir) = try start()
        defer { server.stop() }
        #expect(server.log.contains("override restored") && server.log.contains("node=par1"), "\(server.log)")
        #expect(try paris(port) == "192.0.2.10", "still drained after the restart")
        let nodes = try cli(["nodes"], writer).stdout
        #expect(nodes.contains("nyc1") && nodes.contains("(drain, 3") && nodes.contains("s left)"), "\(nodes)")
        let status = try cli(["status"], writer).stdout
        #expect(
            status.contains("nodes 1 up, 2 drained")
                && status.contains("state:     \(state.path) (overrides and audit log kept)"), "\(status)")
        #expect(try cli(["node", "undrain", "par1"], writer).status == 0)
        #expect(try paris(port) == "192.0.2.20")

        // Reloads are audited too, refused ones included.
        #expect(try cli(["reload"], admin).status == 0)
        lines = try audit()
        #expect(
            lines.last?.action == "reload" && lines.last?.outcome == "done"
                && lines.last?.who.hasPrefix("admin ") == true, "\(lines)")
        #expect(lines.last?.before == lines.last?.after, "the same files: the same digest")
    }
}

/// Records changed through the API and the CLI while the zone is served (issue 6): checked,
/// audited, journaled (durable at once, a crash included), served at once, written back to the
/// zone's file within `zonefile-sync`, and kept across a restart; refusals say why with the right
/// status.
@Suite(.timeLimit(.minutes(2))) struct RecordChangeTests {
    /// A change made for a version of an RRset (If-Match, as `nearcast records --name --type`
    /// prints it) is made while the version is the one given, and refused (412) once it moved.
    /// On a server of its own the version is the zone's serial.
    @Test func aChangeForAVersionIsRefusedOnceTheVersionMoved() throws {
        let dir = try TemporaryDirectory("nearcast-ifmatch")
        let zone = dir.path + "/z.zone"
        try FileManager.default.copyItem(atPath: DaemonTests.zone, toPath: zone)
        let writer = "22222222222222222222222222222222"
        try "write \(writer)\n".write(toFile: dir.path + "/tokens", atomically: true, encoding: .utf8)
        try """
        listen: ["127.0.0.1:0"]
        zones: [{ origin: example.test., file: z.zone }]
        api: { listen: "127.0.0.1:0", tokens: tokens }
        """.write(toFile: dir.path + "/c.yaml", atomically: true, encoding: .utf8)
        let server = try Daemon(["--config", dir.path + "/c.yaml"])
        defer { server.stop() }
        func cli(_ args: [String]) throws -> TestSupport.Output { try server.cli(args, token: writer) }
        let listed = try cli(["records", "example.test.", "--name", "www", "--type", "A"])
        #expect(listed.stdout.hasPrefix("; version s2026112201\n"), "\(listed.stdout)\(listed.stderr)")
        let set = try cli(["record", "set", "example.test.", "www", "A", "192.0.2.31", "--if-match", "s2026112201"])
        #expect(set.status == 0, "\(set.stderr)")
        // The same version again: it moved with the change just made.
        let stale = try cli(["record", "set", "example.test.", "www", "A", "192.0.2.32", "--if-match", "s2026112201"])
        #expect(stale.status != 0 && stale.stderr.contains("412"), "\(stale.stderr)")
        #expect(stale.stderr.contains("is at version s2026112202"), "\(stale.stderr)")
        let after = try cli(["records", "example.test.", "--name", "www", "--type", "A"])
        #expect(after.stdout == "; version s2026112202\nwww.example.test. 300 IN A 192.0.2.31\n", "\(after.stdout)")
    }

    @Test func recordsAreAddedAndDeletedWhileServed() async throws {
        let dir = try TemporaryDirectory.url("nearcast-records")
        let zone = dir.appendingPathComponent("z.zone")
        try FileManager.default.copyItem(at: URL(fileURLWithPath: DaemonTests.zone), to: zone)
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: zone.path)
        let reader = "11111111111111111111111111111111"
        let writer = "22222222222222222222222222222222"
        try "read \(reader)\nwrite \(writer)\n".write(
            to: dir.appendingPathComponent("tokens"), atomically: true, encoding: .utf8)
        try """
        listen: ["127.0.0.1:0"]
        zones: [{ origin: example.test., file: z.zone }]
        api: { listen: "127.0.0.1:0", tokens: tokens }
        state-dir: state
        zonefile-sync: 1
        """.write(to: dir.appendingPathComponent("c.yaml"), atomically: true, encoding: .utf8)
        let journal = zone.path + ".journal"
        func start() throws -> Daemon { try Daemon(["--config", dir.appendingPathComponent("c.yaml").path]) }
        var server = try start()
        defer { server.stop() }
        func cli(_ args: [String], _ token: String) throws -> TestSupport.Output { try server.cli(args, token: token) }
        let zones = try cli(["zones"], reader)
        #expect(
            zones.stdout.contains("example.test.  serial 2026112201  60 records"), "\(zones.stdout) \(zones.stderr)")

        let added = try cli(["record", "add", "example.test.", "api", "A", "192.0.2.200", "--ttl", "120"], writer)
        #expect(
            added.status == 0 && added.stdout == "example.test.: added 1, serial 2026112202, 61 records\n",
            "\(added.stdout) \(added.stderr)")
        #expect(try server.ask("api.example.test") == "192.0.2.200\n", "served at once")
        #expect(try cli(["record", "add", "example.test.", "@", "TXT", "\"hello world\""], writer).status == 0)
        #expect(try server.ask("example.test", "TXT").contains("\"hello world\""))
        let listed = try cli(["records", "example.test.", "--name", "api"], reader)
        #expect(listed.stdout == "api.example.test. 120 IN A 192.0.2.200\n", "\(listed.stdout) \(listed.stderr)")
        // Written back to the file once zonefile-sync has passed; the journal then holds nothing.
        try await eventually("the changes written back to the zone file", timeout: 15) {
            let text = try String(contentsOf: zone, encoding: .utf8)
            return text.contains("api.example.test. 120 IN A 192.0.2.200") && text.contains("\"hello world\"")
                && !FileManager.default.fileExists(atPath: journal)
        }
        let mode = try FileManager.default.attributesOfItem(atPath: zone.path)[.posixPermissions] as? Int
        #expect(mode == 0o644, "the zone file keeps its mode: \(String(mode ?? 0, radix: 8))")

        // Refusals, each with its status and the field or rule at fault; nothing changes.
        let readOnly = try cli(["record", "add", "example.test.", "x", "A", "192.0.2.1"], reader)
        #expect(
            readOnly.stderr.contains("has no token of role write") || readOnly.stderr.contains("403"),
            "\(readOnly.stderr)")
        let bad = try cli(["record", "add", "example.test.", "x", "A", "not-an-address"], writer)
        #expect(
            bad.stderr.contains(
                "answered 400: data: A record for x.example.test.: 'not-an-address' is not an IPv4 address"),
            "\(bad.stderr)")
        let cname = try cli(["record", "add", "example.test.", "api", "CNAME", "www"], writer)
        #expect(cname.stderr.contains("answered 400: the zone would not be valid"), "\(cname.stderr)")
        #expect(
            cname.stderr.contains("z.zone as changed:") && cname.stderr.contains("has a CNAME and other data"),
            "\(cname.stderr)")
        let twice = try cli(["record", "add", "example.test.", "api", "A", "192.0.2.200"], writer)
        #expect(
            twice.stderr.contains("answered 409:") && twice.stderr.contains("already in the zone"), "\(twice.stderr)")
        #expect(
            try cli(["record", "delete", "example.test.", "nothere", "A"], writer).stderr.contains(
                "answered 404: no A record at nothere.example.test."))
        #expect(
            try cli(["records", "other.test."], reader).stderr.contains(
                "answered 404: no zone other.test. is served here"))
        var r = URLRequest(url: URL(string: "http://\(server.api)/v1/zones/example.test./records")!)
        r.httpMethod = "POST"
        r.httpBody = Data(#"{"name": "x", "type": "A"}"#.utf8)
        r.setValue("Bearer \(writer)", forHTTPHeaderField: "Authorization")
        let (body, response) = try await URLSession.shared.data(for: r)
        #expect(
            (response as! HTTPURLResponse).statusCode == 400
                && String(decoding: body, as: UTF8.self).contains("field data is missing"))

        // A restart serves what was acknowledged; a delete takes it away again. (From here on the
        // file is written back after an hour: what is served after a crash comes from the journal.)
        let config = try String(contentsOf: dir.appendingPathComponent("c.yaml"), encoding: .utf8)
        try config.replacingOccurrences(of: "zonefile-sync: 1", with: "zonefile-sync: 3600").write(
            to: dir.appendingPathComponent("c.yaml"), atomically: true, encoding: .utf8)
        server.stop()
        server = try start()
        #expect(try server.ask("api.example.test") == "192.0.2.200\n", "kept across a restart")
        #expect(
            try cli(["record", "delete", "example.test.", "api", "A", "192.0.2.200"], writer).stdout.contains(
                "deleted 1, serial 2026112204"))
        #expect(try server.ask("api.example.test").isEmpty)
        // Acknowledged means in the journal, synced: a daemon killed before the write-back loses nothing.
        #expect(try cli(["record", "add", "example.test.", "crash", "A", "192.0.2.201"], writer).status == 0)
        #expect(
            try String(contentsOfFile: journal, encoding: .utf8).contains("+ crash.example.test. 300 IN A 192.0.2.201"))
        _ = server.stop(signal: SIGKILL)
        #expect(
            !(try String(contentsOf: zone, encoding: .utf8)).contains("crash.example.test."), "not written back yet")
        // As if killed in the middle of the next change's append: that block, cut short, was never
        // acknowledged, and is cut off before the next change is appended (else that change would
        // follow it unread, and the journal would no longer read).
        try DurableFile.append(journal, bytes: Array("changeset 2026112205 2026112206\n+ torn.example.test. 3".utf8))
        server = try start()
        #expect(try server.ask("crash.example.test") == "192.0.2.201\n", "replayed from the journal after a crash")
        #expect(try server.ask("api.example.test").isEmpty, "and the delete before it too")
        let audit = try String(contentsOf: dir.appendingPathComponent("state/audit.log"), encoding: .utf8)
        #expect(
            audit.split(separator: "\n").count == 4 && audit.contains(#""action":"record""#)
                && audit.contains("delete api A 192.0.2.200"), "\(audit)")
        // A set replaces the address in one change, journaled as one block: no moment without one.
        let set = try cli(["record", "set", "example.test.", "crash", "A", "192.0.2.202", "--ttl", "60"], writer)
        #expect(set.status == 0 && set.stdout.contains("set 1, serial 2026112206"), "\(set.stdout) \(set.stderr)")
        #expect(try server.ask("crash.example.test") == "192.0.2.202\n")
        let blocks = try String(contentsOfFile: journal, encoding: .utf8).components(
            separatedBy: "changeset 2026112205 2026112206\n")
        #expect(
            blocks.count == 2 && blocks[1].contains("- crash.example.test. 300 IN A 192.0.2.201")
                && blocks[1].contains("+ crash.example.test. 60 IN A 192.0.2.202"), "\(blocks)")
        let same = try cli(["record", "set", "example.test.", "crash", "A", "192.0.2.202"], writer)
        #expect(same.stderr.contains("answered 409:") && same.stderr.contains("already these"), "\(same.stderr)")
        _ = server.stop(signal: SIGKILL)
        server = try start()
        #expect(try server.ask("crash.example.test") == "192.0.2.202\n", "the change after the cut block, replayed")
        #expect(try server.ask("torn.example.test").isEmpty)
    }
}

/// A zone of real size changed faster than its file can be written: write-backs never overlap
/// (two writers of one file would interleave it), and once the changes stop the file holds them
/// all, reads back as a zone, and the journal is gone (issue 29).
@Suite(.timeLimit(.minutes(3))) struct LargeZoneWriteBackTests {
    @Test func changesFasterThanWriteBacksEndInOneWholeFile() async throws {
        let dir = try TemporaryDirectory.url("nearcast-big")
        let zone = dir.appendingPathComponent("z.zone")
        let names = 20_000
        var text =
            "$ORIGIN big.test.\n$TTL 300\n@ SOA ns1 hostmaster 1 3600 600 1209600 60\n@ NS ns1\nns1 A 192.0.2.53\n"
        for i in 0..<names { text += "n\(i) A 10.\(i >> 16 & 255).\(i >> 8 & 255).\(i & 255)\n" }
        try text.write(to: zone, atomically: true, encoding: .utf8)
        let writer = String(repeating: "2", count: 32)
        try "write \(writer)\n".write(to: dir.appendingPathComponent("tokens"), atomically: true, encoding: .utf8)
        // zonefile-sync 0: every change asks for a write-back at once, and one takes longer than a change.
        try """
        listen: ["127.0.0.1:0"]
        zones: [{ origin: big.test., file: z.zone }]
        api: { listen: "127.0.0.1:0", tokens: tokens }
        state-dir: state
        zonefile-sync: 0
        """.write(to: dir.appendingPathComponent("c.yaml"), atomically: true, encoding: .utf8)
        let server = try await TestSupport.blocking {
            try Daemon(["--config", dir.appendingPathComponent("c.yaml").path], timeout: 120)
        }
        defer { server.stop() }
        let api = try #require(server.apiPort)
        let changes = 24
        try await withThrowingTaskGroup(of: Int.self) { group in
            for k in 0..<changes {
                group.addTask {
                    var r = URLRequest(url: URL(string: "http://127.0.0.1:\(api)/v1/zones/big.test./records")!)
                    r.httpMethod = "POST"
                    r.httpBody = Data(#"{"name": "w\#(k)", "type": "A", "ttl": 300, "data": "192.0.2.\#(k + 1)"}"#.utf8)
                    r.setValue("Bearer \(writer)", forHTTPHeaderField: "Authorization")
                    r.timeoutInterval = 60
                    let (_, response) = try await URLSession.shared.data(for: r)
                    return (response as! HTTPURLResponse).statusCode
                }
            }
            for try await status in group { #expect(status == 200) }
        }
        try await eventually("every change written back and the journal gone", timeout: 90) {
            let now = try String(contentsOf: zone, encoding: .utf8)
            return (0..<changes).allSatisfy { now.contains("w\($0).big.test. 300 IN A 192.0.2.\($0 + 1)\n") }
                && !FileManager.default.fileExists(atPath: zone.path + ".journal")
        }
        let records = try ZoneFileParser.parse(path: zone.path, origin: try DNSName("big.test."))
        #expect(records.count == names + changes + 3, "the file reads back whole: \(records.count) records")
        #expect(!server.log.contains("changed on disk"), "no write-back took another's file for a hand edit")
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.contains(".tmp-") }
        #expect(leftovers.isEmpty, "\(leftovers)")
    }

    /// A write-back is dropped when a reload changes the zone while it is written (the file it
    /// wrote would take the reload's place), not when reloads that change no zone come meanwhile:
    /// a fleet reloads for every node that registers, and a zone's write-backs were all dropped
    /// while they came (its journal grew, and each write was done again and thrown away).
    @Test func reloadsThatChangeNoZoneDoNotHoldWriteBacksOff() async throws {
        let dir = try TemporaryDirectory("nearcast-overtaken")
        var text =
            "$ORIGIN big.test.\n$TTL 300\n@ SOA ns1 hostmaster 1 3600 600 1209600 60\n@ NS ns1\nns1 A 192.0.2.53\n"
        for i in 0..<20_000 { text += "n\(i) A 10.\(i >> 16 & 255).\(i >> 8 & 255).\(i & 255)\n" }
        let zone = try dir.write(text, to: "z.zone")
        let writer = String(repeating: "2", count: 32)
        try dir.write("write \(writer)\n", to: "tokens")
        try dir.write(
            """
            listen: ["127.0.0.1:0"]
            zones: [{ origin: big.test., file: z.zone }]
            api: { listen: "127.0.0.1:0", tokens: tokens }
            state-dir: state
            zonefile-sync: 0
            """, to: "c.yaml")
        let server = try await TestSupport.blocking { try Daemon(["--config", dir.file("c.yaml")], timeout: 120) }
        defer { server.stop() }
        let api = try #require(server.apiPort)
        // Reloads one after another (each reads and compares the file: longer than a write-back),
        // under way before the change, so that its write-back meets them.
        let hangUps = Task {
            while !Task.isCancelled {
                kill(server.pid, SIGHUP)
                try? await Task.sleep(for: .milliseconds(20))
            }
        }
        defer { hangUps.cancel() }
        try await eventually("a reload done", timeout: 60) { server.log.contains("by=SIGHUP") }
        var r = URLRequest(url: URL(string: "http://127.0.0.1:\(api)/v1/zones/big.test./records")!)
        r.httpMethod = "POST"
        r.httpBody = Data(#"{"name": "added", "type": "A", "ttl": 300, "data": "192.0.2.9"}"#.utf8)
        r.setValue("Bearer \(writer)", forHTTPHeaderField: "Authorization")
        let (_, response) = try await URLSession.shared.data(for: r)
        #expect((response as! HTTPURLResponse).statusCode == 200)
        // (Its log line comes after the file is in place and its journal trimmed. Under a loaded
        // test run a debug build's reload of 20,000 names takes seconds, and the write-back its
        // turns between them.)
        try await eventually("the change written back while reloads come", timeout: 150) {
            server.log.contains("zone file written back")
        }
        hangUps.cancel()
        #expect(try String(contentsOfFile: zone, encoding: .utf8).contains("added.big.test. 300 IN A 192.0.2.9\n"))
    }
}
