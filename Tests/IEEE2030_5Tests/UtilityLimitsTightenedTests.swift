import ControlCore
import GridSupport
import IEEE2030_5
import Testing

/// `UtilityLimits.tightened(by:otherOutranks:)`: the held view of the schedule bounded by the server's own
/// (Sep2Schedule.resolve). Volt-watt is a limit on P: the lower curve bounds, and two curves that cross
/// are settled by the event rules' order of their controls (`EventRules.outranks`).
@Suite("IEEE 2030.5 limits tightened by another view")
struct UtilityLimitsTightenedTests {
    static func voltWatt(_ points: [(Double, Double)], seconds: Int64 = 10) throws -> VoltWattSettings {
        VoltWattSettings(curve: try GridCurve(points.map { (x: $0.0, y: $0.1) }), responseTime: .seconds(seconds))
    }

    static func limits(_ voltWatt: VoltWattSettings?) -> UtilityLimits {
        var out = UtilityLimits()
        out.voltWatt = voltWatt
        return out
    }

    @Test("the volt-watt curve lower at every voltage bounds, whichever view carries it")
    func lowerVoltWattBounds() throws {
        // Category B's 1.06/100 1.10/0 against a curve 0.01 p.u. earlier: 1.05/100 1.09/0 is at or below it everywhere.
        let configuredLike = try Self.voltWatt([(1.06, 100), (1.10, 0)])
        let earlier = try Self.voltWatt([(1.05, 100), (1.09, 0)], seconds: 2)
        #expect(Self.limits(configuredLike).tightened(by: Self.limits(earlier)).voltWatt == earlier)
        #expect(Self.limits(earlier).tightened(by: Self.limits(configuredLike)).voltWatt == earlier)
        // Whatever the rank: a lower curve is not a choice.
        #expect(Self.limits(earlier).tightened(by: Self.limits(configuredLike), otherOutranks: true).voltWatt == earlier)
        // A last point below 0 % (charging at high voltage) is lower still.
        let charging = try Self.voltWatt([(1.05, 100), (1.09, -50)])
        #expect(Self.limits(earlier).tightened(by: Self.limits(charging)).voltWatt == charging)
    }

    @Test("a volt-watt in one view alone is in force; none in either is none")
    func oneVoltWatt() throws {
        let curve = try Self.voltWatt([(1.06, 100), (1.10, 0)])
        #expect(Self.limits(nil).tightened(by: Self.limits(curve)).voltWatt == curve, "the server's own view has one: it bounds")
        #expect(Self.limits(curve).tightened(by: Self.limits(nil)).voltWatt == curve, "the held view's stays")
        #expect(Self.limits(nil).tightened(by: Self.limits(nil)).voltWatt == nil)
    }

    @Test("two volt-watt curves that cross: the one whose control outranks; equal curves keep these")
    func crossingVoltWatt() throws {
        // 1.06/100 1.10/0 against 1.05/100 1.10/20: at 1.06 V the second allows 84 % (lower), at 1.10 V 20 % (higher).
        let steep = try Self.voltWatt([(1.06, 100), (1.10, 0)])
        let shallow = try Self.voltWatt([(1.05, 100), (1.10, 20)])
        #expect(Self.limits(steep).tightened(by: Self.limits(shallow), otherOutranks: false).voltWatt == steep)
        #expect(Self.limits(steep).tightened(by: Self.limits(shallow), otherOutranks: true).voltWatt == shallow)
        let slower = try Self.voltWatt([(1.06, 100), (1.10, 0)], seconds: 30)
        #expect(Self.limits(steep).tightened(by: Self.limits(slower), otherOutranks: true).voltWatt == slower, "the same curve: by rank")
        #expect(Self.limits(steep).tightened(by: Self.limits(slower)).voltWatt == steep)
    }

    @Test("a vertical step counts on both sides of it")
    func stepCounts() throws {
        // 1.05/100 1.07/100 1.07/40 1.10/0 steps down at 1.07 V; 1.065/100 1.075/40 1.10/0 is 70 % there: below
        // the step's left side (100 %), above its right (40 %). They cross, so the rank decides.
        let stepped = try Self.voltWatt([(1.05, 100), (1.07, 100), (1.07, 40), (1.10, 0)])
        let other = try Self.voltWatt([(1.065, 100), (1.075, 40), (1.10, 0)])
        #expect(Self.limits(stepped).tightened(by: Self.limits(other), otherOutranks: true).voltWatt == other)
        #expect(Self.limits(stepped).tightened(by: Self.limits(other), otherOutranks: false).voltWatt == stepped)
    }

    @Test("volt-var and watt-var are requests: these views' stay, as the other requests do")
    func reactiveCurvesStay() throws {
        var held = UtilityLimits()
        held.voltVar = GridSupportProfile.ieee1547_2018_cat_b.voltVar
        var server = UtilityLimits()
        server.voltVar = GridSupportProfile.ieee1547_2018_cat_a.voltVar
        server.wattVar = GridSupportProfile.ieee1547_2018_cat_b.wattVar
        server.fixedVar = 1000
        let out = held.tightened(by: server, otherOutranks: true)
        #expect(out.voltVar == held.voltVar && out.wattVar == nil && out.fixedVar == nil)
    }

    @Test("the event rules' order: event before default, lower primacy, newer creationTime, greater mRID")
    func outranks() {
        let status = EventStatus(current: .scheduled, dateTime: 0)
        func control(_ mRID: String, created: Int64) -> DERControl {
            DERControl(mRID: mRID, creationTime: created, status: status, start: 0, duration: 60, base: DERControlBase())
        }
        let programs = [
            ProgramSchedule(mRID: "P1", primacy: 1, controls: [control("A1", created: 10), control("A2", created: 20), control("A3", created: 20)],
                            defaultControl: DefaultDERControl(mRID: "D1", base: DERControlBase())),
            ProgramSchedule(mRID: "P2", primacy: 2, controls: [control("B1", created: 99)], defaultControl: DefaultDERControl(mRID: "D2", base: DERControlBase())),
        ]
        func event(_ program: String, _ mRID: String) -> ControlSource { .event(program: program, control: mRID, until: 60) }
        #expect(EventRules.outranks(event("P2", "B1"), .defaultControl(program: "P1"), in: programs), "an event before any default")
        #expect(!EventRules.outranks(.defaultControl(program: "P1"), event("P2", "B1"), in: programs))
        #expect(EventRules.outranks(event("P1", "A1"), event("P2", "B1"), in: programs), "lower primacy, though older")
        #expect(EventRules.outranks(event("P1", "A2"), event("P1", "A1"), in: programs), "newer creationTime")
        #expect(EventRules.outranks(event("P1", "A3"), event("P1", "A2"), in: programs), "the same creationTime: the greater mRID")
        #expect(EventRules.outranks(.defaultControl(program: "P1"), .defaultControl(program: "P2"), in: programs), "the default of lower primacy")
        #expect(EventRules.outranks(event("P1", "A1"), event("P9", "X"), in: programs), "a source gone ranks below")
        #expect(!EventRules.outranks(event("P9", "X"), event("P1", "A1"), in: programs))
    }
}
