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
