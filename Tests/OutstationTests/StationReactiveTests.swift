import BessSystem
import ControlCore
import Cycle
import IEC104
@testable import Outstation
import Testing

/// 1002 `net_mvar` and 1003 `voltage_kv` from the site's view (issue 59, slice 1): + = injecting,
/// line to line, invalid when not measured; spontaneous on their deadbands.
@Suite("IEC 104 station image: reactive power and voltage")
struct StationReactiveTests {
    static let metered = StationDescription(ratingsW: [100_000, 100_000], capacitiesWh: [250_000, 250_000], hasMeter: true,
                                            frequencyResponseEnabled: false)

    /// Two running units measuring `unitVar` each at `unitVolts`.
    static func units(unitVar: Double, unitVolts: Double) -> [UnitStatus] {
        var units = StationImageTests.units(power: 10_000)
        for i in units.indices {
            units[i].reactivePower = unitVar
            units[i].acVoltage = unitVolts
        }
        return units
    }

    /// A fresh meter reading `gridVar` (+ = taken from the grid) at `volts`, line to neutral.
    static func meter(gridVar: Double, volts: Double, stale: Bool = false) -> SiteStatus {
        var site = SiteStatus()
        site.gridPower = stale ? .nan : -30_000
        site.gridReactivePower = stale ? .nan : gridVar
        site.gridVoltage = stale ? .nan : volts
        site.meterStale = stale
        return site
    }

    func value(_ image: StationImage, _ address: UInt32) -> PointValue? { image.points.first { $0.address == address }?.value }

    @Test("with a meter: 1002 is −meter var in Mvar (+ = injecting), 1003 √3 · meter V in kV; stale: both invalid")
    func meteredSite() {
        var image = StationImage(description: Self.metered, settings: OutstationSettings())
        let now = MonotonicInstant(nanoseconds: 0)
        // The meter sees 40 kvar taken from the grid (the site absorbs it) at 231 V line to neutral;
        // the units' own 5 kvar and 240 V are not the connection point's.
        image.fill(units: Self.units(unitVar: 5_000, unitVolts: 240), site: Self.meter(gridVar: 40_000, volts: 231), frequency: 50, now: now)
        #expect(value(image, 1002) == .float(Float(-0.04), .good))
        #expect(value(image, 1003) == .float(Float(3.0.squareRoot() * 231 / 1000), .good))
        // A stale meter: nothing at the connection point, and no unit's value stands in for it.
        image.fill(units: Self.units(unitVar: 5_000, unitVolts: 240), site: Self.meter(gridVar: 40_000, volts: 231, stale: true),
                   frequency: 50, now: now + .seconds(1))
        #expect(value(image, 1002) == .float(0, .invalid))
        #expect(value(image, 1003) == .float(0, .invalid))
        // A meter that measures power but neither var nor voltage.
        var partial = Self.meter(gridVar: .nan, volts: .nan)
        partial.gridPower = -30_000
        image.fill(units: Self.units(unitVar: 5_000, unitVolts: 240), site: partial, frequency: 50, now: now + .seconds(2))
        #expect(value(image, 1001) == .float(Float(0.03), .good))
        #expect(value(image, 1002) == .float(0, .invalid) && value(image, 1003) == .float(0, .invalid))
    }

    @Test("without a meter: 1002 is Σ units' var; 1003 invalid (a unit's terminal voltage is not the connection point's)")
    func unitsOnly() {
        var image = StationImage(description: StationImageTests.description, settings: OutstationSettings())
        let now = MonotonicInstant(nanoseconds: 0)
        image.fill(units: Self.units(unitVar: -7_500, unitVolts: 230), site: SiteStatus(), frequency: 50, now: now)
        #expect(value(image, 1002) == .float(Float(-0.015), .good))
        #expect(value(image, 1003) == .float(0, .invalid))
        image.fill(units: Self.units(unitVar: .nan, unitVolts: .nan), site: SiteStatus(), frequency: 50, now: now + .seconds(1))
        #expect(value(image, 1002) == .float(0, .invalid), "no unit measures var: invalid, not zero")
    }

    @Test("1002 and 1003 are spontaneous past 0.001 Mvar and 0.1 kV, quiet within")
    func deadbands() {
        var image = StationImage(description: Self.metered, settings: OutstationSettings())
        let now = MonotonicInstant(nanoseconds: 0)
        func fill(_ gridVar: Double, _ volts: Double, _ second: Int64) {
            image.fill(units: Self.units(unitVar: 0, unitVolts: 230), site: Self.meter(gridVar: gridVar, volts: volts), frequency: 50,
                       now: now + .seconds(second))
        }
        fill(10_000, 230, 0)
        #expect(image.changes().isEmpty, "the first fill is the interrogation's")
        fill(10_800, 250, 1)  // 0.8 kvar; 20 V line to neutral = 0.035 kV line to line
        #expect(!image.changes().contains { $0.address == 1002 || $0.address == 1003 }, "within both deadbands")
        fill(11_200, 290, 2)  // 1.2 kvar from the last reported; 60 V = 0.104 kV
        let moved = image.changes().filter { $0.address == 1002 || $0.address == 1003 }
        #expect(moved.map(\.address) == [1002, 1003])
        #expect(moved.map(\.value) == [.float(Float(-0.0112), .good), .float(Float(3.0.squareRoot() * 290 / 1000), .good)])
        fill(.nan, 290, 3)
        #expect(image.changes().filter { $0.address == 1002 }.map(\.value) == [.float(0, .invalid)], "a quality change is reported")
    }
}
