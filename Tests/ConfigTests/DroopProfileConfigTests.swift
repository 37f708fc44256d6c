@testable import Config
import ControlCore
import Testing

/// `droop_settings.profile`, `sustain_s` and `response_power_percent` (issue 47 §2).
@Suite("Response reserve and profiles (configuration)")
struct DroopProfileConfigTests {
    static let unit = ResponseSettingsConfigTests.unit

    @Test("sustain_s, response_power_percent and a profile whose keys are overridden one by one")
    func sustainAndProfile() throws {
        let c = try ConfigLoader.parse(Self.unit + """
            grid_integration:
              droop_settings: {profile: ieee1547_2018, nominal_hz: 60, droop_percent_over: 4, sustain_s: 300,
                               response_power_percent: 50}
            """, file: "p.yaml")
        var expected = DroopSettings.ieee1547_2018(nominal: Hertz(60))
        expected.droopOverPercent = 4
        expected.sustain = .seconds(300)
        expected.responsePowerPercent = 50
        #expect(c.grid.droop == expected)
        let seed = try ConfigLoader.parse(Self.unit + "grid_integration:\n  droop_settings: {enabled: true}\n", file: "s.yaml")
        #expect(seed.grid.droop == .seedDefault, "no profile and no keys: the seed's settings, no reserve")
    }

    @Test("an IEGC 2023 profile is refused with the reason; a sustain time out of range too")
    func refused() {
        for (yaml, key, message) in [
            ("droop_settings: {profile: iegc2023}", "grid_integration.droop_settings.profile", "not verified"),
            ("droop_settings: {profile: entsoe}", "grid_integration.droop_settings.profile", "seed, ieee1547_2018"),
            ("droop_settings: {sustain_s: -1}", "grid_integration.droop_settings.sustain_s", "from 0 to 86400"),
            ("droop_settings: {response_power_percent: 0}", "grid_integration.droop_settings.response_power_percent", "greater than 0"),
        ] {
            do {
                _ = try ConfigLoader.parse(Self.unit + "grid_integration:\n  " + yaml + "\n", file: "b.yaml")
                Issue.record("accepted \(yaml)")
            } catch {
                #expect(error.diagnostics.map(\.keyPath) == [key])
                #expect(error.diagnostics.first.map { "\($0)".contains(message) } == true, "\(error)")
            }
        }
    }
}
