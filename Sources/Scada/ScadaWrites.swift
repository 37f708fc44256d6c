public import ControlCore
import Fieldbus

/// A write SCADA may make, decoded and checked: which 704 points it sets and the commands it leaves.
public struct ScadaWrite: Sendable, Equatable {
    /// One point written: its name, the value before and after (as the model states them: percent,
    /// W, seconds, 0/1).
    public struct Change: Sendable, Equatable {
        public var point: String
        public var old: Double
        public var new: Double
    }

    public var changes: [Change]
    /// The commands once the write is applied (its timers started).
    public var commands: SiteCommands
    /// Whether the write touched the grid operator limit's points, the setpoint's, or both.
    public var limitWritten: Bool
    public var setpointWritten: Bool
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
    ]

    /// The site's rating, W (the published `SiteView`'s): what `WMaxLimPct` is a percent of and the
    /// bound of `WSet`.
    public var ratedPower: Double { site.ratedPowerW }

    /// Writes the 704 points from SCADA's commands as the cycle last settled them (the cycle is the
    /// one judge of their expiry: `SiteController.settleCommands`, published back into the record);
    /// `now` only counts down the reversion times.
    public mutating func fill(commands c: SiteCommands, now: MonotonicInstant) {
        guard let m = start(of: T.M704.id) else { return }
        set(m, T.M704.WMaxLimPctEna, c.limit.enabled ? 1 : 0)
        set(m, T.M704.WMaxLimPct, c.limit.value, sf: 0)
        set(m, T.M704.WMaxLimPctRvrt, c.limit.revertValue, sf: 0)
        set(m, T.M704.WMaxLimPctEnaRvrt, c.limit.revertEnabled ? 1 : 0)
        set(m, T.M704.WMaxLimPctRvrtTms, int: Int(c.limit.timeoutSeconds))
        set(m, T.M704.WMaxLimPctRvrtRem, int: Int(c.limit.remaining(at: now).secondsDouble.rounded(.up)))
        set(m, T.M704.WSetEna, c.setpoint.enabled ? 1 : 0)
        set(m, T.M704.WSetMod, 1)  // WATTS: the only mode served (WSetPct is not)
        set(m, T.M704.WSet, c.setpoint.value, sf: wSF)
        set(m, T.M704.WSetRvrt, c.setpoint.revertValue, sf: wSF)
        set(m, T.M704.WSetEnaRvrt, c.setpoint.revertEnabled ? 1 : 0)
        set(m, T.M704.WSetRvrtTms, int: Int(c.setpoint.timeoutSeconds))
        set(m, T.M704.WSetRvrtRem, int: Int(c.setpoint.remaining(at: now).secondsDouble.rounded(.up)))
    }

    /// Decodes and checks a write of `values` from register `address` (absolute, 40000-based)
    /// against `commands` as the cycle last settled them (a write never judges their expiry), at
    /// `now`, which starts the written command's reversion time. Refused whole (nothing applied) with 02 when any register is
    /// not one of `writablePoints` or a 32-bit point is written in part, with 03 when a value is out
    /// of its range.
    public func decodeWrite(address: Int, values: [UInt16], commands current: SiteCommands, now: MonotonicInstant)
        -> Result<ScadaWrite, ScadaWriteRefusal>
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
                    + "(writable: model 704 WMaxLimPct… and WSet…)"))
            }
            guard point.offset >= first, point.offset + point.size - 1 <= last else {
                return .failure(.init(exception: 2, reason: "\(point.name) is \(point.size) registers and must be written whole"))
            }
            touched.append(point)
            offset = point.offset + point.size
        }
        func raw(_ point: SunSpecPoint) -> Int {
            let i = point.offset - first
            switch point.kind {
            case .int32: return Int(Int32(bitPattern: UInt32(values[i]) << 16 | UInt32(values[i + 1])))
            case .uint32: return Int(UInt32(values[i]) << 16 | UInt32(values[i + 1]))
            default: return Int(values[i])
            }
        }
        var next = current
        let before = next
        var changes: [ScadaWrite.Change] = []
        var limitWritten = false, setpointWritten = false
        let rated = ratedPower
        let wScale = SunSpec.powerOfTen(wSF)
        for point in touched {
            let value = raw(point)
            func bad(_ why: String) -> Result<ScadaWrite, ScadaWriteRefusal> {
                .failure(.init(exception: 3, reason: "\(point.name) = \(value) refused: \(why)"))
            }
            // WMaxLimPct… or WSet…, and the point's role within its command.
            let isLimit = point.name.hasPrefix("WMaxLimPct")
            let role = point.name.dropFirst(isLimit ? "WMaxLimPct".count : "WSet".count)
            let was = isLimit ? before.limit : before.setpoint
            var command = isLimit ? next.limit : next.setpoint
            var new = Double(value)
            var old = 0.0
            switch role {
            case "Ena", "EnaRvrt":
                guard value == 0 || value == 1 else { return bad("0 (disabled) or 1 (enabled)") }
                let field: WritableKeyPath<ExpiringCommand, Bool> = role == "Ena" ? \.enabled : \.revertEnabled
                old = was[keyPath: field] ? 1 : 0
                command[keyPath: field] = value == 1
            case "", "Rvrt":
                if isLimit {
                    guard value <= 100 else { return bad("a percent from 0 to 100") }
                } else {
                    new = Double(value) * wScale
                    guard abs(new) <= rated else { return bad("beyond the site's rating of ±\(Int(rated)) W") }
                }
                let field: WritableKeyPath<ExpiringCommand, Double> = role.isEmpty ? \.value : \.revertValue
                old = was[keyPath: field]
                command[keyPath: field] = new
            case "RvrtTms":
                guard .seconds(Int64(value)) <= current.maxHold else {
                    return bad("at most scada.max_hold_s = \(current.maxHold.components.seconds) s (0 = max_hold_s)")
                }
                old = Double(was.timeoutSeconds)
                command.timeoutSeconds = UInt32(value)
            case "Mod":
                guard value == 1 else { return bad("1 (WATTS) is the only mode served; WSetPct is not") }
                old = 1
            default:
                return .failure(.init(exception: 2, reason: "\(point.name) is not writable"))
            }
            if isLimit {
                next.limit = command
                limitWritten = true
            } else {
                next.setpoint = command
                setpointWritten = true
            }
            changes.append(.init(point: point.name, old: old, new: new))
        }
        // A write to a command's points refreshes it: its reversion time starts again.
        if limitWritten {
            next.limit.expiresAt = now + next.hold(forTimeout: next.limit.timeoutSeconds)
            next.limit.reverted = false
        }
        if setpointWritten {
            next.setpoint.expiresAt = now + next.hold(forTimeout: next.setpoint.timeoutSeconds)
            next.setpoint.reverted = false
        }
        return .success(ScadaWrite(changes: changes, commands: next, limitWritten: limitWritten, setpointWritten: setpointWritten))
    }
}
