import Testing
@testable import Planning

@Suite struct PlanningModuleTests {
    @Test func moduleLinks() { #expect(String(describing: Planning.self) == "Planning") }
}
