import ControlProtocol
import Foundation
import Testing

/// The control socket's JSON writer and the typed replies written through it, read back by
/// Foundation's parser and by the replies' own `Decodable` (independent readers).
@Suite("Control answers' JSON writer")
struct JSONTextTests {
    /// A value written field by field, as a reply writes itself.
    struct Sample: JSONWritable {
        var fields: [(String, any JSONWritable)]
        func write(to json: inout JSONText) {
            json.beginObject()
            for (key, value) in fields { json.field(key, AnyWritable(value)) }
            json.endObject()
        }
    }

    struct AnyWritable: JSONWritable {
        let value: any JSONWritable
        init(_ value: any JSONWritable) { self.value = value }
        func write(to json: inout JSONText) { value.write(to: &json) }
    }

    static func text(_ value: some JSONWritable) -> String { String(decoding: JSONText.encode(value), as: UTF8.self) }

    /// Every object's keys in `bytes`, in the order written: a small scanner, independent of the writer.
    static func objectKeys(_ bytes: [UInt8]) -> [[String]] {
        var done: [[String]] = []
        var open: [[String]] = []
        var i = 0
        while i < bytes.count {
            switch bytes[i] {
            case UInt8(ascii: "{"): open.append([])
            case UInt8(ascii: "}"): done.append(open.removeLast())
            case UInt8(ascii: "\""):
                var j = i + 1
                while bytes[j] != UInt8(ascii: "\"") { j += bytes[j] == UInt8(ascii: "\\") ? 2 : 1 }
                if j + 1 < bytes.count, bytes[j + 1] == UInt8(ascii: ":"), !open.isEmpty {
                    open[open.count - 1].append(String(decoding: bytes[(i + 1)..<j], as: UTF8.self))
                }
                i = j
            default: break
            }
            i += 1
        }
        return done
    }

    /// Whether every object's keys in `bytes` come in code-point order, as bessd has always written them.
    static func keysInOrder(_ bytes: [UInt8]) -> Bool {
        objectKeys(bytes).allSatisfy { keys in zip(keys, keys.dropFirst()).allSatisfy { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) } }
    }

    @Test("compact, integral doubles as integers, non-finite as null, optionals as null")
    func exactText() {
        let sample = Sample(fields: [
            ("B", false), ("a", 1), ("a_b", Int64(-7)), ("ab", UInt64.max), ("b", true),
            ("c", [1.5, Double.nan, 100.0, -0.25, 3.0e21, 1.5e-7]), ("d", "x\"y"), ("e", Optional<Double>.none),
            ("f", [String]()), ("g", Sample(fields: [])), ("h", Double.infinity),
        ])
        #expect(Self.text(sample)
            == #"{"B":false,"a":1,"a_b":-7,"ab":18446744073709551615,"b":true,"c":[1.5,null,100,-0.25,3e+21,1.5e-07],"d":"x\"y","e":null,"f":[],"g":{},"h":null}"#)
        #expect(String(decoding: JSONText.line(sample), as: UTF8.self).hasSuffix("}\n"))
    }

    @Test("every string survives: quotes, backslashes, control characters, slashes, non-ASCII")
    func strings() throws {
        let hostile = Self.hostile
        let bytes = JSONText.encode(Sample(fields: [("k", hostile), (hostile, Sample(fields: [("v", hostile)]))]))
        #expect(!bytes.contains(0x0A), "one answer must stay one line")
        #expect(!bytes.contains { $0 < 0x20 }, "no raw control character")
        let parsed = try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? NSDictionary)
        #expect(parsed["k"] as? String == hostile)
        #expect((parsed[hostile] as? NSDictionary)?["v"] as? String == hostile)
    }

    static let hostile: String = {
        var text = "q\"b\\s/n\nr\rt\tz\u{0}e\u{1B}del\u{7F} °C ✓ 𝄞 \u{2028}\"}{\"ok\":false"
        for byte in 1..<32 { text.append(Character(Unicode.Scalar(UInt8(byte)))) }
        return text
    }()

    static func unit(_ i: Int) -> UnitReply {
        var unit = UnitReply(id: "U\(i)", state: "running", mode: i == 3 ? "standby" : "auto", setpointW: Double(i) * 1234.5678,
                             droopW: -0.1 * Double(i), allowedChargeW: 100_000, allowedDischargeW: 100_000,
                             trips: ["OVER_TEMPERATURE", "CELL_UNDERVOLTAGE"], latched: ["OVER_TEMPERATURE"],
                             socPercent: i == 0 ? nil : 51.25, powerW: i == 1 ? nil : -12_000.5)
        if i == 3 {
            unit.heldBy = "aggregator"
            unit.heldUntilUnix = 1_800_000_000
        }
        if i == 4 { unit.override = TimedPowerReply(powerW: 5e3, remainingS: 12) }
        if i == 5 { unit.dispatch = PowerReply(powerW: -20_000) }
        return unit
    }

    static let gridOperator = GridOperatorReply(
        inputs: InputsReply(configured: true, lost: false), limitPercent: 60, capW: 480_000, limiting: true,
        scadaLimit: ScadaLimitReply(percent: 60, remainingS: 8, reverted: false), inputLimitPercent: nil,
        scadaSetpoint: TimedPowerReply(powerW: 150_000, remainingS: 25))

    static let status = StatusReply(
        clock: ClockReply(synchronized: false, source: "kernel", code: "CLOCK_UNSYNCED", steps: 1, lastStepS: -3.5),
        cycle: CycleReply(periodMs: 10, cycles: 10_018, overruns: 0, lateReadings: 3, startedOnReadings: 9_000, alarmCycles: 2,
                          jitterP50Us: 12, jitterP99Us: 27, jitterMaxUs: 410, realtime: true),
        frequencyHz: 49.987, gridOperator: gridOperator, mode: "simulation", units: (0..<8).map(unit),
        uplink: UplinkReply(transport: "mqtt", url: "mqtts://broker:8883", site: "S1", backlogRecords: 4, acknowledgedSeq: 1_000,
                            connected: true, lastAckUnix: 1_800_000_000.25, lastError: nil),
        version: "0.1.0")

    /// Each reply written as bessd writes it, then decoded as bessctl decodes it.
    static func roundTrip<R: ControlReply & Equatable>(_ reply: R) throws -> R {
        let bytes = reply.line
        #expect(bytes.last == 0x0A && bytes.firstIndex(of: 0x0A) == bytes.count - 1, "one line")
        #expect(keysInOrder(bytes), "keys in code-point order: \(String(decoding: bytes, as: UTF8.self))")
        let outcome = try JSONDecoder().decode(ControlOutcome.self, from: Data(bytes))
        #expect(outcome.ok == true)
        return try JSONDecoder().decode(R.self, from: Data(bytes.dropLast()))
    }

    @Test("every typed reply reads back equal, with ok true and its keys in code-point order")
    func replies() throws {
        let status = try Self.roundTrip(Self.status)
        #expect(status == Self.status)
        #expect(status.units[2].setpointW == 2469.1356 && status.units[0].socPercent == nil)
        var sourced = Self.status
        sourced.frequencySource = "pmu"
        sourced.frequencyAgeMs = 14
        let read = try Self.roundTrip(sourced)
        #expect(read == sourced && read.frequencySource == "pmu" && read.frequencyAgeMs == 14)
        #expect(String(decoding: sourced.line, as: UTF8.self).contains(#""frequency_age_ms":14,"frequency_hz":49.987,"frequency_source":"pmu","#))
        #expect(status.units[3].heldBy == "aggregator" && status.units[4].override?.remainingS == 12)
        #expect(try Self.roundTrip(FaultsReply(faults: [FaultReply(unit: "site", code: "METER_STALE", latched: false,
                                                                     explanation: "no reading")])).faults[0].code == "METER_STALE")
        let site = SiteReply(
            mode: "hil", gridPowerW: nil, meter: MeterReply(configured: true, stale: true, protocol: "sunspec", simulated: false,
                                                            staleAfterS: 3, maxLagS: 1),
            limits: LimitsReply(importMaxW: 400_000, exportMaxW: nil, binding: "import"),
            application: ApplicationReply(name: "peak_shaving", active: true, targetW: 20_000, socReservePercent: 10,
                                          importMaxW: 400_000, rechargeBelowW: nil),
            gridOperator: Self.gridOperator,
            decision: DecisionReply(requestedW: 0, heldW: 0, applicationW: 20_000, poolW: 20_000, deliveredW: 19_500),
            loadEstimateW: RangeReply(low: nil, high: 3_000), shortfall: ShortfallReply(active: false, missingW: 0),
            units: [SiteUnitReply(id: "U1", share: "headroom", pooled: true, setpointW: 10_000, powerW: 9_900, socPercent: 50,
                                  allowedChargeW: 100_000, allowedDischargeW: 100_000)])
        #expect(try Self.roundTrip(site) == site)
        var reserved = site
        reserved.responseReserve = ResponseReserveReply(sustainS: 900, dischargeWh: 25_000, chargeWh: 24_500, socLowPercent: 15,
                                                        socHighPercent: 85.2, dischargeReached: true, chargeReached: false)
        #expect(try Self.roundTrip(reserved) == reserved)
        #expect(try Self.roundTrip(ConfigReply(path: "/etc/bessd/bessd.yaml", text: "mode: hil\n")).text == "mode: hil\n")
        #expect(try Self.roundTrip(MetricsReply(text: "bessd_cycles_total 1\n")).text == "bessd_cycles_total 1\n")
        #expect(try Self.roundTrip(ResetReply(cleared: ["U1:CELL_OVERVOLTAGE"], refused: [])).cleared == ["U1:CELL_OVERVOLTAGE"])
        let mode = ModeReply(mode: "auto", units: ["U1"], stillStandby: [StandbyHold(unit: "U1", heldBy: "aggregator")])
        #expect(try Self.roundTrip(mode) == mode)
        #expect(try Self.roundTrip(OverrideReply(unit: "U1", powerKW: -20, forS: 900)).powerKW == -20)
        #expect(Self.text(OverrideReply()) == #"{"ok":true}"#, "a cleared override answers ok alone")
        let refusal = ControlFailure("UNKNOWN_UNIT", "no unit X")
        #expect(Self.text(refusal) == #"{"code":"UNKNOWN_UNIT","message":"no unit X","ok":false}"#)
        #expect(try JSONDecoder().decode(ControlFailure.self, from: Data(JSONText.encode(refusal))) == refusal)
    }

    /// The status answer's exact bytes, as the writer produced them before its integers, strings and
    /// buffer took their faster paths: a monitor that compares answers sees no change.
    static let pinnedStatus = [
        #"{"agc":{"configured":true,"followed_w":0,"following":true,"in_service":true,"lower_limit_w":null,"ramp_w_per_s":80000,"#,
        #""remaining_s":4.75,"signal_lost":false,"target_w":-1e-09,"upper_limit_w":null},"clock":{"code":"CLOCK_UNSYNCED","#,
        #""last_step_s":-3.5,"source":"kernel","steps":1,"synchronized":false},"cycle":{"alarm_cycles":2,"cycles":10018,"#,
        #""jitter_max_us":410,"jitter_p50_us":12,"jitter_p99_us":27,"late_readings":3,"overruns":0,"period_ms":10,"#,
        #""realtime":true,"started_on_readings":9000},"frequency_hz":49.987,"grid_operator":{"cap_w":480000,"input_limit_percent":null,"#,
        #""inputs":{"configured":true,"lost":false},"limit_percent":60,"limiting":true,"scada_limit":{"percent":60,"#,
        #""remaining_s":8,"reverted":false},"scada_setpoint":{"power_w":150000,"remaining_s":25}},"mode":"simulation","#,
        #""ok":true,"units":[{"allowed_charge_w":100000,"allowed_discharge_w":100000,"droop_w":0,"held_by":null,"#,
        #""id":"U0","latched":["OVER_TEMPERATURE"],"mode":"auto","power_w":-12000.5,"setpoint_w":0,"soc_percent":null,"#,
        #""state":"running","trips":["OVER_TEMPERATURE","CELL_UNDERVOLTAGE"]},{"allowed_charge_w":100000,"allowed_discharge_w":100000,"#,
        #""droop_w":-0.1,"held_by":null,"id":"U1","latched":["OVER_TEMPERATURE"],"mode":"auto","power_w":null,"#,
        #""setpoint_w":1234.5678,"soc_percent":51.25,"state":"running","trips":["OVER_TEMPERATURE","CELL_UNDERVOLTAGE"]},"#,
        #"{"allowed_charge_w":100000,"allowed_discharge_w":100000,"droop_w":-0.2,"held_by":null,"id":"U2","latched":["OVER_TEMPERATURE"],"#,
        #""mode":"auto","power_w":-12000.5,"setpoint_w":2469.1356,"soc_percent":51.25,"state":"running","trips":["OVER_TEMPERATURE","#,
        #""CELL_UNDERVOLTAGE"]},{"allowed_charge_w":100000,"allowed_discharge_w":100000,"droop_w":-0.30000000000000004,"#,
        #""held_by":"aggregator","held_until_unix":1800000000,"id":"U3","latched":["OVER_TEMPERATURE"],"mode":"standby","#,
        #""power_w":-12000.5,"setpoint_w":3703.7034000000003,"soc_percent":51.25,"state":"running","trips":["OVER_TEMPERATURE","#,
        #""CELL_UNDERVOLTAGE"]},{"allowed_charge_w":100000,"allowed_discharge_w":100000,"droop_w":-0.4,"held_by":null,"#,
        #""id":"U4","latched":["OVER_TEMPERATURE"],"mode":"auto","override":{"power_w":5000,"remaining_s":12},"#,
        #""power_w":-12000.5,"setpoint_w":4938.2712,"soc_percent":51.25,"state":"running","trips":["OVER_TEMPERATURE","#,
        #""CELL_UNDERVOLTAGE"]},{"allowed_charge_w":100000,"allowed_discharge_w":100000,"dispatch":{"power_w":-20000},"#,
        #""droop_w":-0.5,"held_by":null,"id":"U5","latched":["OVER_TEMPERATURE"],"mode":"auto","power_w":0.30000000000000004,"#,
        #""setpoint_w":6172.839,"soc_percent":51.25,"state":"running","trips":["OVER_TEMPERATURE","CELL_UNDERVOLTAGE"]},"#,
        #"{"allowed_charge_w":100000,"allowed_discharge_w":100000,"droop_w":9.007199254740994e+15,"held_by":null,"#,
        #""id":"U6","latched":["OVER_TEMPERATURE"],"mode":"auto","power_w":-12000.5,"setpoint_w":-9007199254740992,"#,
        #""soc_percent":51.25,"state":"running","trips":["OVER_TEMPERATURE","CELL_UNDERVOLTAGE"]},{"allowed_charge_w":100000,"#,
        #""allowed_discharge_w":100000,"droop_w":-0.7000000000000001,"held_by":null,"id":"U7 \"quoted\" \\ tab\t °C","#,
        #""latched":["OVER_TEMPERATURE"],"mode":"auto","power_w":-12000.5,"setpoint_w":8641.9746,"soc_percent":51.25,"#,
        #""state":"running","trips":["OVER_TEMPERATURE","CELL_UNDERVOLTAGE"]}],"uplink":{"acknowledged_seq":1000,"#,
        #""backlog_records":4,"connected":true,"last_ack_unix":1800000000.25,"last_error":null,"site":"S1","transport":"mqtt","#,
        #""url":"mqtts://broker:8883"},"version":"0.1.0"}"#,
    ].joined()

    @Test("the status answer's bytes are those bessd has always written")
    func pinnedStatusBytes() {
        var status = Self.status
        status.units[7].id = "U7 \"quoted\" \\ tab\t °C"
        status.units[6].setpointW = -9_007_199_254_740_992
        status.units[6].droopW = 9_007_199_254_740_994
        status.units[5].powerW = 0.1 + 0.2
        status.agc = AGCReply(configured: true, inService: true, targetW: -1e-9, following: true, followedW: -0.0, signalLost: false,
                              remainingS: 4.75, upperLimitW: .infinity, lowerLimitW: -.nan, rampWPerS: 80_000)
        let text = String(decoding: status.line, as: UTF8.self)
        #expect(text == Self.pinnedStatus + "\n", "\(text)")
    }

    @Test("optional fields: absent where bessd always left them out, null where it wrote null")
    func absentOrNull() {
        let unit = Self.text(Self.unit(0))
        #expect(!unit.contains("\"override\"") && !unit.contains("\"dispatch\"") && !unit.contains("held_until_unix"))
        #expect(unit.contains(#""held_by":null"#) && unit.contains(#""soc_percent":null"#))
        #expect(Self.text(InputsReply(configured: false, lost: nil)) == #"{"configured":false}"#)
        #expect(Self.text(MeterReply(configured: false)) == #"{"configured":false}"#)
        let http = Self.text(UplinkReply(transport: "http", url: "https://a", site: "S", connected: false))
        #expect(http.contains(#""last_error":null"#) && !http.contains("last_ack_unix"))
        let mqtt = Self.text(UplinkReply(transport: "mqtt", url: "mqtt://b", site: "S", connected: false))
        #expect(mqtt.contains(#""last_ack_unix":null"#))
        let noSender = Self.text(UplinkReply(transport: "mqtt", url: "mqtt://b", site: "S"))
        #expect(!noSender.contains("last_error") && !noSender.contains("connected"))
        let selfConsumption = Self.text(ApplicationReply(name: "self_consumption", active: false, targetW: 0, socReservePercent: 10,
                                                         targetGridW: 0))
        #expect(!selfConsumption.contains("recharge_below_w") && selfConsumption.contains(#""target_grid_w":0"#))
    }

    @Test("a reply carrying a hostile string stays one line and reads back the same string")
    func hostileReply() throws {
        var unit = Self.unit(1)
        unit.id = Self.hostile
        unit.trips = [Self.hostile]
        let reply = FaultsReply(faults: [FaultReply(unit: Self.hostile, code: Self.hostile, latched: true, explanation: Self.hostile)])
        for bytes in [JSONText.line(unit), reply.line, ConfigReply(path: Self.hostile, text: Self.hostile).line,
                      ControlFailure("BAD_REQUEST", Self.hostile).line] {
            #expect(bytes.filter { $0 == 0x0A }.count == 1 && bytes.last == 0x0A, "one line")
            #expect(!bytes.dropLast().contains { $0 < 0x20 }, "no raw control character")
        }
        #expect(try JSONDecoder().decode(UnitReply.self, from: Data(JSONText.encode(unit))).id == Self.hostile)
        #expect(try Self.roundTrip(reply).faults[0].explanation == Self.hostile)
        let outcome = try JSONDecoder().decode(ControlOutcome.self, from: Data(ControlFailure("BAD_REQUEST", Self.hostile).line))
        #expect(outcome.ok == false && outcome.message == Self.hostile, "a quoted ok:false inside the message is text, not a key")
    }
}
