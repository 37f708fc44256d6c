import ControlCore
@testable import Scada
import Testing

/// SCADA's commands expire on the cycle alone (issue 58): model 704 shows the record as the cycle
/// last settled it, and the SCADA thread never settles it itself.
@Suite("SCADA: expiry is judged on the cycle")
struct ScadaExpiryTests {
    static func instant(_ seconds: Double) -> MonotonicInstant { MonotonicInstant(nanoseconds: Int64(seconds * 1e9)) }

    @Test("past WSet's expiry 704 reads WSetEna 1 until the cycle reverts it, then 0 and WSetRvrtRem 0")
    func cycleJudgesExpiry() throws {
        var image = ScadaImage(site: ScadaWriteTests.site)
        let m = try #require(image.start(of: 704))
        func word(_ point: SunSpecPoint) -> UInt16 { image.words[m + point.offset] }
        func all(_ point: SunSpecPoint) -> [UInt16] { Array(image.words[(m + point.offset)..<(m + point.offset + point.size)]) }
        var commands = SiteCommands(maxHold: .seconds(60))
        commands.setpoint.enabled = true
        commands.setpoint.value = 50_000
        commands.setpoint.expiresAt = Self.instant(2)
        // Read at 3 s, before any cycle has judged it: the SCADA thread shows the record as it is.
        image.fill(commands: commands, now: Self.instant(3))
        #expect(word(SunSpecTables.M704.WSetEna) == 1, "the SCADA thread judged the expiry itself")
        #expect(all(SunSpecTables.M704.WSet).contains { $0 != 0 })
        // The cycle's step at 3 s settles it (disabled: no reversion enabled) and reports it.
        let controller = SiteController(
            control: ControlSettings(), units: [UnitSettings(rating: .kilowatts(100), capacity: WattHours(250_000))],
            startedAt: .zero)
        controller.commands = commands
        controller.step(frequency: nil, inputs: [UnitInputs()], now: Self.instant(3), wallClock: 1_800_000_003)
        var reverted = 0
        controller.events.drain { if $0.kind == .siteSetpointReverted { reverted += 1 } }
        #expect(reverted == 1)
        #expect(controller.requestInForce == nil)
        // What the cycle writes back into the record is what 704 then reads.
        image.fill(commands: controller.commands, now: Self.instant(3))
        #expect(word(SunSpecTables.M704.WSetEna) == 0)
        #expect(all(SunSpecTables.M704.WSetRvrtRem).allSatisfy { $0 == 0 })
    }
}
