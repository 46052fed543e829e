import BPFKit
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The directory on a bpffs under which the fast path's maps are pinned (`xdp.pin-root`), and the
/// upgrade across ABI versions: maps pinned by another version cannot be taken over, so a new set
/// is pinned beside them (`ROOT-next`: bpffs takes no dots in names), the program that reads it is
/// attached in their place, and only then does the new set take the root's name, the old one
/// (moved to `ROOT-old` for a moment) going with its pins.
enum PinRoot {
    typealias SetupError = XDPDeployment.SetupError

    /// Makes sure `root` exists on a bpffs, and removes what an upgrade stopped half way left
    /// beside it (the program attached then holds its maps; nothing is taken over from there).
    static func prepare(_ root: String) throws(SetupError) {
        let parent = (root as NSString).deletingLastPathComponent
        remove(root + "-next")
        remove(root + "-old")
        if !FileManager.default.fileExists(atPath: root) {
            guard BPFFileSystem.isBPFFS(parent) else {
                throw SetupError(
                    description:
                        "pin root \(root): \(parent) is not a bpffs; mount one (mount -t bpf bpf \(parent)) or choose --pin-root on a bpffs (inside `ip netns exec`, /sys/fs/bpf is not one)"
                )
            }
            if (root as NSString).lastPathComponent.contains(".") {
                throw SetupError(
                    description: "pin root \(root): a bpffs takes no dots in names; choose another --pin-root")
            }
            do { try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: false) } catch {
                throw SetupError(description: "pin root \(root) cannot be made: \(error.localizedDescription)")
            }
        }
        guard BPFFileSystem.isBPFFS(root) else {
            throw SetupError(
                description:
                    "pin root \(root) is not on a bpffs; mount one (mount -t bpf bpf \(parent)) or choose --pin-root on a bpffs"
            )
        }
    }

    /// The ABI version of the maps pinned under `root` when it is not this build's, else nil
    /// (nothing pinned, or maps this build takes over).
    static func otherABIVersion(_ root: String) throws(SetupError) -> UInt32? {
        do {
            guard let pinned = try FastPath.pinnedABIVersion(pinDirectory: root), pinned != FastPath.abiVersion else {
                return nil
            }
            return pinned
        } catch {
            throw SetupError(
                description:
                    "the maps pinned under \(root) cannot be taken over (\(error)): stop the other instance and remove \(root), or use another --pin-root"
            )
        }
    }

    /// An empty directory beside `root` for a new set of pins replacing those of ABI `version`
    /// (left over from a start that failed half way: emptied first). Only where `root` is a
    /// directory of a bpffs, not the mount point of one.
    static func staging(for root: String, replacing version: UInt32) throws(SetupError) -> String {
        let parent = (root as NSString).deletingLastPathComponent
        guard BPFFileSystem.isBPFFS(parent) else {
            throw SetupError(
                description:
                    "the maps pinned under \(root) were written by ABI version \(version), this nearcastd uses \(FastPath.abiVersion), and a new set cannot be pinned beside them (\(parent) is not a bpffs): stop the other instance and remove the pins under \(root), or use another --pin-root"
            )
        }
        let next = root + "-next"
        remove(next)
        do { try FileManager.default.createDirectory(atPath: next, withIntermediateDirectories: false) } catch {
            throw SetupError(description: "\(next) cannot be made beside the pin root: \(error.localizedDescription)")
        }
        return next
    }

    /// Gives the pins under `staging` the name `root`, whose old pins are removed. Two renames on
    /// the bpffs: the old set moves aside first, since a directory is not renamed over a full one.
    static func switchIn(staging: String, as root: String) throws(SetupError) {
        let old = root + "-old"
        remove(old)
        guard rename(root, old) == 0 else {
            throw SetupError(description: "\(root) cannot be moved aside: \(String(cString: strerror(errno)))")
        }
        guard rename(staging, root) == 0 else {
            let e = errno
            _ = rename(old, root)
            throw SetupError(description: "\(staging) cannot be renamed to \(root): \(String(cString: strerror(e)))")
        }
        remove(old)
    }

    /// Removes `directory` and the pins in it, if it exists (a map lives on while a program or a
    /// process still holds it).
    static func remove(_ directory: String) {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return }
        for e in entries { unlink(directory + "/" + e) }
        rmdir(directory)
    }
}
