@testable import Config
import ControlCore
import Testing

/// `grid_integration.frequency_events` as the configuration file states it (docs/frequency-events.md).
@Suite("Frequency events (configuration)")
struct FrequencyEventConfigTests {
    static let unit = ResponseSettingsConfigTests.unit

    @Test("the entry and exit delays reach the controller's settings; absent, 1 s and 5 s")
    func delays() throws {
        let set = try ConfigLoader.parse(Self.unit + """
            grid_integration:
              frequency_events: {entry_delay_s: 2.5, exit_delay_s: 10}
            """, file: "f.yaml")
        #expect(set.controlSettings.eventEntryDelay == .milliseconds(2500))
        #expect(set.controlSettings.eventExitDelay == .seconds(10))
        let plain = try ConfigLoader.parse(Self.unit, file: "p.yaml")
        #expect(plain.controlSettings.frequencyEvents == FrequencyEventSettings())
        #expect(plain.controlSettings.eventEntryDelay == .seconds(1) && plain.controlSettings.eventExitDelay == .seconds(5))
    }

    @Test("a negative delay or an unknown key is refused with its key path")
    func refused() {
        for (yaml, keyPath) in [
            ("frequency_events: {exit_delay_s: -1}", "grid_integration.frequency_events.exit_delay_s"),
            ("frequency_events: {entry_delay_s: 700}", "grid_integration.frequency_events.entry_delay_s"),
            ("frequency_events: {delay_s: 1}", "grid_integration.frequency_events.delay_s"),
        ] {
            let error = #expect(throws: ConfigurationError.self) {
                _ = try ConfigLoader.parse(Self.unit + "grid_integration:\n  " + yaml + "\n", file: "bad.yaml")
            }
            #expect(error?.diagnostics.contains { $0.keyPath == keyPath } == true, "\(yaml): \(String(describing: error))")
        }
    }
}
