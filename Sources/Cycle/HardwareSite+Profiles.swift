import BessBase
import BessSystem
import ControlCore
import Fieldbus

extension HardwareSite {
    /// One worker per real BMS: a CAN worker on its interface, decoding with its profile (or
    /// Pylontech LV), or a Modbus BMS worker on its `bms.modbus` endpoint with its profile. A profile
    /// that does not compile (check-config refuses it first) or a Modbus BMS without its endpoint or
    /// profile gets no worker: its slot carries the code as its fault, the BMS never publishes, and
    /// the cycle keeps the unit at zero (BMS_COMM_LOST after its start-up grace).
    /// `busLines`: the inverters' endpoints; a Modbus BMS on one of their serial lines is said, as two
    /// workers cannot share one line.
    static func makeBMSWorkers(_ c: CycleSettings, slots: [BMSSlot?], phase: CyclePhase, realtime: RealtimeThread?,
                               busLines: [ModbusEndpoint], output: @escaping (DeviceNotice) -> Void)
        -> (can: [BMSWorker], modbus: [ModbusBMSWorker])
    {
        let log = UncheckedOutput(output)
        var can: [BMSWorker] = []
        var modbus: [ModbusBMSWorker] = []
        for (index, unit) in c.devices.enumerated() {
            guard index < slots.count, let slot = slots[index] else { continue }
            let bms = unit.bms
            let refuse = { (code: String, text: String) in
                slot.update { $0.fault = code }
                output(DeviceNotice("bessd: error: bess_units[\(index)].bms: \(text); the unit stays at 0 W", severity: .error,
                                    code: code, units: [unit.id]))
            }
            if bms.transport == .modbus {
                guard let settings = bms.modbus, let profile = bms.profile else {
                    refuse("BMS_PROFILE_MISSING", "a BMS on Modbus needs bms.modbus and bms.profile")
                    continue
                }
                let endpoint = settings.endpoint
                if case .rtu = endpoint, busLines.contains(where: { $0.line == endpoint.line }) {
                    output(DeviceNotice("bessd: warning: bess_units[\(index)].bms.modbus shares \(endpoint.line) with an inverter; "
                                        + "two workers take turns on one serial line only by chance: give the BMS its own line or a gateway",
                                        severity: .warning, units: [unit.id]))
                }
                do throws(ProfileError) {
                    modbus.append(try ModbusBMSWorker(endpoint: endpoint, unitID: settings.unitID, profile: profile, slot: slot,
                                                      units: [unit.id], timeout: settings.timeout, phase: phase, realtime: realtime) {
                        log.write($0)
                    })
                } catch {
                    refuse(error.code, "profile \(profile.name): \(error.message)")
                }
                continue
            }
            do throws(ProfileError) {
                // The unit's profile (protocol pylontech: the library's pylontech-lv), else Pylontech LV's own decoder.
                let link: CANLink
                if let profile = bms.profile { link = try CANLink(profile: profile) } else { link = .pylontech }
                can.append(BMSWorker(interface: bms.interface, slot: slot, link: link, units: [unit.id],
                                     manage: bms.manageInterface ? (bms.bitrate, restartMs(bms.restartAfter)) : nil, phase: phase,
                                     realtime: realtime) { log.write($0) })
            } catch {
                refuse(error.code, "profile \(bms.profile?.name ?? "?"): \(error.message)")
            }
        }
        return (can, modbus)
    }
}

extension HardwareSite {
    /// The profile a unit's inverter is driven by (`inverter.protocol: profile`), compiled once here
    /// with the cycle's period as its poll interval, so a profile whose traffic timeout the polls
    /// would not feed is refused now (`PROFILE_POLL_TOO_SLOW`), not found out on the wire. Not
    /// `usable` when it is missing or does not compile: the slot carries the code, the unit gets no
    /// worker and stays at 0 W (INVERTER_COMM_LOST after its grace).
    static func inverterProfile(_ unit: UnitDevices, index: Int, slot: DeviceSlot, period: Duration,
                                output: (DeviceNotice) -> Void) -> (profile: DeviceProfile?, usable: Bool) {
        guard unit.inverter.protocolName == .profile else { return (nil, true) }
        guard let profile = unit.inverter.profile else {
            slot.fail("INVERTER_PROFILE_MISSING")
            output(DeviceNotice("bessd: error: bess_units[\(index)].inverter: protocol profile without a profile; the unit stays at 0 W",
                                severity: .error, code: "INVERTER_PROFILE_MISSING", units: [unit.id]))
            return (nil, false)
        }
        do throws(ProfileError) {
            _ = try ProfiledInverter(profile: profile, pollInterval: period)
            return (profile, true)
        } catch {
            slot.fail(error.code)
            output(DeviceNotice("bessd: error: bess_units[\(index)].inverter: profile \(profile.name): \(error.message); "
                                + "the unit stays at 0 W", severity: .error, code: error.code, units: [unit.id]))
            return (nil, false)
        }
    }
}
