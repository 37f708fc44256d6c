import ControlCore
import Cycle
import Foundation
import IEEE2030_5
@testable import Sep2Link
import Testing

/// The utility's reactive controls through the worker (issue 59 slice 6): published into the cycle's
/// slot, `opModFixedVar` of the var capability the reports last sampled, a var beyond it left out
/// and journalled once.
@Suite("2030.5 worker: the reactive controls", .serialized)
struct Sep2ReactiveWorkerTests {
    typealias Rig = Sep2WorkerTests.Rig

    @Test("a target var beyond the site's capability is left out and said once; a fixed var of setMaxVar is published in var")
    func beyondCapabilityLeftOut() {
        let reactive = "<opModFixedVar><refType>2</refType><value>5000</value></opModFixedVar>"
            + "<opModTargetVar><value>5000</value><multiplier>1</multiplier></opModTargetVar>"
        var chain = Sep2Fixture.chain(controls: [Sep2WorkerTests.controlA])
        chain["/derp/1/derc"] = Sep2Fixture.controlList([Sep2WorkerTests.controlA])
            .replacingOccurrences(of: "<DERControlBase>", with: "<DERControlBase>" + reactive)
        let rig = Rig(server: FakeSep2Server(chain))
        rig.client.reactive.ratings = (10_000, 8_000)
        rig.settle()
        for _ in 0..<4 {
            rig.advance(31)
            rig.settle()
        }
        let limits = rig.slot.read()
        #expect(rig.export == 1500, "control A in force at t0+124")
        #expect(limits?.fixedVar == 5_000, "50 % of setMaxVar 10 kvar: \(String(describing: limits?.fixedVar))")
        #expect(limits?.targetVar == nil, "50 kvar is beyond 10 kvar injecting: left out")
        let lines = rig.log.codes("SEP2_CONTROL_NOT_APPLIED")
        #expect(lines.count == 1 && lines[0].contains("opModTargetVar 50000 var is beyond") && lines[0].contains("control \"A1\""),
                "\(rig.log.all)")
        #expect(rig.log.codes("SEP2_CONTROL_REFUSED").isEmpty, "\(rig.log.all)")
        // Within the capability once it grows: published, nothing said again.
        rig.client.reactive.ratings = (60_000, 8_000)
        rig.advance(5)
        rig.settle()
        #expect(rig.slot.read()?.targetVar == 50_000 && rig.slot.read()?.fixedVar == 30_000)
        #expect(rig.log.codes("SEP2_CONTROL_NOT_APPLIED").count == 1)
    }
}
