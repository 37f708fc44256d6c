import ControlCore
import IEEE2030_5
@testable import Sep2Link
import Testing

/// DERCapability and DERSettings with the site's reactive ratings and modes (issue 59 slice 6): claimed
/// only while some unit has var points.
@Suite("Sep2 reports: the reactive ratings and modes")
struct Sep2ReactiveReportTests {
    @Test("with var points: bits 4, 5, 6, 21, rtgMaxVar / rtgMaxVarNeg and the least power factors; without: none of them")
    func reactiveWhileVarPoints() throws {
        let reporter = Sep2Reporter(settings: Sep2ReporterTests.settings())
        var sample = Sep2ReporterTests.snapshot()
        sample.varMaxInjecting = 0
        sample.varMaxAbsorbing = 0
        let without = reporter.capability(sample)
        #expect(without.modesSupported.isDisjoint(with: .reactive) && without.ratedMaxVar == nil && without.ratedMinPFOverExcited == nil)
        #expect(reporter.settingsReport(sample, updatedTime: 1).setMaxVar == nil)
        sample.varMaxInjecting = 60_000
        sample.varMaxAbsorbing = 40_000
        let with = reporter.capability(sample)
        #expect(with.modesSupported.isSuperset(of: .reactive) && with.modesSupported.rawValue == without.modesSupported.rawValue | 0x0020_0070)
        #expect(with.ratedMaxVar == 60_000 && with.ratedMaxVarNeg == 40_000)
        let w = reporter.settings.ratings.maxDischargeW
        let over = try #require(with.ratedMinPFOverExcited), under = try #require(with.ratedMinPFUnderExcited)
        #expect(abs(over - w / (w * w + 3.6e9).squareRoot()) < 1e-12 && abs(under - w / (w * w + 1.6e9).squareRoot()) < 1e-12)
        let settings = reporter.settingsReport(sample, updatedTime: 1)
        #expect(settings.setMaxVar == 60_000 && settings.setMaxVarNeg == 40_000 && settings.modesEnabled?.isSuperset(of: .reactive) == true)
        let written = String(decoding: try with.xml(csipaus: .v1_3), as: UTF8.self)
        #expect(written.contains("<rtgMaxVarNeg><multiplier>0</multiplier><value>-4000</value></rtgMaxVarNeg>")
                    || written.contains("<rtgMaxVarNeg><multiplier>1</multiplier><value>-4000</value></rtgMaxVarNeg>"), "\(written)")
    }
}
