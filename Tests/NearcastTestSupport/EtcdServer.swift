import Foundation
import Synchronization

/// A single-member etcd (Debian's etcd-server) started for a test, in a data directory of its
/// own, on two ports the kernel had free. It can be stopped and started again on its data (an
/// outage); `stop()` stops it, reaps it and removes its data.
public final class EtcdServer: Sendable {
    private let running: Mutex<ServerProcess?>
    /// `http://127.0.0.1:PORT`, for clients.
    public let endpoint: String
    /// The client port (on every address of the host with `everyAddress`).
    public let port: Int
    public let dataDirectory: URL
    let arguments: [String]

    /// `everyAddress`: clients may come from any address of the host (e.g. network namespaces
    /// joined to it), not only the loopback.
    public init(everyAddress: Bool = false) throws {
        dataDirectory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "nearcast-etcd-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dataDirectory, withIntermediateDirectories: true)
        port = try TestSupport.unusedPort()
        let peer = try TestSupport.unusedPort()
        endpoint = "http://127.0.0.1:\(port)"
        let peerURL = "http://127.0.0.1:\(peer)"
        arguments = [
            "--name", "test", "--data-dir", dataDirectory.path, "--listen-client-urls",
            everyAddress ? "http://0.0.0.0:\(port)" : endpoint,
            "--advertise-client-urls", endpoint, "--listen-peer-urls", peerURL, "--initial-advertise-peer-urls",
            peerURL, "--initial-cluster", "test=\(peerURL)",
        ]
        running = Mutex(nil)
        do { try start() } catch {
            stop()
            throw error
        }
    }

    /// Starts etcd (again) on its data and waits until it serves clients.
    public func start() throws {
        let p = try ServerProcess(try TestSupport.tool("etcd"), arguments)
        running.withLock { $0 = p }
        try p.waitUntilReady(timeout: 20) { p.log.contains("ready to serve client requests") }
    }

    /// Stops etcd and keeps its data, for `start()` (an outage).
    public func pause() {
        running.withLock { $0 }?.stop()
    }

    /// Stops etcd and removes its data.
    public func stop() {
        pause()
        try? FileManager.default.removeItem(at: dataDirectory)
    }

    /// What etcd has printed.
    public var log: String { running.withLock { $0 }?.log ?? "" }
}
