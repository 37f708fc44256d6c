public import Config
public import ControlCore

/// The meter at the simulated site's grid connection point: it sees load − PV − Σ battery power
/// (+ = import), as a SunSpec meter reports it, and remembers the last minutes so that a
/// `meter_delay` fault can report the connection point as it was `delay_s` ago. Storage is
/// allocated at init; recording and reading allocate nothing.
public struct SimulatedMeter: Sendable {
    private var times: [Duration]
    private var powers: [Double]
    private var head = 0
    private var count = 0
    /// The connection point now, W (+ = import).
    public private(set) var gridPowerW: Double = 0
    /// The connection point's reactive power now, var (+ = import): the load's at PF 0.95 lagging, PV
    /// at PF 1, less what the batteries inject (their commanded var). Plausible, not a network model.
    public private(set) var gridReactiveVar: Double = 0

    /// The load's var per W: tan(acos 0.95).
    public static let loadVarPerW = 0.3287

    /// The voltage at a connection point carrying `gridW` (+ = import) on a site rated `ratingW`: 230 V
    /// at no flow, 2 % lower at the rating's import and as much higher at its export (within ±4 %).
    /// Plausible for the reports, not a network model.
    public static func voltage(gridW: Double, ratingW: Double) -> Double {
        guard ratingW > 0, gridW.isFinite else { return 230 }
        return 230 * (1 - 0.02 * min(max(gridW / ratingW, -2), 2))
    }

    /// How many records it keeps (the oldest give way).
    public var historyCapacity: Int { times.count }

    public init(history: Int = 8192) {
        times = [Duration](repeating: .zero, count: max(2, history))
        powers = [Double](repeating: 0, count: max(2, history))
    }

    /// Records the connection point `elapsed` into the run.
    public mutating func record(elapsed: Duration, loadW: Double, pvW: Double, batteryW: Double, batteryVar: Double = 0) {
        gridPowerW = loadW - pvW - batteryW
        gridReactiveVar = max(0, loadW) * Self.loadVarPerW - batteryVar
        let index = (head + count) % times.count
        times[index] = elapsed
        powers[index] = gridPowerW
        if count < times.count { count += 1 } else { head = (head + 1) % times.count }
    }

    /// What the meter shows at `elapsed` when it lags `delay`: the newest record at or before
    /// `elapsed − delay` (the oldest one kept when none is that old).
    public func reading(at elapsed: Duration, delay: Duration) -> Double {
        guard count > 0 else { return 0 }
        guard delay > .zero else { return gridPowerW }
        let when = elapsed - delay
        var i = count - 1
        while i >= 0 {
            let slot = (head + i) % times.count
            if times[slot] <= when { return powers[slot] }
            i -= 1
        }
        return powers[head]
    }
}

extension SimulationConfiguration {
    /// The site's load and PV `elapsed` into the run, W.
    public func sitePower(at elapsed: Duration) -> (load: Double, pv: Double) {
        (load.kilowatts(at: elapsed) * 1000, pv.kilowatts(at: elapsed) * 1000)
    }
}
