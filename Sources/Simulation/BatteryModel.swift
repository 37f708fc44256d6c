/// Parameters of a simulated LFP battery pack.
public struct BatteryParameters: Sendable, Equatable {
    /// Usable energy at nominal voltage, Wh.
    public var capacityWh: Double
    /// Cells in series.
    public var cellsInSeries: Int
    /// Internal resistance of one cell, ohm (pack resistance is this × cells in series).
    public var cellResistanceOhm: Double
    /// Largest charge or discharge current the BMS allows, A.
    public var maxCurrentA: Double
    /// Heat capacity of the pack, J/K.
    public var heatCapacityJPerK: Double
    /// Thermal resistance pack → ambient, K/W.
    public var thermalResistanceKPerW: Double
    /// Ambient temperature, °C.
    public var ambientCelsius: Double
    /// Spread of cell state of charge around the pack's, in SOC fraction (cell imbalance).
    public var cellSpread: Double
    /// How much warmer the hottest cell is than the pack temperature the BMS reports in 0x356 (the
    /// cell at the centre of a module runs warmer than the average). 2 K by default.
    public var hottestCellAbovePackK: Double = 2

    /// A pack sized for `capacityWh` and `maxPowerW` on a 16-cell (51.2 V) LFP string.
    public static func lfp(capacityWh: Double, maxPowerW: Double, cellsInSeries: Int = 16,
                           ambientCelsius: Double = 25) -> BatteryParameters {
        let nominalVolts = 3.2 * Double(cellsInSeries)
        let ampHours = capacityWh / nominalVolts
        // Current headroom of 25 % above rated power at nominal voltage.
        let maxCurrent = 1.25 * maxPowerW / nominalVolts
        return BatteryParameters(
            capacityWh: capacityWh, cellsInSeries: cellsInSeries,
            // A cell's resistance falls with its size: 0.25 mΩ for a 280 Ah cell.
            cellResistanceOhm: 0.00025 * 280 / max(1, ampHours),
            maxCurrentA: maxCurrent,
            heatCapacityJPerK: 1100 * capacityWh / 160,  // ≈ 1.1 kJ/(kg·K), ≈ 160 Wh/kg
            thermalResistanceKPerW: 0.02 * 250_000 / max(1000, capacityWh),
            ambientCelsius: ambientCelsius, cellSpread: 0.01)
    }
}

/// Open-circuit voltage of an LFP cell against state of charge (piecewise linear).
public enum LFPCurve {
    static let points: [(soc: Double, volts: Double)] = [
        (0.00, 2.80), (0.03, 3.05), (0.08, 3.18), (0.15, 3.23), (0.30, 3.27), (0.50, 3.29),
        (0.70, 3.31), (0.85, 3.33), (0.95, 3.36), (0.98, 3.42), (1.00, 3.55),
    ]

    /// Cell open-circuit voltage at `soc` (0–1, clamped).
    public static func openCircuitVolts(soc: Double) -> Double {
        let s = soc.isFinite ? min(max(soc, 0), 1) : 0
        var previous = points[0]
        for point in points.dropFirst() {
            if s <= point.soc {
                let f = (s - previous.soc) / (point.soc - previous.soc)
                return previous.volts + f * (point.volts - previous.volts)
            }
            previous = point
        }
        return points[points.count - 1].volts
    }
}

/// A simulated battery pack: SOC integration, open-circuit voltage, internal resistance, cell spread
/// and a one-node thermal model, with the limits and flags its BMS reports.
public struct BatteryModel: Sendable {
    public let parameters: BatteryParameters
    /// State of charge, 0–1.
    public private(set) var soc: Double
    /// Pack temperature, °C.
    public private(set) var temperature: Double
    /// Pack current, A, **positive while charging** (BMS convention).
    public private(set) var current: Double = 0
    /// Extra heat injected by a fault (thermal runaway), W.
    public var injectedHeatW: Double = 0

    public init(parameters: BatteryParameters, soc: Double, temperature: Double? = nil) {
        self.parameters = parameters
        self.soc = min(max(soc, 0), 1)
        self.temperature = temperature ?? parameters.ambientCelsius
    }

    var packResistance: Double { parameters.cellResistanceOhm * Double(parameters.cellsInSeries) }
    var cells: Double { Double(parameters.cellsInSeries) }

    /// Open-circuit pack voltage.
    public var openCircuitVoltage: Double { LFPCurve.openCircuitVolts(soc: soc) * cells }
    /// Terminal voltage (rises while charging).
    public var packVoltage: Double { openCircuitVoltage + current * packResistance }
    /// Highest cell voltage (the cell with the highest SOC).
    public var maxCellVoltage: Double {
        LFPCurve.openCircuitVolts(soc: soc + parameters.cellSpread) + current * parameters.cellResistanceOhm
    }
    /// Lowest cell voltage.
    public var minCellVoltage: Double {
        LFPCurve.openCircuitVolts(soc: soc - parameters.cellSpread) + current * parameters.cellResistanceOhm
    }

    /// Charge current limit the BMS reports: full up to 90 % SOC, tapering to zero at 100 %, and
    /// reduced below 10 °C and above 45 °C.
    public var chargeCurrentLimit: Double {
        let socFactor = min(max((1.0 - soc) / 0.10, 0), 1)
        return parameters.maxCurrentA * socFactor * temperatureFactor(charging: true)
    }

    /// Discharge current limit: full above 10 % SOC, tapering to zero at 0 %.
    public var dischargeCurrentLimit: Double {
        let socFactor = min(max(soc / 0.10, 0), 1)
        return parameters.maxCurrentA * socFactor * temperatureFactor(charging: false)
    }

    func temperatureFactor(charging: Bool) -> Double {
        let t = temperature
        if t >= 55 { return 0 }
        if t > 45 { return (55 - t) / 10 }
        if charging {
            if t <= 0 { return 0 }
            if t < 10 { return t / 10 }
        } else if t <= -20 {
            return 0
        }
        return 1
    }

    /// Advances the pack by `seconds` with `dcPowerW` flowing out of it (+ = discharge).
    public mutating func step(dcPowerW: Double, seconds: Double) {
        guard seconds > 0, seconds.isFinite, dcPowerW.isFinite else { return }
        // Solve P = V·I with V = OCV + I·R for the discharge current (I_bms = −I_discharge).
        let ocv = openCircuitVoltage
        let r = packResistance
        var dischargeCurrent = 0.0
        if dcPowerW != 0 {
            let discriminant = ocv * ocv - 4 * r * dcPowerW
            dischargeCurrent = discriminant > 0 ? (ocv - discriminant.squareRoot()) / (2 * r) : ocv / (2 * r)
        }
        current = -dischargeCurrent
        let ampHours = parameters.capacityWh / (3.2 * cells)
        soc = min(max(soc + current * seconds / 3600 / ampHours, 0), 1)
        // One thermal node: Joule heat plus injected heat, losing heat to ambient.
        let heat = current * current * r + injectedHeatW
        let loss = (temperature - parameters.ambientCelsius) / parameters.thermalResistanceKPerW
        temperature += (heat - loss) * seconds / parameters.heatCapacityJPerK
    }

    /// Sets the state of charge (test and scenario use).
    public mutating func setSOC(_ value: Double) { soc = min(max(value, 0), 1) }
    /// The hottest cell's temperature (0x373), `hottestCellAbovePackK` above the pack's.
    public var hottestCellTemperature: Double { temperature + parameters.hottestCellAbovePackK }
    /// The coolest cell's temperature (0x373), 1 K below the pack's.
    public var coolestCellTemperature: Double { temperature - 1 }

    /// Sets the temperature (test and scenario use).
    public mutating func setTemperature(_ value: Double) { temperature = value }
}
