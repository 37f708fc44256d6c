import BessBase
import ControlCore
import Fieldbus
import HILPlant

/// A register image a device might hold, from 40000: what any register read returns, and where every
/// write goes (recorded).
struct FuzzDevice: RegisterAccess {
    var base = 40000
    var words: [UInt16]
    var writes: [(address: Int, values: [UInt16])] = []

    mutating func readRegisters(at address: Int, count: Int) throws(DeviceError) -> [UInt16] {
        guard count > 0, count <= 125, address >= base, address - base + count <= words.count else {
            throw DeviceError(.exception(2), message: "illegal data address \(address)+\(count)")
        }
        return Array(words[(address - base)..<(address - base + count)])
    }

    mutating func writeRegisters(at address: Int, _ values: [UInt16]) throws(DeviceError) {
        guard !values.isEmpty, values.count <= 123 else { throw DeviceError(.invalidRequest, message: "\(values.count) registers") }
        writes.append((address, values))
    }
}

/// SunSpec discovery, the inverter's and the meter's models, and the setpoint written back.
/// Invariants: readings are finite; a setpoint that is written is the one asked for (within one step
/// of its scale factor, never beyond the request's sign or the ±100 % of model 124); the revert is
/// armed (a timer of at least 1 s, enabled) before the setpoint whenever bessd re-arms; a value that
/// does not fit is refused, never wrapped.
enum SunSpecHarness {
    static func run(_ input: inout FuzzInput) -> [String] {
        let words = input.words()
        var violations = Violations()
        var device = FuzzDevice(words: words)
        if let meter = try? SunSpecMeter.open(&device), let reading = try? meter.read(&device) {
            violations.check(reading.gridPower.value.isFinite, "meter power \(reading.gridPower) not finite")
            violations.check(reading.frequency.map { $0.value.isFinite } ?? true, "meter frequency not finite")
        }
        device = FuzzDevice(words: words)
        guard let inverter = try? SunSpecInverter.open(&device) else { return violations.list }
        let reading = try? inverter.readStatus(&device)
        if let reading {
            violations.check(reading.activePower.value.isFinite, "inverter power \(reading.activePower) not finite")
            violations.check(reading.frequency.map { $0.value.isFinite } ?? true, "inverter frequency not finite")
        }
        checkReactive(inverter, reading, into: &violations)
        violations.check(inverter.ratedPower.map { $0.value.isFinite } ?? true, "rated power not finite")
        let rating = inverter.ratedPower.map { abs($0.value) } ?? 10_000
        for request in [0, rating / 3, -rating / 2, rating, -rating, 1, -1] {
            device.writes.removeAll()
            do throws(DeviceError) {
                try inverter.command(Watts(request), revert: .seconds(30), rearm: true, &device)
            } catch {
                violations.check(device.writes.allSatisfy { $0.address != setpointAddress(inverter) },
                                 "\(request) W refused (\(error)) after the setpoint was written")
                continue
            }
            check(inverter, request: request, writes: device.writes, into: &violations)
        }
        return violations.list
    }

    static func setpointAddress(_ inverter: SunSpecInverter) -> Int {
        inverter.commandPath == .acControls704
            ? inverter.commandModel.address + SunSpec.ACControls.wSetEna : inverter.commandModel.address + SunSpec.Storage.outWRte
    }

    static func check(_ inverter: SunSpecInverter, request: Double, writes: [(address: Int, values: [UInt16])],
                      into violations: inout Violations) {
        let model = inverter.commandModel.address
        switch inverter.commandPath {
        case .acControls704:
            typealias C = SunSpec.ACControls
            let arm = writes.firstIndex { $0.address == model + C.wSetEnaRvrt }
            let set = writes.firstIndex { $0.address == model + C.wSetEna }
            guard let arm, let set else {
                violations.check(false, "704: \(request) W written without the revert armed (writes \(writes))")
                return
            }
            violations.check(arm < set, "704: the setpoint went out before the revert was armed")
            let armed = writes[arm].values
            let timer = armed.count >= 3 ? UInt32(armed[1]) << 16 | UInt32(armed[2]) : 0
            violations.check(armed.first == 1 && timer >= 1, "704: revert written as \(armed), not enabled with a timer ≥ 1 s")
            let values = writes[set].values
            guard values.count >= 4 else {
                violations.check(false, "704: WSet write of \(values.count) registers")
                return
            }
            let raw = Double(Int32(bitPattern: UInt32(values[2]) << 16 | UInt32(values[3])))
            let step = SunSpec.powerOfTen(inverter.wSetSF)
            let written = raw * step
            violations.check(abs(written - request) <= step / 2 + abs(request) * 1e-9,
                             "704: asked \(request) W, wrote \(written) W (WSet_SF \(inverter.wSetSF))")
        case .storage124:
            typealias S = SunSpec.Storage
            guard let set = writes.first(where: { $0.address == model + S.outWRte }), set.values.count >= 4 else {
                violations.check(false, "124: \(request) W written without OutWRte/InWRte (writes \(writes))")
                return
            }
            let step = SunSpec.powerOfTen(inverter.inOutWRteSF)
            let out = Double(Int16(bitPattern: set.values[0])) * step
            let into = Double(Int16(bitPattern: set.values[1])) * step
            violations.check(abs(out) <= 100 + step && abs(into) <= 100 + step, "124: rates \(out) / \(into) % beyond ±100 %")
            violations.check(abs(out + into) <= 2 * step, "124: OutWRte \(out) and InWRte \(into) are not opposite")
            if request > 0 { violations.check(out >= 0, "124: discharge of \(request) W written as OutWRte \(out) %") }
            if request < 0 { violations.check(out <= 0, "124: charge of \(request) W written as OutWRte \(out) %") }
            violations.check(set.values[3] >= 1, "124: revert timer written as \(set.values[3]) s")
            violations.check(writes.contains { $0.address == model + S.storCtlMod },
                             "124: the rates were written without StorCtl_Mod enabling them")
        }
    }

    static func seeds() -> [[UInt8]] {
        let profiles = [
            SunSpecDeviceProfile(measurementModel: 701, controlModel: 704, ratingW: 100_000),
            SunSpecDeviceProfile(measurementModel: 103, controlModel: 704, ratingW: 5_000),
            SunSpecDeviceProfile(measurementModel: 103, controlModel: 124, ratingW: 50_000, maxChargeRateW: 20_000),
            SunSpecDeviceProfile.meter(model: 203, maxW: 200_000),
        ]
        return profiles.map { bytes(of: SunSpecImage(profile: $0).words) } + reactiveSeeds()
    }
}
