import BPFKit
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The directory on a bpffs under which the fast path's maps are pinned (`xdp.pin-root`), and the
/// upgrade across ABI versions: maps pinned by another version (or geo maps made too small for the
/// geo data, see GeoCapacity) cannot be taken over, so a new set is pinned beside them
/// (`ROOT-next`: bpffs takes no dots in names), the program that reads it is attached in their
/// place, and only then does the new set take the root's name, the old one (moved to `ROOT-old`
/// for a moment) going with its pins.
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

    /// Why the maps pinned under `root` cannot be taken over, or nil (nothing pinned, or maps this
    /// build takes over): another ABI version wrote them, whose layouts would be misread, or their
    /// geo maps were made too small for `geo` (GeoCapacity: an inner map's size is the outer map's).
    static func replacementReason(_ root: String, geo: GeoCapacity) throws(SetupError) -> String? {
        do {
            if let pinned = try FastPath.pinnedABIVersion(pinDirectory: root), pinned != FastPath.abiVersion {
                return
                    "the maps pinned under \(root) were written by ABI version \(pinned), this nearcastd uses \(FastPath.abiVersion)"
            }
            if let pinned = try FastPath.pinnedGeoCapacity(pinDirectory: root), !pinned.holds(geo) {
                return "the geo maps pinned under \(root) were made for \(pinned), the geo data needs \(geo)"
            }
            return nil
        } catch {
            throw SetupError(
                description:
                    "the maps pinned under \(root) cannot be taken over (\(error)): stop the other instance and remove \(root), or use another --pin-root"
            )
        }
    }

    /// A fresh directory beside `root` for the new set of pins, made because of `reason`.
    static func staging(for root: String, because reason: String) throws(SetupError) -> String {
        let parent = (root as NSString).deletingLastPathComponent
        guard BPFFileSystem.isBPFFS(parent) else {
            throw SetupError(
                description:
                    "\(reason), and a new set cannot be pinned beside them (\(parent) is not a bpffs): stop the other instance and remove the pins under \(root), or use another --pin-root"
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
