import BessBase
import Foundation
import Testing
@testable import Planning

/// The optimiser's inputs: tariff bands, forecast files, RFC 3339, persistence, the problem builder.
@Suite struct PlanInputsTests {
    static let kolkata = TimeZone(identifier: "Asia/Kolkata")!
    static let weekends = [TariffBand(fromMinute: 0, toMinute: 1440, importPerKWh: 7, exportPerKWh: 2, line: 14)]

    /// Kerala's older industrial shape: normal 06–18, peak 18–22, off-peak 22–06 (wrapping midnight).
    static func tariff() throws -> Tariff {
        try Tariff(
            weekdays: [
                TariffBand(from: "06:00", to: "18:00", importPerKWh: 8, exportPerKWh: 3, line: 10),
                TariffBand(from: "18:00", to: "22:00", importPerKWh: 12, exportPerKWh: 3, line: 11),
                TariffBand(from: "22:00", to: "06:00", importPerKWh: 6, exportPerKWh: 3, line: 12),
            ],
            weekends: [TariffBand(from: "00:00", to: "24:00", importPerKWh: 7, exportPerKWh: 2, line: 14)],
            timeZone: kolkata)
    }

    @Test func tariffPricesByLocalTimeAndWeekdayType() throws {
        let t = try Self.tariff()
        #expect(t.price(atUnixSeconds: 1_796_013_000) == (8, 3))  // Monday 2026-11-30 10:00 IST
        #expect(t.price(atUnixSeconds: 1_796_013_000 + 9 * 3600) == (12, 3))  // 19:00 IST
        #expect(t.price(atUnixSeconds: 1_796_013_000 + 13 * 3600) == (6, 3))  // 23:00 IST
        #expect(t.price(atUnixSeconds: 1_795_926_600) == (7, 2))  // Sunday 2026-11-29 10:00 IST
        #expect(t.price(atUnixSeconds: 1_795_822_200) == (7, 2))  // Saturday 05:00 IST = Friday 23:30 UTC
    }

    @Test func tariffFollowsDaylightSavingTime() throws {
        let berlin = TimeZone(identifier: "Europe/Berlin")!
        let t = try Tariff(
            weekdays: [TariffBand(from: "00:00", to: "24:00", importPerKWh: 1, exportPerKWh: 0)],
            weekends: [TariffBand(from: "00:00", to: "02:00", importPerKWh: 1, exportPerKWh: 0),
                       TariffBand(from: "02:00", to: "24:00", importPerKWh: 2, exportPerKWh: 0)],
            timeZone: berlin)
        #expect(t.price(atUnixSeconds: 1_774_744_200).importPerKWh == 1)  // Sunday 2026-03-29 01:30 CET
        #expect(t.price(atUnixSeconds: 1_774_747_800).importPerKWh == 2)  // 03:30 CEST, one hour later
    }

    @Test func tariffRefusesOverlapGapsAndBadTimesByLine() throws {
        func error(_ weekdays: [TariffBand]) -> PlanningError? {
            do throws(PlanningError) { _ = try Tariff(weekdays: weekdays, weekends: Self.weekends, timeZone: Self.kolkata) } catch { return error }
            return nil
        }
        let overlap = error([TariffBand(fromMinute: 0, toMinute: 1440, importPerKWh: 1, exportPerKWh: 0, line: 3),
                             TariffBand(fromMinute: 600, toMinute: 660, importPerKWh: 2, exportPerKWh: 0, line: 4)])
        #expect(overlap?.code == .tariffInvalid)
        #expect(overlap?.message.hasPrefix("line 4: weekdays: band 2 overlaps band 1 at 10:00") == true)
        let gap = error([TariffBand(fromMinute: 0, toMinute: 600, importPerKWh: 1, exportPerKWh: 0, line: 3)])
        #expect(gap?.message.contains("no band covers 10:00") == true)
        let nan = error([TariffBand(fromMinute: 0, toMinute: 1440, importPerKWh: .nan, exportPerKWh: 0, line: 7)])
        #expect(nan?.message.hasPrefix("line 7:") == true)
        for text in ["6:00", "24:00", "12:60", "ab:cd", "12-00"] {
            #expect(throws: PlanningError.self) { _ = try TariffBand(from: text, to: "12:00", importPerKWh: 1, exportPerKWh: 0, line: 9) }
        }
        #expect(try TariffBand.minute("24:00", line: 1, end: true) == 1440)
    }

    @Test func rfc3339WithItsOffset() {
        #expect(RFC3339.unixSeconds("2026-11-29T10:15:00+05:30") == 1_795_927_500)
        #expect(RFC3339.unixSeconds("2026-11-29T04:45:00Z") == 1_795_927_500)
        #expect(RFC3339.unixSeconds("2024-02-29T23:59:59.5-08:00") == 1_709_279_999)
        #expect(RFC3339.unixSeconds("2000-03-01t00:00:00z") == 951_868_800)
        #expect(RFC3339.unixSeconds("1970-01-01T00:00:00Z") == 0)
        for bad in ["2026-11-29T10:15:00", "2026-02-29T00:00:00Z", "2026-11-29T24:00:00Z", "2026-11-29T10:15:00+5:30",
                    "2026-11-29T10:15:00.Z", "2026-11-29T10:15Z", "2026-13-01T00:00:00Z", "2026-11-29T10:15:00+05:30 "] {
            #expect(RFC3339.unixSeconds(bad) == nil, "\(bad)")
        }
    }

    @Test func forecastFileParses() throws {
        let text = "# site forecast\r\nstart,load_kw,pv_kw\r\n2026-11-29T10:15:00+05:30,12.5,3\r\n\r\n2026-11-29T04:60:00Z,1,0\n"
        #expect(throws: PlanningError.self) { try ForecastFile.parse(text) }
        let good = "start, load_kw ,pv_kw\n2026-11-29T10:15:00+05:30,12.5,3\n2026-11-29T05:00:00Z,11,0.25\n"
        let points = try ForecastFile.parse(good)
        #expect(points == [ForecastPoint(startUnixSeconds: 1_795_927_500, loadKW: 12.5, pvKW: 3),
                           ForecastPoint(startUnixSeconds: 1_795_928_400, loadKW: 11, pvKW: 0.25)])
    }

    @Test(arguments: [
        ("load,start,pv\n", "line 1: the header"),
        ("start,load_kw,pv_kw\n2026-11-29T10:15:00+05:30,1,2\n2026-11-29T10:15:00+05:30,1,2\n", "line 3: start is not after"),
        ("start,load_kw,pv_kw\n2026-11-29T10:15:00,1,2\n", "line 2: start \"2026-11-29T10:15:00\""),
        ("start,load_kw,pv_kw\n\n2026-11-29T10:15:00Z,-1,2\n", "line 3: load_kw"),
        ("start,load_kw,pv_kw\n2026-11-29T10:15:00Z,1,nan\n", "line 2: pv_kw"),
        ("start,load_kw,pv_kw\n2026-11-29T10:15:00Z,1\n", "line 2: 2 fields"),
        ("", "line 1: no header"),
    ])
    func forecastFileNamesTheBadLine(_ text: String, _ message: String) {
        do {
            _ = try ForecastFile.parse(text)
            Issue.record("accepted")
        } catch {
            #expect(error.code == .forecastInvalid)
            #expect(error.message.hasPrefix(message), "\(error.message)")
        }
    }

    @Test func forecastFileIsBounded() {
        var text = "start,load_kw,pv_kw\n"
        let formatter = ISO8601DateFormatter()
        for k in 0...ForecastFile.maximumRows { text += formatter.string(from: Date(timeIntervalSince1970: Double(k) * 900)) + ",1,0\n" }
        #expect(throws: PlanningError.self) { try ForecastFile.parse(text) }
        do { _ = try ForecastFile.parse(text) } catch { #expect(error.code == .forecastTooLarge) }
        #expect((try? ForecastFile.parse(String(repeating: "#", count: ForecastFile.maximumBytes + 1))) == nil)
    }

    @Test func persistenceUsesYesterdayElseTheLatest() {
        var p = PersistenceForecast(blocks: [(1_000_000, 5), (1_000_900, -2)])
        #expect(p.point(startUnixSeconds: 1_086_400) == ForecastPoint(startUnixSeconds: 1_086_400, loadKW: 5, pvKW: 0))
        #expect(p.point(startUnixSeconds: 1_087_300) == ForecastPoint(startUnixSeconds: 1_087_300, loadKW: 0, pvKW: 2))
        #expect(p.point(startUnixSeconds: 1_090_000)?.pvKW == 2)  // no block yesterday: the latest
        p.forget(before: 1_000_900)
        #expect(p.point(startUnixSeconds: 1_086_400)?.pvKW == 2)
        #expect(PersistenceForecast().point(startUnixSeconds: 0) == nil)
    }

    static let site = PlanProblem(
        slots: [], battery: PlanBattery(capacityKWh: 100, startKWh: 50, lowerKWh: 10, upperKWh: 90, maxChargeKW: 50, maxDischargeKW: 50,
                                        chargeEfficiency: 0.95, dischargeEfficiency: 0.95), wearPerKWh: 0.02)

    @Test func builderStartsWithTheRestOfTheBlock() throws {
        let monday: Int64 = 1_795_927_500 + 86_400  // 2026-11-30 10:15 IST
        let now = monday + 300  // 5 minutes into a 15-minute block
        var request = PlanRequest(nowUnixSeconds: now, blockSeconds: 900, horizonBlocks: 96, tariff: try Self.tariff(),
                                  forecast: [ForecastPoint(startUnixSeconds: monday, loadKW: 12, pvKW: 3)],
                                  persistence: PersistenceForecast(blocks: [(monday + 900 - 86_400, 7)]))
        request.priceSeries = [PricePoint(startUnixSeconds: monday + 900, importPerKWh: 20, exportPerKWh: 1)]
        let p = try PlanBuilder.problem(request, site: Self.site)
        #expect(p.battery == Self.site.battery && p.wearPerKWh == 0.02)
        #expect(p.slots.count == 96)
        #expect(p.slots[0].startUnixSeconds == now && abs(p.slots[0].hours - 600.0 / 3600) < 1e-12)
        #expect(p.slots[1].startUnixSeconds == monday + 900 && p.slots[1].hours == 0.25)
        #expect(p.slots[0].loadKW == 12 && p.slots[0].pvKW == 3)  // the file
        #expect(p.slots[1].loadKW == 7)  // yesterday's block
        #expect(p.slots[2].loadKW == 7)  // no yesterday: the latest
        #expect(p.slots[0].priceImportPerKWh == 8 && p.slots[1].priceImportPerKWh == 20 && p.slots[2].priceImportPerKWh == 8)
        #expect(p.slots[33].priceImportPerKWh == 12)  // 18:30 IST
    }

    @Test func builderFoldsAShortRestIntoTheNextBlock() throws {
        let block: Int64 = 900
        let now = 1_795_927_500 + block - 60
        let p = try PlanBuilder.problem(PlanRequest(nowUnixSeconds: now, blockSeconds: block, horizonBlocks: 4,
                                                    tariff: try Self.tariff()), site: Self.site)
        #expect(abs(p.slots[0].hours - 960.0 / 3600) < 1e-12)
        #expect(p.slots[1].startUnixSeconds == 1_795_927_500 + 2 * block)
        #expect(p.slots.allSatisfy { $0.loadKW == 0 && $0.pvKW == 0 })
    }

    @Test func builderNamesASlotNothingPrices() {
        let request = PlanRequest(nowUnixSeconds: 1_795_927_500, blockSeconds: 900, horizonBlocks: 3,
                                  priceSeries: [PricePoint(startUnixSeconds: 1_795_927_500, importPerKWh: 1, exportPerKWh: 0)])
        do {
            _ = try PlanBuilder.problem(request, site: Self.site)
            Issue.record("accepted")
        } catch {
            #expect(error.code == .priceMissing)
            #expect(error.message.contains("2026-11-29T05:00:00Z"), "\(error.message)")
        }
        var bad = request
        bad.blockSeconds = 30
        #expect(throws: PlanningError.self) { try PlanBuilder.slots(bad) }
    }
}
