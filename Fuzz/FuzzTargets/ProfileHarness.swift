import Config
import Foundation
import ControlCore
import Fieldbus

/// Device profiles: YAML text into the profile reader (what `bessd check-config PROFILE.yaml` runs), and
/// what it accepts compiled into the decoders the workers run. Invariants: a refusal says why, at a
/// line, never nothing; what the reader accepts the workers accept too (check-config passing a profile
/// bessd then refuses at start is a broken promise); every signal's scale is finite and not 0; a
/// commanding profile has a fallback; and the compiled decoder, fed the profile's own frame ids or
/// registers with any bytes, keeps its snapshot finite and inside the ranges the profile declares.
enum ProfileHarness {
    static func run(_ input: inout FuzzInput) -> [String] {
        let text = String(decoding: input.rest(), as: UTF8.self)
        var violations = Violations()
        let (profile, diagnostics) = ProfileReader.read(text: text, path: "")
        guard let profile else {
            violations.check(!diagnostics.isEmpty, "refused with no diagnostic")
            for d in diagnostics {
                violations.check(!d.message.isEmpty, "diagnostic without a message: \(d.description)")
            }
            return violations.list
        }
        violations.check(!profile.name.isEmpty, "accepted with an empty name")
        for s in profile.signals {
            violations.check(s.scale.isFinite && s.scale != 0, "signal \(s.name): accepted scale \(s.scale)")
            violations.check(s.offset.isFinite, "signal \(s.name): accepted offset \(s.offset)")
        }
        // Any bytes the text has left over after its own length drive the decoder below.
        var frames = FuzzInput(Array(text.utf8.reversed()))
        ProfileDevicesHarness.exercise(profile, &frames, into: &violations)
        return violations.list
    }

    /// The starter library's texts (and the built-in one), so mutations start from real profiles.
    static func seeds() -> [[UInt8]] {
        ProfileDevicesHarness.library.map { Array($0.text.utf8) }
    }
}

/// Each starter profile's compiled decoder on frames or registers from the input, a control cycle on
/// each CAN BMS's snapshot, and each inverter profile's command path on a device whose words come from
/// the input. Invariants: as `ProfileHarness`'s for the decoders; no power without fresh BMS limits;
/// the setpoint inside what the unit may do; an inverter writes only the registers its profile
/// declares, arms its fallback before its first setpoint, and refreshes a watchdog before half its
/// period has passed.
enum ProfileDevicesHarness {
    /// The texts of devices/*.yaml beside this source tree, and the built-in Pylontech LV.
    static let library: [(name: String, text: String)] = {
        var texts = ProfileLibrary.builtIn.map { (name: $0.name, text: $0.text) }
        let directory = #filePath.split(separator: "/").dropLast(3).joined(separator: "/")
        let library = ProfileLibrary(directories: ["/" + directory + "/devices"])
        for profile in library.all where !profile.path.isEmpty && !texts.contains(where: { $0.name == profile.name }) {
            if let text = try? String(contentsOfFile: profile.path, encoding: .utf8) { texts.append((profile.name, text)) }
        }
        return texts
    }()

    static let profiles: [DeviceProfile] = library.compactMap { ProfileReader.read(text: $0.text, path: "").profile }

    static func run(_ input: inout FuzzInput) -> [String] {
        guard !profiles.isEmpty else { return ["no profile in the library"] }
        let profile = profiles[Int(input.u8()) % profiles.count]
        var violations = Violations()
        exercise(profile, &input, into: &violations)
        return violations.list.map { "\(profile.name): \($0)" }
    }

    static func exercise(_ profile: DeviceProfile, _ input: inout FuzzInput, into violations: inout Violations) {
        switch (profile.kind, profile.transport) {
        case (.bms, .can):
            do throws(ProfileError) {
                var decoder = try ProfiledCANDecoder(profile: profile)
                canFrames(profile, &decoder, &input, into: &violations)
            } catch {
                violations.check(false, "accepted by the reader, refused by the CAN compiler: \(error)")
            }
        case (.bms, .modbus):
            do throws(ProfileError) {
                var bms = try ProfiledModbusBMS(profile: profile)
                var t: Int64 = 0
                for _ in 0..<64 where !input.isEmpty && !bms.readPlan.isEmpty {
                    let block = bms.readPlan[Int(input.u8()) % bms.readPlan.count]
                    var words = Self.words(&input, block.count)
                    if input.u8() & 1 == 0 { while words.count < block.count { words.append(0) } }
                    t += Int64(input.u8()) * 4_000_000
                    _ = bms.ingest(block, words: words, at: MonotonicInstant(nanoseconds: t))
                    checkSnapshot(bms.snapshot, profile, into: &violations)
                }
            } catch {
                violations.check(false, "accepted by the reader, refused by the Modbus compiler: \(error)")
            }
        case (.inverter, .modbus):
            guard profile.commands != nil else { return }
            do throws(ProfileError) {
                var inverter = try ProfiledInverter(profile: profile)
                command(profile, &inverter, &input, into: &violations)
            } catch {
                violations.check(false, "accepted by the reader, refused by the inverter compiler: \(error)")
            }
        default:
            return
        }
    }

    static func canFrames(_ profile: DeviceProfile, _ decoder: inout ProfiledCANDecoder, _ input: inout FuzzInput,
                          into violations: inout Violations) {
        var ids: [UInt32] = []
        for signal in profile.signals {
            if case .can(let at) = signal.location, !ids.contains(at.frameID) { ids.append(at.frameID) }
        }
        guard !ids.isEmpty else { return }
        let extended: Bool = if case .can(let t) = profile.transport { t.extended } else { false }
        var nanoseconds: Int64 = 0
        var steps = 0
        while !input.isEmpty, steps < 256 {
            steps += 1
            let selector = input.u8()
            let id = selector < 224 ? ids[Int(selector) % ids.count] : UInt32(input.u16()) | (extended ? 0x1000_0000 : 0) & 0x1FFF_FFFF
            let flags = input.u8()
            let length = Int(min(input.u8() & 0x0F, 8))
            let frame = CANFrame(id: id, bytes: Array(input.take(8).prefix(length)),
                                 isExtended: (flags & 1 != 0) != extended ? !extended : extended,
                                 isRemote: flags & 2 != 0, isError: flags & 4 != 0)
            nanoseconds += Int64(input.u8()) * 4_000_000
            _ = decoder.ingest(frame, at: MonotonicInstant(nanoseconds: nanoseconds))
            checkSnapshot(decoder.snapshot, profile, into: &violations)
            if !violations.list.isEmpty { return }
        }
    }

    /// Every value the snapshot holds is finite and, where the profile bounds its signal, inside it.
    static func checkSnapshot(_ s: BMSSnapshot, _ profile: DeviceProfile, into violations: inout Violations) {
        func bounded(_ quantity: ProfileQuantity, _ value: Double) {
            violations.check(value.isFinite, "\(quantity.rawValue) \(value) not finite")
            guard let signal = profile.signals.first(where: { $0.quantity == quantity }), let valid = signal.valid,
                  !signal.magnitude, signal.clampMinimum == nil
            else { return }
            violations.check(valid.contains(value) || quantity == .soc,
                             "\(quantity.rawValue) \(value) outside its declared \(valid)")
        }
        if let l = s.limits?.value {
            bounded(.chargeCurrentLimit, l.chargeCurrentLimit.value)
            bounded(.dischargeCurrentLimit, l.dischargeCurrentLimit.value)
            violations.check(l.chargeCurrentLimit.value >= 0 || !l.chargeCurrentLimit.value.isFinite,
                             "charge current limit \(l.chargeCurrentLimit) negative")
            violations.check(l.dischargeCurrentLimit.value >= 0 || !l.dischargeCurrentLimit.value.isFinite,
                             "discharge current limit \(l.dischargeCurrentLimit) negative")
        }
        if let st = s.status?.value {
            violations.check(st.soc.value.isFinite && (0...100).contains(st.soc.value), "SOC \(st.soc) outside 0…100")
        }
        if let m = s.measurements?.value {
            bounded(.packVoltage, m.packVoltage.value)
            bounded(.packCurrent, m.packCurrent.value)
            bounded(.temperature, m.temperature.value)
        }
        if let c = s.cells?.value {
            bounded(.minCellVoltage, c.minCellVoltage.value)
            bounded(.maxCellVoltage, c.maxCellVoltage.value)
        }
    }

    static func command(_ profile: DeviceProfile, _ inverter: inout ProfiledInverter, _ input: inout FuzzInput,
                        into violations: inout Violations) {
        guard let commands = profile.commands else { return }
        var declared = Set((commands.start + commands.stop).map(\.address))
        switch commands.setpoint {
        case .signed(let address, let type, _, _):
            declared.insert(address)
            if type == .int32 || type == .uint32 { declared.insert(address + 1) }
        case .split(let direction, _, _, _, let magnitude, let type, _):
            declared.formUnion([direction, magnitude])
            if type == .int32 || type == .uint32 { declared.insert(magnitude + 1) }
        }
        var watchdogPeriod: Int64?
        switch commands.fallback {
        case .revertTimer(let address, _): declared.formUnion([address, address + 1])
        case .watchdog(let address, let seconds):
            declared.insert(address)
            watchdogPeriod = Int64(seconds) * 1_000_000_000
        case .trafficTimeout(let address, _): declared.insert(address)
        case .timeSlot: break
        }
        var device = FuzzDevice(base: 0, words: [UInt16](repeating: 0, count: 65_536))
        for (k, w) in Self.words(&input, 512).enumerated() { device.words[(k * 131) % device.words.count] = w }
        var now: Int64 = 0
        var lastWatchdog: Int64?
        for step in 0..<48 where !input.isEmpty {
            now += Int64(input.u8()) * 50_000_000
            let power = Watts(Double(Int16(bitPattern: input.u16())) * 4)
            device.writes.removeAll()
            do throws(DeviceError) {
                try inverter.command(power, revert: .seconds(10), now: MonotonicInstant(nanoseconds: now), &device)
            } catch {
                continue
            }
            for write in device.writes {
                for k in 0..<write.values.count {
                    violations.check(declared.contains(write.address + k),
                                     "step \(step): wrote register \(write.address + k), which the profile does not declare")
                }
            }
            if case .watchdog(let address, _) = commands.fallback, let period = watchdogPeriod {
                if device.writes.contains(where: { $0.address == address }) { lastWatchdog = now }
                violations.check(lastWatchdog.map { now - $0 <= period / 2 } ?? false,
                                 "step \(step): watchdog not rewritten for \(Double(now - (lastWatchdog ?? 0)) / 1e9) s of a \(period / 1_000_000_000) s period")
            }
            if !violations.list.isEmpty { return }
        }
    }

    /// Up to `count` big-endian words from the input.
    static func words(_ input: inout FuzzInput, _ count: Int) -> [UInt16] {
        let bytes = input.take(count * 2)
        return stride(from: 0, to: bytes.count - 1, by: 2).map { UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]) }
    }

    static func seeds() -> [[UInt8]] {
        (0..<max(1, profiles.count)).map { (index: Int) -> [UInt8] in
            var bytes: [UInt8] = [UInt8(index)]
            for k in 0..<96 {
                bytes += [UInt8(k % 7), 0, 8]
                for b in 0..<8 { bytes.append(UInt8((b * 37 + k) & 0xFF)) }
                bytes.append(25)
            }
            return bytes
        }
    }
}
