import BessBase
import ControlCore
import GridSupport
import IEEE2030_5
@testable import Sep2Link
import Testing

/// The schedule's held view bounded by the server's own (`Sep2Schedule.resolve`) for the utility's
/// volt-watt: a limit on P, so the lower curve of the two views is the one published, and where they
/// cross the one whose control outranks by the event rules.
@Suite("2030.5 schedule: the utility's volt-watt of a held control against the server's own view")
struct Sep2ScheduleVoltWattTests {
    static let t0: Int64 = 1_800_000_000

    static func curve(_ mRID: String, _ points: [(Int32, Int32)]) -> DERCurve {
        DERCurve(mRID: mRID, curveType: 12, points: points.map { DERCurve.Point(x: $0.0, y: $0.1) }, yRefType: 1, openLoopHundredthsSecond: 100)
    }

    /// P1's default links `/dc/D`, its control C1 (t0 + 50 for 60 s) `/dc/C`; C1 is held at t0 + 60 while the
    /// server's clock reads t0 (it went back), so the held view has C1's curve and the server's the default's.
    static func resolved(held c: DERCurve, server d: DERCurve) -> UtilityLimits {
        var base = DERControlBase()
        base.voltWattCurve = "/dc/C"
        var fallback = DERControlBase()
        fallback.voltWattCurve = "/dc/D"
        let c1 = DERControl(mRID: "C1", creationTime: t0 - 100, status: EventStatus(current: .scheduled, dateTime: t0 - 100), start: t0 + 50,
                            duration: 60, base: base)
        var schedule = Sep2Schedule(lfdiBytes: [1, 2, 3])
        schedule.take([ProgramSchedule(mRID: "P1", primacy: 1, controls: [c1], defaultControl: DefaultDERControl(mRID: "D1", base: fallback))],
                      curves: ["/dc/C": c, "/dc/D": d], from: .live)
        schedule.held = [ControlKey(program: "P1", control: "C1"): t0 + 60]
        return schedule.resolve(now: MonotonicInstant(nanoseconds: 1_000_000_000_000), wall: Double(t0), siteRatingW: 100_000,
                                varCapability: (100_000, 100_000), apparentVA: 100_000).limits
    }

    @Test("the server's default curve lower at every voltage than the held control's bounds")
    func serverLowerBounds() throws {
        // Held C1: 1.07/100 1.10/0; the default: 1.06/100 1.10/0, at or below it everywhere (75 % against 100 % at 1.07 V).
        let limits = Self.resolved(held: Self.curve("C", [(107, 100), (110, 0)]), server: Self.curve("D", [(106, 100), (110, 0)]))
        #expect(limits.voltWatt?.curve == (try GridCurve([(1.06, 100), (1.10, 0)])))
    }

    @Test("the held control's lower curve stays; crossing curves: C1's event outranks the default")
    func heldLowerOrOutranking() throws {
        let lower = Self.resolved(held: Self.curve("C", [(105, 100), (109, 0)]), server: Self.curve("D", [(106, 100), (110, 0)]))
        #expect(lower.voltWatt?.curve == (try GridCurve([(1.05, 100), (1.09, 0)])))
        // 1.05/100 1.10/20 against 1.06/100 1.10/0: lower at 1.06 V (84 %), higher at 1.10 V (20 %).
        let crossing = Self.resolved(held: Self.curve("C", [(105, 100), (110, 20)]), server: Self.curve("D", [(106, 100), (110, 0)]))
        #expect(crossing.voltWatt?.curve == (try GridCurve([(1.05, 100), (1.10, 20)])))
    }
}
