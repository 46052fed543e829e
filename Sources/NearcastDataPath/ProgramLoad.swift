import BPFKit
import Foundation
import NearcastBasics
import Synchronization

/// The XDP program, loaded against the maps of an object loaded before it (`BPFObject`'s
/// `reusingMapsOf`): at once, or on a thread of its own while the caller fills the maps, so that
/// the verifier's work (half a second, on one core) runs beside a first write that leaves the
/// other core idle much of the time, rather than before it (docs/ARCHITECTURE.md §15).
final class ProgramLoad: Sendable {
    typealias Loaded = (object: BPFObject, program: BPFProgram)
    private let result = Mutex<Result<Loaded, BPFError>?>(nil)
    /// The thread it loads on, with `beside`.
    private let thread: OwnThread?

    /// Loads the program named `name` in the object at `path` against `maps`' maps; with
    /// `beside`, on a thread of its own (`wait` for it), else before returning (and throws).
    init(path: String, program name: String, maps: BPFObject, beside: Bool) throws(BPFError) {
        thread = beside ? OwnThread(name: "nc-verify") : nil
        let load: @Sendable () -> Void = { [self] in
            let r = Result { () throws(BPFError) -> Loaded in
                let object = try BPFObject(path: path, reusingMapsOf: maps)
                return (object, try object.program(name))
            }
            result.withLock { $0 = r }
        }
        if let thread {
            thread.start(load)
        } else {
            load()
            _ = try wait()
        }
    }

    /// The loaded program and its object, once the load has ended; what it threw.
    func wait() throws(BPFError) -> Loaded {
        thread?.join()
        return try result.withLock { $0! }.get()
    }
}
