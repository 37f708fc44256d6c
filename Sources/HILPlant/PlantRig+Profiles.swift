import BessBase
import ControlCore
import Cycle
import Fieldbus
import Simulation

/// The plant's side of units whose devices are profiled:
/// - a CAN BMS (`bms.profile: NAME`, transport can) sends the profile's frames (broadcast every group
///   period, or in answer to each of bessd's request frames) from the same pack model, with
///   `bms_silence`, `bms_delay` and `bms_group_silence` applied as to the Pylontech one;
/// - a Modbus BMS (`bms.transport: modbus`) holds the profile's registers, published from the pack
///   every step, on the house's server at `bms.modbus` (`bms_silence`: no answers);
/// - a profiled inverter (`inverter.profile: NAME`) is a `SimulatedProfiledInverter` on the unit's
///   `modbus` endpoint: bessd's writes reach it every step with the traffic, its fallback runs on its
///   own clock, and the power it is commanded to drives the unit.
/// `bms.protocol: pylontech` keeps the Pylontech emulator; `inverter.protocol: sunspec` the SunSpec one.
extension PlantRig {
    /// The profiled BMS for `bms`, nil when it is Pylontech's (`protocol: pylontech`).
    static func profiledBMS(_ bms: BMSSettings) -> SimulatedProfiledBMS? {
        guard bms.protocolName == .profile, let profile = bms.profile else { return nil }
        return SimulatedProfiledBMS(profile: profile)
    }

    /// The holding and input addresses `profile` uses (its signals, their scale-factor registers and its
    /// command registers), each table's as one range; nil for a table it does not use.
    static func registerSpans(_ profile: DeviceProfile) -> (holding: ClosedRange<Int>?, input: ClosedRange<Int>?) {
        var holding: [Int] = [], input: [Int] = []
        for signal in profile.signals {
            guard case .modbus(let location) = signal.location else { continue }
            let addresses = Array(location.address..<location.address + location.count) + [location.scaleFactorAddress].compactMap { $0 }
            if location.table == .holding { holding += addresses } else { input += addresses }
        }
        if let commands = profile.commands {
            let inverter = SimulatedProfiledInverter(profile: profile)
            holding += inverter.commandRegisters
            holding += (commands.start + commands.stop).map(\.address)
        }
        func span(_ a: [Int]) -> ClosedRange<Int>? { a.min().flatMap { low in a.max().map { low...$0 } } }
        return (span(holding), span(input))
    }

    /// A server of `image` with `profile`'s registers at `modbus`, started.
    static func profiledServer(_ profile: DeviceProfile, _ image: ProfiledRegisterImage,
                               at modbus: ModbusSettings) throws(FieldbusError) -> SunSpecServer {
        let spans = registerSpans(profile)
        let server = try SunSpecServer(transport: transport(modbus), serving: image, holding: spans.holding, input: spans.input)
        try server.start()
        return server
    }

    /// Serves unit `index`'s Modbus BMS at `bms.modbus`; nil for a CAN BMS.
    static func modbusBMSServer(_ bms: SimulatedProfiledBMS?, _ settings: BMSSettings) throws(FieldbusError) -> SunSpecServer? {
        guard settings.transport == .modbus else { return nil }
        guard let bms, let modbus = settings.modbus else {
            throw FieldbusError(.modbusServerFailed, message: "a Modbus BMS on the plant needs `bms.profile` and `bms.modbus`")
        }
        return try profiledServer(bms.profile, bms.image, at: modbus)
    }

    /// One step of unit `i`'s Modbus BMS: its registers published from the pack, silent while
    /// `bms_silence` holds.
    func exchangeModbusBMS(_ i: Int) {
        guard let server = bmsServers[i], var bms = profiledBMS[i] else { return }
        server.silent = units[i].bmsSilent
        bms.publish(units[i])
        profiledBMS[i] = bms
        server.exchangeProfiled { image, _, _ in image = bms.image }
    }

    /// One step of unit `i`'s profiled inverter: bessd's writes and traffic since the last step reach
    /// it, its own timers run, its readings are published, and the power it is commanded to drives
    /// the unit's inverter (which keeps no revert of its own: the profile's fallback is the device's).
    func exchangeProfiledInverter(_ i: Int, now: MonotonicInstant, frequencyHz: Double) {
        guard let server = profiledServers[i], var inverter = profiledInverters[i] else { return }
        var unit = units[i]
        server.exchangeProfiled { image, written, requests in
            for address in written.sorted() { try? inverter.write(at: address, [image[.holding, address]], now: now) }
            if requests > UInt64(written.count) { inverter.traffic(now) }
            let commanded = inverter.step(now: now)
            if commanded != unit.inverter.setpointW {
                unit.inverter.command(setpointW: commanded)
            }
            var state = SimulatedProfiledBMS.state(of: unit)
            state.activePowerW = unit.inverter.powerW
            state.frequencyHz = frequencyHz
            state.ratedPowerW = unit.inverter.ratingW
            state.stateCode = inverter.inCommandedMode && !inverter.fellBack ? 1 : 0
            inverter.publish(state)
            image = inverter.image
        }
        units[i].inverter = unit.inverter
        profiledInverters[i] = inverter
    }
}
