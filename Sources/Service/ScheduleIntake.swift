import BessBase
import BessSystem
import ControlCore
import Foundation
import Logging
import Uplink

extension DispatchIntake {
    /// The aggregator's `schedule` command (HTTP and MQTT alike, once per command id through the
    /// transport's `CommandLedger`, and once per schedule id and revision in the store): offered to the
    /// store as the aggregator's. Its answer carries the store's codes: refused with `SCHEDULE_INVALID`,
    /// `SCHEDULE_HELD`, `SCHEDULE_STALE` or `SCHEDULE_DISABLED`; accepted, with `SCHEDULE_INFEASIBLE: …`
    /// as its reason when a block cannot be met, and `SCHEDULE_REPEATED: …` when that id and revision
    /// had been taken before (not acted on again).
    func schedule(_ command: DispatchCommand, now: Double) -> CommandAck {
        let id = PeerText.quoted(command.id, limit: 128)
        guard let document = command.schedule else {
            return CommandAck(id: command.id, accepted: false, reason: "DISPATCH_REFUSED: a schedule command carries its schedule")
        }
        guard let schedules else {
            let refusal = ScheduleError(.disabled, message: "this site has no schedule: section; the schedule is not taken")
            logger.warning("dispatch \(id) refused: \(refusal)", metadata: ["BESS_CODE": "\(refusal.code)", "MESSAGE_ID": "\(MessageID.site)"])
            return CommandAck(id: command.id, accepted: false, reason: "\(refusal)")
        }
        let answer = schedules.offer(document, source: .aggregator, now: Int64(now.rounded(.down)))
        let reason = ScheduleIntake.reason(answer, schedule: document)
        if answer.accepted {
            let line = "dispatch \(id) applied: schedule \(PeerText.quoted(document.id, limit: 128)) revision \(document.revision)"
                + (reason.map { " (\($0))" } ?? "")
            logger.notice("\(line)",
                          metadata: ["MESSAGE_ID": "\(MessageID.site)", "BESS_DISPATCH_ID": "\(command.id)"])
        }
        return CommandAck(id: command.id, accepted: answer.accepted, reason: reason)
    }
}

/// The words of a schedule's answer, as a command's `reason` and bessctl say them.
enum ScheduleIntake {
    /// Refused: the error (`CODE: message`); taken: the infeasible block, the repetition or the file's
    /// problem, if any; nil when it was simply taken.
    static func reason(_ answer: ScheduleAnswer, schedule: ScheduleDocument) -> String? {
        if let error = answer.error { return "\(error)" }
        if answer.repeated {
            return "SCHEDULE_REPEATED: \(PeerText.quoted(schedule.id, limit: 128)) revision \(schedule.revision) was taken before; not acted on again"
        }
        let parts = [answer.warning, answer.stateProblem.map { "\($0)" }].compactMap { $0 }
        return parts.isEmpty ? nil : parts.joined(separator: "; ")
    }
}
