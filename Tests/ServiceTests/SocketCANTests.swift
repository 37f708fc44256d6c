import BessSystem
import ControlCore
import Fieldbus
import Foundation
import Glibc
import Simulation
@testable import Service
@testable import Cycle
@testable import Config
import TestSupport
import Testing

/// The virtual CAN interface these tests use, set by scripts/can-tests.sh (inside the VM when this
/// kernel has no CAN). Without it the suite is skipped on the host and runs in the VM instead.
let vcan = ProcessInfo.processInfo.environment["BESSD_VCAN"]

@Suite("SocketCAN on vcan", .serialized, .enabled(if: vcan != nil, "needs BESSD_VCAN (make check runs it in a VM)"))
struct SocketCANTests {
    /// `ip ARGUMENTS…` (iproute2), waited for; a failure shows in what the test then expects.
    private func ip(_ arguments: String...) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/sbin/ip")
        p.arguments = arguments
        try? p.run()
        p.waitUntilExit()
    }

    let interface = vcan ?? "vcan0"

    /// Waits until the plant's BMS emulator has put its first 0x351 frame on the bus (at most 15 s:
    /// the emulated VM starts a process slowly).
    func firstBMSFrame(_ listener: CANSocket) throws -> Bool {
        try waitFor(seconds: 15) { try listener.receive(timeout: .milliseconds(200)) != nil }
    }

    @Test("the emulator's frames cross vcan, pass the filters and decode, with kernel timestamps")
    func roundTrip() throws {
        let receiver = try CANSocket(interface: interface, filters: PylontechLV.receiveFilters)
        let sender = try CANSocket(interface: interface, filters: [(0x7FF, 0x7FF)])
        let unit = SimulatedUnit(capacityKWh: 250, maxPowerKW: 100, initialSOCPercent: 42)
        // Frames the filters must drop: another ID, and 0x351 as an extended frame.
        try sender.send(CANFrame(id: 0x123, bytes: [1, 2, 3]))
        try sender.send(CANFrame(id: 0x351, bytes: [0, 0, 0, 0, 0, 0], isExtended: true))
        for frame in unit.pylontechState.frames() { try sender.send(frame) }
        var decoder = PylontechDecoder()
        var received: [CANFrame] = []
        let before = Int64(SystemClock.wallClockSeconds() * 1e9) - 1_000_000_000
        while let (frame, stamp) = try receiver.receive(timeout: .milliseconds(300)) {
            received.append(frame)
            #expect(stamp > before)
            #expect(decoder.ingest(frame, at: SystemClock.shared.now()) == nil)
        }
        #expect(received.map(\.id) == [0x351, 0x355, 0x356, 0x359, 0x35C, 0x35E, 0x373])
        #expect(decoder.snapshot.status.map { abs($0.value.soc.value - 42) < 0.01 } == true)
        #expect(decoder.manufacturer == "PYLON")
    }

    @Test("cansend frames reach the BMS worker; candump sees bessd's 0x305 keep-alive")
    func canUtils() throws {
        let slot = BMSSlot()
        let worker = BMSWorker(interface: interface, slot: slot) { _ in }
        worker.start()
        defer { worker.stop() }
        let dump = Process()
        dump.executableURL = URL(fileURLWithPath: "/usr/bin/candump")
        dump.arguments = ["-n", "1", "-L", "\(interface),305:7FF"]
        let out = Pipe()
        dump.standardOutput = out
        try dump.run()
        #expect(waitFor { slot.keepAlivesSent > 0 })  // the worker's socket is bound
        let send = Process()
        send.executableURL = URL(fileURLWithPath: "/usr/bin/cansend")
        send.arguments = [interface, "351#1402740E740ECC01"]
        try send.run()
        send.waitUntilExit()
        #expect(waitFor { slot.snapshot.limits != nil })
        #expect(slot.snapshot.limits?.value.chargeCurrentLimit == Amps(370))
        dump.waitUntilExit()
        let line = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(line.contains("\(interface) 305#0000000000000000"))
        // A garbage frame in the family is counted, not used.
        let garbage = Process()
        garbage.executableURL = URL(fileURLWithPath: "/usr/bin/cansend")
        garbage.arguments = [interface, "356#01"]
        try garbage.run()
        garbage.waitUntilExit()
        #expect(waitFor { slot.counters.shortFrames == 1 })
    }

    @Test("a protection frame wakes the cycle via the worker once per edge; the worker decides nothing else")
    func alarmWakesCycle() throws {
        let slot = BMSSlot()
        let phase = CyclePhase(period: .seconds(10))
        phase.enableAlarms()
        slot.setWatch(BMSAlarmWatch(rules: InterlockRule.defaultTable()))
        let worker = BMSWorker(interface: interface, slot: slot, phase: phase) { _ in }
        worker.start()
        defer { worker.stop() }
        // Frames sent before the worker's socket is bound never reach it: its first keep-alive says it is.
        #expect(waitFor { slot.keepAlivesSent > 0 })
        let sender = try CANSocket(interface: interface, filters: [(0x7FF, 0x7FF)])
        var unit = SimulatedUnit(capacityKWh: 250, maxPowerKW: 100, initialSOCPercent: 60)
        /// Sends the BMS's frames and waits until the worker has decoded the protection frame of this send.
        func send() throws {
            let before = slot.snapshot.protection?.takenAt.nanoseconds ?? 0
            for frame in unit.pylontechState.frames() { try sender.send(frame) }
            #expect(waitFor { (slot.snapshot.protection?.takenAt.nanoseconds ?? 0) > before })
        }
        try send()
        #expect(slot.alarms == 0, "healthy frames call for nothing")
        unit.bmsOverride.protections = [.overtemperature]
        try send()
        #expect(slot.alarms == 1)
        // The cycle's wait ends at once, long before its 10 s deadline.
        let woke = phase.wait(until: SystemClock.shared.now() + .seconds(10))
        #expect(woke.alarm)
        try send()
        #expect(slot.alarms == 1, "the flag stays raised: no new edge, no extra cycle")
        unit.bmsOverride.protections = []
        try send()
        #expect(slot.alarms == 1, "a flag cleared calls for more, not less")
        unit.bmsOverride.protections = [.overtemperature]
        try send()
        #expect(slot.alarms == 2, "raised again: a new edge")
    }

    @Test("python-can exchanges frames with the BMS worker")
    func pythonCan() throws {
        let slot = BMSSlot()
        let worker = BMSWorker(interface: interface, slot: slot) { _ in }
        worker.start()
        defer { worker.stop() }
        let script = """
            import can, sys
            bus = can.Bus(interface="socketcan", channel="\(interface)", receive_own_messages=False)
            bus.set_filters([{"can_id": 0x305, "can_mask": 0x7FF, "extended": False}])
            bus.send(can.Message(arbitration_id=0x356, data=[0x6E, 0x14, 0xE2, 0xFF, 0xFA, 0x00], is_extended_id=False))
            message = bus.recv(timeout=3)
            print("KEEPALIVE" if message is not None and message.arbitration_id == 0x305 and bytes(message.data) == bytes(8) else "NONE")
            bus.shutdown()
            """
        let python = Process()
        python.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        python.arguments = ["python3", "-c", script]
        let out = Pipe()
        python.standardOutput = out
        try python.run()
        python.waitUntilExit()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(python.terminationStatus == 0)
        #expect(text.contains("KEEPALIVE"))
        #expect(waitFor { slot.snapshot.measurements != nil })
        #expect(slot.snapshot.measurements?.value.packVoltage == Volts(52.30))
        #expect(slot.snapshot.measurements?.value.packCurrent == Amps(-3.0))
    }

    @Test("an interface that disappears is a coded fault; the worker recovers when it returns")
    func interfaceLoss() throws {
        let name = "vcanloss0"
        ip("link", "add", "dev", name, "type", "vcan")
        ip("link", "set", name, "up")
        let slot = BMSSlot()
        let worker = BMSWorker(interface: name, slot: slot) { _ in }
        worker.start()
        defer {
            worker.stop()
            ip("link", "del", name)
        }
        #expect(waitFor { slot.keepAlivesSent > 0 })
        ip("link", "del", name)
        #expect(waitFor { slot.fault != nil })
        #expect(["CAN_INTERFACE_DOWN", "CAN_INTERFACE_MISSING", "CAN_BUS_OFF"].contains(slot.fault ?? ""))
        ip("link", "add", "dev", name, "type", "vcan")
        ip("link", "set", name, "up")
        #expect(waitFor(seconds: 8) { slot.fault == nil })
        // libsocketcan on a virtual interface: a coded answer, not a crash.
        if let state = try? CANInterface.state(of: name) { Issue.record("vcan reported a controller state: \(state)") }
    }

    @Test("a worker that opened an interface still down clears its fault once the interface comes up")
    func interfaceUpLater() throws {
        let name = "vcanlate0"
        ip("link", "add", "dev", name, "type", "vcan")
        let slot = BMSSlot()
        let worker = BMSWorker(interface: name, slot: slot) { _ in }
        worker.start()
        defer {
            worker.stop()
            ip("link", "del", name)
        }
        // The socket binds to the down interface; its keep-alive is refused.
        #expect(waitFor { slot.fault != nil })
        #expect(slot.keepAlivesSent == 0)
        ip("link", "set", name, "up")
        // No error reaches a socket when its interface comes up: the next keep-alive that goes out ends it.
        #expect(waitFor(seconds: 8) { slot.fault == nil && slot.keepAlivesSent > 0 })
    }

    @Test("end to end: bess-hil plant's CAN BMS and SunSpec inverter, bessd reading both")
    func endToEnd() throws {
        let rig = """
            mode: hardware
            period_ms: 100
            bess_units:
              - id: HIL_CAN_01
                capacity_kwh: 250
                max_power_kw: 100
                modbus: {host: 127.0.0.1, port: 15602, timeout_ms: 200}
                bms: {interface: \(interface), protocol: pylontech}
            grid_integration:
              frequency_source: inverter
              droop_settings: {deadband_hz: [49.9, 50.05], droop_percent: 5.0, response_time_s: 1}
            simulation: {initial_soc_percent: 55, frequency_profile: steady, base_hz: 49.8}
            """
        let path = NSTemporaryDirectory() + "bessd-can-rig.yaml"
        try rig.write(toFile: path, atomically: true, encoding: .utf8)
        let plant = Process()
        plant.executableURL = Package.executable("bess-hil")
        plant.arguments = ["plant", "--config", path, "--duration", "14"]
        let plantOut = Pipe()
        plant.standardOutput = plantOut
        plant.standardError = FileHandle.nullDevice
        let listener = try CANSocket(interface: interface, filters: [(0x351, 0x7FF)])
        try plant.run()
        // bessd starts once the plant answers Modbus and sends BMS frames, not after a guessed delay.
        #expect(waitFor(seconds: 15) { Loopback.listening(15602) })
        #expect(try firstBMSFrame(listener))
        let bessd = try Package.run("bessd", ["run", "--config", path, "--duration", "11", "--status-every", "1", "--log", "stdout"])
        let plantText = String(decoding: plantOut.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        plant.waitUntilExit()
        #expect(bessd.status == 0, "\(bessd.err)")
        let status = bessd.out.split(separator: "\n").filter { $0.hasPrefix("t=") }
        // SOC comes over CAN from the emulated BMS; droop at 49.8 Hz gives +4.0 kW on the inverter.
        // (The VM runs without KVM, so how soon it gets there varies; that it gets there does not.)
        #expect(status.contains { $0.contains("HIL_CAN_01 running SOC 55.0%") }, "\(status)")
        #expect(status.contains { $0.contains("SP +4.0kW") }, "\(status)")
        let keepAlives = plantText.split(separator: "\n").last { $0.contains("keep-alives") }
        #expect(keepAlives.map { !$0.hasSuffix("keep-alives 0") && !$0.contains("keep-alives 0 ") } == true, "\(plantText)")
    }

    @Test("BMS emulator: invalid CAN frames stop power with BMS_COMM_LOST, then it recovers")
    func bmsFaultTrips() throws {
        // The faults count from the moment bessd runs with droop (the origin file), not from the
        // plant's start: in the emulated VM on a loaded host bessd may take seconds to start.
        let rig = """
            mode: hil
            period_ms: 100
            bess_units:
              - id: HIL_CAN_02
                capacity_kwh: 250
                max_power_kw: 100
                inverter: {simulated: true}
                bms: {interface: \(interface), protocol: pylontech}
            simulation:
              frequency_profile: steady
              base_hz: 49.8
              faults:
                - {kind: bms_out_of_range, at_s: 1, duration_s: 6}
                - {kind: bms_garbage, at_s: 1, duration_s: 6}
            """
        let directory = URL(fileURLWithPath: NSTemporaryDirectory())
        let path = directory.appendingPathComponent("bessd-can-fault.yaml").path
        let origin = directory.appendingPathComponent("bessd-can-fault.origin").path
        try? FileManager.default.removeItem(atPath: origin)
        try rig.write(toFile: path, atomically: true, encoding: .utf8)
        let listener = try CANSocket(interface: interface, filters: [(0x351, 0x7FF)])
        let plant = try PeerProcess(["plant", "--config", path, "--origin-file", origin],
                                    executable: try #require(Package.executable("bess-hil")), directory: directory)
        defer { plant.stop() }
        #expect(try firstBMSFrame(listener))
        let bessd = try PeerProcess(["run", "--config", path, "--duration", "90", "--status-every", "1", "--log", "stdout"],
                                    executable: try #require(Package.executable("bessd")), directory: directory)
        defer { bessd.stop() }
        func lines() -> [String] { bessd.text.split(separator: "\n").map(String.init) }
        #expect(waitFor(seconds: 60) { lines().contains { $0.contains("HIL_CAN_02 running") && $0.contains("SP +4.0kW") } },
                "\(lines().suffix(8))")
        FileManager.default.createFile(atPath: origin, contents: nil)
        // Tripped, cleared, then droop again on a status line after the clearing.
        func recovered(_ lines: [String]) -> Bool {
            guard let cleared = lines.firstIndex(where: { $0.contains("HIL_CAN_02 BMS_COMM_LOST cleared") }) else { return false }
            return lines[cleared...].contains { $0.hasPrefix("t=") && $0.contains("SP +4.0kW") }
        }
        #expect(waitFor(seconds: 60) { recovered(lines()) }, "\(lines().suffix(8))")
        let seen = lines()
        let tripped = seen.firstIndex { $0.contains("HIL_CAN_02 BMS_COMM_LOST tripped") }
        let cleared = seen.firstIndex { $0.contains("HIL_CAN_02 BMS_COMM_LOST cleared") }
        #expect(tripped != nil, "\(seen.suffix(8))")
        #expect(cleared != nil, "\(seen.suffix(8))")
        // Zero power while tripped (the status lines in between).
        if let tripped, let cleared {
            #expect(cleared > tripped)
            #expect(seen[tripped..<cleared].filter { $0.hasPrefix("t=") }.allSatisfy { $0.contains("SP 0.0kW") })
        }
        #expect(plant.text.contains("bess-hil: time zero"))
    }

    /// python-can as the BMS.
    @Test("bessctl probe can: values, rates and missing groups; no frames exits 1, no interface 3")
    func probeCAN() throws {
        // Frames written by hand from the Pylontech LV profile (not bessd's encoder): 0x351 CVL 55.2 V,
        // CCL 50.0 A, DCL 100.0 A; 0x355 SOC 87 %, SOH 99 %; 0x356 52.30 V, −3.0 A, 25.0 °C; 0x359 no
        // protections; 0x35E "PYLON"; every 100 ms until stopped (at most 60 s). No 0x35C, no 0x373.
        // Python in the emulated VM takes seconds to import python-can: the probe starts once it
        // says it is sending.
        let script = """
            import can, sys, time
            bus = can.Bus(interface="socketcan", channel="\(interface)", receive_own_messages=False)
            frames = [(0x351, [0x28, 0x02, 0xF4, 0x01, 0xE8, 0x03, 0xC2, 0x01]), (0x355, [87, 0, 99, 0]),
                      (0x356, [0x6E, 0x14, 0xE2, 0xFF, 0xFA, 0x00]), (0x359, [0, 0, 0, 0, 1, 0x50, 0x4E]),
                      (0x35E, list(b"PYLON   "))]
            print("SENDING", flush=True)
            end = time.time() + 60
            while time.time() < end:
                for ident, data in frames:
                    bus.send(can.Message(arbitration_id=ident, data=data, is_extended_id=False))
                time.sleep(0.1)
            bus.shutdown()
            """
        let python = Process()
        python.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        python.arguments = ["python3", "-c", script]
        let said = Pipe()
        python.standardOutput = said
        try python.run()
        var heard = ""
        while !heard.contains("SENDING") {
            let data = said.fileHandleForReading.availableData
            if data.isEmpty { break }  // python ended without sending
            heard += String(decoding: data, as: UTF8.self)
        }
        #expect(heard.contains("SENDING"), "python-can did not start: \(heard)")
        let probe = try Package.run("bessctl", ["probe", "can", interface, "--seconds", "2"])
        python.terminate()
        python.waitUntilExit()
        #expect(probe.status == 0, "\(probe.out)\(probe.err)")
        #expect(probe.out.contains("limits: charge 50.0 A, discharge 100.0 A, CVL 55.2 V, DVL 45.0 V"), "\(probe.out)")
        #expect(probe.out.contains("SOC 87.0 %, SOH 99 %"))
        #expect(probe.out.contains("pack: 52.30 V, -3.0 A, 25.0 °C"))
        #expect(probe.out.contains("manufacturer: PYLON, 1 modules"))
        #expect(probe.out.contains("not sent: cell rules inert; no warning unless it starts and stops"), "0x373 not sent")
        #expect(!probe.out.contains("MISSING: BMS_GROUP_MISSING warning; cell rules inert"), "0x373 is no fault")
        #expect(probe.out.contains("cells: not sent by this BMS (0x373 is an extension of the profile)"), "\(probe.out)")
        #expect(probe.out.contains("MISSING: BMS_GROUP_MISSING warning; requests assumed allowed"), "0x35C not sent")
        let limitsRow = probe.out.split(separator: "\n").first { $0.hasPrefix("0x351") }.map(String.init) ?? ""
        let count = limitsRow.split(separator: " ", omittingEmptySubsequences: true).dropFirst(6).first.flatMap { Int($0) } ?? 0
        #expect(count >= 10, "0x351 row: \(limitsRow)")
        #expect(probe.out.contains("verdict: every group bessd needs is arriving"))

        let silent = try Package.run("bessctl", ["probe", "can", interface, "--seconds", "0.5"])
        #expect(silent.status == 1, "\(silent.out)")
        #expect(silent.out.contains("MISSING: no power at all (BMS limits missing)"))
        let none = try Package.run("bessctl", ["probe", "can", "nocan9", "--seconds", "0.5"])
        #expect(none.status == 3, "\(none.out)")
        #expect(none.out.contains("nocan9: CAN_INTERFACE_MISSING"), "\(none.out)")
    }
    /// python-can, no 0x373: no BMS_GROUP_MISSING; 0x35C stopping raises it; 0x356 stopping trips BMS_COMM_LOST.
    @Test("a BMS sending exactly Pylontech's frames runs clean; 0x35C missing raises, 0x356 missing trips")
    func specificationBMS() throws {
        // Frames written by hand from pylontech-lv-can-v1.2.pdf, once a second as it specifies: 0x351
        // CVL 53.2 V, CCL 50.0 A, DCL 100.0 A; 0x355 SOC 87 %, SOH 99 %; 0x356 52.30 V, −3.0 A,
        // 25.0 °C; 0x359 nothing raised, 1 module, "PN"; 0x35C charge and discharge enabled; 0x35E
        // "PYLON". "drop 35C" on its standard input stops that frame; end of input stops it all.
        let script = """
            import can, select, sys, time
            bus = can.Bus(interface="socketcan", channel="\(interface)", receive_own_messages=False)
            frames = {0x351: [0x14, 0x02, 0xF4, 0x01, 0xE8, 0x03, 0x00, 0x00], 0x355: [87, 0, 99, 0],
                      0x356: [0x6E, 0x14, 0xE2, 0xFF, 0xFA, 0x00], 0x359: [0, 0, 0, 0, 1, 0x50, 0x4E],
                      0x35C: [0xC0, 0x00], 0x35E: list(b"PYLON   ")}
            print("SENDING", flush=True)
            end = time.time() + 300
            while time.time() < end:
                for ident, data in frames.items():
                    bus.send(can.Message(arbitration_id=ident, data=data, is_extended_id=False))
                ready, _, _ = select.select([sys.stdin], [], [], 1.0)
                if ready:
                    line = sys.stdin.readline()
                    if not line:
                        break
                    frames.pop(int(line.split()[1], 16), None)
            bus.shutdown()
            """
        let python = Process()
        python.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        python.arguments = ["python3", "-c", script]
        let said = Pipe(), commands = Pipe()
        python.standardOutput = said
        python.standardInput = commands
        try python.run()
        defer {
            try? commands.fileHandleForWriting.close()
            python.waitUntilExit()
        }
        var heard = ""
        while !heard.contains("SENDING") {
            let data = said.fileHandleForReading.availableData
            if data.isEmpty { break }
            heard += String(decoding: data, as: UTF8.self)
        }
        try #require(heard.contains("SENDING"), "python-can did not start: \(heard)")
        let daemon = try RunningDaemon(yaml: """
            mode: hil
            period_ms: 100
            control_socket: @SOCKET@
            bess_units:
              - id: PYL_01
                capacity_kwh: 250
                max_power_kw: 100
                inverter: {simulated: true}
                bms: {interface: \(interface), protocol: pylontech}
            simulation: {frequency_profile: steady, base_hz: 50}
            """)
        defer { if daemon.process.isRunning { daemon.signal(SIGTERM) } }
        func status() -> (trips: [String], state: String, cycles: Int) {
            let answer = (try? daemon.request(["verb": "status"])) ?? [:]
            let unit = (answer["units"] as? [[String: Any]])?.first ?? [:]
            let cycles = ((answer["cycle"] as? [String: Any])?["cycles"] as? NSNumber)?.intValue ?? 0
            return (unit["trips"] as? [String] ?? [], unit["state"] as? String ?? "", cycles)
        }
        // Running on the BMS's frames, then 200 cycles (20 s, four times the warning's 5 s delay and
        // past the notice's 10 s) with every status free of BMS_GROUP_MISSING.
        var last = status()
        #expect(waitFor(seconds: 30) { last = status(); return last.state == "running" }, "\(last)")
        let target = last.cycles + 200
        var warned: [String] = []
        #expect(waitFor(seconds: 90) {
            last = status()
            if last.trips.contains("BMS_GROUP_MISSING") { warned.append("\(last)") }
            return last.cycles >= target
        }, "\(last)")
        #expect(warned.isEmpty, "\(warned)")
        #expect(last.state == "running" && last.trips.isEmpty, "\(last)")
        // 0x35C is in the specification: its silence is missing (stale after 3 s, then 5 s).
        commands.fileHandleForWriting.write(Data("drop 35C\n".utf8))
        #expect(waitFor(seconds: 40) { last = status(); return last.trips.contains("BMS_GROUP_MISSING") }, "\(last)")
        #expect(last.state == "running", "a warning only: \(last)")
        // 0x356 is required: its silence stops power (BMS_COMM_LOST), as before.
        commands.fileHandleForWriting.write(Data("drop 356\n".utf8))
        #expect(waitFor(seconds: 40) { last = status(); return last.trips.contains("BMS_COMM_LOST") }, "\(last)")
        daemon.signal(SIGTERM)
        let (exit, text) = daemon.finish()
        #expect(exit == 0, "\(text.suffix(600))")
        #expect(text.contains("\(interface): the BMS sends no 0x373 cells (not defined by its protocol, not a fault)"),
                "\(text.suffix(1500))")
        // The one BMS_GROUP_MISSING names 0x35C, never the cells this BMS does not send.
        #expect(text.contains("missing: 0x35C requests"), "\(text.suffix(1500))")
        #expect(!text.contains("0x373 cells, ") && !text.contains("missing: 0x373"), "\(text.suffix(1500))")
    }
}
