import BessBase
import BessSystem
import ControlCore
import Cycle
import IEC104
@testable import Outstation
import Testing

/// IEC 104 bounds the site set-point (3002) by the published `SiteView`'s `ratedPowerW` (issue 58),
/// not by a sum of its own.
@Suite("IEC 104: the site set-point's bound from the SiteView")
struct StationSiteViewRatingTests {
    @Test("a view of 200 kW over units listed at 100, 40, 7.5 kW: 0.2 MW executed at 3002, 0.2001 MW refused")
    func setpointBoundFromView() {
        // The view's rating differs from the description's units on purpose: a sum of the units
        // (147.5 kW) refuses 0.2 MW.
        let shared = SharedState(units: 3, view: SiteView.Settings(capacitiesWh: [200_000, 150_000, 50_000],
                                                                   ratingsW: [100_000, 60_000, 40_000]))
        let description = StationDescription(ratingsW: [100_000, 40_000, 7_500], capacitiesWh: [250_000, 80_000, 15_000],
                                             hasMeter: false, frequencyResponseEnabled: false, view: shared.view)
        let clock = ManualClock()
        let station = StationProcedures(settings: OutstationSettings(), description: description, shared: shared,
                                        journal: PeerJournal(clock: clock, sink: { _ in }, audit: nil), counters: OutstationCounters(),
                                        audit: nil, clock: clock, wallClock: { 0 })
        // What an admitted execute at 3002 carries out (`StationProcedures.command`).
        func execute(_ megawatts: Double) -> CommandRefusal? {
            station.execute(.init(signal: .siteSetpointCommand, value: megawatts, select: false), now: clock.now(), view: shared.view)
        }
        #expect(execute(0.2) == nil, "the view's rating is accepted")
        #expect(shared.commands.setpoint.enabled && shared.commands.setpoint.value == 200_000)
        #expect(execute(0.2001)?.code == .setpointOutOfRange, "beyond the view's rating")
        #expect(shared.commands.setpoint.value == 200_000, "a refused set-point changes nothing")
    }
}
