import ControlCore
import ControlProtocol
import Foundation
@testable import Cycle
@testable import Service
import Testing

/// The connection point's reactive law in `site --json` (issue 59 slice 5): `reactive_shortfall_kvar`
/// (+ = injecting; 0 when the units took it all, null from a bessd that predates it) and the site's
/// volt-watt as `limits.binding`.
@Suite("SiteReactiveReplyTests: the site law in site --json")
struct SiteReactiveReplyTests {
    @Test("reactive_shortfall_kvar: written after reactive_setpoint_kvar, keys in order, read back; absent reads as null")
    func shortfall() throws {
        let site = UtilityReplyTests.site.with(utility: nil, reactiveKvar: -150, voltagePU: 1.03, reactiveShortfallKvar: 30)
        let text = JSONTextTests.text(site)
        #expect(text.contains(#""reactive_kvar":-150,"reactive_setpoint_kvar":null,"reactive_shortfall_kvar":30,"#), "\(text)")
        #expect(JSONTextTests.keysInOrder(Array(text.utf8)))
        let read = try JSONTextTests.roundTrip(site)
        #expect(read == site && read.reactiveShortfallKvar == 30)
        let old = JSONTextTests.text(UtilityReplyTests.site.with(utility: nil))
        #expect(old.contains(#""reactive_shortfall_kvar":null"#), "\(old)")
        // A bessd that predates the field wrote no key: bessctl still reads its answer.
        let stripped = old.replacingOccurrences(of: #""reactive_shortfall_kvar":null,"#, with: "")
        #expect(!stripped.contains("shortfall_kvar"))
        #expect(try JSONDecoder().decode(SiteReply.self, from: Data(stripped.utf8)).reactiveShortfallKvar == nil)
    }

    @Test("the site's reactive (who sets Q) and reactive_setpoint_kvar: present while the site sets Q")
    func siteSetpoint() throws {
        let site = UtilityReplyTests.site.with(utility: nil, reactiveKvar: -11.2, voltagePU: 1.035)
            .with(reactive: "volt_var", reactiveSetpointKvar: -11.21)
        let text = JSONTextTests.text(site)
        #expect(text.contains(#""ok":true,"reactive":"volt_var","reactive_kvar":-11.2,"reactive_setpoint_kvar":-11.21,"#), "\(text)")
        #expect(JSONTextTests.keysInOrder(Array(text.utf8)))
        #expect(try JSONTextTests.roundTrip(site) == site)
        let none = JSONTextTests.text(UtilityReplyTests.site.with(utility: nil).with(reactive: nil, reactiveSetpointKvar: .nan))
        #expect(!none.contains(#""reactive":"#) && none.contains(#""reactive_setpoint_kvar":null"#), "\(none)")
    }

    @Test("limits.binding: the grid limit, else the site's volt-watt, else null")
    func voltWattBinding() throws {
        var site = SiteStatus()
        #expect(StatusReport.limitBinding(site) == nil)
        site.voltWattLimited = true
        #expect(StatusReport.limitBinding(site) == "volt_watt")
        site.binding = .exportLimit
        #expect(StatusReport.limitBinding(site) == "export")
        var reply = UtilityReplyTests.site
        reply.limits = LimitsReply(importMaxW: nil, exportMaxW: nil, binding: "volt_watt")
        #expect(JSONTextTests.text(reply).contains(#""binding":"volt_watt""#))
    }
}
