/// An address and port to serve DNS on: `127.0.0.1:53`, `[::1]:53`, `0.0.0.0:5353`. Port 0 lets the
/// kernel pick a free port; nearcastd says on standard output which one it got.
public struct ListenAddress: Hashable, Sendable, CustomStringConvertible {
    public var host: String
    public var port: Int

    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// Parses `ADDR:PORT` (IPv6 in brackets). Returns nil with no port or an out-of-range one (0 is
    /// allowed: see `isAnyPort`).
    public init?(_ text: String) {
        let host: Substring
        let portText: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else {
                return nil
            }
            host = text[text.index(after: text.startIndex)..<close]
            portText = text[text.index(close, offsetBy: 2)...]
        } else {
            guard let colon = text.lastIndex(of: ":"), !text[..<colon].contains(":") else { return nil }
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
        }
        guard !host.isEmpty, let port = Int(portText), (0...65535).contains(port) else { return nil }
        self.host = String(host)
        self.port = port
    }

    /// Port 0: bind wherever the kernel says, which only a server can do (a client needs a port).
    public var isAnyPort: Bool { port == 0 }

    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}
