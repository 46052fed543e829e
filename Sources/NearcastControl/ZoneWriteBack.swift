import Foundation
import Logging
import NearcastBasics
import NearcastZones

/// Zone files written back from the served zones (docs/ARCHITECTURE.md §15): a change is durable
/// once its journal block is synced (`ServedConfig.commit`, which asks for the write-back); the
/// zone's file is rewritten `zonefile-sync` seconds after the first change not in it, once for
/// every change of that time, and the journal then keeps only the changes the file does not hold.
/// Under a stream of changes, a file that takes long to write is written less often: the next
/// write-back waits at least nine times the CPU time the last one took (at most a minute), so
/// writing a zone back costs at most a tenth of a core whatever its size (a million names take
/// seconds to write; every 10 s, that was half a core).
///
/// The text is made and written to a temporary file on a background thread, with no turn held, so
/// changes go on meanwhile; only the journal's mark of the file written (`ZoneJournal.FileMark`),
/// the rename and the journal's trim take a turn. A file changed on disk since it was read or last
/// written here (`ZoneFileBook`'s stamps) is not overwritten (the changes stay in the journal, and
/// the next reload says what to do), nor is one whose zone a reload replaced meanwhile. It owns
/// the schedule: one write-back of a file at a time, changes made meanwhile written by the next.
package actor ZoneWriteBack {
    /// Files whose write-back is scheduled.
    var due: Set<String> = []
    /// Files being written back now, and those with changes made meanwhile.
    var writing: Set<String> = []
    var again: Set<String> = []
    /// What the last write-back of each file took (its text made and written: CPU time).
    var took: [String: Duration] = [:]
    let logger: Logger

    package init(logger: Logger) { self.logger = logger }

    /// Writes the zone file at `path` of `served` back `sync` from now (at least nine times what
    /// its last write-back took, at most a minute), unless one is due already.
    func schedule(_ path: String, sync: Duration, of served: ServedConfig) {
        guard due.insert(path).inserted else { return }
        let delay = max(sync, min((took[path] ?? .zero) * 9, .seconds(60)))
        Task {
            try? await Task.sleep(for: delay)
            await self.write(path, sync: sync, of: served)
        }
    }

    /// Writes the served zone of the file at `path` to that file, then trims its journal.
    func write(_ path: String, sync: Duration, of served: ServedConfig) async {
        due.remove(path)
        // A zone of millions of names takes seconds to write: changes made meanwhile are written
        // by the next write-back, after this one.
        guard writing.insert(path).inserted else {
            again.insert(path)
            return
        }
        defer {
            writing.remove(path)
            if again.remove(path) != nil { schedule(path, sync: sync, of: served) }
        }
        let found = await served.withTurn { s -> (zone: Zone, reloads: Int, unchanged: Bool)? in
            guard let i = s.running.zones.firstIndex(where: { $0.path == path }) else { return nil }
            return (s.zones[i], s.zonesReloaded, s.files.unchangedOnDisk(path))
        }
        guard let (zone, reloadedBefore, unchanged) = found else { return }
        guard unchanged else {
            logger.warning(
                "zone file changed on disk since it was read: not written back; its journal keeps the changes made through the API",
                metadata: ["file": "\(path)"])
            return
        }
        let tmp: String
        do {
            // What it took is the thread's CPU time: at idle priority, its wall time is the
            // machine's load as much as the write's cost.
            let spent: Duration
            (tmp, spent) = try await onOwnThread(name: "nc-zonefile", background: true) {
                defer { FreedMemory.giveBack() }
                let start = Self.threadCPUTime()
                let tmp = try DurableFile.prepare(path) { write throws(DurableFile.Failure) in
                    try ZoneText.write(zone, to: write)
                }
                return (tmp, Self.threadCPUTime() - start)
            }
            took[path] = spent
        } catch {
            logger.error("zone file not written back", metadata: ["file": "\(path)", "why": "\(error)"])
            schedule(path, sync: sync, of: served)
            return
        }
        let logger = self.logger
        let writeAgain = await served.withTurn { s -> Bool in
            // A zone file moved meanwhile (a store's candidate snapshot renamed into place) is not
            // the one to write.
            guard s.zonesReloaded == reloadedBefore, s.running.zones.contains(where: { $0.path == path }),
                s.files.unchangedOnDisk(path)
            else {
                unlink(tmp)
                return s.zonesReloaded != reloadedBefore && ZoneJournal.hasChanges(ZoneJournal.path(forZoneFile: path))
            }
            do {
                // On threads of their own, as the file was written: the journal's trim reads and
                // rewrites it whole (megabytes after thousands of changes), and what that took is
                // given back after it (freed after the last give-back, it stayed resident: +5 MiB
                // after 10,000 changes).
                let serial = zone.serial
                let written = try await onOwnThread(name: "nc-zonefile", background: true) {
                    // Marked first: a crash between the rename and the trim leaves a journal that
                    // names the file written as one it applies to (ZoneJournal's marks).
                    if let written = ZoneJournal.FileMark(of: tmp, serial: serial) {
                        try ZoneJournal.mark(written, in: ZoneJournal.path(forZoneFile: path))
                    }
                    try DurableFile.commit(tmp, onto: path)
                    return FileStamp(path)
                }
                s.files.note(path, written)
                try await onOwnThread(name: "nc-zonefile", background: true) {
                    defer { FreedMemory.giveBack() }
                    try ZoneJournal.trim(ZoneJournal.path(forZoneFile: path), upTo: serial)
                }
                logger.info("zone file written back", metadata: ["file": "\(path)", "serial": "\(zone.serial)"])
            } catch {
                logger.error("zone file not written back", metadata: ["file": "\(path)", "why": "\(error)"])
            }
            return false
        }
        if writeAgain { schedule(path, sync: sync, of: served) }
    }

    /// The calling thread's CPU time so far.
    static func threadCPUTime() -> Duration {
        var t = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t)
        return .seconds(t.tv_sec) + .nanoseconds(t.tv_nsec)
    }
}
