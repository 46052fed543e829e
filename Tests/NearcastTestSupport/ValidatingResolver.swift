import Foundation

/// Unbound (Debian's `unbound`) as the validating resolver of a test: its configuration, one
/// trust anchor (a DS record in presentation format) and one stub zone, everything it writes
/// kept in `directory`, nothing asked of the root.
public enum ValidatingResolver {
    /// The configuration: listening on `listen` (`ADDRESS@PORT`), IPv4 only, validating with
    /// `anchor` the answers of `zone`, asked of `server` (`ADDRESS@PORT`). `clientSubnet`: also
    /// pass its clients' Client Subnet (RFC 7871) on to that server's address (Unbound's
    /// subnetcache module), as a resolver in front of a GeoDNS does.
    public static func config(
        listen: String, directory: String, anchor: String, zone: String, server: String, clientSubnet: Bool = false
    ) -> String {
        let address = server.split(separator: "@")[0]
        let subnet =
            clientSubnet
            ? """
              send-client-subnet: \(address)
              client-subnet-always-forward: yes
              max-client-subnet-ipv4: 24

            """ : ""
        return """
            server:
            \(subnet)
              interface: \(listen)
              do-ip6: no
              do-not-query-localhost: no
              username: ""
              chroot: ""
              directory: "\(directory)"
              pidfile: "\(directory)/unbound.pid"
              use-syslog: no
              verbosity: 1
              val-log-level: 2
              module-config: "\(clientSubnet ? "subnetcache " : "")validator iterator"
              trust-anchor: "\(anchor)"
              access-control: 127.0.0.0/8 allow
              # .test is among the names Unbound answers itself (RFC 6761) unless told not to.
              local-zone: "test." nodefault
            remote-control:
              control-enable: no
            stub-zone:
              name: "\(zone)"
              stub-addr: \(server)
            """
    }
}

extension ValidatingResolver {
    /// A delv anchors file's DS (`trust-anchors { ZONE static-ds TAG ALG DIGEST-TYPE "HEX"; };`) as
    /// Unbound's `trust-anchor` takes it: `ZONE DS TAG ALG DIGEST-TYPE HEX`.
    public static func anchor(fromDelvAnchors path: String) throws -> String {
        try String(contentsOfFile: path, encoding: .utf8)
            .replacingOccurrences(of: "trust-anchors { ", with: "").replacingOccurrences(of: "static-ds ", with: "DS ")
            .replacingOccurrences(of: "\"", with: "").replacingOccurrences(of: "; };", with: "")
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Unbound on 127.0.0.1, at a port of its own, validating example.test's answers with `anchor`,
    /// asked of `server` (`ADDRESS@PORT`); ready once it answers www.example.test's A as secure.
    public final class Local: Sendable {
        public let process: ServerProcess
        public let port: Int

        public init(anchor: String, server: String, directory: String) throws {
            port = try TestSupport.unusedPort()
            let config = directory + "/unbound-\(port).conf"
            try ValidatingResolver.config(
                listen: "127.0.0.1@\(port)", directory: directory, anchor: anchor, zone: "example.test",
                server: server
            ).write(toFile: config, atomically: true, encoding: .utf8)
            process = try ServerProcess(try TestSupport.tool("unbound"), ["-d", "-c", config])
            do {
                try process.waitUntilReady { [port] in
                    (try? Self.resolve(port, "www.example.test", "A").contains(" ad")) == true
                }
            } catch {
                _ = process.stop()
                throw error
            }
        }

        /// dig's answer to `name` `type` through the resolver, with DO.
        public func resolve(_ name: String, _ type: String) throws -> String { try Self.resolve(port, name, type) }

        static func resolve(_ port: Int, _ name: String, _ type: String) throws -> String {
            try TestSupport.run(
                try TestSupport.tool("dig"),
                ["@127.0.0.1", "-p", "\(port)", "+dnssec", "+tries=1", "+time=2", name, type]
            ).stdout
        }

        public func stop() { _ = process.stop() }
    }
}
