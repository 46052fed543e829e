import BPFKit
import Foundation
import NearcastAnswers
import NearcastBasics
import NearcastGeo
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The one writer of the fast path's generations (ARCHITECTURE §11). Each write runs on threads of
/// its own, one write at a time, in the order asked, and the caller awaits the result: seconds of
/// blocking work for a whole GeoLite2-City never hold Swift's cooperative pool or a NIO event loop.
/// The bulk of a write (the answer image built from a responder, the geo maps of a new compile
/// filled, the new generation written beside the live one: `FastPath.prepare`) and the emptying
/// of the maps it replaced (`drainRetired`) run on a background thread, which yields the CPU to
/// everything else the daemon does; the switch (a few entries under the fast path's lock, then a
/// grace period: `FastPath.switchTo`) runs on a thread of ordinary priority, so that a health
/// change waiting for that lock never waits behind a thread that is made to yield. Health changes
/// do not queue here: they are single map writes (`FastPath.writeNodeHealth`, `writePoolTTLCap`)
/// that go in while a write is under way.
public final class GenerationWriter: Sendable {
    public let fastPath: FastPath
    private let writer = WorkerThread(name: "nc-writer")
    private let background = WorkerThread(name: "nc-writer-bulk", nice: 10)

    public init(_ fastPath: FastPath) { self.fastPath = fastPath }

    /// Makes the fast path answer what `responder` answers (its answer image) and `geo`'s names,
    /// as a new generation switched in with one write.
    public func write(responder: Responder, geo: GeoTable?) async throws(BPFError) -> FastPath.TableWrite {
        let (fastPath, background) = (fastPath, background)
        // One job on the writer's thread per write keeps writes one at a time and in order; it
        // hands the bulk to the background thread and waits for it there.
        let written = try await writer.run { () throws(BPFError) -> FastPath.TableWrite in
            let (image, prepared) = try background.runAndWait {
                () throws(BPFError) -> (AnswerImage, FastPath.Prepared) in
                // On every core, at this thread's priority (ParallelWork).
                let image = AnswerImage.build(
                    responder: responder, maxSections: FastPath.sectionsCapacity,
                    parts: ProcessInfo.processInfo.activeProcessorCount)
                return (image, try fastPath.prepare(image, geo: geo))
            }
            var written = try fastPath.switchTo(prepared)
            if written.noRoom > 0 {
                // More changed than the arena has room for beside the generation just replaced:
                // its records are free now, and the names left out go in with a second one (as
                // FastPath.write).
                let again = try background.runAndWait { () throws(BPFError) -> FastPath.Prepared in
                    try fastPath.prepare(image, geo: geo)
                }
                written = try fastPath.switchTo(again).completing(written)
            }
            // The image and the plan of a large zone (GiBs at 1M names) are let go by now: give
            // their pages back, or glibc keeps them resident for good.
            background.submit { FreedMemory.giveBack() }
            return written
        }
        // The maps it replaced are emptied after, a slice at a time: the caller does not wait,
        // and a write asked for meanwhile goes before the next slice.
        startDrain()
        return written
    }

    /// Makes the fast path answer what `responder` answers after `changes` (one a zone: a record
    /// change through the API, or what a reload found changed): the records the changes reach
    /// (`AnswerImage.reached`, from the zones' indexes), written into the live generation
    /// (`FastPath.apply`) on the writer's thread: a few names, a few milliseconds, no new
    /// generation; with `geo` of a new compile, into the other generation made from the live one,
    /// switched to with the compile's maps. Changes that reach what only a whole image says (a delegation or DNAME made or
    /// gone), or that do not fit the live generation, are written as a whole generation (`write`);
    /// so are changes of more than an eighth of the names (a zone renumbered, say), which then
    /// switch all at once rather than name by name, in about the time their records would take.
    public func write(responder: Responder, geo: GeoTable?, changes: [AnswerImage.Change]) async throws(BPFError)
        -> FastPath.TableWrite
    {
        let fastPath = fastPath
        let owners = changes.reduce(0) { $0 + $1.owners.count }
        if owners > Self.changedNamesForAGeneration && owners > fastPath.liveNames / 8 {
            return try await write(responder: responder, geo: geo)
        }
        let applied = try await writer.run { () throws(BPFError) -> FastPath.TableWrite? in
            guard
                let (names, removed) = AnswerImage.records(
                    reachedBy: changes, responder: responder, maxSections: FastPath.sectionsCapacity)
            else { return nil }
            guard let a = try fastPath.apply(names, removed: removed, geo: geo) else { return nil }
            return FastPath.TableWrite(entries: fastPath.liveNames, written: a.written + a.removed)
        }
        if let applied {
            startDrain()  // the geo maps of a compile it replaced
            return applied
        }
        return try await write(responder: responder, geo: geo)
    }

    /// Changed names below which changes are written into the live generation whatever the
    /// table's size (`write(responder:geo:changes:)`).
    static let changedNamesForAGeneration = 256

    /// Whether a drain is under way: one at a time, whatever the writes that retire maps.
    private let draining = Atomic<Bool>(false)

    /// Starts draining the retired maps unless a drain is under way.
    private func startDrain() {
        guard draining.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
        else { return }
        background.submit(drainSlice)
    }

    /// One slice of the drain, then the next after whatever was asked meanwhile; at the end, a
    /// check for maps retired while the last slice ran (their write saw a drain under way).
    private var drainSlice: @Sendable () -> Void {
        { [fastPath, background] in
            if fastPath.drainRetired() {
                background.submit(self.drainSlice)
            } else {
                self.draining.store(false, ordering: .releasing)
                if fastPath.hasRetired { self.startDrain() }
            }
        }
    }
}
