import Foundation
import NearcastTestSupport
import Testing

@testable import NearcastDataPath

/// The pin root on a real bpffs: names the bpffs refuses, the leftovers of an upgrade stopped half
/// way, and where a new set of pins cannot go.
@Suite(.timeLimit(.minutes(1))) struct PinRootTests {
    @Test func aPinRootWithADotIsRefusedInWords() throws {
        let fs = try TemporaryBPFFS()
        #expect(throws: XDPDeployment.SetupError.self) { try PinRoot.prepare(fs.path + "/nearcast.prod") }
        do { try PinRoot.prepare(fs.path + "/nearcast.prod") } catch {
            #expect(error.description.contains("no dots"), "\(error)")
        }
        try PinRoot.prepare(fs.path + "/nearcast")
        #expect(FileManager.default.fileExists(atPath: fs.path + "/nearcast"))
    }

    @Test func whatAnUpgradeLeftHalfWayIsRemoved() throws {
        let fs = try TemporaryBPFFS()
        let root = fs.path + "/nearcast"
        for d in [root, root + "-next", root + "-old"] {
            try FileManager.default.createDirectory(atPath: d, withIntermediateDirectories: false)
        }
        try PinRoot.prepare(root)
        #expect(FileManager.default.fileExists(atPath: root))
        #expect(
            !FileManager.default.fileExists(atPath: root + "-next")
                && !FileManager.default.fileExists(atPath: root + "-old"))
        let next = try PinRoot.staging(for: root, because: "written by ABI version 99")
        #expect(next == root + "-next" && FileManager.default.fileExists(atPath: next))
        try PinRoot.switchIn(staging: next, as: root)
        #expect(FileManager.default.fileExists(atPath: root) && !FileManager.default.fileExists(atPath: next))
        #expect(!FileManager.default.fileExists(atPath: root + "-old"))
    }

    /// A pin root that is itself the mount point of a bpffs has no bpffs beside it for a new set.
    @Test func noNewSetBesideAPinRootThatIsAMountPoint() throws {
        let fs = try TemporaryBPFFS()
        #expect(throws: XDPDeployment.SetupError.self) {
            try PinRoot.staging(for: fs.path, because: "written by ABI version 99")
        }
        do { _ = try PinRoot.staging(for: fs.path, because: "written by ABI version 99") } catch {
            #expect(
                error.description.contains("ABI version 99") && error.description.contains("is not a bpffs"), "\(error)"
            )
        }
    }
}
