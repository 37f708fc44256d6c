import ControlCore
import Cycle
import Foundation
import IEEE2030_5
@testable import Sep2Link
import Testing

/// A reactive-only control through the worker while no unit has var points (issue 59 slice 6).
@Suite("2030.5 worker: a reactive-only control without var points", .serialized)
struct Sep2ReactiveRefusalWorkerTests {
    static let t0 = Sep2Fixture.t0

    /// `Sep2DroopWorkerTests.control` with `opModTargetVar` 2 kvar in place of its droop.
    static func control(_ mRID: String, start: Int64, limit: Bool = false) -> String {
        Sep2DroopWorkerTests.control(mRID, start: start, limit: limit).replacingOccurrences(
            of: "<opModFreqDroop><dBOF>36</dBOF><dBUF>36</dBUF><kOF>50</kOF><kUF>50</kUF><openLoopTms>500</openLoopTms></opModFreqDroop>",
            with: "<opModTargetVar><value>2000</value><multiplier>0</multiplier></opModTargetVar>")
    }

    @Test("answered 252 once, never started nor said taken; the var said not applied once; one with a limit runs")
    func varOnlyRefused() throws {
        let server = Sep2DroopWorkerTests.server([Self.control("A1", start: Self.t0 + 100), Self.control("B2", start: Self.t0 + 200, limit: true)])
        let rig = Sep2WorkerTests.Rig(server: server)
        let noVarPoints = Sep2SiteSample()
        rig.client.reporting = Sep2Reporting(reporter: Sep2Reporter(settings: Sep2ReporterTests.settings()), sample: { noVarPoints })
        rig.settle()
        for _ in 0..<10 {
            rig.advance(31)
            rig.settle()
        }
        let responses = Sep2ReporterWorkerTests.responses(server)
        #expect(responses.filter { $0.hasSuffix(" A1") } == ["252 A1"], "answered 252 once, never started: \(responses)")
        #expect(responses.contains("2 B2"), "the one with a limit runs: \(responses) \(rig.log.all)")
        #expect(rig.log.codes("SEP2_CONTROL_TAKEN").filter { $0.contains("opModTargetVar") }.isEmpty, "\(rig.log.all)")
        let notApplied = rig.log.codes("SEP2_CONTROL_NOT_APPLIED").filter { $0.contains("opModTargetVar 2000 var is beyond") }
        #expect(notApplied.count == 2 && rig.slot.read()?.targetVar == nil, "once for each control in force: \(rig.log.all)")
    }
}
