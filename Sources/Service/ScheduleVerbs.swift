import BessBase
import BessSystem
import Config
import ControlCore
package import ControlProtocol
import Cycle
import Foundation
import Logging
import Uplink

extension ControlVerbs {
    /// `schedule` (a reader), `schedule-load` and `schedule-clear` (an operator): the block schedule
    /// read, loaded as the operator's (`SCHEDULE_INVALID`, `SCHEDULE_STALE` refused; a block that
    /// cannot be met is a `warning`, the schedule taken) or ended. A site without `schedule:` refuses
    /// each with `SCHEDULE_DISABLED`. Loads and clears are audited with the caller's uid.
    func schedule(_ request: ControlRequest, uid: UInt32) -> any ControlReply {
        guard let schedules else {
            return Self.failure("SCHEDULE_DISABLED", "this configuration has no schedule: section (config/bessd.yaml shows it)")
        }
        let now = ScheduleService.wallClock()
        switch request.verb {
        case .scheduleLoad:
            guard let text = request.schedule else {
                return Self.failure("SCHEDULE_INVALID", "schedule-load needs the schedule's JSON text in \"schedule\"")
            }
            let document: ScheduleDocument
            do throws(ScheduleError) {
                document = try ScheduleDocument.decode(Array(text.utf8))
            } catch {
                return Self.failure("\(error.code)", error.message)
            }
            let answer = schedules.offer(document, source: .operator, now: now)
            if let error = answer.error { return Self.failure("\(error.code)", error.message) }
            audit("schedule load \(PeerText.quoted(document.id, limit: 128)) revision \(document.revision)"
                    + (answer.repeated ? " (taken before, not acted on again)" : "") + (answer.warning.map { "; \($0)" } ?? ""),
                  uid: uid, ["MESSAGE_ID": "\(MessageID.site)", "BESS_SCHEDULE_ID": "\(document.id)"])
            var reply = ScheduleView.reply(schedules, settings: schedules.settings, open: shared.view.scheduleBlock, now: now)
            reply.warning = answer.warning
            reply.infeasibleStart = answer.shortfall.map { ScheduleDocument.rfc3339($0.blockStartUnixSeconds) }
            reply.infeasibleKWh = answer.shortfall?.shortKWh
            reply.repeated = answer.repeated
            return reply
        case .scheduleClear:
            let (ended, _) = schedules.clear(now: now)
            audit("schedule clear: " + (ended.map { "\(ScheduleStore.describe($0)) ended" } ?? "none was in force")
                    + "; the fallback (\(ScheduleStore.name(schedules.settings.fallback))) runs",
                  uid: uid, ["MESSAGE_ID": "\(MessageID.site)"])
            return ScheduleView.reply(schedules, settings: schedules.settings, open: shared.view.scheduleBlock, now: now)
        default:
            return ScheduleView.reply(schedules, settings: schedules.settings, open: shared.view.scheduleBlock, now: now)
        }
    }
}

/// The schedule as `bessctl schedule` shows it.
enum ScheduleView {
    /// Closed blocks kept (newest last), the open one so far, and the blocks to come, with the
    /// schedule's id, revision and source and whether the fallback runs.
    static func reply(_ store: ScheduleStore, settings: ScheduleConfiguration, open: ScheduleBlockReport?, now: Int64) -> ScheduleReply {
        let (current, reports, problem) = store.snapshot
        let length = settings.blockSeconds
        let openStart = ScheduleStore.blockStart(now, length)
        var blocks = reports.filter { $0.startUnixSeconds < openStart }.map { block(closed: $0, state: "closed") }
        let inForce = current.map { ScheduleStore.hasBlocksToRun($0, now: now) } ?? false
        if let current {
            if let target = current.blocks.first(where: { $0.startUnixSeconds == openStart }) {
                if let open, open.startUnixSeconds == openStart {
                    blocks.append(block(closed: open, state: "open"))
                } else {
                    blocks.append(ScheduleBlockReply(start: ScheduleDocument.rfc3339(openStart), state: "open", targetKWh: target.targetKWh,
                                                     revision: current.revision))
                }
            }
            for upcoming in current.blocks where upcoming.startUnixSeconds > openStart {
                blocks.append(ScheduleBlockReply(start: ScheduleDocument.rfc3339(upcoming.startUnixSeconds), state: "upcoming",
                                                 targetKWh: upcoming.targetKWh))
            }
        }
        let running = current.map { c in c.blocks.contains { $0.startUnixSeconds == openStart } } ?? false
        return ScheduleReply(id: current?.id, revision: current?.revision, source: current.map { ScheduleStore.name($0.source) },
                             blockS: length, fallback: ScheduleStore.name(settings.fallback), fallbackActive: !(inForce && running),
                             blocks: blocks, stateProblem: problem.map { "\($0)" })
    }

    static func block(closed report: ScheduleBlockReport, state: String) -> ScheduleBlockReply {
        ScheduleBlockReply(start: ScheduleDocument.rfc3339(report.startUnixSeconds), state: state, targetKWh: report.targetKWh,
                           deliveredKWh: report.deliveredKWh, droopKWh: report.droopKWh, deviationKWh: report.deviationKWh,
                           deviationPct: report.deviationPercent, boundBy: "\(report.boundBy)", revision: report.revision)
    }
}
