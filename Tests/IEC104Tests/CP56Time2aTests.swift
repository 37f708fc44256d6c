import IEC104
import Testing

/// CP56Time2a: the time tags of grid-interfaces.md §1.3/§2.2 (as c104 sent them, in UTC), the
/// conversion to and from Unix time in UTC and a fixed offset, and every field out of range.
@Suite("IEC 104 CP56Time2a")
struct CP56Time2aTests {
    @Test("10 1c 0e 02 1b 0b 1a is 2026-11-27 02:14:07.184 UTC")
    func example() throws {
        let tag = try CP56Time2a(decoding: hex("10 1c 0e 02 1b 0b 1a"))
        #expect(tag == CP56Time2a(year: 26, month: 11, day: 27, hour: 2, minute: 14, milliseconds: 7_184))
        #expect(tag.description == "2026-11-27 02:14:07.184")
        // 2026-11-27T02:14:07.184Z
        #expect(try tag.unixMilliseconds() == 1_795_745_647_184)
        #expect(tag.encoded == hex("10 1c 0e 02 1b 0b 1a"))
    }

    @Test("from Unix time: fields, day of week (2026-11-27 is a Friday), IV, and back")
    func fromUnix() throws {
        let tag = try CP56Time2a(unixMilliseconds: 1_795_745_647_184)
        #expect(tag.dayOfWeek == 5 && tag.day == 27 && tag.hour == 2 && tag.milliseconds == 7_184)
        #expect(tag.encoded == hex("10 1c 0e 02 bb 0b 1a"))
        #expect(try tag.unixMilliseconds() == 1_795_745_647_184)
        let invalid = try CP56Time2a(unixMilliseconds: 1_795_745_647_184, invalid: true)
        #expect(invalid.encoded[2] == 0x8e)
    }

    @Test("a fixed offset: IST (UTC+05:30) writes 07:44 for 02:14 UTC and reads it back; a date line crossing")
    func offset() throws {
        let ist = try #require(TimeBase(offsetMinutes: 330))
        let tag = try CP56Time2a(unixMilliseconds: 1_795_745_647_184, base: ist)
        #expect(tag.hour == 7 && tag.minute == 44 && tag.day == 27)
        #expect(try tag.unixMilliseconds(base: ist) == 1_795_745_647_184)
        #expect(try tag.unixMilliseconds() == 1_795_745_647_184 + 330 * 60_000)
        // 2026-12-31 23:30 UTC is 2027-01-01 05:00 in IST.
        let newYear = try CP56Time2a(unixMilliseconds: 1_798_759_800_000, base: ist)
        #expect(newYear.year == 27 && newYear.month == 1 && newYear.day == 1 && newYear.hour == 5)
        #expect(TimeBase(offsetMinutes: 1440) == nil)
    }

    @Test("dates across the century round-trip, leap days included", arguments: [
        Int64(946_684_800_000),      // 2000-01-01 00:00 (a Saturday)
        951_782_400_000,             // 2000-02-29
        1_709_164_800_000,           // 2024-02-29
        4_102_444_799_999,           // 2099-12-31 23:59:59.999
    ])
    func century(_ unix: Int64) throws {
        let tag = try CP56Time2a(unixMilliseconds: unix)
        #expect(try tag.unixMilliseconds() == unix)
        #expect(try CP56Time2a(decoding: tag.encoded) == tag)
    }

    @Test("2000-01-01 is a Saturday (6) and 2099-12-31 a Thursday (4)")
    func weekdays() throws {
        #expect(try CP56Time2a(unixMilliseconds: 946_684_800_000).dayOfWeek == 6)
        #expect(try CP56Time2a(unixMilliseconds: 4_102_444_799_999).dayOfWeek == 4)
    }

    @Test("outside 2000…2099 is IEC104_BAD_TIME")
    func outOfCentury() {
        #expect(code { _ = try CP56Time2a(unixMilliseconds: 946_684_799_999) } == .badTime)
        #expect(code { _ = try CP56Time2a(unixMilliseconds: 4_102_444_800_000) } == .badTime)
        #expect(code { _ = try CP56Time2a(unixMilliseconds: .max) } == .badTime)
        #expect(code { _ = try CP56Time2a(unixMilliseconds: .min, base: TimeBase(offsetMinutes: -1439)!) } == .badTime)
    }

    @Test("a field out of range or a reserved bit set is IEC104_BAD_TIME", arguments: [
        "60 ea 0e 02 1b 0b 1a",  // 60 000 ms
        "10 1c 3c 02 1b 0b 1a",  // minute 60
        "10 1c 4e 02 1b 0b 1a",  // reserved bit of the minute octet
        "10 1c 0e 18 1b 0b 1a",  // hour 24
        "10 1c 0e 22 1b 0b 1a",  // reserved bit of the hour octet
        "10 1c 0e 02 00 0b 1a",  // day 0
        "10 1c 0e 02 1f 0b 1a",  // 31 November
        "10 1c 0e 02 1d 02 1b",  // 29 February 2027
        "10 1c 0e 02 1b 00 1a",  // month 0
        "10 1c 0e 02 1b 0d 1a",  // month 13
        "10 1c 0e 02 1b 1b 1a",  // reserved bit of the month octet
        "10 1c 0e 02 1b 0b 9a",  // reserved bit of the year octet
        "10 1c 0e 02 1b 0b 64",  // year 100 (7 bits allow it, the century does not)
        "10 1c 0e 02 1b 0b",     // six octets
    ])
    func invalid(_ octets: String) {
        #expect(code { _ = try CP56Time2a(decoding: hex(octets)) } == .badTime, "\(octets)")
    }

    @Test("IV and SU survive a round trip; 29 February 2028 is valid")
    func flags() throws {
        let octets = hex("10 1c 8e 82 fd 02 1c")  // IV, SU, day 29 with weekday 7, February 2028
        let tag = try CP56Time2a(decoding: octets)
        #expect(tag.invalid && tag.summerTime && tag.dayOfWeek == 7 && tag.day == 29 && tag.year == 28)
        #expect(tag.encoded == octets)
    }
}
