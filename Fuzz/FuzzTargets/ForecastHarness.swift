import BessBase
import Foundation
import Planning
import Uplink

/// The optimiser's forecast file (`optimiser.forecast_file`, issue 60) into `ForecastFile.parse`, and
/// the points it gives into `PlanBuilder.problem` with a tariff, optionally a price series and the
/// meter's persistence forecast made from them. The first bytes pick the clock (a day and more from
/// 2026-11-29T00:00Z, to the second), the block length (60–3600 s), the horizon (1–256 slots), the
/// tariff and its zone (half-hour and daylight-saving zones among them); the rest is the file's text.
///
/// Invariants: a refusal is `PLAN_FORECAST_INVALID` naming a line of the file (`line N:`, N at most
/// its line count) or `PLAN_FORECAST_TOO_LARGE`, with a message of printable text (the file's text
/// quoted) of at most 1 KiB; the points are at most `maximumRows`, their starts strictly increasing,
/// their powers finite and ≥ 0; the same file with CRLF line ends for LF (or LF for CRLF) reads alike (points or refusal);
/// an RFC 3339 start read by both the forecast's and the schedule document's reader is the same
/// second; the plan's problem is built (never refused: a tariff prices every slot) with one slot per
/// horizon block, slot 0 from now to the end of its block (or the next, under a tenth left), then
/// whole blocks on their boundaries, every number finite, each slot's load and PV its block's
/// forecast point, else the persistence forecast's, else 0, and its prices the series' point, else
/// the tariff's.
enum ForecastHarness {
    /// 2026-11-29T00:00:00Z: the seeds' day.
    static let base: Int64 = 1_795_910_400
    static let lengths: [Int64] = [900, 60, 300, 1800, 3600]
    static let zones = ["Asia/Kolkata", "UTC", "America/New_York", "Australia/Lord_Howe", "Asia/Kathmandu", "Europe/London"]

    static let site = PlanProblem(
        slots: [],
        battery: PlanBattery(capacityKWh: 200, startKWh: 100, lowerKWh: 20, upperKWh: 190, maxChargeKW: 150, maxDischargeKW: 150,
                             chargeEfficiency: 0.95, dischargeEfficiency: 0.95),
        grid: PlanGrid(importLimitKW: 80, exportLimitKW: 60), wearPerKWh: 0.5, demandChargePerKW: 1, demandThresholdKW: 50,
        valueEndPerKWh: 0.1, endKWh: 100)

    /// The configuration's example (three weekday bands and one all day at weekends), or one band
    /// wrapping past midnight with negative and inverted prices.
    static func tariff(_ pick: UInt8, zone: TimeZone) -> Tariff? {
        let weekdays = pick & 1 == 0
            ? [TariffBand(fromMinute: 0, toMinute: 540, importPerKWh: 7.5, exportPerKWh: 3), TariffBand(fromMinute: 540, toMinute: 1020, importPerKWh: 6, exportPerKWh: 3),
               TariffBand(fromMinute: 1020, toMinute: 1380, importPerKWh: 9, exportPerKWh: 3), TariffBand(fromMinute: 1380, toMinute: 1440, importPerKWh: 7.5, exportPerKWh: 3)]
            : [TariffBand(fromMinute: 1320, toMinute: 390, importPerKWh: -2, exportPerKWh: 4), TariffBand(fromMinute: 390, toMinute: 1320, importPerKWh: 12.25, exportPerKWh: -0.5)]
        return try? Tariff(weekdays: weekdays, weekends: [TariffBand(fromMinute: 0, toMinute: 1440, importPerKWh: 7.5, exportPerKWh: 3)], timeZone: zone)
    }

    static func run(_ input: inout FuzzInput) -> [String] {
        let flags = input.u8()
        let now = base + Int64(input.u16()) * 30 + Int64(input.u8() % 60)
        let block = lengths[Int(input.u8()) % lengths.count]
        let horizon = 1 + Int(input.u8())
        let zone = TimeZone(identifier: zones[Int(flags >> 4) % zones.count]) ?? TimeZone(secondsFromGMT: 0) ?? .current
        let bytes = input.rest()
        let text = String(decoding: bytes, as: UTF8.self)
        var violations = Violations()
        let points: [ForecastPoint]
        let parsed = Result { () throws(PlanningError) in try ForecastFile.parse(text) }
        // The same lines with the other line ends (LF to CRLF, or CRLF to LF when every CR ends a line).
        let other = otherLineEnds(bytes)
        if let other, other.count <= ForecastFile.maximumBytes {
            let again = Result { () throws(PlanningError) in try ForecastFile.parse(String(decoding: other, as: UTF8.self)) }
            violations.check(same(parsed, again), "with the other line ends: \(describe(again)), not \(describe(parsed))")
        }
        compareReaders(text, &violations)
        switch parsed {
        case .failure(let error):
            let lines = text.utf8.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).count
            violations.check(error.code == .forecastInvalid || error.code == .forecastTooLarge, "refused with \(error.code)")
            if error.code == .forecastInvalid {
                let number = error.message.hasPrefix("line ") ? Int(error.message.dropFirst(5).prefix { $0.isNumber }) : nil
                violations.check(number.map { (1...max(1, lines)).contains($0) } ?? false, "the refusal names no line of \(lines): \(error.message.prefix(40))")
            }
            ScheduleHarness.checkText(error.message, "the refusal", &violations)
            return violations.list
        case .success(let read): points = read
        }
        violations.check(points.count <= ForecastFile.maximumRows, "\(points.count) points")
        for (k, p) in points.enumerated() {
            violations.check(p.loadKW.isFinite && p.loadKW >= 0 && p.pvKW.isFinite && p.pvKW >= 0, "point \(k): load \(p.loadKW), pv \(p.pvKW)")
            if k > 0 { violations.check(points[k - 1].startUnixSeconds < p.startUnixSeconds, "point \(k) not after the one before") }
        }
        guard let tariff = tariff(flags >> 2, zone: zone) else { return violations.list + ["the harness's tariff refused"] }
        let series = flags & 1 != 0
            ? points.map { PricePoint(startUnixSeconds: $0.startUnixSeconds, importPerKWh: $0.loadKW - $0.pvKW, exportPerKWh: $0.pvKW / 2) } : []
        let persistence = flags & 2 != 0
            ? PersistenceForecast(blocks: points.prefix(8).map { (startUnixSeconds: $0.startUnixSeconds + 86_400, netKW: $0.loadKW - $0.pvKW) }) : nil
        let request = PlanRequest(nowUnixSeconds: now, blockSeconds: block, horizonBlocks: horizon, tariff: tariff, priceSeries: series,
                                  forecast: points, persistence: persistence)
        let problem: PlanProblem
        do throws(PlanningError) {
            problem = try PlanBuilder.problem(request, site: site)
        } catch {
            violations.check(false, "the plan's problem refused: \(error.description.prefix(160))")
            return violations.list
        }
        check(problem.slots, request, &violations)
        return violations.list
    }

    static func check(_ slots: [PlanSlotInput], _ r: PlanRequest, _ violations: inout Violations) {
        violations.check(slots.count == r.horizonBlocks, "\(slots.count) slots for a horizon of \(r.horizonBlocks)")
        let block = r.blockSeconds
        var start = r.nowUnixSeconds
        for (t, slot) in slots.enumerated() {
            let seconds = (slot.hours * 3600).rounded()
            violations.check(slot.startUnixSeconds == start, "slot \(t) starts at \(slot.startUnixSeconds), not \(start)")
            violations.check(slot.hours.isFinite && slot.hours > 0 && abs(slot.hours * 3600 - seconds) < 1e-6, "slot \(t): \(slot.hours) h")
            let end = start + Int64(seconds)
            violations.check(end % block == 0, "slot \(t) ends off the block boundary")
            if t == 0 {
                violations.check(Int64(seconds) <= 2 * block && Double(end - r.nowUnixSeconds) >= Double(block) / 10 - 1,
                                 "slot 0 of \(Int64(seconds)) s")
            } else {
                violations.check(Int64(seconds) == block, "slot \(t) of \(Int64(seconds)) s")
            }
            let blockStart = start - ((start % block) + block) % block
            let point = r.forecast.last { $0.startUnixSeconds <= blockStart }.flatMap { blockStart - $0.startUnixSeconds < block ? $0 : nil }
                ?? r.persistence?.point(startUnixSeconds: blockStart)
            violations.check(slot.loadKW == (point?.loadKW ?? 0) && slot.pvKW == (point?.pvKW ?? 0),
                             "slot \(t): load \(slot.loadKW), pv \(slot.pvKW), not the block's forecast \(point.map { "\($0.loadKW), \($0.pvKW)" } ?? "none")")
            let priced = r.priceSeries.last { $0.startUnixSeconds <= start }.flatMap { start - $0.startUnixSeconds < block ? $0 : nil }
            let price = priced.map { ($0.importPerKWh, $0.exportPerKWh) } ?? r.tariff.map { $0.price(atUnixSeconds: start) } ?? (.nan, .nan)
            violations.check(slot.priceImportPerKWh == price.0 && slot.priceExportPerKWh == price.1,
                             "slot \(t): prices \(slot.priceImportPerKWh), \(slot.priceExportPerKWh), not \(price.0), \(price.1)")
            violations.check([slot.loadKW, slot.pvKW, slot.priceImportPerKWh, slot.priceExportPerKWh].allSatisfy(\.isFinite), "slot \(t) not finite")
            start = end
        }
    }

    /// Each line's first field, where both RFC 3339 readers of the tree take it (years from 1600: the
    /// schedule document's reader goes through Foundation's Gregorian calendar, Julian before 1582).
    static func compareReaders(_ text: String, _ violations: inout Violations) {
        for line in text.utf8.split(separator: UInt8(ascii: "\n")).prefix(64) {
            let field = String(decoding: line.prefix { $0 != UInt8(ascii: ",") }, as: UTF8.self)
            guard field.utf8.count >= 20, let year = Int(field.prefix(4)), year >= 1600,
                  let a = RFC3339.unixSeconds(field), let b = ScheduleDocument.unixSeconds(rfc3339: field) else { continue }
            violations.check(a == b, "RFC 3339 \(TextQuoting.quoted(field, limit: 40)): \(a) in the forecast, \(b) in a schedule")
        }
    }

    /// LF line ends as CRLF, or CRLF ones as LF; nil when a CR stands elsewhere than before an LF.
    static func otherLineEnds(_ bytes: [UInt8]) -> [UInt8]? {
        let cr = UInt8(ascii: "\r"), lf = UInt8(ascii: "\n")
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count + bytes.count / 8)
        guard bytes.contains(cr) else {
            for byte in bytes { if byte == lf { out.append(cr) }; out.append(byte) }
            return out
        }
        for k in bytes.indices {
            guard bytes[k] == cr else {
                out.append(bytes[k])
                continue
            }
            guard k + 1 < bytes.count, bytes[k + 1] == lf else { return nil }
        }
        return out
    }

    static func same(_ a: Result<[ForecastPoint], PlanningError>, _ b: Result<[ForecastPoint], PlanningError>) -> Bool {
        switch (a, b) {
        case (.success(let x), .success(let y)): x == y
        case (.failure(let x), .failure(let y)): x.code == y.code && x.message == y.message
        default: false
        }
    }

    static func describe(_ r: Result<[ForecastPoint], PlanningError>) -> String {
        switch r {
        case .success(let points): "\(points.count) points"
        case .failure(let error): String(error.description.prefix(80))
        }
    }

    static func seeds() -> [[UInt8]] {
        // flags 0: Asia/Kolkata, the example tariff, no series, no persistence; now 2026-11-29T00:00Z; 900 s blocks.
        let head: (UInt8, UInt8, UInt8) -> [UInt8] = { flags, length, horizon in [flags, 0, 0, 0, length, horizon] }
        var day = "# forecast for 2026-11-29, IST\nstart,load_kw,pv_kw\n"
        for k in 0..<96 {
            let minutes = 330 + k * 15  // from 05:30 IST = 00:00Z
            let hour = minutes / 60 % 24, minute = minutes % 60
            day += "2026-11-\(minutes >= 1440 ? 30 : 29)T\(hour < 10 ? "0" : "")\(hour):\(minute < 10 ? "0" : "")\(minute):00+05:30,"
                + "\(40 + k % 7 * 5),\(k >= 24 && k < 72 ? Double((k - 24) * (72 - k)) / 8 : 0)\n"
        }
        let edges = [
            "start, load_kw ,pv_kw\n\n2026-11-29T00:15:00Z,12.5,3\n# gap\n2026-11-29T01:00:00.250Z,11,0.25\n2026-11-29 02:00:00-01:00,0,1e3\n",
            "start,load_kw,pv_kw\r\n2026-11-29T00:15:00Z,12.5,3\r\n",
            "start,load_kw,pv_kw\n2026-11-29T00:15:00Z,1,2\n2026-11-29T00:15:00Z,1,2\n",
            "start,load_kw,pv_kw\n2026-11-29T00:15:00,1,2\n",
            "start,load_kw,pv_kw\n2026-11-29T00:15:00Z,-1,2\n",
            "start,load_kw,pv_kw\n2026-11-29T00:15:00Z,1,nan\n",
            "start,load_kw,pv_kw\n2026-11-29T00:15:00Z,1e309,0\n",
            "start,load_kw,pv_kw\n2026-11-29T00:15:00Z,1\n",
            "load_kw,start,pv_kw\n",
            "",
            "start,load_kw,pv_kw\n2024-02-29T23:59:59+14:00,0x1p4,0\n0000-01-01T00:00:00Z,1,1\n",
            "start,load_kw,pv_kw\n9999-12-31T23:59:59-23:59,1,1\n2026-11-29T00:15:00\u{1b}[2J,1,1\n",
        ]
        return [head(0x00, 0, 95) + Array(day.utf8), head(0x01, 1, 255) + Array(day.utf8), head(0x36, 4, 48) + Array(day.utf8),
                head(0x46, 2, 0) + Array(edges[0].utf8)]
            + edges.map { head(0x20, 0, 8) + Array($0.utf8) }
    }
}
