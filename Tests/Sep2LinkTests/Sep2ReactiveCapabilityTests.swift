import BessSystem
import ControlCore
@testable import Cycle
import Foundation
import IEEE2030_5
@testable import Sep2Link
import Testing

/// The utility's reactive controls judged against the var capability of the `SiteView` the cycle
/// publishes, whether or not anything is reported, and a reactive-only control whose every value is
/// left out answered 252 (issue 59 slice 6).
@Suite("2030.5 worker: the var capability from the published SiteView", .serialized)
struct Sep2ReactiveCapabilityTests {
    static let t0 = Sep2Fixture.t0

    /// Publishes one unit of `vars` var each way, as a cycle would (its count moved on).
    static func publish(_ shared: SharedState, vars: Double) {
        var unit = UnitStatus()
        unit.varMaxInjecting = vars
        unit.varMaxAbsorbing = vars
        shared.publish(unitStatus: [unit])
        shared.contents.withLock { $0.stats.cycles &+= 1 }
    }

    /// A rig reporting a sample with var points (the sample's no-var rule never refuses) whose worker
    /// judges by `shared`'s view; `view`: the var each way the cycle has published (nil: none yet).
    static func rig(_ server: FakeSep2Server, view: Double?) -> (Sep2WorkerTests.Rig, SharedState) {
        let rig = Sep2WorkerTests.Rig(server: server)
        var withVar = Sep2SiteSample()
        withVar.varMaxInjecting = 1_000
        withVar.varMaxAbsorbing = 1_000
        rig.client.reporting = Sep2Reporting(reporter: Sep2Reporter(settings: Sep2ReporterTests.settings()), sample: { [withVar] in withVar })
        let shared = SharedState(units: 1)
        rig.client.reactive.source = Sep2VarCapability.published(in: shared)
        if let view { publish(shared, vars: view) }
        return (rig, shared)
    }

    /// Rounds over `n` periods of 31 s; the responses posted, `status mRID`.
    static func run(_ rig: Sep2WorkerTests.Rig, _ server: FakeSep2Server, periods n: Int) -> [String] {
        for _ in 0..<n {
            rig.advance(31)
            rig.settle()
        }
        return Sep2ReporterWorkerTests.responses(server)
    }

    /// `Sep2ReactiveRefusalWorkerTests.control` with `element` in place of its 2 kvar target.
    static func control(_ mRID: String, start: Int64, limit: Bool = false,
                        element: String = "<opModTargetVar><value>2000</value><multiplier>0</multiplier></opModTargetVar>") -> String {
        Sep2ReactiveRefusalWorkerTests.control(mRID, start: start, limit: limit).replacingOccurrences(
            of: "<opModTargetVar><value>2000</value><multiplier>0</multiplier></opModTargetVar>", with: element)
    }

    @Test("a reactive-only control whose every value is beyond the capability is answered 252, never started; nothing before the view")
    func beyondCapabilityRefused() {
        let server = Sep2DroopWorkerTests.server([Self.control("A1", start: Self.t0 + 100), Self.control("B2", start: Self.t0 + 200, limit: true)])
        let (rig, shared) = Self.rig(server, view: nil)
        rig.settle()
        #expect(Self.run(rig, server, periods: 1).isEmpty, "no control answered before the cycle publishes")
        Self.publish(shared, vars: 1_000)
        let responses = Self.run(rig, server, periods: 10)
        #expect(responses.filter { $0.hasSuffix(" A1") } == ["252 A1"], "answered 252, never started: \(responses)")
        #expect(!responses.contains("2 A1") && responses.contains("2 B2"), "the one with a limit runs: \(responses)")
        let notApplied = rig.log.codes("SEP2_CONTROL_NOT_APPLIED").filter { $0.contains("opModTargetVar 2000 var is beyond") }
        #expect(notApplied.contains { $0.contains("control \"A1\"") }, "the same reason journalled: \(rig.log.all)")
    }

    @Test("a control setting only a fixed var of statVarAvail at a view of 0 var is answered 252 and said not applied")
    func fixedVarOfZeroRefused() {
        let fixed = "<opModFixedVar><refType>3</refType><value>5000</value></opModFixedVar>"
        let server = Sep2DroopWorkerTests.server([Self.control("A1", start: Self.t0 + 100, element: fixed)])
        let (rig, _) = Self.rig(server, view: 0)
        let responses = Self.run(rig, server, periods: 6)
        #expect(responses.filter { $0.hasSuffix(" A1") } == ["252 A1"], "\(responses)")
        #expect(rig.log.codes("SEP2_CONTROL_NOT_APPLIED").contains { $0.contains("opModFixedVar 50.0 % of refType 3 is not applied") },
                "\(rig.log.all)")
    }

    @Test("a reactive-only control within the capability is started")
    func withinCapabilityStarted() {
        let server = Sep2DroopWorkerTests.server([Self.control("A1", start: Self.t0 + 100)])
        let (rig, _) = Self.rig(server, view: 5_000)
        let responses = Self.run(rig, server, periods: 6)
        #expect(responses.contains("2 A1") && !responses.contains("252 A1"), "\(responses)")
    }

    @Test("without reporting the target var is judged by the published view; before it, left out and said")
    func judgedWithoutReporting() {
        let server = Sep2DroopWorkerTests.server([Self.control("B2", start: Self.t0 + 10, limit: true)])
        let rig = Sep2WorkerTests.Rig(server: server)
        let shared = SharedState(units: 1)
        rig.client.reactive.source = Sep2VarCapability.published(in: shared)
        rig.settle()
        rig.advance(31)
        rig.settle()
        #expect(rig.export == 3000, "control B2 in force")
        #expect(rig.slot.read()?.targetVar == nil, "unknown capability: nothing reactive published")
        #expect(rig.log.codes("SEP2_CONTROL_NOT_APPLIED").contains { $0.contains("opModTargetVar 2000 var is not applied") && $0.contains("not known yet") },
                "\(rig.log.all)")
        Self.publish(shared, vars: 1_000)
        rig.advance(1)
        rig.settle()
        #expect(rig.slot.read()?.targetVar == nil, "2 kvar beyond 1 kvar: left out")
        #expect(rig.log.codes("SEP2_CONTROL_NOT_APPLIED").contains { $0.contains("opModTargetVar 2000 var is beyond") }, "\(rig.log.all)")
        Self.publish(shared, vars: 5_000)
        rig.advance(1)
        rig.settle()
        #expect(rig.slot.read()?.targetVar == 2_000, "within 5 kvar: published")
    }

    @Test("a fixed var of setMaxVar at a site of 0 var is said not applied; alone, answered 252")
    func fixedVarOfZeroSaid() {
        let fixed = "<opModFixedVar><refType>2</refType><value>5000</value></opModFixedVar>"
        let server = Sep2DroopWorkerTests.server([Self.control("A1", start: Self.t0 + 10, limit: true, element: fixed)])
        let rig = Sep2WorkerTests.Rig(server: server)
        let shared = SharedState(units: 1)
        rig.client.reactive.source = Sep2VarCapability.published(in: shared)
        Self.publish(shared, vars: 0)
        rig.settle()
        rig.advance(31)
        rig.settle()
        #expect(rig.export == 3000 && rig.slot.read()?.fixedVar == nil)
        #expect(rig.log.codes("SEP2_CONTROL_NOT_APPLIED").contains { $0.contains("opModFixedVar 50.0 % of refType 2 is not applied") && $0.contains("0 var") },
                "\(rig.log.all)")
        // Alone, judged by the reporter against the same capability: 252 with that reason.
        var base = DERControlBase()
        base.fixedVar = FixedVar(refType: 3, hundredthsPercent: -2_500)
        let why = Sep2VarCapability.leftOut(base, scope: Sep2ReactiveScope(injecting: 1_000, absorbing: 0, ratingW: 10_000))
        #expect(why?.contains("opModFixedVar -25.0 % of refType 3 is not applied") == true, "\(String(describing: why))")
        #expect(Sep2VarCapability.leftOut(base, scope: Sep2ReactiveScope(injecting: 0, absorbing: 1_000, ratingW: 10_000)) == nil)
    }
}
