import Foundation
import Testing
import Uplink

@Suite("Uplink wire format")
struct WireTests {
    static let batch = RecordBatch(site: "SITE_1", records: [
        UplinkRecord(seq: 7, time: 1_800_000_000.5, body: .telemetry(frequencyHz: 49.98, cycleP99Us: 180, overruns: 0, units: [
            UnitTelemetry(id: "U1", state: "running", socPercent: 61.5, sohPercent: 99, powerW: 4000, setpointW: 4000,
                          voltageV: 52.1, currentA: -76.8, temperatureMinC: 24, temperatureMaxC: 25, allowedChargeW: 100_000,
                          allowedDischargeW: 100_000, trips: [], latched: [], bmsOnline: true, inverterOnline: true),
        ], site: SiteTelemetry(gridPowerW: 198_500, bindingLimit: "import", shortfallW: 0, meterStale: false)), mode: "hil"),
        UplinkRecord(seq: 8, time: 1_800_000_001, body: .availability(units: [
            UnitAvailability(id: "U1", chargePowerW: 100_000, dischargePowerW: 100_000, chargeEnergyWh: 96_250,
                             dischargeEnergyWh: 141_250),
        ], site: SiteAvailability(upW: 96_000, downW: 1_500))),
        UplinkRecord(seq: 12, time: 1_800_000_002, body: .telemetry(frequencyHz: nil, cycleP99Us: 180, overruns: 0, units: [],
                                                                     site: SiteTelemetry(gridPowerW: nil, bindingLimit: nil,
                                                                                         shortfallW: 12_000, meterStale: true))),
        UplinkRecord(seq: 9, time: 1_800_000_900, body: .energyBlock(unit: "U1", startUnix: 1_800_000_000, lengthS: 900,
                                                                       chargedKWh: 0, dischargedKWh: 1.0, coveredS: 900),
                     mode: "hardware", clock: ["unsynchronized", "stepped"]),
        UplinkRecord(seq: 10, time: 1_800_000_901, body: .event(unit: "U1", kind: "latched", code: "THERMAL_RUNAWAY",
                                                                 message: "U1 THERMAL_RUNAWAY LATCHED")),
        UplinkRecord(seq: 11, time: 1_800_000_902, body: .spoolDrop(count: 42)),
        UplinkRecord(seq: 13, time: 1_800_000_903, body: .gridEnergyBlock(startUnix: 1_800_000_000, lengthS: 900, importedKWh: 41.5,
                                                                           exportedKWh: 0.25, coveredS: 897.5)),
    ], acks: [CommandAck(id: "c-1", accepted: false, reason: "power_kw 500 beyond the rating ±100 kW")])

    @Test("records round-trip through JSON")
    func roundTrip() throws {
        let data = try JSONEncoder().encode(Self.batch)
        let back = try JSONDecoder().decode(RecordBatch.self, from: data)
        #expect(back.records == Self.batch.records)
        #expect(back.records.map(\.mode) == ["hil", nil, nil, "hardware", nil, nil, nil])
        let text = String(decoding: data, as: UTF8.self)
        #expect(text.contains("\"grid_power_w\":198500") && text.contains("\"binding_limit\":\"import\""))
        #expect(String(decoding: data, as: UTF8.self).contains("\"mode\":\"hil\""))
        // The clock flags ride only on the record that has them.
        #expect(back.records.map(\.clock) == [nil, nil, nil, ["unsynchronized", "stepped"], nil, nil, nil])
        #expect(text.contains("\"clock\":[\"unsynchronized\",\"stepped\"]"))
        #expect(UplinkRecord(seq: 1, time: 1, body: .spoolDrop(count: 1), clock: []).clock == nil)
        #expect(back.acks == Self.batch.acks)
        #expect(back.protocolVersion == 1)
    }

    /// What hil/peers/validate_uplink.py says of the OpenAPI document and of `batch` against it:
    /// `VALID`, or the first error.
    static func openAPIVerdict(_ batch: RecordBatch) throws -> String {
        try openAPIVerdict(JSONEncoder().encode(batch), schema: "RecordBatch")
    }

    /// The same of a JSON document against the document's schema `schema` (`BatchResponse`: an answer).
    static func openAPIVerdict(_ json: Data, schema: String) throws -> String {
        var root = URL(fileURLWithPath: #filePath)
        while !FileManager.default.fileExists(atPath: root.appendingPathComponent("Package.swift").path) {
            root.deleteLastPathComponent()
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", root.appendingPathComponent("hil/peers/validate_uplink.py").path,
                             root.appendingPathComponent("docs/uplink-openapi.yaml").path, schema]
        let input = Pipe()
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        input.fileHandleForWriting.write(json)
        try input.fileHandleForWriting.close()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return text.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test("the OpenAPI document is valid and a real batch matches its schema")
    func openAPI() throws {
        #expect(try Self.openAPIVerdict(Self.batch) == "VALID")
    }

    @Test("an unknown record type is refused when decoding")
    func unknownType() {
        let json = #"{"seq": 1, "time": 0, "type": "meteor"}"#
        #expect(throws: DecodingError.self) { _ = try JSONDecoder().decode(UplinkRecord.self, from: Data(json.utf8)) }
    }

    struct Hostile: Sendable, CustomTestStringConvertible {
        let command: DispatchCommand
        let reason: String
        var testDescription: String { reason }
    }

    static let now = 1_800_000_000.0
    static let hostile: [Hostile] = [
        Hostile(command: DispatchCommand(id: "", kind: "power", powerKW: 1, expiresUnix: now + 60), reason: "id must be"),
        Hostile(command: DispatchCommand(id: "a", kind: "power", powerKW: 1, expiresUnix: now - 1), reason: "already expired"),
        Hostile(command: DispatchCommand(id: "a", kind: "power", powerKW: 1, expiresUnix: now + 90_000), reason: "more than 24 h"),
        Hostile(command: DispatchCommand(id: "a", kind: "power", powerKW: .nan, expiresUnix: now + 60), reason: "finite"),
        Hostile(command: DispatchCommand(id: "a", kind: "power", unit: "U1", powerKW: 101, expiresUnix: now + 60), reason: "beyond"),
        Hostile(command: DispatchCommand(id: "a", kind: "power", unit: "U9", powerKW: 1, expiresUnix: now + 60), reason: "unknown unit"),
        Hostile(command: DispatchCommand(id: "a", kind: "mode", mode: "turbo", expiresUnix: now + 60), reason: "auto or standby"),
        Hostile(command: DispatchCommand(id: "a", kind: "selfdestruct", expiresUnix: now + 60), reason: "unknown kind"),
        Hostile(command: DispatchCommand(id: "a", kind: "power", powerKW: 1, expiresUnix: .infinity), reason: "already expired"),
    ]

    @Test("hostile or malformed dispatch is refused with a reason", arguments: hostile)
    func refused(hostile: Hostile) {
        let reason = DispatchValidator.validate(hostile.command, ratings: ["U1": 100, "U2": 250], now: Self.now)
        #expect(reason?.contains(hostile.reason) == true, "\(String(describing: reason))")
    }

    @Test("good commands pass: unit power, site power within the sum, mode, emergency stop")
    func accepted() {
        let ratings = ["U1": 100.0, "U2": 250.0]
        for c in [DispatchCommand(id: "1", kind: "power", unit: "U1", powerKW: -100, expiresUnix: Self.now + 900),
                  DispatchCommand(id: "2", kind: "power", powerKW: 350, expiresUnix: Self.now + 900),
                  DispatchCommand(id: "3", kind: "mode", mode: "standby", expiresUnix: Self.now + 60),
                  DispatchCommand(id: "4", kind: "emergency_stop", expiresUnix: Self.now + 60)] {
            #expect(DispatchValidator.validate(c, ratings: ratings, now: Self.now) == nil, "\(c.id)")
        }
    }
}
