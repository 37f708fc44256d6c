/// RFC 3339 date-times, the one reader and writer every module uses (a schedule's block starts, a
/// forecast file's, a plan's slots): `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)`, 't', 'z' and a
/// space for 'T' accepted. No Foundation, no allocation beyond the text.
public enum RFC3339 {
    /// What a fraction of a second may be: dropped (a forecast's start), or only zeros (a schedule's
    /// block start, which must be a whole second).
    public enum Fraction: Sendable { case drop, zeroOnly }

    /// Unix seconds, or nil when `text` is not such a date-time, names an impossible date, or (with
    /// `.zeroOnly`) has a fraction that is not zero.
    public static func unixSeconds(_ text: some StringProtocol, fraction: Fraction = .drop) -> Int64? {
        let b = Array(text.utf8)
        guard b.count >= 20 else { return nil }
        func number(_ from: Int, _ count: Int) -> Int? {
            var v = 0
            for k in from..<(from + count) {
                guard b[k] >= 48, b[k] <= 57 else { return nil }
                v = v * 10 + Int(b[k] - 48)
            }
            return v
        }
        guard let year = number(0, 4), b[4] == UInt8(ascii: "-"), let month = number(5, 2), b[7] == UInt8(ascii: "-"),
              let day = number(8, 2), [UInt8(ascii: "T"), UInt8(ascii: "t"), UInt8(ascii: " ")].contains(b[10]),
              let hour = number(11, 2), b[13] == UInt8(ascii: ":"), let minute = number(14, 2), b[16] == UInt8(ascii: ":"),
              let second = number(17, 2)
        else { return nil }
        var k = 19
        if k < b.count, b[k] == UInt8(ascii: ".") {
            k += 1
            let digits = k
            while k < b.count, b[k] >= 48, b[k] <= 57 {
                if fraction == .zeroOnly, b[k] != 48 { return nil }
                k += 1
            }
            guard k > digits else { return nil }
        }
        guard k < b.count else { return nil }
        var offset = 0
        if b[k] == UInt8(ascii: "Z") || b[k] == UInt8(ascii: "z") {
            guard k + 1 == b.count else { return nil }
        } else {
            guard b[k] == UInt8(ascii: "+") || b[k] == UInt8(ascii: "-"), k + 6 == b.count, let oh = number(k + 1, 2),
                  b[k + 3] == UInt8(ascii: ":"), let om = number(k + 4, 2), oh < 24, om < 60
            else { return nil }
            offset = (oh * 60 + om) * 60 * (b[k] == UInt8(ascii: "-") ? -1 : 1)
        }
        let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
        let days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
        guard (1...12).contains(month), (1...days[month - 1]).contains(day), hour < 24, minute < 60, second < 60 else { return nil }
        return CivilCalendar.days(year: Int64(year), month: Int64(month), day: Int64(day)) * 86_400
            + Int64(hour * 3600 + minute * 60 + second) - Int64(offset)
    }

    /// `unix` in UTC, whole seconds: `2026-11-29T18:30:00Z`.
    public static func text(_ unix: Int64) -> String {
        let days = unix >= 0 ? unix / 86_400 : -((-unix + 86_399) / 86_400)
        let inDay = Int(unix - days * 86_400)
        let (year, month, day) = CivilCalendar.date(days: days)
        func two(_ v: some BinaryInteger) -> String { v < 10 ? "0\(v)" : "\(v)" }
        var y = String(year)
        while y.count < 4 { y = "0" + y }
        return "\(y)-\(two(month))-\(two(day))T\(two(inDay / 3600)):\(two(inDay / 60 % 60)):\(two(inDay % 60))Z"
    }
}

/// The proleptic Gregorian calendar as day counts from 1970-01-01, both ways (RFC 3339 here, IEC 104's
/// CP56Time2a): whole 400-year eras counted from 0000-03-01, then the years and months since the era's
/// start, with March first so that the leap day falls last.
public enum CivilCalendar {
    /// Days from 1970-01-01 to `year`-`month`-`day`.
    public static func days(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The date `days` after 1970-01-01: `days(year:month:day:)` undone.
    public static func date(days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shiftedMonth = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * shiftedMonth + 2) / 5 + 1
        let month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
