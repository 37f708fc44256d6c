public import BessBase
public import Foundation

/// One band of a time-of-day tariff: from `fromMinute` (inclusive) to `toMinute` (exclusive), minutes
/// after local midnight; a band whose end is not after its start wraps past midnight (22:00–06:00).
public struct TariffBand: Sendable, Equatable, Codable {
    /// Start, minutes after local midnight (0 ..< 1440).
    public var fromMinute: Int
    /// End, minutes after local midnight (1 ... 1440; 1440 is "24:00").
    public var toMinute: Int
    /// Import price per kWh in the band.
    public var importPerKWh: Double
    /// Export price per kWh in the band.
    public var exportPerKWh: Double
    /// The configuration line the band was read from (0: unknown), for errors.
    public var line: Int

    /// A band from minutes.
    public init(fromMinute: Int, toMinute: Int, importPerKWh: Double, exportPerKWh: Double, line: Int = 0) {
        self.fromMinute = fromMinute
        self.toMinute = toMinute
        self.importPerKWh = importPerKWh
        self.exportPerKWh = exportPerKWh
        self.line = line
    }

    /// A band from its configuration text: `from` and `to` as "HH:MM" ("24:00" only as `to`).
    public init(from: String, to: String, importPerKWh: Double, exportPerKWh: Double, line: Int = 0) throws(PlanningError) {
        self.init(fromMinute: try Self.minute(from, line: line, end: false), toMinute: try Self.minute(to, line: line, end: true),
                  importPerKWh: importPerKWh, exportPerKWh: exportPerKWh, line: line)
    }

    /// Minutes after midnight of "HH:MM" (00:00–23:59, and 24:00 when `end`).
    public static func minute(_ text: String, line: Int, end: Bool) throws(PlanningError) -> Int {
        let bytes = Array(text.utf8)
        func digit(_ k: Int) -> Int? { bytes[k] >= 48 && bytes[k] <= 57 ? Int(bytes[k] - 48) : nil }
        guard bytes.count == 5, bytes[2] == UInt8(ascii: ":"), let h1 = digit(0), let h2 = digit(1), let m1 = digit(3), let m2 = digit(4) else {
            throw Tariff.invalid(line, "time \(TextQuoting.quoted(text, limit: 16)) is not HH:MM")
        }
        let hour = h1 * 10 + h2, minute = m1 * 10 + m2
        guard minute < 60, hour < 24 || (end && hour == 24 && minute == 0) else {
            throw Tariff.invalid(line, "time \(text) is not a time of day\(end ? " (24:00 allowed as an end)" : "")")
        }
        return hour * 60 + minute
    }
}

/// A time-of-day tariff: bands for weekdays (Monday–Friday) and weekends (Saturday, Sunday) in the
/// gateway's local time zone; each list covers the day exactly once.
public struct Tariff: Sendable, Equatable {
    /// Monday to Friday.
    public let weekdays: [TariffBand]
    /// Saturday and Sunday.
    public let weekends: [TariffBand]
    /// The zone the bands' times are in.
    public let timeZone: TimeZone
    private let weekdayPrices: [Int8]
    private let weekendPrices: [Int8]

    /// A tariff, refused unless each list's bands cover every minute of the day exactly once and every
    /// price is finite (`PLAN_TARIFF_INVALID`, naming the band's line). At most 127 bands per list.
    public init(weekdays: [TariffBand], weekends: [TariffBand], timeZone: TimeZone) throws(PlanningError) {
        self.weekdays = weekdays
        self.weekends = weekends
        self.timeZone = timeZone
        weekdayPrices = try Self.cover(weekdays, "weekdays")
        weekendPrices = try Self.cover(weekends, "weekends")
    }

    /// The import and export price for an instant: the band holding its local time of day, on its local
    /// day's weekday type.
    public func price(atUnixSeconds unix: Int64) -> (importPerKWh: Double, exportPerKWh: Double) {
        let offset = Int64(timeZone.secondsFromGMT(for: Date(timeIntervalSince1970: TimeInterval(unix))))
        let local = unix + offset
        let day = local >= 0 ? local / 86_400 : (local - 86_399) / 86_400
        let minute = Int((local - day * 86_400) / 60)
        let weekday = Int(((day + 4) % 7 + 7) % 7)  // 1970-01-01 was a Thursday; 0 = Sunday
        let weekend = weekday == 0 || weekday == 6
        let band = weekend ? weekends[Int(weekendPrices[minute])] : weekdays[Int(weekdayPrices[minute])]
        return (band.importPerKWh, band.exportPerKWh)
    }

    static func invalid(_ line: Int, _ what: String) -> PlanningError {
        PlanningError(.tariffInvalid, message: line > 0 ? "line \(line): \(what)" : what)
    }

    /// The band index of every minute of the day; refuses overlap, gaps and non-finite prices.
    private static func cover(_ bands: [TariffBand], _ list: String) throws(PlanningError) -> [Int8] {
        guard !bands.isEmpty, bands.count <= 127 else { throw invalid(0, "\(list): \(bands.count) bands (1...127)") }
        var owner = [Int8](repeating: -1, count: 1440)
        for (k, band) in bands.enumerated() {
            guard band.importPerKWh.isFinite, band.exportPerKWh.isFinite else { throw invalid(band.line, "\(list): a price is not finite") }
            guard (0..<1440).contains(band.fromMinute), (1...1440).contains(band.toMinute) else {
                throw invalid(band.line, "\(list): band \(k + 1) is outside the day")
            }
            var minute = band.fromMinute
            repeat {
                if owner[minute] >= 0 {
                    throw invalid(band.line, "\(list): band \(k + 1) overlaps band \(owner[minute] + 1) at \(clock(minute))")
                }
                owner[minute] = Int8(k)
                minute = (minute + 1) % 1440
            } while minute != band.toMinute % 1440
        }
        if let gap = owner.firstIndex(of: -1) { throw invalid(0, "\(list): no band covers \(clock(gap))") }
        return owner
    }

    private static func clock(_ minute: Int) -> String {
        let h = minute / 60, m = minute % 60
        return "\(h < 10 ? "0" : "")\(h):\(m < 10 ? "0" : "")\(m)"
    }
}
