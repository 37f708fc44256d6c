import ControlCore
import Testing

/// THERMAL_RUNAWAY from one estimator per temperature source (review §2.3).
@Suite("Thermal rise rate per source")
struct ThermalRateTests {
    /// Pack at `pack` °C and the hottest cell 3 °C above it in whole kelvin (as 0x373 carries it);
    /// cells absent (`cellsAt == nil`) or stamped at `cellsAt`.
    static func inputs(
        at now: MonotonicInstant, pack: Double, cellsAt: MonotonicInstant?, cellAbovePack: Double = 3
    ) -> UnitInputs {
        var inputs = Fixture.healthyInputs(at: now)
        inputs.bms = Fixture.healthyBMS(at: now, temperature: pack)
        if let cellsAt {
            inputs.bms.cells = Timestamped(
                CellStatistics(minCellVoltage: Volts(3.28), maxCellVoltage: Volts(3.30),
                               minTemperature: Celsius(pack - 1),
                               maxTemperature: Celsius((pack + cellAbovePack).rounded())), at: cellsAt)
        } else {
            inputs.bms.cells = nil
        }
        return inputs
    }

    static func seconds(_ now: MonotonicInstant) -> Double { Double(now.nanoseconds) / 1e9 }

    @Test("hottest cell 3 °C above the pack, 0x373 absent for 6 s and back: no trip")
    func cellFrameGap() {
        let site = Fixture.site()
        var lastCells = MonotonicInstant.zero
        var everActive = false
        var t = 0.0
        while t < 80 {
            t += 0.1
            let now = Fixture.instant(t)
            // 0x373 stops at 40 s and returns at 46 s; the worker keeps its last (now stale) value.
            if t < 40 || t >= 46 { lastCells = now }
            site.step(frequency: Timestamped(Hertz(50), at: now),
                      inputs: [Self.inputs(at: now, pack: 25, cellsAt: lastCells)], now: now,
                      wallClock: 1_800_000_000 + t)
            if site.decision(unit: 0).activeCodes.contains(.thermalRunaway) { everActive = true }
        }
        #expect(!everActive)
        #expect(site.decision(unit: 0).state == .running)
    }

    @Test("start-up: the first cycles see 0x356 before 0x373 (3 °C hotter): no trip")
    func packBeforeCells() {
        let site = Fixture.site()
        var everActive = false
        var t = 0.0
        while t < 60 {
            t += 0.1
            let now = Fixture.instant(t)
            site.step(frequency: Timestamped(Hertz(50), at: now),
                      inputs: [Self.inputs(at: now, pack: 25, cellsAt: t < 2 ? nil : now)], now: now,
                      wallClock: 1_800_000_000 + t)
            if site.decision(unit: 0).activeCodes.contains(.thermalRunaway) { everActive = true }
        }
        #expect(!everActive)
    }

    /// Runs a pack steady at 25 °C for 40 s and then rising at `rate` °C/s (hottest cell 3 °C above,
    /// whole kelvin); returns the seconds from the start of the rise to the latch, or nil. With
    /// `onlyCell` the pack stays at 25 °C and only the hottest cell rises.
    static func latchDelay(
        rate: Double, cells: Bool, onlyCell: Bool = false, period: Double = 0.1, until: Double = 200
    ) -> Double? {
        let site = Fixture.site()
        var t = 0.0
        while t < until {
            t += period
            let now = Fixture.instant(t)
            let rise = rate * max(0, t - 40)
            let pack = onlyCell ? 25 : 25 + rise
            site.step(frequency: Timestamped(Hertz(50), at: now),
                      inputs: [Self.inputs(at: now, pack: pack, cellsAt: cells ? now : nil,
                                           cellAbovePack: onlyCell ? 3 + rise : 3)], now: now,
                      wallClock: 1_800_000_000 + t)
            if site.decision(unit: 0).latchedCodes.contains(.thermalRunaway) { return t - 40 }
        }
        return nil
    }

    /// 0.3 °C/s against a threshold of 0.1; pack alone means no 0x373.
    @Test("a real temperature rise latches, for pack and cells, the pack alone, or one cell")
    func realRiseTrips() throws {
        // 10 s least-squares window on the pack (0.1 °C): the fit passes 0.1 °C/s about 3.9 s into
        // the rise (x²(3 − 2x) = 1/3), then the rule's 3 s delay.
        let both = try #require(Self.latchDelay(rate: 0.3, cells: true))
        #expect(both > 6 && both < 8, "\(both)")
        let fromPack = try #require(Self.latchDelay(rate: 0.3, cells: false))
        #expect(fromPack > 6 && fromPack < 8, "\(fromPack)")
        // One cell heating, the pack average flat: the cells' 30 s window, about 11.7 s + 3 s.
        let fromCell = try #require(Self.latchDelay(rate: 0.3, cells: true, onlyCell: true))
        #expect(fromCell > 12 && fromCell < 18, "\(fromCell)")
    }

    @Test("a slow warm-up (0.02 °C/s) in whole-kelvin cell readings never trips, at 50 ms and 100 ms cycles",
          arguments: [0.05, 0.1])
    func quantisedSlowRise(period: Double) {
        #expect(Self.latchDelay(rate: 0.02, cells: true, period: period, until: 300) == nil)
    }

    @Test("least-squares slope: exact on a line, a fraction of newest-minus-oldest for an end step")
    func leastSquares() throws {
        var estimator = SlopeEstimator(window: .seconds(10))
        var t = 0.0
        while t <= 12 {
            estimator.add(20 + 0.25 * t, at: Fixture.instant(t))
            t += 0.1
        }
        let line = try #require(estimator.leastSquaresSlope(at: Fixture.instant(12)))
        #expect(abs(line - 0.25) < 1e-9)

        // Flat for 10 s, then one reading 1 K up (a whole-kelvin field ticking over).
        var stepped = SlopeEstimator(window: .seconds(10))
        t = 0
        while t < 10 {
            stepped.add(30, at: Fixture.instant(t))
            t += 0.1
        }
        stepped.add(31, at: Fixture.instant(10.4))
        let endpoints = try #require(stepped.slope(at: Fixture.instant(10.4)))
        let fitted = try #require(stepped.leastSquaresSlope(at: Fixture.instant(10.4)))
        #expect(endpoints >= 0.1)  // newest minus oldest: the whole kelvin over the window
        #expect(fitted < 0.05 && fitted < endpoints / 3, "\(fitted)")
        // Unknown without half a window of history, and after a reset.
        stepped.reset()
        stepped.add(31, at: Fixture.instant(11))
        #expect(stepped.leastSquaresSlope(at: Fixture.instant(11)) == nil)
    }

    /// The estimator keeps its fit between samples and the cycle only asks whether it is current;
    /// this replays a rough signal against a fit recomputed from scratch at every query.
    /// Bursts, gaps, resets, a full ring.
    @Test("the kept fit equals one recomputed from the samples at every query")
    func keptFitMatchesRecomputed() {
        let window: Int64 = 4_000_000_000, capacity = 64
        let spacing = window / Int64(capacity / 2)
        var estimator = SlopeEstimator(window: .nanoseconds(window), capacity: capacity)
        var kept: [(t: Int64, v: Double)] = []  // what the estimator should hold, oldest first
        var generator = SplitMix(state: 0xB355_D5EE)  // seeded: a failure replays
        var t: Int64 = 0
        var queries = 0, fits = 0
        for step in 0..<6_000 {
            // Mostly 10 ms apart (faster than the spacing), now and then a gap past the window.
            t += step % 997 == 996 ? window + 1 : Int64.random(in: 5_000_000...40_000_000, using: &generator)
            let value: Double = step % 1_499 == 1_498 ? .nan : 25 + Double(step) * 0.01 + Double.random(in: -1...1, using: &generator)
            estimator.add(value, at: MonotonicInstant(nanoseconds: t))
            if !value.isFinite {
                kept.removeAll()
            } else if kept.isEmpty || t - kept[kept.count - 1].t >= spacing {
                if kept.count == capacity { kept.removeFirst() }
                kept.append((t, value))
            }
            for lag: Int64 in [0, 3_000_000, window / 2, window + 1] {
                let now = MonotonicInstant(nanoseconds: t + lag)
                let expected = Self.recomputed(kept, window: window, now: t + lag)
                let got = estimator.leastSquaresSlope(at: now)
                queries += 1
                if expected != nil { fits += 1 }
                #expect(got == expected, "step \(step) lag \(lag): \(String(describing: got)) vs \(String(describing: expected))")
                if got != expected { return }
            }
        }
        #expect(fits > queries / 4)  // most queries have a fit to compare, not only nil against nil
    }

    /// Least squares over the samples inside the window ending at the newest, the way the
    /// estimator documents it, from the list as it stands.
    static func recomputed(_ samples: [(t: Int64, v: Double)], window: Int64, now: Int64) -> Double? {
        guard samples.count >= 2, let newest = samples.last?.t, now - newest <= window else { return nil }
        let inside = samples.filter { newest - $0.t <= window }
        guard inside.count >= 2, (newest - inside[0].t) * 2 >= window else { return nil }
        let ts = inside.map { Double($0.t - newest) * 1e-9 }
        let meanT = ts.reduce(0, +) / Double(inside.count)
        let meanV = inside.reduce(0) { $0 + $1.v } / Double(inside.count)
        var covariance = 0.0, variance = 0.0
        for (i, sample) in inside.enumerated() {
            covariance += (ts[i] - meanT) * (sample.v - meanV)
            variance += (ts[i] - meanT) * (ts[i] - meanT)
        }
        return variance > 0 ? covariance / variance : nil
    }
}
