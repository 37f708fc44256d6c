import ControlProtocol

extension Status {
    /// `status`'s health for a person: a line per stalled thread, and the worker notices the
    /// journal never got (nothing when all is well).
    static func healthLines(_ health: HealthReply?) -> [String] {
        guard let health else { return [] }
        var lines = health.stalled.map { stall in
            let units = stall.units.isEmpty ? "" : " (units \(stall.units.joined(separator: ", ")))"
            let since = stall.sinceS.map { " for \(Double(Int($0 * 10)) / 10) s" } ?? ""
            return "\(stall.code): \(stall.thread)\(units) has not turned\(since)"
        }
        if health.noticesDropped > 0 {
            lines.append("NOTICES_DROPPED: \(health.noticesDropped) bus or CAN worker notice(s) never reached the journal since start")
        }
        return lines
    }
}
