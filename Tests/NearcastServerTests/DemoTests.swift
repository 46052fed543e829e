import Foundation
import NearcastTestSupport
import Testing

/// What `make run` starts, as a newcomer meets it: nearcastd on examples/demo/nearcast.yaml answers
/// the commands `make run` prints (the zone's names, the geo name for a client in Paris, the CLI's
/// explain with the demo's token). The config is the demo's own, its ports made 0 and its
/// relative paths followed from a copy, so that a change that breaks the demo fails here.
@Suite(.timeLimit(.minutes(2))) struct DemoTests {
    @Test func theDemoAnswersWhatMakeRunPrints() throws {
        let demo = Repository.root.appendingPathComponent("examples/demo")
        let dir = try TemporaryDirectory("nearcast-demo")
        var config = try String(contentsOf: demo.appendingPathComponent("nearcast.yaml"), encoding: .utf8)
        let ports = [("127.0.0.1:5300", "127.0.0.1:0"), ("[::1]:5300", "[::1]:0"), ("127.0.0.1:8053", "127.0.0.1:0")]
        for (fixed, any) in ports {
            #expect(config.contains(fixed), "the demo listens on \(fixed), as make run says")
            config = config.replacingOccurrences(of: fixed, with: any)
        }
        config = config.replacingOccurrences(of: "../../.build/geo/", with: Repository.path(".build/geo") + "/")
        for file in ["demo.nearcast.test.zone", "tokens"] {
            try FileManager.default.copyItem(
                at: demo.appendingPathComponent(file), to: URL(fileURLWithPath: dir.file(file)))
        }
        let server = try Daemon(["--config", try dir.write(config, to: "nearcast.yaml")])
        defer { server.stop() }

        #expect(
            try server.ask("www.demo.nearcast.test").split(separator: "\n").sorted() == ["192.0.2.10", "192.0.2.11"])
        // A client in Paris: par1 first, then the next nearest (fra1).
        #expect(
            try server.ask("edge.demo.nearcast.test", "A", ["+subnet=198.51.100.0/24"]).split(separator: "\n")
                == ["192.0.2.20", "192.0.2.10"])
        let explain = try TestSupport.run(
            try TestSupport.product("nearcast"),
            [
                "explain", "edge.demo.nearcast.test", "A", "--client", "127.0.0.1", "--ecs", "198.51.100.0/24",
                "--api", server.api, "--token-file", dir.file("tokens"),
            ])
        #expect(explain.status == 0 && explain.stdout.contains("par1"), "\(explain.stdout)\(explain.stderr)")
    }
}
