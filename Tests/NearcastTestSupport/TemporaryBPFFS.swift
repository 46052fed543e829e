import Foundation

/// A bpffs mounted in a temporary directory for as long as the value lives (tests run as root):
/// pins that a test and the daemons it starts all see (`ip netns exec` gives a fresh /sys, where
/// /sys/fs/bpf is no bpffs).
public final class TemporaryBPFFS: Sendable {
    public let path: String

    public init() throws {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("nearcast-bpffs-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        let mount = try TestSupport.run("/bin/mount", ["-t", "bpf", "bpf", path])
        guard mount.status == 0 else {
            try? FileManager.default.removeItem(atPath: path)
            throw TestFailure("mount -t bpf \(path): \(mount.stderr)")
        }
    }

    deinit {
        _ = try? TestSupport.run("/bin/umount", [path])
        try? FileManager.default.removeItem(atPath: path)
    }
}
