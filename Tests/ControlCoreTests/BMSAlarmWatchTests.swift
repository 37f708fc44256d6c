import ControlCore
import Testing

/// Which BMS frames wake the cycle at once: edges that call for less power, judged by the unit's
/// interlock table alone (the CAN worker gets nothing back from the cycle).
@Suite("BMS alarms: what calls for less power")
struct BMSAlarmWatchTests {
    let watch = BMSAlarmWatch(rules: InterlockRule.defaultTable())
    let t = Fixture.instant(10)

    func bms(_ change: (inout BMSSnapshot) -> Void = { _ in }) -> BMSSnapshot {
        var s = Fixture.healthyBMS(at: t, chargeA: 300, dischargeA: 300)
        change(&s)
        return s
    }

    @Test("a newly raised protection flag wakes the cycle; a standing one, an alarm or a clearing does not")
    func protection() {
        let raised = bms { $0.protection?.value.protections = [.overtemperature] }
        #expect(watch.callsForLess(before: bms(), after: raised))
        #expect(!watch.callsForLess(before: raised, after: raised), "still raised: no new edge")
        let another = bms { $0.protection?.value.protections = [.overtemperature, .systemError] }
        #expect(watch.callsForLess(before: raised, after: another), "a second flag is a new edge")
        let alarmOnly = bms { $0.protection?.value.alarms = [.cellOvervoltage] }
        #expect(!watch.callsForLess(before: bms(), after: alarmOnly), "an alarm warns; it cuts nothing")
        #expect(!watch.callsForLess(before: raised, after: bms()), "clearing calls for more, not less")
    }

    @Test("charge or discharge newly disabled wakes it, either direction; staying disabled does not")
    func enables() {
        let noDischarge = bms { $0.requests?.value.dischargeEnabled = false }
        #expect(watch.callsForLess(before: bms(), after: noDischarge))
        #expect(!watch.callsForLess(before: noDischarge, after: noDischarge))
        let noCharge = bms { $0.requests?.value.chargeEnabled = false }
        #expect(watch.callsForLess(before: bms(), after: noCharge))
        #expect(!watch.callsForLess(before: noDischarge, after: bms()), "enabled again calls for more")
    }

    @Test("a limit falling by a tenth or more, or to zero, wakes it; a small step, a rise or no change does not")
    func limits() {
        let step = bms { $0.limits?.value.dischargeCurrentLimit = Amps(280) }  // −6.7 %: the next period's
        #expect(!watch.callsForLess(before: bms(), after: step))
        let fall = bms { $0.limits?.value.dischargeCurrentLimit = Amps(150) }
        #expect(watch.callsForLess(before: bms(), after: fall))
        #expect(!watch.callsForLess(before: fall, after: fall), "unchanged: no new edge")
        #expect(!watch.callsForLess(before: fall, after: bms()), "rising calls for more")
        let chargeFall = bms { $0.limits?.value.chargeCurrentLimit = Amps(100) }
        #expect(watch.callsForLess(before: bms(), after: chargeFall))
        let small = bms { $0.limits?.value.chargeCurrentLimit = Amps(0.5) }
        let zero = bms { $0.limits?.value.chargeCurrentLimit = Amps(0) }
        #expect(watch.callsForLess(before: small, after: zero), "to zero, however small the step")
    }

    @Test("a cell value newly past critical wakes the cycle; one staying past, or a derate level, does not")
    func criticalCells() {
        let high = bms { $0.cells?.value.maxCellVoltage = Volts(3.81) }
        #expect(watch.callsForLess(before: bms(), after: high))
        #expect(!watch.callsForLess(before: high, after: high))
        let low = bms { $0.cells?.value.minCellVoltage = Volts(2.49) }
        #expect(watch.callsForLess(before: bms(), after: low))
        let hot = bms { $0.cells?.value.maxTemperature = Celsius(66) }
        #expect(watch.callsForLess(before: bms(), after: hot))
        let warm = bms { $0.cells?.value.maxTemperature = Celsius(50) }
        #expect(!watch.callsForLess(before: bms(), after: warm), "a derate, not critical: the cycle's period is enough")
    }

    @Test("thresholds come from the unit's interlock table, overrides included; missing rules not watched")
    func fromTable() {
        var rules = InterlockRule.defaultTable()
        for i in rules.indices where rules[i].code == .overtemperatureCritical { rules[i].threshold = 60 }
        let custom = BMSAlarmWatch(rules: rules)
        #expect(custom.temperatureHighCritical == 60)
        let hot = bms { $0.cells?.value.maxTemperature = Celsius(61) }
        #expect(custom.callsForLess(before: bms(), after: hot))
        #expect(!watch.callsForLess(before: bms(), after: hot))
        let withoutCellRules = BMSAlarmWatch(rules: InterlockRule.defaultTable().filter { $0.code != .cellOvervoltageCritical })
        #expect(withoutCellRules.cellHighCritical == nil)
        #expect(!withoutCellRules.callsForLess(before: bms(), after: bms { $0.cells?.value.maxCellVoltage = Volts(4.5) }))
        #expect(BMSAlarmWatch(rules: []) == BMSAlarmWatch(rules: []) && BMSAlarmWatch(rules: []).temperatureHighCritical == nil)
    }
}
