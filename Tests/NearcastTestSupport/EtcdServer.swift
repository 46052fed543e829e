import Foundation

/// A single-member etcd (Debian's etcd-server) started for a test, in a data directory of its
/// own, on two ports the kernel had free. Stopped, reaped and removed by `stop()`.
public final class EtcdServer: Sendable {
    public let process: ServerProcess
    /// `http://127.0.0.1:PORT`, for clients.
    public let endpoint: String
    public let dataDirectory: URL

    public init() throws {
        dataDirectory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "nearcast-etcd-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dataDirectory, withIntermediateDirectories: true)
        let client = try TestSupport.unusedPort()
        let peer = try TestSupport.unusedPort()
        endpoint = "http://127.0.0.1:\(client)"
        let peerURL = "http://127.0.0.1:\(peer)"
        process = try ServerProcess(
            try TestSupport.tool("etcd"),
            [
                "--name", "test", "--data-dir", dataDirectory.path, "--listen-client-urls", endpoint,
                "--advertise-client-urls", endpoint, "--listen-peer-urls", peerURL, "--initial-advertise-peer-urls",
                peerURL, "--initial-cluster", "test=\(peerURL)",
            ])
        let p = process
        do {
            try p.waitUntilReady(timeout: 20) { p.log.contains("ready to serve client requests") }
        } catch {
            stop()
            throw error
        }
    }

    /// Stops etcd and removes its data.
    public func stop() {
        process.stop()
        try? FileManager.default.removeItem(at: dataDirectory)
    }
}
