public import BessBase
import ControlCore

/// The seven-octet time tag CP56Time2a (IEC 60870-5-4 §6.8): milliseconds within the minute
/// (16 bits, little-endian), minute (6 bits, IV = invalid in bit 7), hour (5 bits, SU = summer time
/// in bit 7), day of month (5 bits) with day of week (3 bits, 0 = not used, 1 = Monday … 7 = Sunday),
/// month (4 bits), year within the century (7 bits). It carries no zone: `TimeBase` says which.
public struct CP56Time2a: Hashable, Sendable, CustomStringConvertible {
    /// Milliseconds within the minute, 0…59 999.
    public var milliseconds: UInt16
    /// Minute, 0…59.
    public var minute: UInt8
    /// Hour, 0…23.
    public var hour: UInt8
    /// Day of the month, 1…31 (and valid for the month).
    public var day: UInt8
    /// Day of the week, 1 = Monday … 7 = Sunday; 0 when not used.
    public var dayOfWeek: UInt8
    /// Month, 1…12.
    public var month: UInt8
    /// Year within 2000…2099, as 0…99.
    public var year: UInt8
    /// IV: the time is not valid (the sender's clock is not synchronised).
    public var invalid: Bool
    /// SU: summer time.
    public var summerTime: Bool

    /// A time tag from its fields; `validate()` checks them (encoding checks too).
    public init(year: UInt8, month: UInt8, day: UInt8, hour: UInt8, minute: UInt8, milliseconds: UInt16,
                dayOfWeek: UInt8 = 0, invalid: Bool = false, summerTime: Bool = false) {
        self.year = year
        self.month = month
        self.day = day
        self.hour = hour
        self.minute = minute
        self.milliseconds = milliseconds
        self.dayOfWeek = dayOfWeek
        self.invalid = invalid
        self.summerTime = summerTime
    }

    /// Decodes seven octets; a field out of range or a reserved bit set is `IEC104_BAD_TIME`.
    public init(decoding bytes: some Collection<UInt8>) throws(IEC104Error) {
        let b = Array(bytes)
        guard b.count == 7 else { throw IEC104Error(.badTime, message: "CP56Time2a of \(b.count) octets, not 7") }
        guard b[2] & 0x40 == 0, b[3] & 0x60 == 0, b[5] & 0xF0 == 0, b[6] & 0x80 == 0 else {
            throw IEC104Error(.badTime, message: "CP56Time2a with a reserved bit set")
        }
        self.init(year: b[6] & 0x7F, month: b[5] & 0x0F, day: b[4] & 0x1F, hour: b[3] & 0x1F, minute: b[2] & 0x3F,
                  milliseconds: UInt16(b[0]) | UInt16(b[1]) << 8, dayOfWeek: b[4] >> 5,
                  invalid: b[2] & 0x80 != 0, summerTime: b[3] & 0x80 != 0)
        try validate()
    }

    /// Refuses fields out of range: `IEC104_BAD_TIME`.
    public func validate() throws(IEC104Error) {
        guard milliseconds <= 59_999 else { throw IEC104Error(.badTime, message: "milliseconds \(milliseconds) over 59999") }
        guard minute <= 59 else { throw IEC104Error(.badTime, message: "minute \(minute) over 59") }
        guard hour <= 23 else { throw IEC104Error(.badTime, message: "hour \(hour) over 23") }
        guard month >= 1, month <= 12 else { throw IEC104Error(.badTime, message: "month \(month) outside 1…12") }
        guard year <= 99 else { throw IEC104Error(.badTime, message: "year \(year) over 99") }
        guard dayOfWeek <= 7 else { throw IEC104Error(.badTime, message: "day of week \(dayOfWeek) over 7") }
        let days = Self.daysIn(month: Int(month), year: 2000 + Int(year))
        guard day >= 1, Int(day) <= days else {
            throw IEC104Error(.badTime, message: "day \(day) outside 1…\(days) of month \(month)")
        }
    }

    /// Appends the seven octets (the fields must be valid: see `validate()`).
    public func encode(into bytes: inout [UInt8]) {
        bytes.append(UInt8(truncatingIfNeeded: milliseconds))
        bytes.append(UInt8(truncatingIfNeeded: milliseconds >> 8))
        bytes.append(minute & 0x3F | (invalid ? 0x80 : 0))
        bytes.append(hour & 0x1F | (summerTime ? 0x80 : 0))
        bytes.append(day & 0x1F | (dayOfWeek & 0x07) << 5)
        bytes.append(month & 0x0F)
        bytes.append(year & 0x7F)
    }

    /// The seven octets.
    public var encoded: [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(7)
        encode(into: &bytes)
        return bytes
    }

    /// The time tag for a wall-clock instant (milliseconds since 1970-01-01 UTC) in `base`, with
    /// the day of the week set. A time whose local year is outside 2000…2099 is `IEC104_BAD_TIME`.
    public init(unixMilliseconds: Int64, base: TimeBase = .utc, invalid: Bool = false) throws(IEC104Error) {
        // Years 1900…2200 bound the arithmetic below (no overflow for any Int64); the century check follows.
        guard unixMilliseconds > -2_208_988_800_000, unixMilliseconds < 7_258_118_400_000 else {
            throw IEC104Error(.badTime, message: "\(unixMilliseconds) ms since 1970 is outside 2000…2099")
        }
        let local = unixMilliseconds + Int64(base.offsetMinutes) * 60_000
        let days = Self.floorDivide(local, 86_400_000)
        let inDay = local - days * 86_400_000
        let (year, month, day) = Self.civil(fromDays: days)
        guard (2000...2099).contains(year) else { throw IEC104Error(.badTime, message: "year \(year) outside 2000…2099") }
        // 1970-01-01 was a Thursday (4 with Monday = 1).
        let weekday = Self.floorModulo(days + 3, 7) + 1
        self.init(year: UInt8(year - 2000), month: UInt8(month), day: UInt8(day), hour: UInt8(inDay / 3_600_000),
                  minute: UInt8(inDay / 60_000 % 60), milliseconds: UInt16(inDay % 60_000), dayOfWeek: UInt8(weekday),
                  invalid: invalid)
    }

    /// Milliseconds since 1970-01-01 UTC of this tag read in `base` (the SU and day-of-week fields
    /// are not used: the base's fixed offset decides). Invalid fields are `IEC104_BAD_TIME`.
    public func unixMilliseconds(base: TimeBase = .utc) throws(IEC104Error) -> Int64 {
        try validate()
        let days = Self.days(fromCivil: 2000 + Int64(year), Int64(month), Int64(day))
        let local = days * 86_400_000 + Int64(hour) * 3_600_000 + Int64(minute) * 60_000 + Int64(milliseconds)
        return local - Int64(base.offsetMinutes) * 60_000
    }

    /// `2026-11-27 02:14:07.184` (with ` IV`/` SU` when set).
    public var description: String {
        func two(_ v: Int) -> String { v < 10 ? "0\(v)" : "\(v)" }
        let ms = Int(milliseconds) % 1000
        let msText = ms < 10 ? "00\(ms)" : ms < 100 ? "0\(ms)" : "\(ms)"
        return "\(2000 + Int(year))-\(two(Int(month)))-\(two(Int(day))) \(two(Int(hour))):\(two(Int(minute))):"
            + "\(two(Int(milliseconds) / 1000)).\(msText)\(invalid ? " IV" : "")\(summerTime ? " SU" : "")"
    }

    static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    static func floorDivide(_ a: Int64, _ b: Int64) -> Int64 { a >= 0 ? a / b : -((-a + b - 1) / b) }
    static func floorModulo(_ a: Int64, _ b: Int64) -> Int64 { a - floorDivide(a, b) * b }

    /// Days since 1970-01-01 of a proleptic Gregorian date (BessBase's `CivilCalendar`).
    static func days(fromCivil year: Int64, _ month: Int64, _ day: Int64) -> Int64 { CivilCalendar.days(year: year, month: month, day: day) }

    /// The proleptic Gregorian date of a day count since 1970-01-01 (the inverse of `days(fromCivil:)`).
    static func civil(fromDays count: Int64) -> (year: Int64, month: Int64, day: Int64) { CivilCalendar.date(days: count) }
}

/// The zone time tags are read and written in: UTC by default, or a fixed offset a site configures
/// (India's control centres may want IST, UTC+05:30). A fixed offset, never the host's zone rules.
public struct TimeBase: Hashable, Sendable {
    /// Minutes east of UTC, −1439…1439.
    public let offsetMinutes: Int

    /// A fixed offset; nil outside ±23:59.
    public init?(offsetMinutes: Int) {
        guard abs(offsetMinutes) < 1440 else { return nil }
        self.offsetMinutes = offsetMinutes
    }

    /// UTC, the default.
    public static let utc = TimeBase(offsetMinutes: 0)!
}
