public import ControlCore
public import Cycle
import Fieldbus

/// A write SCADA may make, decoded and checked: which 704 points it sets and the commands it leaves.
public struct ScadaWrite: Sendable, Equatable {
    /// One point written: its name, the value before and after (as the model states them: percent,
    /// W, var, a power factor's magnitude, seconds, 0/1).
    public struct Change: Sendable, Equatable {
        public var point: String
        public var old: Double
        public var new: Double
    }

    public var changes: [Change]
    /// The commands once the write is applied (its timers started).
    public var commands: SiteCommands
    /// The commands whose points the write touched (each one's reversion time started again).
    public var written: Set<ScadaCommand>
    /// Whether the write touched the grid operator limit's points, the setpoint's.
    public var limitWritten: Bool { written.contains(.limit) }
    public var setpointWritten: Bool { written.contains(.setpoint) }
}

/// Why a write is refused: the Modbus exception it is answered with, and a line for the log.
public struct ScadaWriteRefusal: Error, Sendable, Equatable {
    /// 01 illegal function, 02 illegal data address, 03 illegal data value.
    public var exception: UInt8
    public var reason: String
}

extension ScadaImage {
    /// The 704 points a write may set (`scada.writes: true`); every other register answers 02.
    public static let writablePoints: [SunSpecPoint] = [
        T.M704.WMaxLimPctEna, T.M704.WMaxLimPct, T.M704.WMaxLimPctRvrt, T.M704.WMaxLimPctEnaRvrt, T.M704.WMaxLimPctRvrtTms,
        T.M704.WSetEna, T.M704.WSetMod, T.M704.WSet, T.M704.WSetRvrt, T.M704.WSetEnaRvrt, T.M704.WSetRvrtTms,
        T.M704.VarSetEna, T.M704.VarSetMod, T.M704.VarSet, T.M704.VarSetRvrt, T.M704.VarSetEnaRvrt, T.M704.VarSetRvrtTms,
        T.M704.PFWInjEna, T.M704.PFWInjEnaRvrt, T.M704.PFWInjRvrtTms, T.M704.PFWInj_PF, T.M704.PFWInj_Ext,
        T.M704.PFWInjRvrt_PF, T.M704.PFWInjRvrt_Ext,
        T.M704.PFWAbsEna, T.M704.PFWAbsEnaRvrt, T.M704.PFWAbsRvrtTms, T.M704.PFWAbs_PF, T.M704.PFWAbs_Ext,
        T.M704.PFWAbsRvrt_PF, T.M704.PFWAbsRvrt_Ext,
        // Served from `reactive_priority`: a write of the value served is taken (a client writing
        // VarSetEna…VarSet in one request), any other refused with 03.
        T.M704.VarSetPri,
    ]

    /// The site's rating, W (the published `SiteView`'s): what `WMaxLimPct` is a percent of and the
    /// bound of `WSet`.
    public var ratedPower: Double { site.ratedPowerW }

    /// Writes the 704 points from SCADA's commands as the cycle last settled them (the cycle is the
    /// one judge of their expiry: `SiteController.settleCommands`, published back into the record);
    /// `now` only counts down the reversion times. A power factor is served as its magnitude in
    /// `…_PF` and its sign in `…_Ext` (0 over-excited, 1 under-excited).
    public mutating func fill(commands c: SiteCommands, now: MonotonicInstant) {
        guard let m = start(of: T.M704.id) else { return }
        for command in ScadaCommand.allCases {
            let record = c[keyPath: command.keyPath]
            let p = command.points
            set(m, p.enable, record.enabled ? 1 : 0)
            set(m, p.enableRevert, record.revertEnabled ? 1 : 0)
            set(m, p.timeout, int: Int(record.timeoutSeconds))
            set(m, p.remaining, int: Int(record.remaining(at: now).secondsDouble.rounded(.up)))
            if let mode = command.servedMode { set(m, mode.point, mode.value) }
            if let excitation = p.excitation, let revertExcitation = p.revertExcitation {
                set(m, p.value, abs(record.value), sf: Self.pfSF)
                set(m, excitation, record.value < 0 ? 1 : 0)
                set(m, p.revertValue, abs(record.revertValue), sf: Self.pfSF)
                set(m, revertExcitation, record.revertValue < 0 ? 1 : 0)
            } else {
                let sf = command == .limit ? 0 : command == .setpoint ? wSF : varSF
                set(m, p.value, record.value, sf: sf)
                set(m, p.revertValue, record.revertValue, sf: sf)
            }
        }
    }

    /// Decodes and checks a write of `values` from register `address` (absolute, 40000-based)
    /// against `commands` as the cycle last settled them (a write never judges their expiry), at
    /// `now`, which starts the written command's reversion time. A var or power-factor value is
    /// judged against `view`'s reactive capability (the published view; nil: a site with none).
    /// Refused whole (nothing applied) with 02 when any register is not one of `writablePoints` or
    /// a 32-bit point is written in part, with 03 when a value is out of its range.
    public func decodeWrite(address: Int, values: [UInt16], commands current: SiteCommands, now: MonotonicInstant,
                            view: SiteView? = nil) -> Result<ScadaWrite, ScadaWriteRefusal>
    {
        guard let m = start(of: T.M704.id), !values.isEmpty else {
            return .failure(.init(exception: 2, reason: "no register written"))
        }
        let first = address - Self.base - m
        let last = first + values.count - 1
        // Every register must belong to a writable point, and every point touched be written whole.
        var touched: [SunSpecPoint] = []
        var offset = first
        while offset <= last {
            guard let point = Self.writablePoints.first(where: { offset >= $0.offset && offset < $0.offset + $0.size }) else {
                return .failure(.init(exception: 2, reason: "register \(address + offset - first) is not a writable point "
                    + "(writable: model 704 WMaxLimPct…, WSet…, VarSet…, PFWInj…, PFWAbs…)"))
            }
            guard point.offset >= first, point.offset + point.size - 1 <= last else {
                return .failure(.init(exception: 2, reason: "\(point.name) is \(point.size) registers and must be written whole"))
            }
            touched.append(point)
            offset = point.offset + point.size
        }
        var judged = view ?? SiteView()
        if view == nil { judged.ratedPowerW = ratedPower }
        var decoder = ScadaPointDecoder(ratedW: ratedPower, view: judged, wSF: wSF, varSF: varSF, commands: current)
        for point in touched {
            let registers = values[(point.offset - first)..<(point.offset - first + point.size)]
            let high = UInt32(registers[registers.startIndex]), low = UInt32(registers[registers.endIndex - 1])
            let value: Int = switch point.kind {
            case .int32: Int(Int32(bitPattern: high << 16 | low))
            case .uint32: Int(high << 16 | low)
            default: Int(high)
            }
            if point.name == T.M704.VarSetPri.name {
                let served = site.reactivePriority ? 1 : 0
                guard value == served else {
                    return .failure(.init(exception: 3, reason: "VarSetPri = \(value) refused: it is reactive_priority in the configuration "
                        + "(\(served), \(served == 1 ? "REACTIVE" : "ACTIVE")); only that value may be written"))
                }
                continue
            }
            if let refusal = decoder.apply(point, value: value, registers: registers) { return .failure(refusal) }
        }
        if let refusal = decoder.judgePowerFactors() { return .failure(refusal) }
        // A write to a command's points refreshes it: its reversion time starts again.
        decoder.startTimers(at: now)
        return .success(ScadaWrite(changes: decoder.changes, commands: decoder.next, written: decoder.written))
    }
}
