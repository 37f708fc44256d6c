import Config
import Outstation
import ControlCore
import Foundation

/// The IEC 104 half of a scenario: the control centre's commands and the journal expectations
/// that judge bessd's answer to them.
extension ScenarioRun {
    /// Sends `orders` from the control centre (connecting, or connecting again after bessd
    /// restarted), each direct execute; the confirmations, and a miss when one is not the one the
    /// action expects.
    func commandIEC104(_ orders: [Scenario.IEC104Order], action: Scenario.Action, t: Double) -> String {
        guard let server = iec104Server else { return "failed: no iec104: block" }
        func address(_ signal: IEC104Signal) -> UInt32 { server.addresses[signal] ?? signal.defaultAddress }
        var outcomes: [String] = []
        do throws(ScenarioError) {
            if controlCentre?.isOpen != true {
                controlCentre?.close()
                controlCentre = nil
                controlCentre = try ControlCentre(port: iec104Port, commonAddress: server.commonAddress)
            }
            for order in orders {
                let confirmation: ControlCentre.Confirmation
                switch order {
                case .agcInService(let on): confirmation = try controlCentre!.singleCommand(address(.agcInServiceCommand), on: on)
                case .agcSetpoint(let mw): confirmation = try controlCentre!.setpoint(address(.agcSetpointCommand), Float(mw))
                case .siteSetpoint(let mw): confirmation = try controlCentre!.setpoint(address(.siteSetpointCommand), Float(mw))
                }
                outcomes.append("\(order.label): \(confirmation)")
                if let want = action.wantPositive, want != confirmation.positive {
                    confirmationMisses.append("\(action.label) at \(fmt(t)) s: \(confirmation), want ACT_CON \(want ? "positive" : "negative")")
                }
            }
        } catch {
            if action.wantPositive != nil { confirmationMisses.append("\(action.label) at \(fmt(t)) s: \(error)") }
            outcomes.append("failed: \(error)")
        }
        return outcomes.joined(separator: "; ")
    }

    /// bessd's log lines written since the last call (whole lines only).
    func newLogLines() -> [String] {
        guard let handle = FileHandle(forReadingAtPath: runDirectory + "/bessd.log") else { return [] }
        defer { try? handle.close() }
        guard (try? handle.seek(toOffset: logOffset)) != nil, let data = try? handle.readToEnd(), !data.isEmpty,
              let end = data.lastIndex(of: UInt8(ascii: "\n")) else { return [] }
        let whole = data[data.startIndex...end]
        logOffset += UInt64(whole.count)
        return String(decoding: whole, as: UTF8.self).split(separator: "\n").map(String.init)
    }

    /// A `journal` / `no_journal` expectation: bessd's log lines of the samples inside the window
    /// (±0.25 s around `at_s`) hold each text, or none of them does.
    func journalMiss(_ e: Scenario.Expectation) -> String? {
        let (from, to): (Double, Double)
        switch e.window {
        case .at(let t): (from, to) = (t - 0.25, t + 0.25)
        case .always(let a, let b), .eventually(let a, let b): (from, to) = (a, b)
        }
        let lines = samples.filter { $0.t >= from && $0.t <= to }.flatMap(\.logLines)
        var misses: [String] = []
        for (text, present) in e.journal {
            let count = lines.filter { $0.contains(text) }.count
            if let times = e.journalTimes, present {
                if count != times { misses.append("\(count) log line(s) with \"\(text)\" (want \(times))") }
                continue
            }
            if present, count == 0 { misses.append("no log line with \"\(text)\"") }
            if !present, count > 0 { misses.append("\(count) log line(s) with \"\(text)\"") }
        }
        return misses.isEmpty ? nil : " from \(fmt(from)) to \(fmt(to)) s: " + misses.joined(separator: "; ")
    }
}
