import BessBase
import BessSystem
import Config
import ControlCore
import Cycle
import Foundation
import Logging
import Planning
import ControlProtocol
import Uplink

/// The optimiser's worker (`optimiser.enabled`): on its own thread, never the cycle's, it makes a plan
/// (`PlanSolver` on CBC) at every block boundary and whenever an input changes — a reload, a new
/// forecast file, prices or a forecast the aggregator pushed — and offers it to the schedule store as
/// the `optimiser`'s schedule, the lowest source: the operator's or the aggregator's schedule holds
/// against it. Its last plan and what became of it are what `bessctl plan` shows.
final class OptimiserService: DaemonService, Sendable {
    let name = "optimiser"
    /// The configuration's side of each plan; a reload replaces it (and plans again).
    private let settings: PILock<OptimiserInputs>
    private var inputs: OptimiserInputs { settings.withLock { $0 } }
    private let store: ScheduleStore
    private let shared: SharedState
    private let logger: Logger
    private let thread = WorkerThread()
    private let wakeup = Wakeup()
    private let state: PILock<State>

    struct State {
        /// The last plan made, when it was made (Unix seconds) and the store's answer to it.
        var plan: Plan?
        var madeAt: Int64?
        var answer: String?
        /// Why no plan could be made the last time one was tried (coded), nil when one was.
        var problem: String?
        /// An input changed: plan again at the next turn.
        var dirty = true
        /// The block the last plan was made in.
        var plannedBlock: Int64?
        /// The forecast file's modification time when it was last read.
        var forecastStamp: Double?
        /// Prices and a forecast pushed by the aggregator, by block start.
        var pushedPrices: [Int64: PricePoint] = [:]
        var pushedForecast: [Int64: ForecastPoint] = [:]
        /// The forecast file's points by block start.
        var fileForecast: [Int64: ForecastPoint] = [:]
        /// The meter's own history, per block (the persistence forecast), and the block being averaged.
        var history = PersistenceForecast()
        var averaging: (start: Int64, sum: Double, count: Int)?
    }

    /// The optimiser `configuration` enables, offering to `store`; nil when it is off (or there is no
    /// schedule layer, which check-config already refuses).
    static func following(_ configuration: BessdConfiguration, store: ScheduleStore?, shared: SharedState, logger: Logger) -> OptimiserService? {
        guard let settings = configuration.optimiser, settings.enabled, let store, let schedule = configuration.schedule else { return nil }
        let inputs = OptimiserInputs(settings: settings, blockSeconds: schedule.blockSeconds, site: ScheduleSite(configuration))
        return OptimiserService(inputs: inputs, store: store, shared: shared, logger: logger)
    }

    init(inputs: OptimiserInputs, store: ScheduleStore, shared: SharedState, logger: Logger) {
        settings = PILock(inputs)
        self.store = store
        self.shared = shared
        self.logger = logger
        state = PILock(State())
    }

    func start() {
        thread.start(name: "bessd-optimiser") { [self] in run() }
        let prices = inputs.settings.tariff != nil ? "the configured tariff" : "the aggregator's prices"
        logger.notice("optimiser planning \(inputs.settings.horizonBlocks) blocks of \(inputs.blockSeconds) s ahead, on \(prices)",
                      metadata: ["MESSAGE_ID": "\(MessageID.site)", "BESS_CODE": "OPTIMISER_STARTED"])
    }

    func stop() {
        thread.stop()
        wakeup.signal()
    }

    /// Plan again at the next turn (a reload, pushed prices or forecast).
    func replan() {
        state.withLock { $0.dirty = true }
        wakeup.signal()
    }

    /// A reload: the new configuration's tariff, costs, forecast file and site, and a plan made on them.
    /// (Turning the optimiser on or off needs a restart: `OPTIMISER_RESTART_NEEDED`.)
    func reload(_ configuration: BessdConfiguration) {
        guard let new = configuration.optimiser, configuration.schedule != nil else { return }
        // The block length stays as the store started with it (a changed block_s takes a restart).
        settings.withLock { $0 = OptimiserInputs(settings: new, blockSeconds: $0.blockSeconds, site: ScheduleSite(configuration)) }
        state.withLock { $0.forecastStamp = nil }
        replan()
    }

    /// Prices the aggregator pushed (`prices` command), by block start; they outrank the tariff where given.
    func push(prices: [PricePoint]) {
        state.withLock { s in
            for p in prices { s.pushedPrices[p.startUnixSeconds] = p }
            Self.forget(&s.pushedPrices, before: ScheduleService.wallClock() - 86_400)
            s.dirty = true
        }
        wakeup.signal()
    }

    /// A forecast the aggregator pushed (`forecast` command); the forecast file outranks it where both speak.
    func push(forecast: [ForecastPoint]) {
        state.withLock { s in
            for p in forecast { s.pushedForecast[p.startUnixSeconds] = p }
            Self.forget(&s.pushedForecast, before: ScheduleService.wallClock() - 86_400)
            s.dirty = true
        }
        wakeup.signal()
    }

    /// The forecast net load (load − PV) of the block starting at `start`, kW, as the next plan takes
    /// it: the forecast file, else the aggregator's, else the meter's history; nil when none has it.
    func forecastKW(at start: Int64) -> Double? {
        state.withLock { s in
            (s.fileForecast[start] ?? s.pushedForecast[start] ?? s.history.point(startUnixSeconds: start)).map { $0.loadKW - $0.pvKW }
        }
    }

    /// The last plan, when it was made, the store's answer and the last problem (for `bessctl plan`).
    var snapshot: (plan: Plan?, madeAt: Int64?, answer: String?, problem: String?) {
        state.withLock { ($0.plan, $0.madeAt, $0.answer, $0.problem) }
    }

    private static func forget<V>(_ map: inout [Int64: V], before unix: Int64) {
        for key in map.keys where key < unix { map[key] = nil }
    }

    /// The loop: once a second it samples the meter's net load for the persistence forecast and looks
    /// at the forecast file's time stamp; it plans at each new block and whenever an input changed.
    private func run() {
        while thread.turn() {
            let now = SystemClock.wallClockSeconds()
            let unix = Int64(now.rounded(.down))
            sample(unix: unix)
            readForecastFileIfChanged()
            let block = ScheduleStore.blockStart(unix, inputs.blockSeconds)
            let due = state.withLock { s in s.dirty || s.plannedBlock != block }
            if due { plan(now: unix) }
            _ = wakeup.wait(until: SystemClock.shared.now() + .seconds(1))
            _ = wakeup.drain()
        }
    }

    /// Averages the site's net load (load − PV = import + battery discharge) over the block; a closed
    /// block goes into the history the persistence forecast reads. Only fresh meter readings count.
    private func sample(unix: Int64) {
        let view = shared.view
        guard view.meteredW.isFinite, view.unitsW.isFinite else { return }
        let net = (view.unitsW - view.meteredW) / 1000
        let start = ScheduleStore.blockStart(unix, inputs.blockSeconds)
        state.withLock { s in
            if let a = s.averaging, a.start != start {
                if a.count > 0 { s.history.record(startUnixSeconds: a.start, netKW: a.sum / Double(a.count)) }
                s.history.forget(before: unix - 2 * 86_400)
                s.averaging = nil
            }
            var a = s.averaging ?? (start, 0, 0)
            a.sum += net
            a.count += 1
            s.averaging = a
        }
    }

    /// Reads `optimiser.forecast_file` when its time stamp changed (a new forecast plans again). A file
    /// that cannot be read or parsed keeps the last good forecast and says why, coded.
    private func readForecastFileIfChanged() {
        guard let path = inputs.settings.forecastFile else { return }
        let stamp = (try? FileManager.default.attributesOfItem(atPath: path)[.modificationDate] as? Date)?.timeIntervalSince1970
        guard state.withLock({ $0.forecastStamp != stamp }) else { return }
        var points: [ForecastPoint]?
        var problem: String?
        if stamp == nil {
            problem = "PLAN_FORECAST_INVALID: \(PeerText.quoted(path, limit: 200)) cannot be read"
        } else if let data = FileManager.default.contents(atPath: path), data.count <= ForecastFile.maximumBytes {
            do throws(PlanningError) {
                points = try ForecastFile.parse(String(decoding: data, as: UTF8.self))
            } catch {
                problem = "\(error)"
            }
        } else {
            problem = "PLAN_FORECAST_TOO_LARGE: \(PeerText.quoted(path, limit: 200)) is unreadable or over \(ForecastFile.maximumBytes) bytes"
        }
        state.withLock { s in
            s.forecastStamp = stamp
            if let points { s.fileForecast = Dictionary(points.map { ($0.startUnixSeconds, $0) }, uniquingKeysWith: { $1 }) }
            s.dirty = true
        }
        if let problem {
            logger.warning("optimiser forecast file: \(problem); the last good forecast stands",
                           metadata: ["MESSAGE_ID": "\(MessageID.site)", "BESS_CODE": "PLAN_FORECAST_INVALID"])
        } else {
            logger.notice("optimiser forecast file read: \(points?.count ?? 0) blocks; planning again",
                          metadata: ["MESSAGE_ID": "\(MessageID.site)", "BESS_CODE": "PLAN_FORECAST_READ"])
        }
    }

    /// Makes a plan from what is known at `now` and offers it to the store.
    private func plan(now: Int64) {
        let (prices, file, pushed, history) = state.withLock { s in
            s.dirty = false
            s.plannedBlock = ScheduleStore.blockStart(now, inputs.blockSeconds)
            return (s.pushedPrices, s.fileForecast, s.pushedForecast, s.history)
        }
        let outcome = inputs.problem(now: now, view: shared.view, units: shared.units, prices: Array(prices.values),
                                     forecast: Array(pushed.merging(file) { $1 }.values), history: history)
        let problem: PlanProblem
        switch outcome {
        case .failure(let why):
            note(problem: why.description)
            return
        case .success(let made):
            problem = made
        }
        let plan: Plan
        do throws(PlanningError) {
            plan = try PlanSolver.solve(problem)
        } catch {
            note(problem: "\(error)")
            return
        }
        let schedule = inputs.schedule(plan, madeAt: now)
        let answer = store.offer(schedule, now: now)
        let said = answer.error.map { "\($0)" } ?? (answer.warning ?? "followed")
        state.withLock { s in
            s.plan = plan
            s.madeAt = now
            s.answer = said
            s.problem = nil
        }
        let line = "optimiser plan: \(plan.slots.count) slots, objective \(fixed(plan.objective, 2)), "
            + "\(plan.violations.count) limit(s) violated, solved in \(fixed(plan.solveMs, 1)) ms; \(said)"
        logger.info("\(line)",
                    metadata: ["MESSAGE_ID": "\(MessageID.site)", "BESS_CODE": "PLAN_MADE"])
    }

    private func note(problem: String) {
        // Tried again next turn (a second later): the SOC is read soon after start, prices may be pushed.
        let changed = state.withLock { s in
            defer {
                s.problem = problem
                s.dirty = true
            }
            return s.problem != problem
        }
        if changed {
            logger.warning("optimiser: no plan: \(problem); the schedule in force (or the fallback) runs",
                           metadata: ["MESSAGE_ID": "\(MessageID.site)", "BESS_CODE": "PLAN_NOT_MADE"])
        }
    }
}

extension OptimiserService {
    /// `bessctl plan`: the last plan as the control socket answers it.
    func reply() -> PlanReply {
        let (plan, madeAt, answer, problem) = snapshot
        let rfc3339 = ScheduleDocument.rfc3339
        return PlanReply(
            madeAt: madeAt.map(rfc3339),
            slots: (plan?.slots ?? []).map {
                PlanSlotReply(start: rfc3339($0.startUnixSeconds), chargeKW: $0.chargeKW, dischargeKW: $0.dischargeKW, importKW: $0.importKW,
                              exportKW: $0.exportKW, socKWh: $0.socKWh, priceImportPerKWh: $0.priceImportPerKWh,
                              priceExportPerKWh: $0.priceExportPerKWh)
            },
            objective: plan?.objective,
            objectiveParts: plan.map {
                PlanPartsReply(energy: $0.objectiveParts.energy, wear: $0.objectiveParts.wear, demand: $0.objectiveParts.demand,
                               endValue: $0.objectiveParts.endValue, penalty: $0.objectiveParts.penalty)
            },
            violations: (plan?.violations ?? []).map { PlanViolationReply(limit: "\($0.limit)", start: rfc3339($0.startUnixSeconds), amount: $0.amount) },
            solveMs: plan?.solveMs, optimal: plan?.optimal, answer: answer, problem: problem)
    }
}
