import BessBase
import ControlCore
import Fieldbus
import Foundation
import Simulation
import HILPlant
import TestSupport
import Testing

/// Runs a program (found on PATH) and collects its output.
enum Peer {
    static func start(_ arguments: [String]) throws -> (Process, Pipe) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        process.currentDirectoryURL = Package.root
        let out = Pipe()
        process.standardOutput = out
        // Not the test's own stderr: a child that outlives the test must not hold the runner's pipe.
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        return (process, out)
    }

    /// Stops a started peer and reaps it.
    static func stop(_ process: Process) {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    static func run(_ arguments: [String]) throws -> (status: Int32, out: String) {
        let (process, out) = try start(arguments)
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    /// Reads lines until `predicate` accepts one (or the stream ends).
    static func readLine(_ pipe: Pipe, until predicate: (String) -> Bool) -> String? {
        var buffer = ""
        while true {
            let data = pipe.fileHandleForReading.availableData
            if data.isEmpty { return nil }
            buffer += String(decoding: data, as: UTF8.self)
            while let newline = buffer.firstIndex(of: "\n") {
                let line = String(buffer[..<newline])
                buffer.removeSubrange(...newline)
                if predicate(line) { return line }
            }
        }
    }
}

@Suite("Independent peers", .serialized)
struct PeerTests {
    func runningPlant(_ profile: SunSpecDeviceProfile, setpointW: Double? = nil) throws -> (SunSpecServer, SimulatedUnit) {
        let server = try SunSpecServer(host: "127.0.0.1", port: 0, profile: profile)
        try server.start()
        var unit = SimulatedUnit(capacityKWh: 250, maxPowerKW: profile.ratingW / 1000, initialSOCPercent: 60)
        if let setpointW { unit.inverter.command(setpointW: setpointW) }
        let link = SunSpecPlantLink(server: server)
        for _ in 0..<30 {
            unit.step(by: .milliseconds(100))
            link.exchange(&unit, frequencyHz: 50.02)
        }
        return (server, unit)
    }

    @Test("pysunspec2 scans the simulated inverter and reads every model correctly",
          arguments: [(UInt16(103), UInt16(704)), (701, 124)])
    func pysunspec2Scan(models: (UInt16, UInt16)) throws {
        let (server, unit) = try runningPlant(
            SunSpecDeviceProfile(measurementModel: models.0, controlModel: models.1, ratingW: 100_000), setpointW: 30_000)
        defer { server.stop() }
        let result = try Peer.run(["python3", "hil/peers/sunspec_scan.py", "127.0.0.1", String(server.port)])
        #expect(result.status == 0)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(result.out.utf8)) as? [String: Any])
        let chain = try #require(json["models"] as? [[String: Any]])
        #expect(chain.compactMap { $0["id"] as? Int } == [1, Int(models.0), 120, 121, 123, Int(models.1)])
        let lengths = chain.compactMap { $0["len"] as? Int }
        #expect(lengths == [66, models.0 == 701 ? 153 : 50, 26, 30, 24, models.1 == 704 ? 65 : 24])
        let points = try #require(json["points"] as? [String: [String: Any]])
        #expect(points["1"]?["Mn"] as? String == "bessd")
        #expect(points["120"]?["WRtg"] as? Double == 100_000 || points["120"]?["WRtg"] as? Int == 100_000)
        let measured = try #require(points[String(models.0)])
        let w = (measured["W"] as? Double) ?? Double(measured["W"] as? Int ?? -1)
        #expect(abs(w - unit.inverter.powerW) <= 10)
        let hz = (measured["Hz"] as? Double) ?? -1
        #expect(abs(hz - 50.02) < 1e-6)
    }

    /// Models 201 and 203, as the plant publishes them.
    @Test("pysunspec2 reads the plant's site meter: W (+ = import), Hz and both energy counters",
          arguments: [UInt16(201), 203])
    func pysunspec2ScansMeter(model: UInt16) throws {
        let server = try SunSpecServer(host: "127.0.0.1", port: 0, profile: .meter(model: model, maxW: 500_000))
        try server.start()
        defer { server.stop() }
        server.withImage { image, _ in
            image.publishMeter(gridW: -123_400, hz: 49.97, importedWh: 1_234_567, exportedWh: 89_012, garbage: false,
                               reactiveVar: 45_600, voltage: 229.8)
        }
        let result = try Peer.run(["python3", "hil/peers/sunspec_scan.py", "127.0.0.1", String(server.port)])
        #expect(result.status == 0)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(result.out.utf8)) as? [String: Any])
        let chain = try #require(json["models"] as? [[String: Any]])
        #expect(chain.compactMap { $0["id"] as? Int } == [1, Int(model)])
        #expect(chain.compactMap { $0["len"] as? Int } == [66, 105])
        let meter = try #require((json["points"] as? [String: [String: Any]])?[String(model)])
        func number(_ name: String) -> Double? { (meter[name] as? Double) ?? (meter[name] as? Int).map(Double.init) }
        // W_SF 2 for a 500 kW meter (int16 holds ±30,000 counts): −123,400 W is served as −1,234 × 100.
        #expect(number("W") == -123_400)
        #expect(number("Hz").map { abs($0 - 49.97) < 1e-9 } == true)
        #expect(number("TotWhImp") == 1_234_567)
        #expect(number("TotWhExp") == 89_012)
        #expect(number("VAR") == 45_600)
        #expect(number("PhV").map { abs($0 - 229.8) < 1e-9 } == true)
        // And bessd's own reader agrees with the reference client.
        var client = try ModbusConnection(endpoint: .tcp(host: "127.0.0.1", port: server.port), unitID: 1, timeout: .seconds(2))
        let reading = try SunSpecMeter.open(&client).read(&client)
        #expect(reading.gridPower == Watts(-123_400) && reading.frequency == Hertz(49.97))
        #expect(reading.importedEnergy == WattHours(1_234_567) && reading.exportedEnergy == WattHours(89_012))
        #expect(reading.reactivePower == 45_600 && reading.voltage.map { abs($0 - 229.8) < 1e-9 } == true)
        // A broken sensor: W not implemented is a coded refusal, not a number.
        server.withImage { image, _ in image.publishMeter(gridW: 0, hz: 50, importedWh: 0, exportedWh: 0, garbage: true) }
        #expect(throws: DeviceError.self) { try SunSpecMeter.open(&client).read(&client) }
    }

    @Test("mbpoll reads the SunS marker and the common model from the simulator")
    func mbpoll() throws {
        let (server, _) = try runningPlant(SunSpecDeviceProfile(ratingW: 100_000))
        defer { server.stop() }
        // mbpoll counts references from 1: reference 40001 is protocol address 40000.
        let result = try Peer.run(["mbpoll", "-m", "tcp", "-p", String(server.port), "-a", "1", "-r", "40001", "-c", "4",
                                   "-t", "4:hex", "-1", "-q", "127.0.0.1"])
        #expect(result.status == 0)
        #expect(result.out.contains("[40001]: \t0x5375"))
        #expect(result.out.contains("[40002]: \t0x6E53"))
        #expect(result.out.contains("[40003]: \t0x0001"))
        #expect(result.out.contains("[40004]: \t0x0042"))  // L = 66
    }

    @Test("bessd discovers and commands an independent SunSpec image served by pymodbus")
    func pymodbusServer() throws {
        let (process, out) = try Peer.start(["python3", "hil/peers/pymodbus_sunspec_server.py", "20"])
        defer { Peer.stop(process) }
        let portLine = try #require(Peer.readLine(out) { $0.hasPrefix("PORT ") })
        let port = try #require(Int(portLine.dropFirst(5)))
        var client = try ModbusConnection(endpoint: .tcp(host: "127.0.0.1", port: port), unitID: 1, timeout: .seconds(2))
        let inverter = try SunSpecInverter.open(&client)
        #expect(inverter.map.models.map(\.id) == [1, 701, 120, 704])
        #expect(inverter.commandPath == .acControls704)
        #expect(inverter.ratedPower == Watts(50_000))
        let status = try inverter.readStatus(&client)
        #expect(status.activePower == Watts(1234))
        #expect(status.frequency == Hertz(49.876))
        #expect(status.reactivePower == -250, "Var × 10^Var_SF (read at discovery)")
        #expect(status.voltage.map { abs($0 - 231.2) < 1e-9 } == true, "LNV, not LLV: \(String(describing: status.voltage))")
        try inverter.command(Watts(-12_345), revert: .seconds(10), &client)
        let line = try #require(Peer.readLine(out) { $0.hasPrefix("WSET") && $0.contains("w=-12345") })
        #expect(line == "WSET ena=1 mod=1 w=-12345 rvrt_tms=10 rvrt=0 ena_rvrt=1")
    }
}

@Suite("SunSpec scale factors and percent bases against pymodbus images", .serialized)
struct SunSpecBasesPeerTests {
    func start(_ unit: String) throws -> (Process, Pipe, Int) {
        let (process, out) = try Peer.start(["python3", "hil/peers/pymodbus_sunspec_units.py", "--seconds", "20", unit])
        let portLine = try #require(Peer.readLine(out) { $0.hasPrefix("PORT ") })
        return (process, out, try #require(Int(portLine.dropFirst(5))))
    }

    @Test("124: OutWRte/InWRte are percent of WChaMax (20 kW), not of WRtg/WMax (50 kW)")
    func storageRatesOfWChaMax() throws {
        let (process, out, port) = try start("1:124,wchamax=20000")
        defer { Peer.stop(process) }
        var client = try ModbusConnection(endpoint: .tcp(host: "127.0.0.1", port: port), unitID: 1, timeout: .seconds(2))
        let inverter = try SunSpecInverter.open(&client)
        #expect(inverter.map.models.map(\.id) == [1, 701, 120, 121, 124])
        #expect(inverter.commandPath == .storage124)
        #expect(inverter.ratedPower == .kilowatts(50))
        #expect(inverter.storageRateBase == .kilowatts(20))
        // 10 kW discharge = 50.0 % of WChaMax (InOutWRte_SF −1).
        try inverter.command(.kilowatts(10), revert: .seconds(10), &client)
        #expect(Peer.readLine(out) { $0.hasPrefix("STORAGE") && $0.contains("mod=3") && $0.contains("rvrt_tms=10") }
                == "STORAGE unit=1 mod=3 out=500 in=-500 rvrt_tms=10")
        // 5 kW charge = 25.0 %.
        try inverter.command(.kilowatts(-5), revert: .seconds(10), &client)
        #expect(Peer.readLine(out) { $0.hasPrefix("STORAGE") && $0.contains("in=250") }
                == "STORAGE unit=1 mod=3 out=-250 in=250 rvrt_tms=10")
    }

    @Test("704 whose WSet_SF is not implemented is refused (SUNSPEC_VALUE_INVALID)")
    func wSetSFNotImplemented() throws {
        let (process, _, port) = try start("1:wsetsf=none")
        defer { Peer.stop(process) }
        var client = try ModbusConnection(endpoint: .tcp(host: "127.0.0.1", port: port), unitID: 1, timeout: .seconds(2))
        do {
            _ = try SunSpecInverter.open(&client)
            Issue.record("a 704 device without WSet_SF was accepted")
        } catch {
            #expect(error.code.description == "SUNSPEC_VALUE_INVALID")
        }
    }
}

@Suite("Register-map inverter against pymodbus", .serialized)
struct RegisterMapPeerTests {
    @Test("bessd reads and commands a non-SunSpec inverter through a configured register map")
    func registerMap() throws {
        let (process, out) = try Peer.start(["python3", "hil/peers/pymodbus_map_server.py", "20"])
        defer { Peer.stop(process) }
        let portLine = try #require(Peer.readLine(out) { $0.hasPrefix("PORT ") })
        let port = try #require(Int(portLine.dropFirst(5)))
        let spec = RegisterMapSpec(
            power: MappedRegister(address: 30775, type: .int32, scale: 1),
            frequency: MappedRegister(address: 30803, type: .uint32, scale: 0.01),
            fault: MappedRegister(address: 30201, type: .uint16, scale: 1), faultValues: [35],
            setpoint: MappedRegister(address: 40149, type: .int32, scale: 1),
            revertTimeout: MappedRegister(address: 40153, type: .uint16, scale: 1),
            enable: MappedRegister(address: 40151, type: .uint16, scale: 1), enableValue: 802, rating: .kilowatts(60))
        var client = try ModbusConnection(endpoint: .tcp(host: "127.0.0.1", port: port), unitID: 3, timeout: .seconds(2))
        let inverter = RegisterMapInverter(spec: spec)
        let reading = try inverter.readStatus(&client)
        #expect(reading.activePower == Watts(-1234))
        #expect(reading.frequency == Hertz(49.98))
        #expect(!reading.faulted)
        #expect(reading.ratedPower == .kilowatts(60))
        try inverter.command(.kilowatts(-7.5), revert: .seconds(10), &client)
        let line = try #require(Peer.readLine(out) { $0.contains("set=-7500") })
        #expect(line == "WRITE set=-7500 enable=802 revert=10")
        #expect(MappedRegister(address: 0, type: .int16, scale: 1).encode(40_000) == nil)  // does not fit: refused
    }
}

@Suite("Mapped registers")
struct MappedRegisterTests {
    @Test("word order, signedness and scale round-trip")
    func roundTrip() {
        let high = MappedRegister(address: 0, type: .int32, scale: 0.1)
        #expect(high.encode(-12.3) == [0xFFFF, 0xFF85])
        #expect(high.decode([0xFFFF, 0xFF85]) == -12.3)
        let low = MappedRegister(address: 0, type: .uint32, scale: 1, lowWordFirst: true)
        #expect(low.encode(65_537) == [1, 1])
        #expect(low.decode([2, 1]) == 65_538)
        let negated = MappedRegister(address: 0, type: .int16, scale: -1)  // device counts + as charge
        #expect(negated.encode(500) == [UInt16(bitPattern: -500)])
        #expect(MappedRegister(address: 0, type: .uint16, scale: 1).encode(-1) == nil)
        #expect(MappedRegister(address: 0, type: .uint16, scale: 1).decode([]) == nil)
    }
}
