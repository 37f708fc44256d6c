import ControlCore
import Testing

/// Which BMS frames wake the cycle at once: only edges that cut the power commanded now.
@Suite("BMS alarms: what calls for less power")
struct BMSAlarmWatchTests {
    let watch = BMSAlarmWatch(rules: InterlockRule.defaultTable())
    let t = Fixture.instant(10)

    func bms(_ change: (inout BMSSnapshot) -> Void = { _ in }) -> BMSSnapshot {
        var s = Fixture.healthyBMS(at: t, chargeA: 300, dischargeA: 300)
        change(&s)
        return s
    }

    @Test("a protection flag newly raised wakes the cycle while it commands power either way, not at zero")
    func protection() {
        let raised = bms { $0.protection?.value.protections = [.overtemperature] }
        #expect(watch.callsForLess(before: bms(), after: raised, commandedW: 20_000))
        #expect(watch.callsForLess(before: bms(), after: raised, commandedW: -20_000))
        #expect(!watch.callsForLess(before: bms(), after: raised, commandedW: 0), "nothing to cut")
        #expect(!watch.callsForLess(before: raised, after: raised, commandedW: 20_000), "still raised: no new edge")
        let another = bms { $0.protection?.value.protections = [.overtemperature, .systemError] }
        #expect(watch.callsForLess(before: raised, after: another, commandedW: 20_000), "a second flag is a new edge")
        let alarmOnly = bms { $0.protection?.value.alarms = [.cellOvervoltage] }
        #expect(!watch.callsForLess(before: bms(), after: alarmOnly, commandedW: 20_000), "an alarm warns; it cuts nothing")
        let cleared = bms()
        #expect(!watch.callsForLess(before: raised, after: cleared, commandedW: 20_000), "clearing calls for more, not less")
    }

    @Test("charge or discharge disabled wakes it only in the direction commanded")
    func enables() {
        let noDischarge = bms { $0.requests?.value.dischargeEnabled = false }
        #expect(watch.callsForLess(before: bms(), after: noDischarge, commandedW: 20_000))
        #expect(!watch.callsForLess(before: bms(), after: noDischarge, commandedW: -20_000))
        #expect(!watch.callsForLess(before: noDischarge, after: noDischarge, commandedW: 20_000))
        let noCharge = bms { $0.requests?.value.chargeEnabled = false }
        #expect(watch.callsForLess(before: bms(), after: noCharge, commandedW: -20_000))
        #expect(!watch.callsForLess(before: bms(), after: noCharge, commandedW: 20_000))
    }

    @Test("a falling limit wakes it once it falls below the power commanded, not while it stays above")
    func limits() {
        // 52 V: 300 A is 15.6 kW; commanded 10 kW.
        let lower = bms { $0.limits?.value.dischargeCurrentLimit = Amps(250) }  // 13 kW: still above
        #expect(!watch.callsForLess(before: bms(), after: lower, commandedW: 10_000))
        let below = bms { $0.limits?.value.dischargeCurrentLimit = Amps(150) }  // 7.8 kW
        #expect(watch.callsForLess(before: lower, after: below, commandedW: 10_000))
        #expect(!watch.callsForLess(before: below, after: below, commandedW: 10_000), "unchanged: no new edge")
        let rising = bms { $0.limits?.value.dischargeCurrentLimit = Amps(160) }
        #expect(!watch.callsForLess(before: below, after: rising, commandedW: 10_000), "rising calls for more")
        let chargeBelow = bms { $0.limits?.value.chargeCurrentLimit = Amps(100) }
        #expect(watch.callsForLess(before: bms(), after: chargeBelow, commandedW: -10_000))
        #expect(!watch.callsForLess(before: bms(), after: chargeBelow, commandedW: 10_000), "the other direction")
    }

    @Test("a cell value newly past its critical threshold wakes it; one that stays past does not")
    func criticalCells() {
        let high = bms { $0.cells?.value.maxCellVoltage = Volts(3.81) }
        #expect(watch.callsForLess(before: bms(), after: high, commandedW: -5_000))
        #expect(!watch.callsForLess(before: high, after: high, commandedW: -5_000))
        let low = bms { $0.cells?.value.minCellVoltage = Volts(2.49) }
        #expect(watch.callsForLess(before: bms(), after: low, commandedW: 5_000))
        let hot = bms { $0.cells?.value.maxTemperature = Celsius(66) }
        #expect(watch.callsForLess(before: bms(), after: hot, commandedW: 5_000))
        let warm = bms { $0.cells?.value.maxTemperature = Celsius(50) }
        #expect(!watch.callsForLess(before: bms(), after: warm, commandedW: 5_000), "a derate, not critical: the cycle's period is enough")
    }

    @Test("thresholds come from the unit's interlock table, overrides included")
    func fromTable() {
        var rules = InterlockRule.defaultTable()
        for i in rules.indices where rules[i].code == .overtemperatureCritical { rules[i].threshold = 60 }
        let custom = BMSAlarmWatch(rules: rules)
        #expect(custom.temperatureHighCritical == 60)
        #expect(custom.cellHighCritical == 3.80 && custom.cellLowCritical == 2.50)
        let hot = bms { $0.cells?.value.maxTemperature = Celsius(61) }
        #expect(custom.callsForLess(before: bms(), after: hot, commandedW: 5_000))
        #expect(!watch.callsForLess(before: bms(), after: hot, commandedW: 5_000))
    }
}
