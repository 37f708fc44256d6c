import ControlCore
import Testing

@Suite("Time, units and helpers")
struct CoreTests {
    @Test("a value too old or far in the future is absent; one stamped while the cycle ran is fresh")
    func staleness() {
        let sample = Timestamped(Hertz(50), at: MonotonicInstant(nanoseconds: 2_000_000_000))
        #expect(sample.value(at: MonotonicInstant(nanoseconds: 4_000_000_000), maxAge: .seconds(2)) == Hertz(50))
        #expect(sample.value(at: MonotonicInstant(nanoseconds: 4_000_000_001), maxAge: .seconds(2)) == nil)
        // A worker published 50 µs after the cycle sampled its instant: the freshest value there is.
        #expect(sample.value(at: MonotonicInstant(nanoseconds: 1_999_950_000), maxAge: .seconds(2)) == Hertz(50))
        #expect(sample.value(at: MonotonicInstant(nanoseconds: 1_000_000_000), maxAge: .seconds(2)) == Hertz(50))
        // Further ahead than a second: a clock mix-up.
        #expect(sample.value(at: MonotonicInstant(nanoseconds: 999_999_999), maxAge: .seconds(2)) == nil)
        #expect(sample.value(at: .zero, maxAge: .seconds(2)) == nil)
        let missing: Timestamped<Hertz>? = nil
        #expect(missing.fresh(at: .zero, maxAge: .seconds(100)) == nil)
    }

    @Test("instants saturate instead of trapping")
    func saturation() {
        let late = MonotonicInstant(nanoseconds: .max - 5)
        #expect((late + .seconds(10)).nanoseconds == .max)
        #expect((MonotonicInstant(nanoseconds: .min + 5) - .seconds(10)).nanoseconds == .min)
        #expect(Duration.seconds(fromDouble: .nan) == .zero)
        #expect(Duration.seconds(fromDouble: 1.5) == .milliseconds(1500))
    }

    @Test("seconds from a Double round to the nearest nanosecond, so config times like 8.2 s are exact", arguments: [
        // 8.2 × 1e9 is 8199999999.9999990 in Double, 2.01 and 1.005 likewise just under: truncation lost 1 ns.
        (8.2, Int64(8_200_000_000)), (2.01, 2_010_000_000), (1.005, 1_005_000_000),
        (0.3, 300_000_000), (0.1, 100_000_000), (0.7, 700_000_000), (2.9, 2_900_000_000), (1e-9, 1),
        (0.000_000_000_4, 0), (86_400.1, 86_400_100_000_000), (-1, 0), (1e12, 9_200_000_000_000_000_000),
    ])
    func secondsFromDoubleRound(seconds: Double, nanoseconds: Int64) {
        #expect(Duration.seconds(fromDouble: seconds) == .nanoseconds(nanoseconds), "\(seconds) s")
    }

    @Test("the time between two instants is a Duration, negative when the second is later")
    func difference() {
        let earlier = MonotonicInstant(nanoseconds: 1_000_000_000), later = earlier + .milliseconds(250)
        #expect(later - earlier == .milliseconds(250))
        #expect(earlier - later == .milliseconds(-250))
        #expect(earlier + (later - earlier) == later)
    }

    @Test("nanoseconds of a duration: truncated toward zero, clamped at ±9,223,372,036 s")
    func durationNanoseconds() {
        // The definition by components (two 128-bit divisions), which the fast path must match.
        func reference(_ d: Duration) -> Int64 {
            let (seconds, attoseconds) = d.components
            if seconds >= 9_223_372_036 { return .max }
            if seconds <= -9_223_372_036 { return .min }
            return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
        }
        var cases: [Duration] = [
            .zero, .nanoseconds(1), .nanoseconds(-1), .milliseconds(100), .seconds(3), .seconds(-3), .seconds(900),
            .seconds(9_223_372_035), .seconds(9_223_372_036), .seconds(-9_223_372_035), .seconds(-9_223_372_036),
            .nanoseconds(Int64.max), .nanoseconds(Int64.min), .seconds(Int64.max), .seconds(Int64.min),
            Duration(attoseconds: 999_999_999), Duration(attoseconds: -999_999_999),
            Duration(attoseconds: 1_000_000_001), Duration(attoseconds: -1_000_000_001),
            Duration(attoseconds: Int128(1) << 64), Duration(attoseconds: -(Int128(1) << 64)),
        ]
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        for _ in 0..<2_000 {  // attoseconds of every magnitude up to 2^100, either sign
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            let bits = Int(state >> 57) % 101
            let magnitude = (Int128(state >> 1) << 40 | Int128(state & 0xFF_FFFF_FFFF)) >> (103 - bits)
            cases.append(Duration(attoseconds: state & 1 == 0 ? magnitude : -magnitude))
        }
        for d in cases {
            #expect(d.nanosecondsClamped == reference(d), "\(d.attoseconds) as")
        }
        // Beyond what `components` can give in seconds: clamped all the same.
        #expect(Duration(attoseconds: Int128.max).nanosecondsClamped == .max)
        #expect(Duration(attoseconds: Int128.min).nanosecondsClamped == .min)
        #expect(Duration(attoseconds: Int128.min + 1).nanosecondsClamped == .min)
    }

    @Test("exp matches known values")
    func exponential() {
        let known: [(Double, Double)] = [
            (0, 1), (1, 2.718281828459045), (-1, 0.36787944117144233), (10, 22026.465794806718),
            (-20, 2.061153622438558e-09), (700, 1.0142320547350045e304),
        ]
        for (x, y) in known {
            #expect(abs(ControlMath.exp(x) - y) <= 4e-15 * y, "exp(\(x))")
        }
        #expect(ControlMath.exp(-800) == 0)
        #expect(ControlMath.exp(800) == .infinity)
        #expect(ControlMath.exp(.nan).isNaN)
    }

    @Test("clamp sends NaN to zero (or the nearest bound) and infinities to the bounds")
    func clamp() {
        #expect(ControlMath.clamp(.nan, -5, 5) == 0)
        #expect(ControlMath.clamp(.nan, 1, 5) == 1)
        #expect(ControlMath.clamp(.infinity, -5, 5) == 5)
        #expect(ControlMath.clamp(-.infinity, -5, 5) == -5)
        #expect(ControlMath.clamp(3, -5, 5) == 3)
    }

    @Test("frequency rounds to whole millihertz")
    func millihertz() {
        #expect(Hertz(49.9).millihertz == 49_900)
        #expect(Hertz(49.8995).millihertz == 49_900)  // rounds half away from zero
        #expect(Hertz(.nan).millihertz == nil)
        #expect(Hertz(-1).millihertz == nil)
    }

    @Test("slope over a window; unknown without enough history")
    func slope() {
        var estimator = SlopeEstimator(window: .seconds(10), capacity: 8)
        for s in 0..<4 { estimator.add(Double(s) * 0.5, at: Fixture.instant(Double(s))) }
        #expect(estimator.slope(at: Fixture.instant(3)) == nil)  // 3 s of a 10 s window
        for s in 4..<20 { estimator.add(Double(s) * 0.5, at: Fixture.instant(Double(s))) }
        let slope = estimator.slope(at: Fixture.instant(19))
        #expect(slope.map { abs($0 - 0.5) < 1e-12 } == true)
        // Repeated stamps are the same measurement and are ignored.
        estimator.add(1000, at: Fixture.instant(19))
        #expect(estimator.slope(at: Fixture.instant(19)).map { abs($0 - 0.5) < 1e-12 } == true)
        // Stale: newest sample older than the window.
        #expect(estimator.slope(at: Fixture.instant(40)) == nil)
        estimator.add(.nan, at: Fixture.instant(41))
        #expect(estimator.slope(at: Fixture.instant(41)) == nil)
    }

    @Test("event ring keeps the oldest events and counts drops")
    func eventRing() {
        var ring = EventRing(capacity: 3)
        for i in 0..<5 { ring.push(ControlEvent(kind: .raised, unit: i, at: .zero)) }
        #expect(ring.count == 3)
        #expect(ring.dropped == 2)
        var units: [Int] = []
        ring.drain { units.append($0.unit) }
        #expect(units == [0, 1, 2])
        ring.push(ControlEvent(kind: .cleared, unit: 9, at: .zero))
        #expect(ring.pop()?.unit == 9)
        #expect(ring.pop() == nil)
    }

    @Test("trip code sets iterate in code order")
    func tripCodeSet() {
        var set = TripCodeSet()
        set.insert(.frequencyLost)
        set.insert(.cellOvervoltage)
        set.insert(.thermalRunaway)
        #expect(Array(set) == [.cellOvervoltage, .thermalRunaway, .frequencyLost])
        set.remove(.thermalRunaway)
        #expect(set.count == 2 && !set.contains(.thermalRunaway))
    }
}

@Suite("Energy blocks")
struct EnergyBlockTests {
    @Test("blocks are aligned to the wall clock and split at the boundary")
    func splitAtBoundary() {
        var accumulator = EnergyAccumulator(unit: 2, blockLength: .seconds(900))
        let start = 1_800_000_000.0 - 1_800_000_000.0.truncatingRemainder(dividingBy: 900)  // a boundary
        _ = accumulator.integrate(power: nil, elapsedSeconds: 0, wallClock: start + 890)
        // 20 s at +36 kW across the boundary at start + 900: 10 s in each block.
        let closed = accumulator.integrate(power: .kilowatts(36), elapsedSeconds: 20, wallClock: start + 910)
        let block = try! #require(closed)
        #expect(block.unit == 2)
        #expect(block.startUnixSeconds == Int64(start))
        #expect(abs(block.dischargedWh - 100) < 1e-9)  // 36 kW × 10 s
        #expect(block.coveredSeconds == 10)
        #expect(!block.isComplete)
        let current = try! #require(accumulator.current)
        #expect(current.startUnixSeconds == Int64(start) + 900)
        #expect(abs(current.dischargedWh - 100) < 1e-9)
        // Charging is counted separately, as a positive amount.
        _ = accumulator.integrate(power: .kilowatts(-18), elapsedSeconds: 100, wallClock: start + 1010)
        #expect(abs(accumulator.current!.chargedWh - 500) < 1e-9)
    }

    @Test("a full block of steady power is complete and exact (100 kW for 15 min = 25 kWh)")
    func fullBlock() {
        var accumulator = EnergyAccumulator(unit: 0)
        let start = 1_800_000_000.0 - 1_800_000_000.0.truncatingRemainder(dividingBy: 900)
        _ = accumulator.integrate(power: nil, elapsedSeconds: 0, wallClock: start)
        var closed: [EnergyBlock] = []
        for i in 1...9001 {
            let wall = start + Double(i) * 0.1
            if let b = accumulator.integrate(power: .kilowatts(100), elapsedSeconds: 0.1, wallClock: wall) {
                closed.append(b)
            }
        }
        #expect(closed.count == 1)
        #expect(abs(closed[0].dischargedKWh - 25) < 1e-6)
        #expect(closed[0].isComplete)
    }

    @Test("missing measurements leave the block short, not invented")
    func missingMeasurements() {
        var accumulator = EnergyAccumulator(unit: 0, blockLength: .seconds(60))
        _ = accumulator.integrate(power: nil, elapsedSeconds: 0, wallClock: 1_800_000_000)
        _ = accumulator.integrate(power: nil, elapsedSeconds: 30, wallClock: 1_800_000_030)
        #expect(accumulator.current?.coveredSeconds == 0)
        #expect(accumulator.current?.dischargedWh == 0)
    }

    /// A settled block is never reopened.
    @Test("a backward clock step keeps the open block; forward closes it; energy counted once")
    func clockStep() {
        var accumulator = EnergyAccumulator(unit: 0, blockLength: .seconds(60))
        _ = accumulator.integrate(power: nil, elapsedSeconds: 0, wallClock: 1_800_000_010)
        _ = accumulator.integrate(power: .kilowatts(36), elapsedSeconds: 10, wallClock: 1_800_000_020)
        // Back 10,019 s: the block 1_799_990_000 may be settled already; the energy stays in the open block.
        #expect(accumulator.integrate(power: .kilowatts(36), elapsedSeconds: 1, wallClock: 1_799_990_001) == nil)
        #expect(accumulator.current?.startUnixSeconds == 1_800_000_000)
        #expect(accumulator.current.map { abs($0.dischargedWh - 110) < 1e-9 } == true)
        #expect(accumulator.current?.clockStepped == true)
        #expect(accumulator.steps == 1)
        // Forward again past the open block: it closes with all it took, once; the next opens stepped.
        let closed = accumulator.integrate(power: .kilowatts(36), elapsedSeconds: 1, wallClock: 1_800_000_090, synchronized: false)
        #expect(closed?.startUnixSeconds == 1_800_000_000)
        #expect(closed.map { abs($0.dischargedWh - 110) < 1e-9 } == true)
        #expect(closed?.clockStepped == true)
        #expect(closed?.clockUnsynced == true)
        #expect(accumulator.current?.startUnixSeconds == 1_800_000_060)
        #expect(accumulator.current.map { abs($0.dischargedWh - 10) < 1e-9 } == true)
        #expect(accumulator.current?.clockStepped == true)
        #expect(accumulator.steps == 2)
    }

    @Test("a day of random clock steps and slews: every block reported once, in order, and the energy adds up")
    func stepsNeverDoubleCount() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<20 {
            var accumulator = EnergyAccumulator(unit: 0, blockLength: .seconds(900))
            var wall = 1_800_000_000.0
            var closed: [EnergyBlock] = []
            var total = 0.0
            for i in 0..<8640 {  // 10 s steps: one day
                let dt = 10.0
                wall += dt
                if Int.random(in: 0..<500, using: &generator) == 0 { wall += Double.random(in: -7200...7200, using: &generator) }
                let kw = Double(i % 7) - 3
                if i > 0 { total += kw * 1000 * dt / 3600 }
                if let block = accumulator.integrate(power: .kilowatts(kw), elapsedSeconds: i == 0 ? 0 : dt, wallClock: wall) {
                    closed.append(block)
                }
            }
            let starts = closed.map(\.startUnixSeconds)
            #expect(starts == starts.sorted() && Set(starts).count == starts.count, "a block reported twice or out of order: \(starts)")
            let counted = (closed + [accumulator.current!]).reduce(0.0) { $0 + $1.dischargedWh - $1.chargedWh }
            #expect(abs(counted - total) < 1e-6, "counted \(counted) Wh of \(total) Wh")
        }
    }

    @Test("the site sees a wall-clock step against the monotonic clock, and only a step")
    func siteSeesSteps() {
        let site = Fixture.site()
        var wall = 1_800_000_000.0
        for i in 1...50 {
            wall += 0.1 + (i % 2 == 0 ? 0.0004 : -0.0004)  // slewing: not a step
            if i == 30 { wall -= 3600 }
            _ = Fixture.run(site, from: Double(i - 1) * 0.1, seconds: 0.1, frequency: 50, inputs: nil, wallClock: wall)
        }
        #expect(site.clockSteps == 1)
        #expect(abs(site.lastClockStep.secondsDouble + 3600) < 0.01)
        // A reload keeps the count (the journal reports only new steps).
        let reloaded = Fixture.site()
        reloaded.adopt(from: site, mapping: [0])
        #expect(reloaded.clockSteps == 1)
    }

    @Test("three days back: the held block closes after its length; blocks go on in their own time, once each")
    func farBackward() {
        var accumulator = EnergyAccumulator(unit: 0, blockLength: .seconds(900))
        var wall = 1_800_000_000.0
        _ = accumulator.integrate(power: nil, elapsedSeconds: 0, wallClock: wall)
        var closed: [EnergyBlock] = []
        for i in 1...720 {  // 2 h at 10 s; back 3 days after 10 min
            wall += 10
            if i == 60 { wall -= 3 * 86_400 }
            if let block = accumulator.integrate(power: .kilowatts(36), elapsedSeconds: 10, wallClock: wall) { closed.append(block) }
        }
        let starts = closed.map(\.startUnixSeconds)
        #expect(starts == (0..<closed.count).map { 1_800_000_000 + Int64($0) * 900 }, "\(starts)")
        #expect(closed.count == 7)
        #expect(closed.dropFirst().allSatisfy(\.clockStepped) && closed[0].clockStepped)
        let total = (closed + [accumulator.current!]).reduce(0.0) { $0 + $1.dischargedWh }
        #expect(abs(total - 36_000 * 7200 / 3600) < 1e-6, "\(total) Wh")
    }

    @Test("blocks measured while the clock is unsynchronised say so")
    func unsynced() {
        var accumulator = EnergyAccumulator(unit: 0, blockLength: .seconds(60))
        _ = accumulator.integrate(power: .kilowatts(1), elapsedSeconds: 0, wallClock: 1_800_000_000, synchronized: false)
        #expect(accumulator.current?.clockUnsynced == true)
        var fresh = EnergyAccumulator(unit: 0, blockLength: .seconds(60))
        _ = fresh.integrate(power: .kilowatts(1), elapsedSeconds: 0, wallClock: 1_800_000_000)
        let closed = fresh.integrate(power: .kilowatts(1), elapsedSeconds: 60, wallClock: 1_800_000_060)
        #expect(closed?.clockUnsynced == false)
        #expect(closed?.clockStepped == false)
    }
}

@Suite("Site controller")
struct SiteControllerTests {
    @Test("closed energy blocks come out of the controller once, in order")
    func blocksThroughController() {
        let site = Fixture.site()
        // Wall clock starts on a 15-minute boundary (1.8e9 is a multiple of 900).
        Fixture.run(site, seconds: 1000) { Fixture.healthyInputs(at: $0, power: 36_000) }
        var blocks: [EnergyBlock] = []
        site.drainClosedBlocks { blocks.append($0) }
        #expect(blocks.count == 1)
        #expect(blocks.first?.startUnixSeconds == 1_800_000_000)
        #expect(blocks.first.map { abs($0.dischargedKWh - 9.0) < 1e-6 } == true)  // 36 kW × 15 min
        #expect(blocks.first?.isComplete == true)
        var again = 0
        site.drainClosedBlocks { _ in again += 1 }
        #expect(again == 0)
    }
}

@Suite("Rise rates at fast cycles")
struct FastCycleSlopeTests {
    @Test("the slope is known after half the window at any sample rate (10 ms, 50 ms, 1 s)", arguments: [0.01, 0.05, 1.0])
    func fastSamples(step: Double) {
        var estimator = SlopeEstimator(window: .seconds(10))
        var t = 0.0
        while t <= 12 {
            estimator.add(25 + 0.5 * t, at: Fixture.instant(t))
            t += step
        }
        let slope = estimator.slope(at: Fixture.instant(t - step))
        #expect(slope.map { abs($0 - 0.5) < 1e-6 } == true, "\(String(describing: slope))")
    }

    @Test("THERMAL_RUNAWAY latches at a 50 ms cycle")
    func thermalAtFiftyMilliseconds() {
        let site = Fixture.site()
        Fixture.run(site, seconds: 12, period: 0.05)
        let decision = Fixture.run(site, from: 12, seconds: 10, period: 0.05) { now in
            var inputs = Fixture.healthyInputs(at: now)
            let seconds = Double(now.nanoseconds) / 1e9
            inputs.bms = Fixture.healthyBMS(at: now, temperature: 25 + 0.5 * (seconds - 12))
            return inputs
        }
        #expect(decision.latchedCodes.contains(.thermalRunaway))
    }
}
