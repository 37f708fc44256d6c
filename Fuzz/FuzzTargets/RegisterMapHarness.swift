import ControlCore
import Fieldbus

/// An inverter driven through a register map: the map (types, scales, word order, addresses) and the
/// device's words both come from the input. Invariants: readings are finite; a setpoint that is
/// written decodes to the request within half a step of its scale; the revert timeout written decodes
/// to at least 1 s (a timer of 0 is no timer); a value that does not fit is refused before anything
/// is written.
enum RegisterMapHarness {
    /// Scales people write in maps (and some they should not).
    static let scales: [Double] = [1, 0.1, 0.01, 0.001, 10, 100, 1000, -1, 0.5, 3, 1e-6, 60, 0.25, 2.5]

    static func register(_ input: inout FuzzInput) -> MappedRegister {
        let shape = input.u8()
        let type = MappedRegister.ValueType.allCases[Int(shape & 3)]
        return MappedRegister(address: 40000 + Int(input.u8() & 0x3F), type: type,
                              scale: scales[Int(shape >> 2) % scales.count], lowWordFirst: shape & 0x80 != 0)
    }

    static func run(_ input: inout FuzzInput) -> [String] {
        let power = register(&input)
        let frequency = register(&input)
        let setpoint = register(&input)
        let revert = register(&input)
        let withEnable = input.u8()
        let enable = register(&input)
        let spec = RegisterMapSpec(power: power, frequency: withEnable & 2 != 0 ? frequency : nil, setpoint: setpoint,
                                   revertTimeout: revert, enable: withEnable & 1 != 0 ? enable : nil,
                                   enableValue: Double(withEnable >> 2), rating: .kilowatts(50))
        // Registers that overlap are a map no device has; the loader's business, not this decoder's.
        let used = [setpoint, revert] + (spec.enable.map { [$0] } ?? [])
        for (i, a) in used.enumerated() {
            for b in used[(i + 1)...] where a.address < b.address + b.count && b.address < a.address + a.count { return [] }
        }
        let inverter = RegisterMapInverter(spec: spec)
        var device = FuzzDevice(words: input.words())
        if device.words.count < 64 { device.words += [UInt16](repeating: 0, count: 64 - device.words.count) }
        var violations = Violations()
        if let reading = try? inverter.readStatus(&device) {
            violations.check(reading.activePower.value.isFinite, "power \(reading.activePower) not finite")
            violations.check(reading.frequency.map { $0.value.isFinite } ?? true, "frequency not finite")
        }
        for request in [0.0, 12_345, -20_000, 50_000, -50_000, 0.4, 7] {
            device.writes.removeAll()
            do throws(DeviceError) {
                try inverter.command(Watts(request), revert: .seconds(30), rearm: true, &device)
            } catch {
                violations.check(device.writes.isEmpty, "\(request) W refused (\(error)) after \(device.writes.count) writes")
                continue
            }
            guard let written = device.writes.last(where: { $0.address == setpoint.address }),
                  let value = setpoint.decode(written.values)
            else {
                violations.check(false, "\(request) W: no setpoint written (writes \(device.writes))")
                continue
            }
            violations.check(abs(value - request) <= abs(setpoint.scale) / 2 + abs(request) * 1e-9,
                             "asked \(request) W, wrote \(value) W (\(setpoint.type), scale \(setpoint.scale))")
            let timer = device.writes.first { $0.address == revert.address }.flatMap { revert.decode($0.values) }
            violations.check((timer ?? 0) >= 1, "revert timeout written as \(timer.map { "\($0)" } ?? "nothing") s for 30 s "
                             + "(\(revert.type), scale \(revert.scale))")
            let armed = device.writes.firstIndex { $0.address == revert.address }
            let set = device.writes.lastIndex { $0.address == setpoint.address }
            violations.check(armed != nil && set != nil && armed! < set!, "the setpoint went out before the revert timeout")
        }
        return violations.list
    }

    static func seeds() -> [[UInt8]] {
        // power int16 ×1 at 40000, frequency uint16 ×0.01 at 40001, setpoint int32 ×1 at 40010,
        // revert uint16 ×1 at 40012, enable uint16 at 40013 (value 1), then the device's words.
        let image: [UInt16] = [0x1388, 0x1388] + [UInt16](repeating: 0, count: 30)
        return [
            [0x00, 0x00, 0x09, 0x01, 0x02, 0x0A, 0x01, 0x0C, 0x07, 0x01, 0x0D] + bytes(of: image),
            [0x80 | 0x02, 0x00, 0x05, 0x01, 0x80 | 0x03, 0x0A, 0x15, 0x0C, 0x04, 0x01, 0x0D] + bytes(of: image),
        ]
    }
}
