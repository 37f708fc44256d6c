import ControlCore
import Testing

/// `Duration.splitComponents`, the cycle's cheap `components` (one 64-bit division under 9.2 s):
/// the same pair as `components` on both sides of its limit, so `secondsDouble` and
/// `wholeSecondsRoundedUp` answer as before.
@Suite("Duration.splitComponents: the same pair as components")
struct DurationSplitTests {
    static let attoPerSecond: Int128 = 1_000_000_000_000_000_000

    /// Edges: zero, ±1 as, whole and half seconds either way, the 64-bit limit and past it.
    static let edges: [Int128] = [
        0, 1, -1, attoPerSecond, -attoPerSecond, attoPerSecond / 2, -attoPerSecond * 3 / 2,
        attoPerSecond - 1, -(attoPerSecond - 1), Int128(Int64.max) - 1, -(Int128(Int64.max) - 1),
        Int128(Int64.max), Int128(Int64.min), Int128(Int64.max) + 1, Int128(Int64.min) - 1,
        attoPerSecond * 3600, -attoPerSecond * 86_400 * 365, attoPerSecond * 10 + 500_000_000_000_000_000,
    ]

    @Test("edges and a spread of values: splitComponents is components, secondsDouble and wholeSecondsRoundedUp follow")
    func sameAsComponents() {
        var values = Self.edges
        // A deterministic spread over ±20 s, in steps that are not whole nanoseconds.
        var x: Int128 = -20 * Self.attoPerSecond
        while x < 20 * Self.attoPerSecond {
            values.append(x)
            x += 123_456_789_012_345_677
        }
        for atto in values {
            let d = Duration(attoseconds: atto)
            let c = d.components
            let s = d.splitComponents
            #expect(s.seconds == c.seconds && s.attoseconds == c.attoseconds, "\(atto) as")
            #expect(d.secondsDouble == Double(c.seconds) + Double(c.attoseconds) * 1e-18)
            #expect(d.wholeSecondsRoundedUp == (c.attoseconds > 0 ? c.seconds + 1 : c.seconds))
            // Every value here is far inside the clamp: whole seconds and the nanoseconds of the rest.
            #expect(d.nanosecondsClamped == c.seconds * 1_000_000_000 + c.attoseconds / 1_000_000_000, "\(atto) as")
        }
    }

    @Test("nanosecondsClamped clamps past ±9,223,372,036 s, either side of its 64-bit shortcut")
    func nanosecondsClamp() {
        #expect(Duration.seconds(9_300_000_000).nanosecondsClamped == .max)
        #expect(Duration.seconds(-9_300_000_000).nanosecondsClamped == .min)
        #expect(Duration.seconds(100).nanosecondsClamped == 100_000_000_000)
        #expect(Duration(attoseconds: Int128(Int64.max) - 1).nanosecondsClamped == (Int64.max - 1) / 1_000_000_000)
        #expect(Duration(attoseconds: Int128(Int64.min) + 1).nanosecondsClamped == (Int64.min + 1) / 1_000_000_000)
        #expect(Duration(attoseconds: -1_999_999_999).nanosecondsClamped == -1)
    }

    @Test("the cycle's figures: 10.5 s rounds up to 11, −1.5 s is −1 s and −0.5 s, 10 ms is 0.01 s")
    func knownValues() {
        #expect(Duration.milliseconds(10_500).wholeSecondsRoundedUp == 11)
        let negative = Duration.milliseconds(-1500).splitComponents
        #expect(negative.seconds == -1 && negative.attoseconds == -500_000_000_000_000_000)
        #expect(Duration.milliseconds(10).secondsDouble == 0.01)
    }
}
