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
    /// joined to it), not only the loopback. A port taken between the kernel handing it out and
    /// etcd binding it (another test's process) is retried on new ports.
    public init(everyAddress: Bool = false) throws {
        dataDirectory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "nearcast-etcd-\(UUID().uuidString)")
        var started: (port: Int, arguments: [String], process: ServerProcess)?
        for attempt in 1...3 {
            try FileManager.default.createDirectory(at: dataDirectory, withIntermediateDirectories: true)
            let port = try TestSupport.unusedPort()
            let peerURL = "http://127.0.0.1:\(try TestSupport.unusedPort())"
            let arguments = [
                "--name", "test", "--data-dir", dataDirectory.path, "--listen-client-urls",
                everyAddress ? "http://0.0.0.0:\(port)" : "http://127.0.0.1:\(port)",
                "--advertise-client-urls", "http://127.0.0.1:\(port)", "--listen-peer-urls", peerURL,
                "--initial-advertise-peer-urls", peerURL, "--initial-cluster", "test=\(peerURL)",
            ]
            do {
                started = (port, arguments, try Self.launch(arguments))
                break
            } catch {
                try? FileManager.default.removeItem(at: dataDirectory)
                if attempt == 3 || !"\(error)".contains("address already in use") { throw error }
            }
        }
        guard let started else { throw TestFailure("etcd did not start") }
        port = started.port
        endpoint = "http://127.0.0.1:\(started.port)"
        arguments = started.arguments
        running = Mutex(started.process)
    }

    /// Starts etcd (again) on its data and waits until it serves clients.
    public func start() throws {
        let p = try Self.launch(arguments)
        running.withLock { $0 = p }
    }

    /// etcd with `arguments`, serving clients; stopped when it does not within 20 s.
    static func launch(_ arguments: [String]) throws -> ServerProcess {
        let p = try ServerProcess(try TestSupport.tool("etcd"), arguments)
        do {
            try p.waitUntilReady(timeout: 20) { p.log.contains("ready to serve client requests") }
        } catch {
            p.stop()
            throw error
        }
        return p
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
