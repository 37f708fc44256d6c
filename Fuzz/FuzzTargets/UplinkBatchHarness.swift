import BessBase
import ControlCore
import Foundation
import Uplink
import UplinkIngest

/// A record batch as an aggregator receives it from a site (MQTT or HTTP). Invariants: the direct
/// reader and `JSONDecoder` agree on whether it is a batch, and on every value in it (a record's time
/// bit for bit); every record text and unit text cut from the payload decodes to the record and unit
/// beside it, so what is stored as text never says other than the stored columns.
enum UplinkBatchHarness {
    static func run(_ input: inout FuzzInput) -> [String] {
        let payload = input.rest()
        var violations = Violations()
        let reference = try? JSONDecoder().decode(RecordBatch.self, from: Data(payload))
        let received = try? ReceivedBatch(payload: payload)
        violations.check((reference == nil) == (received == nil),
                         "JSONDecoder \(reference == nil ? "refused" : "took") it, ReceivedBatch \(received == nil ? "refused" : "took") it")
        guard let reference, let received else { return violations.list }
        violations.check(received.batch.records == reference.records, "records differ from JSONDecoder's")
        violations.check(received.batch.acks == reference.acks, "acks differ from JSONDecoder's")
        violations.check(received.batch.site == reference.site && received.batch.protocolVersion == reference.protocolVersion,
                         "site or protocol version differs from JSONDecoder's")
        for (a, b) in zip(received.batch.records, reference.records) where a.time.bitPattern != b.time.bitPattern {
            violations.check(false, "time \(a.time) read, \(b.time) decoded")
        }
        violations.check(received.recordTexts.count == received.batch.records.count
                         && received.unitTexts.count == received.batch.records.count, "not one text per record")
        for (index, record) in received.batch.records.enumerated() where index < received.recordTexts.count {
            let back = try? JSONDecoder().decode(UplinkRecord.self, from: Data(received.recordTexts[index].utf8))
            violations.check(back == record, "record \(index)'s text does not decode to the record")
            guard case .telemetry(_, _, _, let units, _) = record.body, index < received.unitTexts.count else { continue }
            let texts = received.unitTexts[index]
            violations.check(texts.count == units.count, "record \(index): \(texts.count) unit texts for \(units.count) units")
            for (unit, text) in zip(units, texts) {
                violations.check((try? JSONDecoder().decode(UnitTelemetry.self, from: Data(text.utf8))) == unit,
                                 "record \(index): unit \(unit.id)'s text does not decode to the unit")
            }
        }
        return violations.list
    }

    /// Batches as bessd sends them: every record type (a utility control among the events), nulls, a newer field, escapes.
    static func seeds() -> [[UInt8]] {
        let unit = UnitTelemetry(id: "U1", state: "running", socPercent: 61.5, sohPercent: nil, powerW: 4000, setpointW: 4000,
                                 voltageV: 52.1, currentA: -76.8, temperatureMinC: 24, temperatureMaxC: 25, allowedChargeW: 100_000,
                                 allowedDischargeW: 100_000, trips: ["T"], latched: [], bmsOnline: true, inverterOnline: false)
        let batch = RecordBatch(site: "SITE_1", records: [
            UplinkRecord(seq: 7, time: 1_800_000_000.5, body: .telemetry(frequencyHz: 49.98, cycleP99Us: 180, overruns: 0, units: [unit],
                                                                           site: SiteTelemetry(gridPowerW: nil, bindingLimit: "import",
                                                                                               shortfallW: 0, meterStale: true)),
                         mode: "hil"),
            UplinkRecord(seq: 8, time: 1_800_000_001, body: .availability(units: [
                UnitAvailability(id: "U1", chargePowerW: 1, dischargePowerW: 2, chargeEnergyWh: 3, dischargeEnergyWh: 4),
            ], site: SiteAvailability(upW: 5, downW: 6))),
            UplinkRecord(seq: 9, time: 1_800_000_900, body: .energyBlock(unit: "U1", startUnix: 1_800_000_000, lengthS: 900,
                                                                           chargedKWh: 0, dischargedKWh: 1.0, coveredS: 900),
                         mode: "hardware", clock: ["stepped"]),
            UplinkRecord(seq: 10, time: 1_800_000_901, body: .event(unit: nil, kind: "latched", code: "THERMAL_RUNAWAY",
                                                                     message: "U1 \"THERMAL\" é\n")),
            UplinkRecord(seq: 11, time: 1_800_000_902, body: .spoolDrop(count: 42)),
            UplinkRecord(seq: 12, time: 1e-5, body: .gridEnergyBlock(startUnix: 0, lengthS: 900, importedKWh: 41.5, exportedKWh: 0.25,
                                                                      coveredS: 897.5)),
            UplinkRecord(seq: 13, time: 1_800_000_903, body: .utilityControl(
                UtilityControlRecord(mRID: "A1\u{1b}", program: "P1", outcome: "taken", start: 1_800_000_000, end: 1_800_000_060,
                                     limits: UtilityControlLimits(exportLimitW: 1500, fixedW: -2e4)), message: "UTILITY_CONTROL taken")),
            // Issue 60's block report, read by the aggregator's fast reader (ScheduleBlockFields) and checked at ingest.
            UplinkRecord(seq: 14, time: 1_800_000_904, body: .scheduleBlock(
                ScheduleBlockRecord(startUnix: 1_800_000_000, lengthS: 900, targetKWh: -12.5, deliveredKWh: -12.25, droopKWh: 0.27,
                                    deviationKWh: -0.02, deviationPct: -0.05, boundBy: "import_limit", revision: 2))),
        ], acks: [CommandAck(id: "c-1", accepted: false, reason: "power_kw 500 beyond the rating ±100 kW")])
        let encoded = Array((try? JSONEncoder().encode(batch)) ?? Data())
        let newer = Array(#"""
            {"protocol_version":1,"site":"S","acks":[],"records":[{"seq":1,"time":2,"type":"telemetry","cycle_p99_us":1,"overruns":0,
             "units":[{"id":"U","state":"s","setpoint_w":0,"allowed_charge_w":1,"allowed_discharge_w":1,"trips":[],"latched":[],
             "bms_online":true,"inverter_online":true,"cells":{"n":[1,2.5e3,null,true]}}],"clock":[],"site":null}]}
            """#.utf8)
        return [encoded, newer, Array("{}".utf8)]
    }
}
