import ControlCore
import Foundation
@testable import Service
import Testing

/// Closed blocks survive a restart: `bessctl schedule` after a SIGKILL still shows what the blocks
/// before it delivered (schedule.json keeps them).
@Suite("Schedule: closed blocks kept across a restart")
struct ScheduleReportsKeptTests {
    @Test("reports taken by one store are read back by the next, bound_by and energies intact")
    func keptAcrossRestart() throws {
        let directory = ScheduleStoreTests.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let first = ScheduleStoreTests.store(directory)
        let now = ScheduleStoreTests.midnight - 60
        #expect(first.offer(ScheduleStoreTests.schedule(targets: [1, 2]), now: now).accepted)
        let reports = [
            ScheduleBlockReport(startUnixSeconds: ScheduleStoreTests.midnight, lengthSeconds: 900, targetKWh: 1, deliveredKWh: 0.98,
                                droopKWh: -0.01, ratedKWh: 25, boundBy: .unitLimit, revision: 1),
            ScheduleBlockReport(startUnixSeconds: ScheduleStoreTests.midnight + 900, lengthSeconds: 900, targetKWh: 2, deliveredKWh: 2.01,
                                droopKWh: 0, ratedKWh: 25, boundBy: .none, revision: 1),
        ]
        first.tick(now: ScheduleStoreTests.midnight + 1800, reports: reports)
        let second = ScheduleStoreTests.store(directory)
        #expect(second.snapshot.reports.isEmpty)
        second.restore(now: ScheduleStoreTests.midnight + 1810)
        #expect(second.snapshot.reports == reports)
        #expect(second.snapshot.stateProblem == nil)
    }
}
