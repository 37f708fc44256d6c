import ControlCore
import IEEE2030_5
@testable import Sep2Link
import Testing

/// `opModFreqDroop` as the reporter answers and claims it: only while the configured droop is enabled.
@Suite("2030.5 reporter and the configured droop")
struct Sep2ReporterDroopTests {
    /// A control that sets only `opModFreqDroop` (IEEE 1547-2018's defaults), and one that also limits export.
    static func droopControl(_ mRID: String, withLimit: Bool = false) -> DERControl {
        var control = Sep2ReporterTests.control(mRID, required: 0x03)
        if !withLimit { control.base.exportLimitW = nil }
        control.base.freqDroop = FreqDroop(deadbandOverMilliHz: 36, deadbandUnderMilliHz: 36, droopOverThousandths: 50,
                                           droopUnderThousandths: 50, openLoopHundredthsSecond: 500)
        return control
    }

    static func settings(droop: Bool) -> Sep2ReporterSettings {
        var settings = Sep2ReporterTests.settings()
        settings.frequencyDroopEnabled = droop
        return settings
    }

    @Test("droop disabled: a droop-only control is answered 252 once, never started; one with a limit runs")
    func droopOnlyNotApplicableWhenDisabled() throws {
        let programs = [ProgramSchedule(mRID: "P", primacy: 1, controls: [Self.droopControl("A1")]),
                        ProgramSchedule(mRID: "Q", primacy: 2, controls: [Self.droopControl("B2", withLimit: true)])]
        var disabled = Sep2Reporter(settings: Self.settings(droop: false))
        #expect(try Sep2ReporterTests.statuses(disabled.track(programs, serverTime: 900)) == ["252 A1", "1 B2"])
        #expect(try Sep2ReporterTests.statuses(disabled.track(programs, serverTime: 1000)) == ["2 B2"], "A1 never started")
        #expect(try Sep2ReporterTests.statuses(disabled.track(programs, serverTime: 1060)) == ["3 B2"], "nor completed")
        var enabled = Sep2Reporter(settings: Self.settings(droop: true))
        #expect(try Sep2ReporterTests.statuses(enabled.track(programs, serverTime: 900)) == ["1 A1", "1 B2"])
        #expect(try Sep2ReporterTests.statuses(enabled.track(programs, serverTime: 1000)) == ["2 A1", "2 B2"])
    }

    /// Started while enabled: completed (3, not 252) after a disable; answered 252 while disabled: not started after an enable; only received: refused at its start.
    @Test("a droop reload does not change answers already given to controls")
    func droopDecisionSticks() throws {
        let programs = [ProgramSchedule(mRID: "P", primacy: 1, controls: [Self.droopControl("A1")])]
        var started = Sep2Reporter(settings: Self.settings(droop: true))
        #expect(try Sep2ReporterTests.statuses(started.track(programs, serverTime: 900)) == ["1 A1"])
        #expect(try Sep2ReporterTests.statuses(started.track(programs, serverTime: 1000)) == ["2 A1"])
        started.useFrequencyDroop(false)
        #expect(try Sep2ReporterTests.statuses(started.track(programs, serverTime: 1060)) == ["3 A1"])
        var refused = Sep2Reporter(settings: Self.settings(droop: false))
        #expect(try Sep2ReporterTests.statuses(refused.track(programs, serverTime: 900)) == ["252 A1"])
        refused.useFrequencyDroop(true)
        #expect(try Sep2ReporterTests.statuses(refused.track(programs, serverTime: 1000)) == [])
        #expect(try Sep2ReporterTests.statuses(refused.track(programs, serverTime: 1060)) == [])
        // Not yet answered when the droop is enabled: taken as any control.
        var late = Sep2Reporter(settings: Self.settings(droop: false))
        late.useFrequencyDroop(true)
        #expect(try Sep2ReporterTests.statuses(late.track(programs, serverTime: 1000)) == ["1 A1", "2 A1"])
        // Received while enabled, disabled before its start: refused at the start, never started.
        var received = Sep2Reporter(settings: Self.settings(droop: true))
        #expect(try Sep2ReporterTests.statuses(received.track(programs, serverTime: 900)) == ["1 A1"])
        received.useFrequencyDroop(false)
        #expect(try Sep2ReporterTests.statuses(received.track(programs, serverTime: 1000)) == ["252 A1"])
        #expect(try Sep2ReporterTests.statuses(received.track(programs, serverTime: 1060)) == [])
    }

    @Test("DERCapability and DERSettings claim opModFreqDroop (bit 8) only with the droop enabled")
    func modesFollowTheConfiguredDroop() throws {
        let off = Sep2Reporter(settings: Self.settings(droop: false)), on = Sep2Reporter(settings: Self.settings(droop: true))
        #expect(!off.capability().modesSupported.contains(.frequencyDroop) && on.capability().modesSupported.contains(.frequencyDroop))
        #expect(on.capability().modesSupported.rawValue == off.capability().modesSupported.rawValue | 1 << 8)
        let sample = Sep2ReporterTests.snapshot()
        #expect(off.settingsReport(sample, updatedTime: 1).modesEnabled?.contains(.frequencyDroop) == false)
        #expect(on.settingsReport(sample, updatedTime: 1).modesEnabled?.contains(.frequencyDroop) == true)
        // What the writer puts on the wire: modesSupported 0050018F with droop (bit 8), 0050008F without.
        let written = String(decoding: try on.capability().xml(csipaus: .v1_2), as: UTF8.self)
        #expect(written.contains("<modesSupported>0050018F</modesSupported>"), "\(written)")
    }
}
