import ControlCore
import Fieldbus

/// Frame sequences into the Pylontech decoder, each followed by a control cycle on what it decoded.
/// Invariants: the setpoint is finite and inside what the unit may do, the allowed powers are inside
/// the rating, and without fresh BMS limits there is no power at all.
enum CANHarness {
    static let rating = Watts.kilowatts(100)
    /// Identifiers the profile uses, so most frames reach a decoder branch.
    static let ids: [UInt32] = [0x351, 0x355, 0x356, 0x359, 0x35C, 0x35E, 0x373, 0x305, 0x35A, 0x370]

    static func run(_ input: inout FuzzInput) -> [String] {
        var decoder = PylontechDecoder()
        let site = SiteController(
            control: ControlSettings(droop: .seedDefault, limitRampPercentPerSecond: 10, scheduleRampPercentPerSecond: 10),
            units: [UnitSettings(rating: rating, capacity: WattHours(250_000))], startedAt: .zero)
        var violations = Violations()
        var nanoseconds: Int64 = 0
        var lastLimits: MonotonicInstant?
        var steps = 0
        while !input.isEmpty, steps < 512 {
            steps += 1
            let selector = input.u8()
            let id = selector < 224 ? ids[Int(selector) % ids.count] : UInt32(input.u16() & 0x7FF)
            let flags = input.u8()
            let length = Int(min(input.u8() & 0x0F, 8))
            let data = input.take(8)
            let frame = CANFrame(id: id, bytes: Array(data.prefix(length)), isExtended: flags & 1 != 0,
                                 isRemote: flags & 2 != 0, isError: flags & 4 != 0)
            // 0–1,020 ms between frames: fresh and stale data both happen.
            nanoseconds += Int64(input.u8()) * 4_000_000
            let now = MonotonicInstant(nanoseconds: nanoseconds)
            if decoder.ingest(frame, at: now) == nil, id == PylontechLV.limitsID { lastLimits = now }
            let hz = 50 + Double(Int8(bitPattern: input.u8())) / 100
            let dispatch = Watts(Double(Int16(bitPattern: input.u16())) * 10)
            let inputs = UnitInputs(
                bms: decoder.snapshot,
                inverter: Timestamped(InverterReading(activePower: .zero, ratedPower: rating), at: now),
                dispatch: PowerCommand(power: dispatch, expiresAt: MonotonicInstant(nanoseconds: nanoseconds + 60_000_000_000)))
            site.step(frequency: Timestamped(Hertz(hz), at: now), inputs: [inputs], now: now,
                      wallClock: 1_800_000_000 + Double(nanoseconds) / 1e9)
            let d = site.decision(unit: 0)
            let context = "frame \(steps) (\(frame)) at \(Double(nanoseconds) / 1e9) s"
            violations.check(d.setpoint.value.isFinite, "setpoint \(d.setpoint) not finite after \(context)")
            violations.check(d.allowedCharge.value >= 0 && d.allowedCharge.value <= rating.value,
                             "allowed charge \(d.allowedCharge) outside 0…rating after \(context)")
            violations.check(d.allowedDischarge.value >= 0 && d.allowedDischarge.value <= rating.value,
                             "allowed discharge \(d.allowedDischarge) outside 0…rating after \(context)")
            violations.check(d.setpoint.value >= -d.allowedCharge.value - 1e-6 && d.setpoint.value <= d.allowedDischarge.value + 1e-6,
                             "setpoint \(d.setpoint) outside −\(d.allowedCharge)…\(d.allowedDischarge) after \(context)")
            let fresh = lastLimits.map { nanoseconds - $0.nanoseconds <= 3_000_000_000 } ?? false
            if !fresh { violations.check(d.setpoint == .zero, "setpoint \(d.setpoint) without fresh BMS limits after \(context)") }
            if !violations.list.isEmpty { break }
        }
        return violations.list
    }

    /// Encodes frames the way the harness reads them.
    static func encode(_ frames: [CANFrame], gapMs: Int = 100) -> [UInt8] {
        var bytes: [UInt8] = []
        for frame in frames {
            let index = ids.firstIndex(of: frame.id)
            if let index { bytes.append(UInt8(index)) } else { bytes += [0xFF, UInt8(frame.id >> 8), UInt8(frame.id & 0xFF)] }
            bytes += [0, UInt8(frame.length)]
            bytes += (0..<8).map { frame.byte($0) }
            bytes += [UInt8(gapMs / 4), 0, 0x0B, 0xB8]  // 50.00 Hz, 30 kW dispatch
        }
        return bytes
    }

    static func seeds() -> [[UInt8]] {
        let healthy = PylontechBMSState(
            chargeVoltageLimit: 56, chargeCurrentLimit: 100, dischargeCurrentLimit: 100, dischargeVoltageLimit: 46,
            soc: 60, soh: 99, voltage: 52, current: 0, temperature: 25, minCellVoltage: 3.28, maxCellVoltage: 3.30,
            minCellTemperature: 24, maxCellTemperature: 26)
        var protected = healthy
        protected.protections = [.cellOvervoltage]
        var full = healthy
        full.soc = 100
        full.chargeEnabled = false
        let cycle = healthy.frames()
        return [encode(cycle + cycle + cycle), encode(cycle + protected.frames() + cycle), encode(full.frames() + full.frames()),
                encode(cycle, gapMs: 1000) + encode(cycle, gapMs: 1000)]
    }
}
