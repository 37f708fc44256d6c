import ControlCore
import IEEE2030_5
@testable import Sep2Link
import Testing

/// DERCapability and DERSettings with the site's reactive ratings and modes (issue 59 slice 6): claimed
/// only while some unit has var points.
@Suite("Sep2 reports: the reactive ratings and modes")
struct Sep2ReactiveReportTests {
    @Test("with var points: bits 4, 5, 6, 21, 23, 24, 26, rtgMaxVar / rtgMaxVarNeg and the least power factors; without: none of them")
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
        #expect(with.modesSupported.isSuperset(of: .reactive) && with.modesSupported.rawValue == without.modesSupported.rawValue | 0x05A0_0070)
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

    @Test("rtgMaxVA, rtgVNom, rtgNormalCategory and setMaxVA, setVNom, setVRef = setVNom, setVRefOfs 0: said with var points only")
    func referenceRatingsWhileVarPoints() throws {
        var settings = Sep2ReporterTests.settings()
        let w = settings.ratings.maxDischargeW
        settings.reference = Sep2ReferenceRatings(maxVA: w * 1.1, nominalVoltageV: 240, normalCategory: .a)
        let reporter = Sep2Reporter(settings: settings)
        var sample = Sep2ReporterTests.snapshot()
        sample.varMaxInjecting = 0
        sample.varMaxAbsorbing = 0
        let without = reporter.capability(sample), unset = reporter.settingsReport(sample, updatedTime: 1)
        #expect(without.ratedVNom == nil && without.ratedNormalCategory == nil && unset.setVNom == nil && unset.setVRefOfs == nil && unset.setMaxVA == nil)
        sample.varMaxInjecting = 0.44 * w
        sample.varMaxAbsorbing = 0.25 * w
        let with = reporter.capability(sample), set = reporter.settingsReport(sample, updatedTime: 1)
        #expect(with.ratedMaxVA == w * 1.1 && with.ratedVNom == 240 && with.ratedNormalCategory == .a)
        #expect(set.setMaxVA == w * 1.1 && set.setVNom == 240 && set.setVRef == 240 && set.setVRefOfs == 0)
        let written = String(decoding: try set.xml(csipaus: .v1_2), as: UTF8.self)
        #expect(written.contains("<setVNom><multiplier>0</multiplier><value>240</value></setVNom><setVRef><multiplier>0</multiplier><value>240</value></setVRef>"
            + "<setVRefOfs><multiplier>0</multiplier><value>0</value></setVRefOfs><updatedTime>"), "\(written)")
        #expect(String(decoding: try with.xml(csipaus: .v1_2), as: UTF8.self).contains("<rtgNormalCategory>1</rtgNormalCategory><rtgVNom>"))
        // An apparent rating below the active one is no rating: left out rather than said smaller than rtgMaxW.
        settings.reference = Sep2ReferenceRatings(maxVA: w / 2, nominalVoltageV: nil, normalCategory: nil)
        let small = Sep2Reporter(settings: settings)
        #expect(small.capability(sample).ratedMaxVA == nil && small.settingsReport(sample, updatedTime: 1).setMaxVA == nil)
        #expect(small.settingsReport(sample, updatedTime: 1).setVRefOfs == nil)
    }

    @Test("statVarAvail is setMaxVar by construction: the same number on the wire, none without var points")
    func statVarAvailIsSetMaxVar() throws {
        let reporter = Sep2Reporter(settings: Sep2ReporterTests.settings())
        var sample = Sep2ReporterTests.snapshot()
        for (injecting, absorbing) in [(60_000.0, 40_000.0), (123_456.0, 0.0), (44_000.0, 44_000.0)] {
            sample.varMaxInjecting = injecting
            sample.varMaxAbsorbing = absorbing
            let settings = reporter.settingsReport(sample, updatedTime: 1), availability = reporter.availabilityReport(sample, serverTime: 1)
            #expect(availability.availableVar == settings.setMaxVar && settings.setMaxVar == injecting)
            // The same ReactivePower element either way (value and multiplier).
            let said = String(decoding: try availability.xml(), as: UTF8.self), set = String(decoding: try settings.xml(csipaus: .v1_2), as: UTF8.self)
            func inner(_ text: String, _ name: String) -> Substring? {
                guard let open = text.firstRange(of: "<\(name)>"), let close = text.firstRange(of: "</\(name)>") else { return nil }
                return text[open.upperBound..<close.lowerBound]
            }
            #expect(inner(said, "statVarAvail") != nil && inner(said, "statVarAvail") == inner(set, "setMaxVar"), "\(said) against \(set)")
        }
        sample.varMaxInjecting = 0
        sample.varMaxAbsorbing = 0
        #expect(reporter.availabilityReport(sample, serverTime: 1).availableVar == nil && reporter.settingsReport(sample, updatedTime: 1).setMaxVar == nil)
    }
}
