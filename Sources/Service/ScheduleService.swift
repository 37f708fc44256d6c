import BessBase
import BessSystem
import Config
import ControlCore
import Cycle
import Foundation
import Logging
import Uplink

/// The block schedule's place in the daemon: the store (`ScheduleStore`) built from the
/// configuration, the site it judges a schedule against on arrival, and the service loop's round —
/// the closed blocks the cycle reports taken, kept for `bessctl schedule`, journalled and recorded
/// for the uplink (`schedule_block`), and the window published again at each block boundary.
final class ScheduleService {
    let store: ScheduleStore
    private let shared: SharedState
    private let logger: Logger
    /// Where each closed block's record goes (nil: no aggregator).
    var recorder: UplinkRecorder?
    /// The load forecast a schedule is judged on at arrival (net load at the meter by block start,
    /// kW): the optimiser's when it runs (`useForecast`), else the meter's present net load held.
    private let forecast = PILock<(@Sendable (Int64) -> Double?)?>(nil)

    /// The service of `configuration`'s `schedule:` section; nil without one.
    init?(configuration: BessdConfiguration, shared: SharedState, logger: Logger) {
        guard let settings = configuration.schedule else { return nil }
        self.shared = shared
        self.logger = logger
        let site = ScheduleSite(configuration)
        store = ScheduleStore(settings: settings, stateDirectory: configuration.stateDirectory, logger: logger,
                              publish: { [shared] window in shared.publishSchedule(window) },
                              site: { [shared, forecast] _ in site.input(view: shared.view, units: shared.units, forecast: forecast.withLock { $0 }) })
    }

    /// Judges schedules on `forecast` (the optimiser's: its file, the aggregator's, the meter's history).
    func useForecast(_ forecast: @escaping @Sendable (Int64) -> Double?) { self.forecast.withLock { $0 = forecast } }

    /// Reads the file and publishes what stands, before the first cycle.
    func restore() { store.restore(now: Self.wallClock()) }

    /// One round of the service loop: the closed blocks the cycle reported since the last.
    func tick() {
        let reports = shared.takeScheduleReports()
        store.tick(now: Self.wallClock(), reports: reports)
        for report in reports {
            let record = ScheduleBlockRecord(report)
            logger.notice("\(record.sentence)", metadata: ["MESSAGE_ID": "\(MessageID.site)", "BESS_CODE": "SCHEDULE_BLOCK",
                                                            "BESS_BOUND_BY": "\(record.boundBy)"])
            recorder?.record(.scheduleBlock(record))
        }
    }

    static func wallClock() -> Int64 { Int64(SystemClock.wallClockSeconds().rounded(.down)) }
}

/// What a schedule is judged against on arrival (`ScheduleFeasibility`): the site's stored energy
/// and capacity from the published view, the bounds of the SOC interlocks and the application's
/// reserve with the energy kept for frequency response (`sustain_s`), the rated power of the units
/// in service, and the grid limits of the configuration.
struct ScheduleSite: Sendable {
    let capacitiesKWh: [Double]
    let ratingsKW: [Double]
    let lowerPercent: Double
    let upperPercent: Double
    /// Energy kept for frequency response, kWh, by unit: below (discharge) and above (charge).
    let keptDownKWh: [Double]
    let keptUpKWh: [Double]
    let importLimitKW: Double?
    let exportLimitKW: Double?
    let metered: Bool
    /// η of charge and of discharge: `optimiser.efficiency`, else 0.95 each.
    var chargeEfficiency: Double
    var dischargeEfficiency: Double

    init(_ configuration: BessdConfiguration) {
        capacitiesKWh = configuration.units.map(\.capacityKWh)
        ratingsKW = configuration.units.map(\.maxPowerKW)
        let reserve = ResponseReserve(droop: configuration.controlSettings.droop, units: configuration.unitSettings)
        keptDownKWh = reserve.units.map { $0.dischargeWh / 1000 }
        keptUpKWh = reserve.units.map { $0.chargeWh / 1000 }
        lowerPercent = max(configuration.socBound(.socLow, default: 5), configuration.site.socReservePercent)
        upperPercent = configuration.socBound(.socHigh, default: 95)
        importLimitKW = configuration.site.importMaxKW
        exportLimitKW = configuration.site.exportMaxKW
        metered = configuration.site.meter != nil
        chargeEfficiency = configuration.optimiser?.chargeEfficiency ?? 0.95
        dischargeEfficiency = configuration.optimiser?.dischargeEfficiency ?? 0.95
    }

    /// The input from the published `view` and `units`; nil while no unit reads its SOC. The load is
    /// `forecast`'s, else the meter's present net load (load − PV) held for every block.
    func input(view: SiteView, units: [UnitStatus], forecast: (@Sendable (Int64) -> Double?)? = nil) -> ScheduleFeasibilityInput? {
        guard view.storedWh.isFinite else { return nil }
        let capacity = capacitiesKWh.reduce(0, +)
        let kept = (down: keptDownKWh.reduce(0, +), up: keptUpKWh.reduce(0, +))
        var inService = 0.0
        for (i, rating) in ratingsKW.enumerated() where i < units.count {
            switch units[i].state {
            case .running, .limited: inService += rating
            case .starting, .tripped, .faulted, .standby: break
            }
        }
        return ScheduleFeasibilityInput(
            socKWh: view.storedWh / 1000, capacityKWh: capacity,
            lowerKWh: min(capacity, capacity * lowerPercent / 100 + kept.down),
            upperKWh: max(0, capacity * upperPercent / 100 - kept.up),
            chargeEfficiency: chargeEfficiency, dischargeEfficiency: dischargeEfficiency,
            maxChargeKW: inService, maxDischargeKW: inService, importLimitKW: importLimitKW, exportLimitKW: exportLimitKW,
            loadForecastKW: forecast ?? Self.held(view), metered: metered)
    }

    /// The meter's present net load, kW (load − PV = import + the units' discharge), for every block;
    /// nil without a fresh meter reading.
    static func held(_ view: SiteView) -> @Sendable (Int64) -> Double? {
        let net = view.meteredW.isFinite && view.unitsW.isFinite ? (view.unitsW - view.meteredW) / 1000 : nil
        return { _ in net }
    }
}
