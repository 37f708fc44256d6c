@testable import bess_hil
import Testing

@Suite("Scenario error codes: typed, with the names make scenarios prints")
struct ScenarioErrorCodeTests {
    static let rows: [(ScenarioError.Code, String)] = [
        (.invalid, "SCENARIO_INVALID"),
        (.unreadable, "SCENARIO_UNREADABLE"),
        (.io, "SCENARIO_IO"),
        (.configInvalid, "SCENARIO_CONFIG_INVALID"),
        (.bessdMissing, "SCENARIO_BESSD_MISSING"),
        (.bessdFailed, "SCENARIO_BESSD_FAILED"),
        (.aggregatorMissing, "SCENARIO_AGGREGATOR_MISSING"),
        (.aggregatorFailed, "SCENARIO_AGGREGATOR_FAILED"),
        (.plantFailed, "SCENARIO_PLANT_FAILED"),
        (.plotFailed, "SCENARIO_PLOT_FAILED"),
    ]

    @Test("each code prints its stable name", arguments: rows)
    func names(code: ScenarioError.Code, name: String) {
        #expect(code.description == name)
        #expect(ScenarioError(code, "m").description == "\(name): m")
    }

    @Test("every code has a name of its own")
    func distinct() {
        #expect(Set(Self.rows.map(\.1)).count == Self.rows.count)
        #expect(Set(Self.rows.map(\.0)).count == Self.rows.count)
    }
}
