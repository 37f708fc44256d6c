public import BessBase
public import Simulation
import BessSystem
public import ControlCore
import Fieldbus
import Foundation
public import Config
public import Cycle
import Synchronization

/// The plant side of a HIL rig (`bess-hil plant --config RIG.yaml`): serves every device bessd
/// treats as real on the wire at the address the rig names, driven by the battery model and the
/// rig's grid frequency. The same file given to `bessd run` completes the rig.
public final class PlantRig {
    public let configuration: BessdConfiguration
    public internal(set) var units: [SimulatedUnit] = []
    public private(set) var servers: [SunSpecServer?] = []
    /// The CAN socket of each unit whose BMS the plant emulates.
    var canSockets: [CANSocket?] = []
    /// The BMS of each unit whose configuration names a profile (`bms.profile`), emulated from it
    /// instead of as Pylontech LV (PlantRig+Profiles.swift).
    public internal(set) var profiledBMS: [SimulatedProfiledBMS?] = []
    /// The server of each unit whose BMS is profiled over Modbus (`bms.transport: modbus`).
    public private(set) var bmsServers: [SunSpecServer?] = []
    /// Each unit's profiled inverter (`inverter.profile`) and its server.
    public internal(set) var profiledInverters: [SimulatedProfiledInverter?] = []
    public private(set) var profiledServers: [SunSpecServer?] = []
    var nextBMSFrames: [MonotonicInstant] = []
    /// 0x305 keep-alives received from bessd, per unit.
    public private(set) var keepAlivesReceived: [UInt64] = []
    /// BMS frames sent, per unit.
    public private(set) var bmsFramesSent: [UInt64] = []
    var delayed: [[(due: MonotonicInstant, frames: [CANFrame])]] = []
    var linkDown: [Bool] = []
    /// Time between BMS transmissions (Pylontech sends every second).
    public var bmsPeriod = Duration.seconds(1)
    var grid: GridFrequency
    public private(set) var started: MonotonicInstant
    var last: MonotonicInstant
    /// The site's connection-point meter, when the rig names a real one (SunSpec 201–204 as
    /// `simulation.meter_model` says, 203 by default, on Modbus TCP or RTU): it shows load − PV − Σ battery power, + = import.
    public private(set) var meterServer: SunSpecServer?
    /// The connection point's history (for `meter_delay`) and energy counters.
    public private(set) var meter = SimulatedMeter()
    public private(set) var importedWh = 0.0
    public private(set) var exportedWh = 0.0
    /// The grid's voltage at the point of connection (a Thevenin source on the site's base: Σ units'
    /// apparent power, the connection point's nominal, 230 V line to neutral unless configured);
    /// `gridVoltage.sourcePU` is V0, which a scenario's `voltage_pu` steps.
    public var gridVoltage: GridVoltage
    /// The voltage the last step served, V line to neutral (each inverter's 701 `LNV`, the meter's `PhV`).
    public private(set) var voltageV: Double

    public init(configuration c: BessdConfiguration, startedAt: MonotonicInstant) throws(RunError) {
        configuration = c
        started = startedAt
        last = startedAt
        let sim = c.simulation
        grid = sim.gridFrequency()
        let nominal = c.site.reactivePower.nominalVoltageV ?? c.grid.reactivePower.nominalVoltageV ?? 230
        let baseVA = c.units.reduce(0.0) { $0 + max(0, $1.maxApparentPowerKVA ?? $1.maxPowerKW) * 1000 }
        gridVoltage = GridVoltage(nominalV: nominal, baseVA: baseVA)
        voltageV = gridVoltage.nominalV
        for unit in c.units {
            units.append(SimulatedUnit(capacityKWh: unit.capacityKWh, maxPowerKW: unit.maxPowerKW,
                                       initialSOCPercent: sim.initialSOC(of: unit.id), ambientCelsius: sim.ambientCelsius,
                                       cellsInSeries: unit.bms.cellsInSeries, hottestCellAbovePackK: sim.hottestCellAbovePackK))
            delayed.append([])
            linkDown.append(false)
            keepAlivesReceived.append(0)
            bmsFramesSent.append(0)
            nextBMSFrames.append(.zero)
            profiledBMS.append(c.isSimulated(bmsOf: unit) ? nil : Self.profiledBMS(unit.bms))
            profiledInverters.append(nil)
            profiledServers.append(nil)
            if c.isSimulated(bmsOf: unit) || unit.bms.transport == .modbus {
                canSockets.append(nil)
            } else {
                do throws(FieldbusError) {
                    let pylontech: [(id: UInt32, mask: UInt32)] = [(PylontechLV.keepAliveID, 0x7FF)]
                    let filters = profiledBMS[profiledBMS.count - 1]?.requestFilters ?? pylontech
                    canSockets.append(try CANSocket(interface: unit.bms.interface, filters: filters))
                } catch {
                    stop()
                    throw RunError(error, context: "unit \(unit.id) BMS")
                }
            }
            do throws(FieldbusError) {
                bmsServers.append(c.isSimulated(bmsOf: unit) ? nil : try Self.modbusBMSServer(profiledBMS[profiledBMS.count - 1], unit.bms))
            } catch {
                stop()
                throw RunError(error, context: "unit \(unit.id) BMS")
            }
            // The plant serves SunSpec and profiled inverters; a register-map one is the rig's own hardware.
            if !c.isSimulated(inverterOf: unit), unit.inverter.protocolName == .profile, let profile = unit.inverter.profile,
               let modbus = unit.modbus {
                let inverter = SimulatedProfiledInverter(profile: profile)
                units[units.count - 1].inverter.revertTimeout = nil
                do throws(FieldbusError) {
                    profiledServers[profiledServers.count - 1] = try Self.profiledServer(profile, inverter.image, at: modbus)
                } catch {
                    stop()
                    throw RunError(error, context: "unit \(unit.id)")
                }
                profiledInverters[profiledInverters.count - 1] = inverter
            }
            guard !c.isSimulated(inverterOf: unit), unit.inverter.protocolName == .sunspec, let modbus = unit.modbus else {
                servers.append(nil)
                continue
            }
            do {
                let server = try SunSpecServer(transport: Self.transport(modbus), profile: SunSpecDeviceProfile(ratingW: unit.maxPowerKW * 1000))
                try server.start()
                servers.append(server)
            } catch {
                stop()
                throw RunError(error, context: "unit \(unit.id)")
            }
        }
        if let settings = c.site.meter, !c.meterSimulated, settings.protocolName == .sunspec, let modbus = settings.modbus {
            // Largest power to show: every unit at full power plus the load and PV at their largest.
            let units = c.units.reduce(0.0) { $0 + $1.maxPowerKW * 1000 }
            let maxW = units + 1000 * (c.simulation.load.largestKW + c.simulation.pv.largestKW)
            do {
                let server = try SunSpecServer(transport: Self.transport(modbus), profile: .meter(model: c.simulation.meterModel, maxW: max(1000, maxW)))
                try server.start()
                meterServer = server
            } catch {
                stop()
                throw RunError(error, context: "site meter")
            }
        }
        if servers.allSatisfy({ $0 == nil }) && canSockets.allSatisfy({ $0 == nil }) && meterServer == nil
            && bmsServers.allSatisfy({ $0 == nil }) && profiledServers.allSatisfy({ $0 == nil }) {
            throw RunError(.rigEmpty, message: "the rig has no device for the plant to serve (mode: hil with a modbus endpoint)")
        }
    }

    /// The server transport for a configured Modbus endpoint.
    static func transport(_ modbus: ModbusSettings) -> SunSpecServer.Transport {
        switch modbus.transport {
        case .tcp(let host, let port): .tcp(host: host, port: port)
        case .rtu(let serial):
            .rtu(device: serial.device, baud: serial.baud, parity: serial.parity.letter,
                 dataBits: serial.dataBits, stopBits: serial.stopBits, unitID: modbus.unitID)
        }
    }

    /// Moves the rig's time zero (where its frequency profile and faults start) to `instant`: a
    /// scenario starts its clock once bessd is up, while the plant has been serving since before.
    public func setOrigin(_ instant: MonotonicInstant) { started = instant }

    /// Advances the plant to `now` and exchanges registers with every server.
    public func step(now: MonotonicInstant) -> Double {
        let dt = max(.zero, now - last)
        last = now
        let elapsed = now - started
        let hz = grid.frequency(at: elapsed)
        voltageV = connectionVoltage(elapsed: elapsed)
        for i in units.indices {
            let id = configuration.units[i].id
            let faults = units[i].follow(configuration.simulation, at: elapsed, unitID: id)
            for server in [servers[i], profiledServers[i]] {
                server?.silent = faults.contains(.modbusSilence)
                server?.responseDelay = configuration.simulation.activeDelay(.modbusDelay, at: elapsed, unitID: id)
            }
            if canSockets[i] != nil { applyLinkFault(i, down: faults.contains(.canBusOff)) }
            units[i].step(by: dt)
            if let server = servers[i] {
                SunSpecPlantLink(server: server).exchange(&units[i], frequencyHz: faults.contains(.frequencyLoss) ? .nan : hz,
                                                          gridVoltage: voltageV)
            }
            exchangeModbusBMS(i)
            exchangeProfiledInverter(i, now: now, frequencyHz: faults.contains(.frequencyLoss) ? .nan : hz)
            if let can = canSockets[i] {
                exchangeCAN(i, can, now: now, faults: faults,
                            delay: configuration.simulation.activeDelay(.bmsDelay, at: elapsed, unitID: id))
            }
        }
        if let meterServer { publishMeter(meterServer, elapsed: elapsed, interval: dt, hz: hz) }
        return hz
    }

    /// The voltage at the connection point `elapsed` into the run, V: `gridVoltage` with the power
    /// the site injects, the units' (as last stepped, their var too) and PV's less the load's, and
    /// the load's var (PF 0.95 lagging: it absorbs).
    func connectionVoltage(elapsed: Duration) -> Double {
        let site = configuration.simulation.sitePower(at: elapsed)
        var batteryW = 0.0, batteryVar = 0.0
        for unit in units {
            batteryW += unit.inverter.powerW
            batteryVar += unit.inverter.reactiveVar
        }
        return gridVoltage.volts(injectedW: batteryW + site.pv - site.load,
                                 injectedVar: batteryVar - max(0, site.load) * SimulatedMeter.loadVarPerW)
    }

    /// The connection point: load − PV − Σ battery power, served as the configured meter model with the
    /// meter's faults (`meter_silence`: no answers; `meter_delay`: `delay_s` late; `meter_garbage`:
    /// W not implemented) and its energy counters.
    func publishMeter(_ server: SunSpecServer, elapsed: Duration, interval: Duration, hz: Double) {
        let hours = interval.secondsDouble / 3600
        let site = configuration.simulation.sitePower(at: elapsed)
        let battery = units.reduce(0.0) { $0 + $1.inverter.powerW }
        let batteryVar = units.reduce(0.0) { $0 + $1.inverter.reactiveVar }
        meter.record(elapsed: elapsed, loadW: site.load, pvW: site.pv, batteryW: battery, batteryVar: batteryVar)
        importedWh += max(0, meter.gridPowerW) * hours
        exportedWh += max(0, -meter.gridPowerW) * hours
        let faults = configuration.simulation.activeFaults(at: elapsed, unitID: "")
        server.silent = faults.contains(.meterSilence)
        var w = meter.reading(at: elapsed, delay: configuration.simulation.activeDelay(.meterDelay, at: elapsed, unitID: ""))
        var reactive = meter.gridReactiveVar
        if configuration.site.meter?.importPositive == false {  // a meter that counts export as positive
            w = -w
            reactive = -reactive
        }
        let imported = importedWh, exported = exportedWh
        let volts = voltageV
        server.withImage { image, _ in
            image.publishMeter(gridW: w, hz: hz, importedWh: imported, exportedWh: exported, garbage: faults.contains(.meterGarbage),
                               reactiveVar: reactive, voltage: volts)
        }
    }

    /// Sends the BMS's frames when due (late, broken or invalid while a fault says so) and counts the
    /// keep-alives bessd sent.
    func exchangeCAN(_ i: Int, _ can: CANSocket, now: MonotonicInstant, faults: FaultSet, delay: Duration) {
        if let bms = profiledBMS[i] {
            exchangeProfiledCAN(i, can, bms, now: now, delay: delay)
            return
        }
        while let received = try? can.receive(timeout: .zero) {
            if received.frame.id == PylontechLV.keepAliveID && !received.frame.isError { keepAlivesReceived[i] &+= 1 }
        }
        sendDelayed(i, can, now: now)
        guard now >= nextBMSFrames[i], !units[i].bmsSilent else { return }
        nextBMSFrames[i] = now + bmsPeriod
        var frames = units[i].pylontechState.frames()
        let silent = units[i].silentGroups
        if !silent.isEmpty {
            frames.removeAll { frame in
                (frame.id == PylontechLV.cellsID && silent.contains(.cells))
                    || (frame.id == PylontechLV.protectionID && silent.contains(.protection))
                    || (frame.id == PylontechLV.requestsID && silent.contains(.requests))
            }
        }
        if faults.contains(.bmsOutOfRange) {
            // SOC 150 % and the invalid marker in the current limits: the decoder must refuse both.
            frames = [CANFrame(id: PylontechLV.statusID, bytes: [150, 0, 100, 0]),
                      CANFrame(id: PylontechLV.limitsID, bytes: [0x14, 0x02, 0x00, 0x80, 0x00, 0x80, 0, 0])]
        }
        if faults.contains(.bmsGarbage) {
            frames += [CANFrame(id: PylontechLV.limitsID, bytes: [0xFF]), CANFrame(id: PylontechLV.measurementsID, bytes: [1, 2]),
                       CANFrame(id: 0x35F, bytes: [0xDE, 0xAD, 0xBE, 0xEF, 0, 0, 0, 0])]
        }
        send(i, can, frames, now: now, delay: delay)
    }

    /// One step of a profiled CAN BMS: counts bessd's request or keep-alive frames, sends what is due.
    func exchangeProfiledCAN(_ i: Int, _ can: CANSocket, _ bms: SimulatedProfiledBMS, now: MonotonicInstant, delay: Duration) {
        var requested = false
        while let received = try? can.receive(timeout: .zero) {
            guard !received.frame.isError else { continue }
            keepAlivesReceived[i] &+= 1
            if bms.isRequest(received.frame) { requested = true }
        }
        sendDelayed(i, can, now: now)
        if bms.broadcasts {
            guard now >= nextBMSFrames[i] else { return }
            nextBMSFrames[i] = now + bms.period
        } else if !requested {
            return
        }
        let frames = bms.frames(units[i])
        guard !frames.isEmpty else { return }
        send(i, can, frames, now: now, delay: delay)
    }

    /// Frames held back by a delay fault go out when due.
    func sendDelayed(_ i: Int, _ can: CANSocket, now: MonotonicInstant) {
        while let first = delayed[i].first, first.due <= now {
            delayed[i].removeFirst()
            for frame in first.frames where (try? can.send(frame)) != nil { bmsFramesSent[i] &+= 1 }
        }
    }

    /// Sends `frames` now, or `delay` later while a delay fault holds them back.
    func send(_ i: Int, _ can: CANSocket, _ frames: [CANFrame], now: MonotonicInstant, delay: Duration) {
        if delay > .zero {
            delayed[i].append((now + delay, frames))
            return
        }
        for frame in frames where (try? can.send(frame)) != nil { bmsFramesSent[i] &+= 1 }
    }

    /// Takes the unit's CAN link down (or back up) with `ip link`, as a bus-off looks to bessd.
    func applyLinkFault(_ i: Int, down: Bool) {
        guard linkDown[i] != down else { return }
        linkDown[i] = down
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/ip")
        process.arguments = ["link", "set", configuration.units[i].bms.interface, down ? "down" : "up"]
        try? process.run()
        process.waitUntilExit()
    }

    /// Stops serving.
    public func stop() {
        for server in servers + bmsServers + profiledServers { server?.stop() }
        meterServer?.stop()
        for i in linkDown.indices where linkDown[i] { applyLinkFault(i, down: false) }
    }

    /// Injects a fault into unit `index`.
    public func withUnit(_ index: Int, _ body: (inout SimulatedUnit) -> Void) { body(&units[index]) }

    /// A status line: frequency and each unit's setpoint, power, SOC and revert state.
    public func statusLine(now: MonotonicInstant, frequency: Double) -> String {
        var text = "plant t=\(Int(now.seconds(since: started).rounded()))s f=\(fixed(frequency, 3))Hz"
            + " V=\(fixed(voltageV / gridVoltage.nominalV, 4))pu"
        for (i, unit) in configuration.units.enumerated() {
            let u = units[i]
            if canSockets[i] != nil {
                text += " | \(unit.id) BMS frames \(bmsFramesSent[i]) keep-alives \(keepAlivesReceived[i])"
            }
            if let bms = bmsServers[i] {
                text += " | \(unit.id) BMS [\(bms.port > 0 ? "tcp:\(bms.port)" : "rtu")] requests \(bms.requests)"
            }
            let where_ = (servers[i] ?? profiledServers[i]).map { $0.port > 0 ? "tcp:\($0.port)" : "rtu" } ?? "sim"
            text += " | \(unit.id) [\(where_)] SP \(signed(u.inverter.setpointW / 1000))kW P \(signed(u.inverter.powerW / 1000))kW"
                + " SOC \(fixed(u.battery.soc * 100, 1))%" + (u.inverter.reverted ? " reverted" : "")
        }
        if let meterServer {
            text += " | meter [\(meterServer.port > 0 ? "tcp:\(meterServer.port)" : "rtu")] grid \(signed(meter.gridPowerW / 1000))kW"
        }
        return text
    }

    /// Runs in real time, a step every `step`, until `duration` passes or a stop is requested.
    /// `holdOrigin`, while it returns true, keeps the rig's time zero at the present step: the
    /// frequency profile and the faults wait (for a test that starts them once bessd is up).
    public func run(duration: Duration?, step: Duration = .milliseconds(50), holdOrigin: (() -> Bool)? = nil,
                    output: (String) -> Void) {
        var deadline = SystemClock.shared.now()
        let end = duration.map { deadline + $0 }
        var nextStatus = deadline
        var holding = holdOrigin
        while !stopRequested.load(ordering: .relaxed) {
            deadline = deadline + step
            SystemClock.shared.sleep(until: deadline)
            let now = SystemClock.shared.now()
            if let hold = holding {
                if hold() { setOrigin(now) } else { holding = nil; output("bess-hil: time zero") }
            }
            let hz = self.step(now: now)
            if now >= nextStatus {
                output(statusLine(now: now, frequency: hz))
                nextStatus = now + .seconds(1)
            }
            if let end, now >= end { break }
        }
        stop()
    }
}
