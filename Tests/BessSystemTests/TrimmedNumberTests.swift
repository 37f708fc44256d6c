import BessBase
import Testing

/// `trimmed(_:decimals:)`: the one spelling of a journal line's number, for SCADA's writes and the
/// IEC 104 outstation's commands alike (three decimals), the relay contacts and the PMU (one).
@Suite("Journal numbers: trimmed")
struct TrimmedNumberTests {
    @Test("whole numbers without .0; fractions rounded half away from zero to the decimals, no trailing zeros")
    func wholeAndFractions() {
        #expect(trimmed(12, decimals: 3) == "12")
        #expect(trimmed(12.0004, decimals: 3) == "12")
        #expect(trimmed(0.5, decimals: 3) == "0.5")
        #expect(trimmed(1.23456, decimals: 3) == "1.235")
        #expect(trimmed(0.1 + 0.2, decimals: 3) == "0.3")
        #expect(trimmed(2.25, decimals: 1) == "2.3")
        #expect(trimmed(100, decimals: 0) == "100")
    }

    @Test("negatives keep their sign; a negative that rounds to zero is 0, not -0")
    func negatives() {
        #expect(trimmed(-3.125, decimals: 3) == "-3.125")
        #expect(trimmed(-40, decimals: 3) == "-40")
        #expect(trimmed(-0.0004, decimals: 3) == "0")
        #expect(trimmed(-2.25, decimals: 1) == "-2.3")
    }

    @Test("not finite or 1e15 and beyond: Swift's own text")
    func notFiniteAndHuge() {
        #expect(trimmed(.nan, decimals: 3) == "nan")
        #expect(trimmed(.infinity, decimals: 3) == "inf")
        #expect(trimmed(-.infinity, decimals: 1) == "-inf")
        #expect(trimmed(2e15, decimals: 3) == "2000000000000000.0")
        #expect(trimmed(1e20, decimals: 3) == "9.999999999999998e+19", "scaled and back: as the lines have always written it")
    }
}
