import ControlCore
import ControlProtocol
@testable import Service
import Testing

/// `site --json`'s `utility` object: what the cycle applied of the utility's IEEE 2030.5 controls.
@Suite("The site reply's utility object")
struct UtilityReplyTests {
    static let site = SiteReply(
        mode: "hil", gridPowerW: 1_000, meter: MeterReply(configured: false),
        limits: LimitsReply(importMaxW: nil, exportMaxW: nil, binding: nil),
        application: ApplicationReply(name: "none", active: false, targetW: 0, socReservePercent: nil),
        gridOperator: GridOperatorReply(inputs: InputsReply(configured: false, lost: nil), limitPercent: nil, capW: nil, limiting: false,
                                        scadaLimit: nil, inputLimitPercent: nil, scadaSetpoint: nil),
        decision: DecisionReply(requestedW: 0, heldW: 0, applicationW: 0, poolW: 0, deliveredW: 0),
        loadEstimateW: RangeReply(low: nil, high: nil), shortfall: ShortfallReply(active: false, missingW: 0), units: [])

    /// Caps null when none; unmetered said.
    @Test("status utility object: absent without a control; in force, the binding control and ramped caps")
    func fromTheDecision() throws {
        #expect(StatusReport.utilityReply(UtilityDecision()) == nil)
        #expect(!JSONTextTests.text(Self.site).contains("utility"))
        var decision = UtilityDecision()
        decision.active = true
        decision.binding = .import
        decision.chargeCap = 25_000
        decision.unmetered = true
        decision.request = -40_000
        let reply = try #require(StatusReport.utilityReply(decision))
        #expect(reply.binding == "import" && reply.chargeCapW == 25_000 && reply.unmetered && !reply.disconnected)
        let site = Self.site.with(utility: reply)
        #expect(JSONTextTests.text(site).contains(
            #""utility":{"binding":"import","charge_cap_w":25000,"discharge_cap_w":null,"disconnected":false,"export_limit_w":null,"#
            + #""import_limit_w":null,"request_w":-40000,"unmetered":true}"#))
        var finite = reply
        finite.dischargeCapW = nil
        finite.exportLimitW = nil
        finite.importLimitW = nil
        let read = try JSONTextTests.roundTrip(Self.site.with(utility: finite))
        #expect(read.utility == finite)
        decision.binding = .none
        #expect(StatusReport.utilityReply(decision)?.binding == nil)
    }
}
