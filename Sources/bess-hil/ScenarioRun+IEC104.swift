import Config
import IEC104
import Outstation
import ControlCore
import Foundation

/// The IEC 104 half of a scenario, the control centre's commands, and bessd's log lines read into
/// the samples (the `journal` expectations that judge them are `ScenarioJudge.journalMiss`).
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
                controlCentre = try ControlCentre(port: bessdConfig.iec104Port, commonAddress: server.commonAddress)
            }
            for order in orders {
                let confirmation: ControlCentre.Confirmation
                switch order {
                case .agcInService(let on): confirmation = try controlCentre!.singleCommand(address(.agcInServiceCommand), on: on)
                case .agcSetpoint(let mw): confirmation = try controlCentre!.setpoint(address(.agcSetpointCommand), Float(mw))
                case .siteSetpoint(let mw): confirmation = try controlCentre!.setpoint(address(.siteSetpointCommand), Float(mw))
                case .siteVarSetpoint(let mvar): confirmation = try controlCentre!.setpoint(address(.siteReactiveSetpointCommand), Float(mvar))
                case .sitePowerFactor(let pf): confirmation = try controlCentre!.setpoint(address(.sitePowerFactorCommand), Float(pf))
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
}
