import BessSystem
import ControlCore
import Fieldbus
import Foundation
@testable import Cycle
import Config
import Synchronization
import TestSupport
import Testing

@Suite("Field buses as the wire is: one context per endpoint, unit ids per request", .serialized)
struct SharedBusTests {
    func worker(_ endpoint: ModbusEndpoint, _ slots: [(Int, DeviceSlot)], timeout: Duration = .milliseconds(500))
        -> EndpointWorker
    {
        EndpointWorker(endpoint: endpoint, devices: slots.map { .init(unitID: $0.0, slot: $0.1) },
                       period: .milliseconds(100), timeout: timeout, revert: .seconds(10)) { _ in }
    }

    /// The WSET line a 704 unit shows once bessd commanded `watts` (WSet_SF 0) with the revert armed.
    func wset(_ unit: Int, _ watts: Int) -> String {
        "WSET unit=\(unit) ena=1 mod=1 w=\(watts) rvrt_tms=10 rvrt=0 ena_rvrt=1"
    }

    @Test("two and three unit ids on one TCP endpoint: one session, each unit its own reading and setpoint",
          arguments: [2, 3])
    func tcpUnits(count: Int) throws {
        let ids = Array([1, 2, 3].prefix(count))
        let peer = try UnitsPeer(ids.map(String.init))
        defer { peer.stop() }
        #expect(peer.ready)
        let slots = ids.map { ($0, DeviceSlot()) }
        for (id, slot) in slots { slot.setSetpoint(Watts(Double(id * 11_000))) }
        let w = worker(.tcp(host: "127.0.0.1", port: peer.port), slots)
        w.start()
        defer { w.stop() }
        for (id, slot) in slots {
            #expect(waitFor(seconds: 10) { peer.last("WSET unit=\(id) ") == wset(id, id * 11_000) },
                    "unit \(id): \(String(describing: peer.last("WSET unit=\(id) ")))")
            #expect(waitFor(seconds: 5) { slot.reading?.value.activePower == Watts(Double(1000 * id + 234)) })
            #expect(slot.reading?.value.frequency == Hertz(Double(49_876 + id) / 1000))
        }
        // A new setpoint for one unit reaches that unit only.
        slots[0].1.setSetpoint(.kilowatts(-7))
        #expect(waitFor(seconds: 5) { peer.last("WSET unit=1 ") == wset(1, -7000) })
        for (id, _) in slots.dropFirst() { #expect(peer.last("WSET unit=\(id) ") == wset(id, id * 11_000)) }
        #expect(peer.totalConnections == 1, "\(peer.all.filter { $0.hasPrefix("CONNECTIONS") })")
        #expect(w.wire.connects == 1)
    }

    @Test("a unit id answering exceptions does not disturb the others or the session")
    func exceptionUnit() throws {
        let peer = try UnitsPeer(["1", "2:exception", "3"])
        defer { peer.stop() }
        let slots = [1, 2, 3].map { ($0, DeviceSlot()) }
        for (id, slot) in slots { slot.setSetpoint(Watts(Double(id * 1000))) }
        let w = worker(.tcp(host: "127.0.0.1", port: peer.port), slots)
        w.start()
        defer { w.stop() }
        #expect(waitFor(seconds: 10) { peer.last("WSET unit=1 ") == wset(1, 1000) && peer.last("WSET unit=3 ") == wset(3, 3000) })
        #expect(waitFor(seconds: 5) { slots[1].1.errors >= 2 })
        #expect(slots[1].1.lastError == "MODBUS_EXCEPTION_4")
        #expect(slots[1].1.reading == nil)
        // Units 1 and 3 keep reading fresh values while unit 2 keeps failing.
        let before = slots[0].1.reading?.takenAt
        #expect(waitFor(seconds: 5) { slots[0].1.reading?.takenAt != before && slots[1].1.errors >= 4 })
        #expect(slots[0].1.errors == 0 && slots[2].1.errors == 0)
        #expect(slots[2].1.reading?.value.activePower == Watts(3234))
        #expect(peer.totalConnections == 1)
        #expect(w.wire.connects == 1)
    }

    @Test("a reply that comes after the timeout never lands in the next unit's read")
    func lateReply() throws {
        // Unit 2 answers 0.45 s late; bessd gives up after 0.3 s and moves on to unit 3 and 1.
        let peer = try UnitsPeer(["1", "2:late=0.45", "3"])
        defer { peer.stop() }
        let slots = [1, 2, 3].map { ($0, DeviceSlot()) }
        let w = worker(.tcp(host: "127.0.0.1", port: peer.port), slots, timeout: .milliseconds(300))
        w.start()
        defer { w.stop() }
        // Several rounds in which unit 2 timed out (it backs off 0.5, 1, 2 s between tries).
        #expect(waitFor(seconds: 15) { slots[1].1.errors >= 3 })
        #expect(slots[1].1.lastError == "MODBUS_TIMEOUT")
        // Units 1 and 3 never failed (a late frame would be a transaction-id mismatch) and read
        // their own values.
        #expect(slots[0].1.errors == 0, "\(String(describing: slots[0].1.lastError))")
        #expect(slots[2].1.errors == 0, "\(String(describing: slots[2].1.lastError))")
        #expect(slots[0].1.reading?.value.activePower == Watts(1234))
        #expect(slots[2].1.reading?.value.activePower == Watts(3234))
        #expect(peer.totalConnections == 1)
    }

    @Test("W not implemented: 0 W with the revert armed, the link kept, the other unit untouched")
    func notImplementedPower() throws {
        let peer = try UnitsPeer(["1", "2:wsentinel"])
        defer { peer.stop() }
        let slots = [1, 2].map { ($0, DeviceSlot()) }
        slots[0].1.setSetpoint(.kilowatts(10))
        slots[1].1.setSetpoint(.kilowatts(20))
        let w = worker(.tcp(host: "127.0.0.1", port: peer.port), slots)
        w.start()
        defer { w.stop() }
        #expect(waitFor(seconds: 10) { peer.last("WSET unit=2 ") == wset(2, 0) }, "\(String(describing: peer.last("WSET unit=2 ")))")
        #expect(waitFor(seconds: 5) { peer.last("WSET unit=1 ") == wset(1, 10_000) })
        #expect(waitFor(seconds: 5) { slots[1].1.errors >= 5 })
        #expect(slots[1].1.lastError == "SUNSPEC_VALUE_INVALID")
        #expect(slots[1].1.reading == nil)
        // Never the 20 kW it was asked for, and no reconnect.
        #expect(!peer.all.contains { $0.hasPrefix("WSET unit=2 ") && $0.contains("w=20000") })
        #expect(peer.totalConnections == 1)
        #expect(w.wire.connects == 1)
    }

    @Test("a setpoint that does not fit WSet: 0 W with the revert armed, link kept; a fitting one follows")
    func setpointOutOfRange() throws {
        // WSet_SF −5: an int32 WSet carries at most 21,474.83647 W.
        let peer = try UnitsPeer(["1", "2:wsetsf=-5"])
        defer { peer.stop() }
        let slots = [1, 2].map { ($0, DeviceSlot()) }
        slots[0].1.setSetpoint(.kilowatts(5))
        slots[1].1.setSetpoint(.kilowatts(15))
        let w = worker(.tcp(host: "127.0.0.1", port: peer.port), slots)
        w.start()
        defer { w.stop() }
        #expect(waitFor(seconds: 10) { peer.last("WSET unit=2 ") == wset(2, 1_500_000_000) })
        slots[1].1.setSetpoint(.kilowatts(30))
        #expect(waitFor(seconds: 5) { peer.last("WSET unit=2 ") == wset(2, 0) }, "\(String(describing: peer.last("WSET unit=2 ")))")
        #expect(slots[1].1.lastError == "SUNSPEC_VALUE_INVALID" || slots[1].1.errors >= 1)
        // The link and the discovery stay: readings keep coming, no reconnect.
        let before = slots[1].1.reading?.takenAt
        #expect(waitFor(seconds: 5) { slots[1].1.reading?.takenAt != before })
        slots[1].1.setSetpoint(.kilowatts(-2))
        #expect(waitFor(seconds: 5) { peer.last("WSET unit=2 ") == wset(2, -200_000_000) })
        #expect(peer.last("WSET unit=1 ") == wset(1, 5000))
        #expect(peer.totalConnections == 1)
        #expect(w.wire.connects == 1)
    }

    /// Two and three ids; socat pty, 19200 8N1.
    @Test("several unit ids on one RTU line share one open of the tty, each with its own setpoint",
          arguments: [2, 3])
    func rtuUnits(count: Int) throws {
        let directory = NSTemporaryDirectory() + "bessd-rtu-units-\(getpid())-\(count)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let socat = try ptyPair(directory, "plant", "bessd")
        defer {
            kill(socat.processIdentifier, SIGKILL)
            socat.waitUntilExit()
        }
        #expect(waitFor(seconds: 5) { FileManager.default.fileExists(atPath: "\(directory)/bessd") })
        // The last unit answers exceptions: the line and the other units carry on.
        var units = (1...count).map(String.init)
        units[count - 1] += ":exception"
        let peer = try UnitsPeer(units, rtu: "\(directory)/plant")
        defer { peer.stop() }
        #expect(peer.ready)
        let slots = (1...count).map { ($0, DeviceSlot()) }
        for (id, slot) in slots { slot.setSetpoint(Watts(Double(-id * 2000))) }
        let w = worker(.rtu(device: "\(directory)/bessd", baud: 19200, parity: "N", dataBits: 8, stopBits: 1, rs485: false),
                       slots, timeout: .milliseconds(500))
        w.start()
        defer { w.stop() }
        for (id, slot) in slots.dropLast() {
            #expect(waitFor(seconds: 15) { peer.last("WSET unit=\(id) ") == wset(id, -id * 2000) },
                    "unit \(id): \(String(describing: peer.last("WSET unit=\(id) ")))")
            #expect(waitFor(seconds: 5) { slot.reading?.value.activePower == Watts(Double(1000 * id + 234)) })
            #expect(slot.errors == 0)
        }
        #expect(waitFor(seconds: 5) { slots[count - 1].1.lastError == "MODBUS_EXCEPTION_4" })
        // The tty is open once in this process (bessd's side of the pty pair).
        let tty = try FileManager.default.destinationOfSymbolicLink(atPath: "\(directory)/bessd")
        let fds = try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")
        let opens = fds.filter { (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\($0)")) == tty }
        #expect(opens.count == 1, "\(tty) open \(opens.count) times")
        #expect(w.wire.connects == 1)
    }

    /// One worker, one session or one open of the tty; the units keep their own readings and setpoints.
    @Test("a site meter on an inverter's endpoint shares its worker and session; read each cycle, never written",
          arguments: ["tcp", "rtu"])
    func meterSharesTheInvertersEndpoint(transport: String) throws {
        let directory = NSTemporaryDirectory() + "bessd-meter-line-\(getpid())"
        var socat: Process?
        if transport == "rtu" {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            socat = try ptyPair(directory, "plant", "bessd")
            #expect(waitFor(seconds: 5) { FileManager.default.fileExists(atPath: "\(directory)/bessd") })
        }
        defer {
            if let socat {
                kill(socat.processIdentifier, SIGKILL)
                socat.waitUntilExit()
                try? FileManager.default.removeItem(atPath: directory)
            }
        }
        let peer = try UnitsPeer(["1", "2", "240:meter"], rtu: socat == nil ? nil : "\(directory)/plant")
        defer { peer.stop() }
        #expect(peer.ready)
        func modbus(_ id: Int) -> String {
            socat == nil ? "{host: 127.0.0.1, port: \(peer.port), unit_id: \(id)}"
                : "{device: \(directory)/bessd, baud: 19200, parity: none, unit_id: \(id)}"
        }
        let c = try ConfigLoader.parse("""
            mode: hil
            bess_units:
              - {id: A, capacity_kwh: 100, max_power_kw: 50, bms: {simulated: true}, modbus: \(modbus(1))}
              - {id: B, capacity_kwh: 100, max_power_kw: 50, bms: {simulated: true}, modbus: \(modbus(2))}
            site:
              meter: {protocol: sunspec, modbus: \(modbus(240))}
            """, file: "shared-meter.yaml")
        let slots = c.units.map { _ in DeviceSlot() }
        let meter = DeviceSlot()
        let said = Mutex<[String]>([])
        let workers = HardwareSite.makeWorkers(c.cycleSettings, slots: slots, meter: meter,
                                             phase: CyclePhase(period: .milliseconds(100))) { notice in
            said.withLock { $0.append(notice.severity == .warning ? "warning: \(notice.text)" : notice.text) }
        }
        #expect(workers.count == 1)
        #expect(workers.first?.devices.map(\.unitID) == [1, 2, 240])
        #expect(workers.first?.devices.map { $0.meter } == [nil, nil, .sunspec])
        #expect(said.withLock { $0.isEmpty }, "\(said.withLock { $0 })")
        let w = try #require(workers.first)
        slots[0].setSetpoint(.kilowatts(11))
        slots[1].setSetpoint(.kilowatts(-22))
        w.start()
        defer { w.stop() }
        // The meter's W as it states it: 100 × 240 + 45 = 24,045 counts at W_SF 1.
        #expect(waitFor(seconds: 10) { meter.reading?.value.activePower == Watts(240_450) })
        #expect(meter.reading?.value.frequency == Hertz(50.01))
        #expect(waitFor(seconds: 10) { peer.last("WSET unit=1 ") == wset(1, 11_000) })
        #expect(waitFor(seconds: 10) { peer.last("WSET unit=2 ") == wset(2, -22_000) })
        for (id, slot) in zip([1, 2], slots) {
            #expect(waitFor(seconds: 5) { slot.reading?.value.activePower == Watts(Double(1000 * id + 234)) })
        }
        // Read every cycle: fresh readings keep coming (the meter's stamp moves on).
        let first = try #require(meter.reading?.takenAt)
        #expect(waitFor(seconds: 5) { (meter.reading?.takenAt).map { $0 > first } == true })
        #expect(waitFor(seconds: 5) { (peer.last("REQUESTS unit=240 ") ?? "").contains("reads=") })
        #expect(peer.last("REQUESTS unit=240 ")?.hasSuffix(" writes=0") == true, "\(String(describing: peer.last("REQUESTS unit=240 ")))")
        if socat == nil {
            #expect(peer.totalConnections == 1, "\(peer.all.filter { $0.hasPrefix("CONNECTIONS") })")
        } else {
            // The tty is open once in this process (bessd's side of the pty pair).
            let tty = try FileManager.default.destinationOfSymbolicLink(atPath: "\(directory)/bessd")
            let fds = try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")
            let opens = fds.filter { (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\($0)")) == tty }
            #expect(opens.count == 1, "\(tty) open \(opens.count) times")
        }
        #expect(w.wire.connects == 1)
    }

    /// A warning instead when the plan is built by hand.
    @Test("one worker per serial device and per TCP endpoint; differing line settings are a config error")
    func oneWorkerPerLine() throws {
        var c = try ConfigLoader.parse("""
            mode: hil
            bess_units:
              - {id: A, capacity_kwh: 10, max_power_kw: 5, bms: {simulated: true},
                 modbus: {device: /dev/ttyBESS0, baud: 9600, unit_id: 1}}
              - {id: B, capacity_kwh: 10, max_power_kw: 5, bms: {simulated: true},
                 modbus: {device: /dev/ttyBESS0, baud: 9600, unit_id: 2}}
              - {id: C, capacity_kwh: 10, max_power_kw: 5, bms: {simulated: true},
                 modbus: {host: 127.0.0.1, port: 1502, unit_id: 3}}
              - {id: D, capacity_kwh: 10, max_power_kw: 5, bms: {simulated: true},
                 modbus: {host: 127.0.0.1, port: 1502, unit_id: 4}}
            """, file: "lines.yaml")
        // A configuration built in code (not through check-config) that gives B other settings is warned.
        if case .rtu(var serial)? = c.units[1].modbus?.transport {
            serial.baud = 19200
            c.units[1].modbus?.transport = .rtu(serial)
        }
        let said = Mutex<[String]>([])
        let workers = HardwareSite.makeWorkers(c.cycleSettings, slots: c.units.map { _ in DeviceSlot() },
                                             phase: CyclePhase(period: .milliseconds(100))) { notice in
            said.withLock { $0.append(notice.severity == .warning ? "warning: \(notice.text)" : notice.text) }
        }
        #expect(workers.count == 2)
        #expect(workers.map { $0.devices.map(\.unitID) } == [[1, 2], [3, 4]])
        #expect(said.withLock { $0.contains { $0.contains("bess_units[1]") && $0.contains("warning") } })
    }
}
