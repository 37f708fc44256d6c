import BessSystem
@testable import Config
import ControlCore
@testable import Cycle
import Fieldbus
import Foundation
import Testing
import TestSupport

/// The workers that run devices by their profiles, against pymodbus peers serving the registers the
/// profiles of devices/ read (hil/peers/pymodbus_profile_peer.py): a BYD rack BMS over Modbus, and a
/// Sungrow hybrid commanded in External EMS mode with its heartbeat.
@Suite("Profiled devices on their workers", .serialized)
struct ProfileWorkerTests {
    /// A profile of the starter library (devices/NAME.yaml), read as bessd reads it.
    static func profile(_ name: String) throws -> DeviceProfile {
        let path = Package.root.appendingPathComponent("devices/\(name).yaml").path
        let read = ProfileReader.read(path: path)
        return try #require(read.profile, "\(name): \(read.diagnostics)")
    }

    /// A peer serving `holding` and `input` registers (ADDR=V,V… each).
    static func peer(holding: [String], input: [String] = [], seconds: Int = 60) throws -> UnitsPeer {
        var arguments = ["python3", "hil/peers/pymodbus_profile_peer.py", "--seconds", String(seconds)]
        for spec in holding { arguments += ["--holding", spec] }
        for spec in input { arguments += ["--input", spec] }
        return try UnitsPeer(arguments: arguments)
    }

    /// The rack of devices.md §6: 691.2 V, 0 A, SOC 63 %, SOH 98 %, cells 3.350/3.300 V, 26.5/24.0 °C,
    /// limits 50/80 A, level-3 cell over-voltage set; temperature point 1 at 25.0 °C.
    static let bydRack = [
        "0x2100=0x1B00,0,0,0x003F,0x0062,0x0011,0x0D16,0x008C,0x0CE4,0x0005,0x0109,0x0058,0x00F0",
        "0x216C=0x01F4,0x0320", "0x2140=0,0,0,0x0001,0,0,0,0", "0x2C00=250",
    ]

    @Test("a BYD rack over Modbus: the profile's snapshot reaches the BMS slot; silence is a coded fault, the snapshot ages")
    func modbusBMS() throws {
        let peer = try Self.peer(holding: Self.bydRack)
        defer { peer.stop() }
        #expect(peer.port > 0)
        let slot = BMSSlot()
        let worker = try ModbusBMSWorker(endpoint: .tcp(host: "127.0.0.1", port: peer.port), unitID: 1, profile: Self.profile("byd-c130"),
                                         slot: slot, units: ["U1"], timeout: .milliseconds(300), period: .milliseconds(100)) { _ in }
        #expect(worker.reads >= 3, "the plan reads the measurements, limits, alarms and temperature blocks")
        worker.start()
        defer { worker.stop() }
        #expect(waitFor(seconds: 10) { slot.snapshot.limits != nil && slot.snapshot.protection != nil && slot.snapshot.cells != nil })
        let s = slot.snapshot
        #expect(s.measurements.map { abs($0.value.packVoltage.value - 691.2) < 1e-6 } == true, "\(String(describing: s.measurements))")
        #expect(s.measurements?.value.temperature.value == 25)
        #expect(s.status?.value.soc.value == 63)
        #expect(s.status?.value.soh?.value == 98)
        #expect(s.limits.map { abs($0.value.chargeCurrentLimit.value - 50) < 1e-9 && abs($0.value.dischargeCurrentLimit.value - 80) < 1e-9 } == true)
        #expect(s.cells.map { abs($0.value.maxCellVoltage.value - 3.35) < 1e-9 && abs($0.value.minCellVoltage.value - 3.3) < 1e-9 } == true)
        #expect(s.protection?.value.protections == [.cellOvervoltage], "level 3 cell over-voltage is a protection")
        #expect(slot.fault == nil)
        #expect(slot.reads.accepted > 0 && slot.reads.invalidValues == 0)
        let lastRead = try #require(s.limits?.takenAt)

        // The rack goes silent: the link's code in the slot, the last snapshot kept as it was (the
        // cycle's stale_after_s turns its age into BMS_COMM_LOST).
        peer.stop()
        #expect(waitFor(seconds: 10) { slot.fault != nil })
        let code = slot.fault ?? ""
        #expect(code.hasPrefix("MODBUS_"), "\(code)")
        #expect(slot.snapshot.limits?.takenAt == lastRead || slot.snapshot.limits.map { $0.takenAt >= lastRead } == true)
        let failedBefore = worker.rounds.failed
        #expect(waitFor(seconds: 10) { worker.rounds.failed > failedBefore }, "it keeps retrying, with back-off")
        #expect(worker.isAlive)
    }

    /// A Sungrow SH10RT at 1000 W discharging, 50.00 Hz, External EMS mode running.
    static let sungrowInputs = ["4999=0x0E03,100", "5213=1000,0", "5241=5000", "12999=0x4000", "13019=0,0,0,0,0,0", "13033=0,0"]
    static let sungrowHolding = ["13049=0,0xCC,0", "13079=0"]

    @Test("a hybrid by its profile: status read, External EMS started, setpoint and heartbeat written, the heartbeat refreshed, the stop sequence at stop")
    func profiledInverter() throws {
        var profile = try Self.profile("sungrow-sh-rt")
        // A 4 s heartbeat (the library's is 20 s): refreshed at half, so several refreshes in seconds.
        profile.commands?.fallback = .watchdog(address: 13079, seconds: 4)
        let peer = try Self.peer(holding: Self.sungrowHolding, input: Self.sungrowInputs)
        defer { peer.stop() }
        #expect(peer.port > 0)
        let slot = DeviceSlot()
        slot.setSetpoint(.kilowatts(3))
        let worker = EndpointWorker(endpoint: .tcp(host: "127.0.0.1", port: peer.port),
                                    devices: [.init(unitID: 1, slot: slot, name: "U1", profile: profile)], period: .milliseconds(100),
                                    timeout: .milliseconds(500), revert: .seconds(10)) { _ in }
        worker.start()
        var stopped = false
        defer { if !stopped { worker.stop() } }
        #expect(waitFor(seconds: 10) { slot.reading != nil }, "error: \(String(describing: slot.lastError))")
        #expect(slot.reading?.value.activePower.value == 1000)
        #expect(slot.reading.flatMap { $0.value.frequency }.map { abs($0.value - 50) < 1e-9 } == true)
        #expect(slot.reading?.value.ratedPower?.value == 10_000)
        // Start sequence (External EMS), heartbeat, direction and magnitude, in that order.
        #expect(waitFor(seconds: 10) { peer.all.contains("WRITE 13051 3000") }, "\(peer.all)")
        let writes = peer.all.filter { $0.hasPrefix("WRITE") }
        let order = ["WRITE 13049 3", "WRITE 13079 4", "WRITE 13050 187", "WRITE 13051 3000"].compactMap { writes.firstIndex(of: $0) }
        #expect(order.count == 4 && order == order.sorted(), "\(writes)")
        #expect(writes.filter { $0 == "WRITE 13049 3" }.count == 1, "the start sequence goes once")
        // Refreshed at half of 4 s while the setpoint holds: three writes of it within about 6 s.
        #expect(waitFor(seconds: 10) { peer.all.filter { $0 == "WRITE 13079 4" }.count >= 3 }, "\(peer.all)")
        // A charge: stopped first, then 0xAA and the magnitude.
        slot.setSetpoint(.kilowatts(-2))
        #expect(waitFor(seconds: 5) { peer.all.contains("WRITE 13051 2000") }, "\(peer.all)")
        let reversal = peer.all.filter { $0.hasPrefix("WRITE 13050") }.suffix(2)
        #expect(Array(reversal) == ["WRITE 13050 204", "WRITE 13050 170"], "\(peer.all)")
        // Stop: 0 W, then the profile's stop sequence (stop, self-consumption).
        let before = peer.all.count
        worker.stop()
        stopped = true
        #expect(worker.unconfirmedStops.isEmpty)
        #expect(waitFor(seconds: 5) { peer.all.dropFirst(before).contains("WRITE 13049 0") }, "\(peer.all)")
        let tail = Array(peer.all.dropFirst(before))
        #expect(tail.firstIndex(of: "WRITE 13050 204").map { $0 < (tail.firstIndex(of: "WRITE 13049 0") ?? 0) } == true, "\(tail)")
    }

    @Test("a traffic-timeout profile the cycle's polls would not feed is refused at start, coded, the unit left without a worker")
    func trafficTimeoutPollRespected() throws {
        var profile = try Self.profile("sungrow-sh-rt")
        profile.commands?.fallback = .trafficTimeout(address: 327, seconds: 2)
        let unit = UnitDevices(id: "U1", modbus: ModbusSettings(transport: .tcp(host: "127.0.0.1", port: 1502), unitID: 1, timeout: .seconds(1)),
                               inverter: InverterSettings(simulated: false, protocolName: .profile, profile: profile),
                               bms: BMSSettings(simulated: true, interface: "can0", protocolName: .pylontech, bitrate: 500_000,
                                                staleAfter: .seconds(3), cellsInSeries: 16),
                               inverterSimulated: false, bmsSimulated: true)
        let slot = DeviceSlot()
        var notices: [DeviceNotice] = []
        let slow = HardwareSite.inverterProfile(unit, index: 0, slot: slot, period: .seconds(2)) { notices.append($0) }
        #expect(!slow.usable)
        #expect(slot.lastError == "PROFILE_POLL_TOO_SLOW")
        #expect(notices.count == 1)
        let fast = HardwareSite.inverterProfile(unit, index: 0, slot: DeviceSlot(), period: .milliseconds(500)) { notices.append($0) }
        #expect(fast.usable && fast.profile?.name == "sungrow-sh-rt")
        #expect(notices.count == 1)
    }

    @Test("a CAN profile compiles into the worker's link: its filters (29-bit ones flagged), its keep-alive frames, its groups")
    func canLink() throws {
        let hv = try CANLink(profile: Self.profile("pylontech-hv"))
        #expect(!hv.filters.isEmpty && hv.filters.allSatisfy { $0.id & CANLink.extendedFlag != 0 }, "\(hv.filters)")
        #expect(hv.sends.contains { $0.frame.id == 0x4200 && $0.frame.isExtended }, "\(hv.sends.map(\.frame))")
        let lv = try CANLink(profile: Self.profile("pylontech-lv"))
        let builtIn = CANLink.pylontech
        #expect(lv.filters.map(\.id) == builtIn.filters.map(\.id) && lv.filters.map(\.mask) == builtIn.filters.map(\.mask))
        #expect(lv.sends.map(\.frame) == builtIn.sends.map(\.frame) && lv.sends.map(\.period) == builtIn.sends.map(\.period))
        #expect(lv.decoder.extensionGroups == builtIn.decoder.extensionGroups && lv.decoder.definedGroups == builtIn.decoder.definedGroups)
    }
}
