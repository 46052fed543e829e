import DNSWire
import Foundation
import NearcastBasics
import Yams

/// One active check of a node, as configured (ARCHITECTURE §6; NearcastHealth runs it):
///
/// ```yaml
/// checks:
///   - { type: tcp, port: 443 }
///   - { type: http, port: 80, path: /health, status: 200-299, body: ok, interval: 5, timeout: 2, rise: 2, fall: 3 }
///   - { type: https, port: 443, path: /health, server-name: fra1.example.net, ca: /etc/nearcast/ca.pem, verify: true }
///   - { type: dns, port: 53, name: example.net., qtype: A, rcode: NOERROR }
///   - { type: report, stale-after: 15, rise: 1, fall: 1 }
/// ```
/// The target host is the node's IPv4 address (else its IPv6) unless `host` says otherwise. A
/// `report` check is passive: the node's agent posts reports to the management API, and each
/// `stale-after` seconds without one counts as a failure.
public struct NodeCheckConfig: Sendable, Equatable {
    public enum Kind: String, Sendable, CaseIterable {
        case tcp, http, https, dns, report
    }
    public var kind: Kind
    public var host: String
    public var port: Int
    public var path = "/"
    public var status: ClosedRange<Int> = 200...299
    public var body: String?
    public var dnsName: DNSName?
    public var dnsType: RRType = .soa
    public var rcode: RCode = .noError
    /// Seconds between checks, and for one check.
    public var interval: Double = 5
    public var timeout: Double = 2
    public var rise = 2
    public var fall = 3
    /// A report check: seconds without a report that count as one failure.
    public var staleAfter: Double = 15
    /// An HTTPS check: whether the certificate is verified, the name it must hold (and the SNI
    /// sent; default: the host, when it is a name), and a PEM file of trusted CAs (default: the
    /// system's).
    public var verify = true
    public var serverName: String?
    public var caFile: String?

    /// A name for the check in logs: its type and target.
    public var label: String { kind == .report ? "report" : "\(kind.rawValue) \(host):\(port)" }

    static func parse(_ item: Node, node: NodeConfig, baseDirectory: String, _ fail: (Node?, String) -> Void)
        -> NodeCheckConfig?
    {
        guard let m = GeoConfig.fields(item, "node \(node.id) checks", GeoConfig.checkKeys, fail) else { return nil }
        let owner = "node \(node.id) check"
        guard let t = m["type"]?.string, let kind = Kind(rawValue: t) else {
            fail(m["type"] ?? item, "\(owner): type must be one of tcp, http, https, dns, report")
            return nil
        }
        if kind == .report { return parseReport(m, item: item, owner: owner, fail) }
        if m["stale-after"] != nil {
            fail(m["stale-after"], "\(owner): stale-after goes with type report")
            return nil
        }
        if kind != .https, let key = ["verify", "server-name", "ca"].first(where: { m[$0] != nil }) {
            fail(m[key], "\(owner): \(key) goes with type https")
            return nil
        }
        let defaultHost = node.ipv4.map { $0.map(String.init).joined(separator: ".") } ?? node.ipv6.map { _ in "" }
        guard let port = m["port"]?.int, (1...65535).contains(port) else {
            fail(m["port"] ?? item, "\(owner): port must be a number from 1 to 65535")
            return nil
        }
        var ok = true
        var c = NodeCheckConfig(kind: kind, host: m["host"]?.string ?? defaultHost ?? "", port: port)
        if c.host.isEmpty {
            fail(item, "\(owner): give host (the node has no IPv4 address to check)")
            ok = false
        }
        if let v = GeoConfig.number(m, "interval", 0.05...3600, owner: owner, ok: &ok, fail) { c.interval = v }
        if let v = GeoConfig.number(m, "timeout", 0.05...600, owner: owner, ok: &ok, fail) { c.timeout = v }
        if let v = GeoConfig.number(m, "rise", 1...100, owner: owner, ok: &ok, fail) { c.rise = Int(v) }
        if let v = GeoConfig.number(m, "fall", 1...100, owner: owner, ok: &ok, fail) { c.fall = Int(v) }
        if c.timeout > c.interval {
            fail(m["timeout"] ?? item, "\(owner): timeout (\(c.timeout) s) cannot exceed interval (\(c.interval) s)")
            ok = false
        }
        switch kind {
        case .tcp, .report:
            break
        case .http, .https:
            if kind == .https { parseTLS(m, into: &c, baseDirectory: baseDirectory, owner: owner, ok: &ok, fail) }
            if let p = m["path"]?.string { c.path = p.hasPrefix("/") ? p : "/" + p }
            if let n = m["status"] {
                let parts = (n.string ?? n.int.map(String.init) ?? "").split(separator: "-").compactMap { Int($0) }
                if parts.count == 1, (100...599).contains(parts[0]) {
                    c.status = parts[0]...parts[0]
                } else if parts.count == 2, parts[0] <= parts[1], (100...599).contains(parts[0]),
                    (100...599).contains(parts[1])
                {
                    c.status = parts[0]...parts[1]
                } else {
                    fail(n, "\(owner): status must be a code or a range such as 200-299")
                    ok = false
                }
            }
            c.body = m["body"]?.string
        case .dns:
            guard let text = m["name"]?.string, let name = try? DNSName(text.hasSuffix(".") ? text : text + ".") else {
                fail(m["name"] ?? item, "\(owner): a dns check needs name (a domain name to ask)")
                return nil
            }
            c.dnsName = name
            if let n = m["qtype"] {
                if let s = n.string, let t = RRType(mnemonic: s.uppercased()) {
                    c.dnsType = t
                } else {
                    fail(n, "\(owner): qtype must be a record type such as A or SOA")
                    ok = false
                }
            }
            if let n = m["rcode"] {
                if let s = n.string, let r = RCode.allNamed.first(where: { $0.1 == s.uppercased() })?.0 {
                    c.rcode = r
                } else {
                    fail(n, "\(owner): rcode must be NOERROR, NXDOMAIN, SERVFAIL or REFUSED")
                    ok = false
                }
            }
        }
        return ok ? c : nil
    }
}

extension NodeCheckConfig {
    /// An HTTPS check's `verify`, `server-name` and `ca`.
    static func parseTLS(
        _ m: Node.Mapping, into c: inout NodeCheckConfig, baseDirectory: String, owner: String, ok: inout Bool,
        _ fail: (Node?, String) -> Void
    ) {
        if let n = m["verify"] {
            if let b = n.bool {
                c.verify = b
            } else {
                fail(n, "\(owner): verify must be true or false")
                ok = false
            }
        }
        if let n = m["server-name"] {
            if let s = n.string, isHostName(s) {
                c.serverName = s
            } else {
                fail(n, "\(owner): server-name must be a host name (the name the certificate holds)")
                ok = false
            }
        }
        if let n = m["ca"] {
            guard let s = n.string, !s.isEmpty else {
                fail(n, "\(owner): ca must be the path of a PEM file of trusted certificates")
                ok = false
                return
            }
            let path = resolvedPath(s, relativeTo: baseDirectory)
            if !FileManager.default.isReadableFile(atPath: path) {
                fail(n, "\(owner): ca file \(path) does not exist or cannot be read")
                ok = false
            }
            c.caFile = path
        }
        if !c.verify && (c.caFile != nil || c.serverName != nil) {
            fail(m["verify"], "\(owner): verify: false checks no certificate, so ca and server-name would do nothing")
            ok = false
        }
    }

    /// Letters, digits and hyphens in dot-separated labels of 1 to 63, at most 253 in all.
    static func isHostName(_ s: String) -> Bool {
        let labels = s.split(separator: ".", omittingEmptySubsequences: false)
        return !s.isEmpty && s.utf8.count <= 253
            && labels.allSatisfy { l in
                (1...63).contains(l.count) && l.first != "-" && l.last != "-"
                    && l.unicodeScalars.allSatisfy {
                        $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "-")
                    }
            }
    }

    /// A passive check: no target, a staleness limit; a stale report takes the node down at once
    /// unless `fall` says otherwise.
    static func parseReport(_ m: Node.Mapping, item: Node, owner: String, _ fail: (Node?, String) -> Void)
        -> NodeCheckConfig?
    {
        let targetKeys = [
            "host", "port", "path", "status", "body", "name", "qtype", "rcode", "interval", "timeout", "verify",
            "server-name", "ca",
        ]
        if let key = targetKeys.first(where: { m[$0] != nil }) {
            fail(m[key], "\(owner): a report check has no \(key) (the node's agent posts to POST /v1/nodes/ID/report)")
            return nil
        }
        var c = NodeCheckConfig(kind: .report, host: "", port: 0)
        c.rise = 1
        c.fall = 1
        var ok = true
        if let v = GeoConfig.number(m, "stale-after", 0.1...86400, owner: owner, ok: &ok, fail) { c.staleAfter = v }
        if let v = GeoConfig.number(m, "rise", 1...100, owner: owner, ok: &ok, fail) { c.rise = Int(v) }
        if let v = GeoConfig.number(m, "fall", 1...100, owner: owner, ok: &ok, fail) { c.fall = Int(v) }
        return ok ? c : nil
    }
}

extension RCode {
    /// The rcodes a check may expect, by name.
    static let allNamed: [(RCode, String)] = [
        (.noError, "NOERROR"), (.nxDomain, "NXDOMAIN"), (.servFail, "SERVFAIL"), (.refused, "REFUSED"),
    ]
}
