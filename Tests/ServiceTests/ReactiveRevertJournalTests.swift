import BessSystem
import ControlCore
@testable import Service
import Testing

/// The reactive setpoints' reversions in the journal: `SCADA_SETPOINT_REVERTED` as `WSet`'s, with
/// the point that reverted in `BESS_POINT` and the value now in force in the text.
@Suite("Journal: a var or power-factor setpoint reverting")
struct ReactiveRevertJournalTests {
    @Test("VarSet, PFWInj, PFWAbs: SCADA_SETPOINT_REVERTED under the SCADA write catalogue entry, each its point")
    func entries() {
        let expected: [(ControlEventKind, String)] = [(.siteReactiveReverted, "VarSet"), (.sitePowerFactorInjectingReverted, "PFWInj"),
                                                      (.sitePowerFactorAbsorbingReverted, "PFWAbs"), (.siteSetpointReverted, "WSet")]
        for (kind, point) in expected {
            let entry = EventJournal.entry(for: ControlEvent(kind: kind, unit: -1, at: .zero))
            #expect(entry.code == "SCADA_SETPOINT_REVERTED" && entry.point == point && entry.messageID == MessageID.scadaWrite
                    && entry.priority == 4, "\(kind): \(entry)")
        }
    }

    @Test("the line names the point and the value in force, or that it ended")
    func lines() {
        let reverted = EventText.line(ControlEvent(kind: .siteReactiveReverted, unit: -1, value: -12.5, at: .zero), unitID: "site")
        #expect(reverted.contains("SCADA_SETPOINT_REVERTED") && reverted.contains("VarSet") && reverted.contains("-12.5 kvar is in force"), "\(reverted)")
        let ended = EventText.line(ControlEvent(kind: .sitePowerFactorAbsorbingReverted, unit: -1, at: .zero), unitID: "site")
        #expect(ended.contains("PFWAbs") && ended.contains("while charging") && ended.contains("it has ended"), "\(ended)")
        let injecting = EventText.line(ControlEvent(kind: .sitePowerFactorInjectingReverted, unit: -1, value: 0.95, at: .zero), unitID: "site")
        #expect(injecting.contains("PFWInj") && injecting.contains("while discharging") && injecting.contains("0.95 is in force"), "\(injecting)")
    }
}
