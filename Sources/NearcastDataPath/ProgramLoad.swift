import BPFKit
import Foundation
import Synchronization

/// The XDP program, loaded against the maps of an object loaded before it (`BPFObject`'s
/// `reusingMapsOf`): at once, or on a thread of its own while the caller fills the maps, so that
/// the verifier's work (half a second, on one core) runs beside a first write that leaves the
/// other core idle much of the time, rather than before it (docs/ARCHITECTURE.md §15).
final class ProgramLoad: Sendable {
    typealias Loaded = (object: BPFObject, program: BPFProgram)
    private let result = Mutex<Result<Loaded, BPFError>?>(nil)
    private let done = DispatchSemaphore(value: 0)

    /// Loads the program named `name` in the object at `path` against `maps`' maps; with
    /// `beside`, on a thread of its own (`wait` for it), else before returning (and throws).
    init(path: String, program name: String, maps: BPFObject, beside: Bool) throws(BPFError) {
        let load: @Sendable () -> Void = { [self] in
            let r = Result { () throws(BPFError) -> Loaded in
                let object = try BPFObject(path: path, reusingMapsOf: maps)
                return (object, try object.program(name))
            }
            result.withLock { $0 = r }
            done.signal()
        }
        if beside {
            let thread = Thread(block: load)
            thread.name = "nc-verify"
            thread.start()
        } else {
            load()
            _ = try wait()
        }
    }

    /// The loaded program and its object, once the load has ended; what it threw.
    func wait() throws(BPFError) -> Loaded {
        if let r = result.withLock({ $0 }) { return try r.get() }
        done.wait()
        done.signal()  // for any later caller that gets here before the result is read
        return try result.withLock { $0! }.get()
    }
}
