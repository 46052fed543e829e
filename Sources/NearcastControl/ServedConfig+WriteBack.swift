import Foundation
import NearcastBasics
import NearcastZones

/// Zone files written back from the served zones (docs/ARCHITECTURE.md §15): a change through
/// the API is durable once its journal block is synced; the zone's file is rewritten
/// `zonefile-sync` seconds after the first change not in it, once for every change of that time,
/// and the journal then keeps only the changes the file does not hold. Under a stream of changes,
/// a file that takes long to write is written less often: the next write-back waits at least nine
/// times the CPU time the last one took (at most a minute), so writing a zone back costs at most a
/// tenth of a core whatever its size (a million names take seconds to write; every 10 s, that was
/// half a core).
///
/// The text is made and written to a temporary file on a background thread, with no turn held, so
/// changes go on meanwhile; only the journal's mark of the file written (`ZoneJournal.FileMark`),
/// the rename and the journal's trim take a turn. A file changed on
/// disk since it was read or last written here is not overwritten (the changes stay in the journal,
/// and the next reload says what to do), nor is one whose zone a reload replaced meanwhile.
extension ServedConfig {
    /// Writes the zone file at `path` back after the configured delay, unless that is under way.
    func scheduleWriteBack(_ path: String) {
        guard let delay = files.schedule(path, sync: .seconds(running.zonefileSync)) else { return }
        Task {
            try? await Task.sleep(for: delay)
            await self.writeBack(path)
        }
    }

    /// Writes the served zone of the file at `path` to that file, then trims its journal.
    func writeBack(_ path: String) async {
        // A zone of millions of names takes seconds to write: changes made meanwhile are written
        // by the next write-back, after this one.
        guard files.begin(path) else { return }
        defer { if files.end(path) { scheduleWriteBack(path) } }
        guard let i = running.zones.firstIndex(where: { $0.path == path }) else { return }
        let zone = zones[i]
        let reloadedBefore = zonesReloaded
        guard files.unchangedOnDisk(path) else {
            logger.warning(
                "zone file changed on disk since it was read: not written back; its journal keeps the changes made through the API",
                metadata: ["file": "\(path)"])
            return
        }
        let tmp: String
        do {
            // What it took is the thread's CPU time: at idle priority, its wall time is the
            // machine's load as much as the write's cost.
            let took: Duration
            (tmp, took) = try await onOwnThread(name: "nc-zonefile", background: true) {
                defer { FreedMemory.giveBack() }
                let start = Self.threadCPUTime()
                let tmp = try DurableFile.prepare(path) { write throws(DurableFile.Failure) in
                    try ZoneText.write(zone, to: write)
                }
                return (tmp, Self.threadCPUTime() - start)
            }
            files.noteTook(took, for: path)
        } catch {
            logger.error("zone file not written back", metadata: ["file": "\(path)", "why": "\(error)"])
            scheduleWriteBack(path)
            return
        }
        await takeTurn()
        defer { endTurn() }
        // A zone file moved meanwhile (a store's candidate snapshot renamed into place) is not
        // the one to write.
        guard zonesReloaded == reloadedBefore, running.zones.contains(where: { $0.path == path }),
            files.unchangedOnDisk(path)
        else {
            unlink(tmp)
            if zonesReloaded != reloadedBefore, ZoneJournal.hasChanges(ZoneJournal.path(forZoneFile: path)) {
                scheduleWriteBack(path)
            }
            return
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
            files.note(path, written)
            try await onOwnThread(name: "nc-zonefile", background: true) {
                defer { FreedMemory.giveBack() }
                try ZoneJournal.trim(ZoneJournal.path(forZoneFile: path), upTo: serial)
            }
            logger.info("zone file written back", metadata: ["file": "\(path)", "serial": "\(zone.serial)"])
        } catch {
            logger.error("zone file not written back", metadata: ["file": "\(path)", "why": "\(error)"])
        }
    }

    /// The calling thread's CPU time so far.
    static func threadCPUTime() -> Duration {
        var t = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t)
        return .seconds(t.tv_sec) + .nanoseconds(t.tv_nsec)
    }
}

extension FileStamp {
    /// This version of a zone file at `serial`, as its journal marks it.
    func mark(serial: UInt32) -> ZoneJournal.FileMark {
        ZoneJournal.FileMark(serial: serial, size: size, modifiedNanos: modified * 1_000_000_000 + Int64(modifiedNanos))
    }
}
