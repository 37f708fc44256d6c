import ControlCore
import IEEE2030_5
@testable import Sep2Link
import Testing

/// A control that sets only reactive controls on a site where no unit has var points (issue 59 slice 6):
/// answered 252 (not applicable), never started; with var points, or with an active-power element, as
/// any control.
@Suite("2030.5 reporter: reactive-only controls without var points")
struct Sep2ReactiveRefusalTests {
    static func reporter(varMax: Double?) -> Sep2Reporter {
        var reporter = Sep2Reporter(settings: Sep2ReporterTests.settings())
        if let varMax {
            var sample = Sep2ReporterTests.snapshot()
            sample.varMaxInjecting = varMax
            sample.varMaxAbsorbing = varMax
            reporter.sample(sample, serverTime: 800)
        }
        return reporter
    }

    /// `opModTargetVar` 2000 var with `Sep2ReporterTests.control`'s export limit (`withLimit`) or alone.
    static func varControl(_ mRID: String, withLimit: Bool = false) -> DERControl {
        var control = Sep2ReporterTests.control(mRID, required: 0x03)
        control.base.targetVar = ReactivePower(value: 2000, multiplier: 0)
        control.base.exportLimitW = withLimit ? control.base.exportLimitW : nil
        return control
    }

    @Test("no var points: a var-only control is answered 252 once, never started; one with a limit runs")
    func varOnlyNotApplicableWithoutVarPoints() throws {
        let programs = [ProgramSchedule(mRID: "P", primacy: 1, controls: [Self.varControl("A1")]),
                        ProgramSchedule(mRID: "Q", primacy: 2, controls: [Self.varControl("B2", withLimit: true)])]
        var none = Self.reporter(varMax: 0)
        #expect(try Sep2ReporterTests.statuses(none.track(programs, serverTime: 900)) == ["252 A1", "1 B2"])
        #expect(try Sep2ReporterTests.statuses(none.track(programs, serverTime: 1000)) == ["2 B2"], "A1 never started")
        #expect(try Sep2ReporterTests.statuses(none.track(programs, serverTime: 1060)) == ["3 B2"], "nor completed")
        // Var points found later: the answer given stands.
        var sample = Sep2ReporterTests.snapshot()
        sample.varMaxInjecting = 30_000
        none.sample(sample, serverTime: 1061)
        #expect(try Sep2ReporterTests.statuses(none.track(programs, serverTime: 1062)) == [])
        var some = Self.reporter(varMax: 30_000)
        #expect(try Sep2ReporterTests.statuses(some.track(programs, serverTime: 900)) == ["1 A1", "1 B2"])
        #expect(try Sep2ReporterTests.statuses(some.track(programs, serverTime: 1000)) == ["2 A1", "2 B2"])
        // Before the first sample the capability is unknown: nothing is refused for it.
        var unknown = Self.reporter(varMax: nil)
        #expect(try Sep2ReporterTests.statuses(unknown.track(programs, serverTime: 900)) == ["1 A1", "1 B2"])
    }

    @Test("setsOnlyReactive: any of the four reactive controls alone, not with an active-power element or the droop")
    func reactiveOnlyClassifies() {
        var base = DERControlBase()
        #expect(!base.setsOnlyReactive)
        base.fixedPFInject = PowerFactorWithExcitation(displacement: 95, absorbing: false, multiplier: -2)
        #expect(base.setsOnlyReactive)
        base.freqDroop = FreqDroop(deadbandOverMilliHz: 36, deadbandUnderMilliHz: 36, droopOverThousandths: 50,
                                   droopUnderThousandths: 50, openLoopHundredthsSecond: 500)
        #expect(!base.setsOnlyReactive && !base.setsOnlyDroop)
    }
}
