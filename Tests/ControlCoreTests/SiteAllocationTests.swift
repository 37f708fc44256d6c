import ControlCore
import Testing

/// A small deterministic generator, so a failing case can be replayed from its seed.
struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

@Suite("Site allocation")
struct SiteAllocationTests {
    /// Runs the allocator once over `units`.
    static func allocate(_ units: [AllocationInput]) -> (shares: [Double], reasons: [ShareReason], result: AllocationResult) {
        var allocator = SiteAllocator(units: units.count)
        var shares = [Double](repeating: .nan, count: units.count)
        var reasons = [ShareReason](repeating: .idle, count: units.count)
        let result = allocator.allocate(units, shares: &shares, reasons: &reasons)
        return (shares, reasons, result)
    }

    static func magnitude(_ x: Double) -> Double { x.isFinite ? max(0, x) : 0 }

    /// Inputs include NaN, infinities and negative limits; when short, every unit with headroom is full.
    @Test("for any input: no unit over its allowed power, the pool delivered when possible, else shortfall")
    func properties() {
        var random = SplitMix(state: 20261122)
        func value(_ range: ClosedRange<Double>) -> Double {
            switch Int.random(in: 0..<40, using: &random) {
            case 0: .nan
            case 1: .infinity
            case 2: -.infinity
            case 3: -Double.random(in: range, using: &random)
            default: Double.random(in: range, using: &random)
            }
        }
        for _ in 0..<5000 {
            let n = Int.random(in: 1...8, using: &random)
            let units = (0..<n).map { _ in
                AllocationInput(
                    pooled: Int.random(in: 0..<7, using: &random) != 0, request: value(0...200_000) * (Bool.random(using: &random) ? 1 : -1),
                    allowedCharge: value(0...150_000), allowedDischarge: value(0...150_000),
                    soc: Bool.random(using: &random) ? value(0...100) : nil)
            }
            let (shares, reasons, result) = Self.allocate(units)
            let pool = units.filter(\.pooled).reduce(0.0) { $0 + ($1.request.isFinite ? $1.request : 0) }
            let discharge = pool > 0
            var headroom = 0.0
            for (i, unit) in units.enumerated() {
                let charge = Self.magnitude(unit.allowedCharge), give = Self.magnitude(unit.allowedDischarge)
                #expect(shares[i].isFinite)
                #expect(shares[i] >= -charge - 1e-6 && shares[i] <= give + 1e-6, "unit \(i): \(shares[i]) outside −\(charge)…\(give)")
                if unit.pooled {
                    // Everyone in the pool moves the same way as the pool.
                    #expect(discharge ? shares[i] >= 0 : shares[i] <= 0)
                    headroom += discharge ? give : charge
                } else {
                    #expect(reasons[i] == .held)
                    let own = unit.request.isFinite ? unit.request : 0
                    #expect(abs(shares[i] - min(max(own, -charge), give)) < 1e-6)
                }
            }
            #expect(abs(result.request - pool) < 1e-6 * max(1, abs(pool)))
            if headroom >= abs(pool) {
                #expect(abs(result.delivered - pool) <= 1e-6 * max(1, abs(pool)), "pool \(pool) delivered \(result.delivered)")
                #expect(result.shortfall <= 1e-6 * max(1, abs(pool)))
            } else {
                #expect(abs(abs(result.delivered) - headroom) <= 1e-6 * max(1, headroom))
                #expect(abs(result.shortfall - (abs(pool) - headroom)) <= 1e-6 * max(1, abs(pool)))
                for (i, unit) in units.enumerated() where unit.pooled && (discharge ? Self.magnitude(unit.allowedDischarge) : Self.magnitude(unit.allowedCharge)) > 0 {
                    #expect(reasons[i] == .full)
                }
            }
        }
    }

    @Test("what one unit cannot take goes to the others: a unit at its limit is full, the rest by headroom")
    func waterFilling() {
        // 150 kW asked of three units that may give 20, 100 and 100 kW. The first is full (SOC 100 %,
        // weight 20 × 1.0) and the others nearly empty (weight 100 × 0.1 each): its share by weight
        // would be 75 kW, so it gives its 20 and the other two share the remaining 130.
        let units = [(20_000.0, 100.0), (100_000, 10), (100_000, 10)].map {
            AllocationInput(request: 50_000, allowedCharge: $0.0, allowedDischarge: $0.0, soc: $0.1)
        }
        let (shares, reasons, result) = Self.allocate(units)
        #expect(abs(shares[0] - 20_000) < 1e-6)
        #expect(reasons[0] == .full)
        #expect(abs(shares[1] - 65_000) < 1e-6 && abs(shares[2] - 65_000) < 1e-6)
        #expect(reasons[1] == .headroom)
        #expect(result.shortfall < 1e-6)
    }

    @Test("SOC weight: discharge takes more from the fuller unit, charge gives more to the emptier",
          arguments: [1.0, -1.0])
    func socBalancing(direction: Double) {
        let capacity = 250_000.0  // Wh each
        var soc = [30.0, 70.0]
        let startSpread = soc[1] - soc[0]
        var spread = startSpread
        // Two hours at 80 kW of the site's 200 kW, one-minute steps, stopping before either
        // unit reaches an end.
        for _ in 0..<120 {
            let units = soc.map {
                AllocationInput(request: direction * 40_000, allowedCharge: $0 < 100 ? 100_000 : 0,
                                allowedDischarge: $0 > 0 ? 100_000 : 0, soc: $0)
            }
            let (shares, _, result) = Self.allocate(units)
            #expect(abs(result.delivered - direction * 80_000) < 1e-6)
            if direction > 0 { #expect(shares[1] > shares[0]) } else { #expect(shares[0] < shares[1]) }
            for i in soc.indices { soc[i] -= shares[i] / 60 / capacity * 100 }
            let now = abs(soc[1] - soc[0])
            #expect(now <= spread + 1e-9, "the spread grew: \(spread) → \(now)")
            spread = now
            if soc.contains(where: { $0 < 5 || $0 > 95 }) { break }
        }
        #expect(spread < startSpread / 2, "direction \(direction): spread \(startSpread) → \(spread)")
    }

    // MARK: the site controller

    static func site(units: Int, droop: DroopSettings = Fixture.immediateDroop) -> SiteController {
        SiteController(
            control: ControlSettings(droop: droop, limitRampPercentPerSecond: 1000, scheduleRampPercentPerSecond: 1000),
            units: (0..<units).map { _ in UnitSettings(rating: Fixture.rating, capacity: WattHours(250_000)) },
            startedAt: .zero)
    }

    /// Steps `site` from `start` for `seconds` at 100 ms with inputs built per unit.
    static func run(_ site: SiteController, from start: Double, seconds: Double, frequency: Double = 50,
                    _ inputs: (Int, MonotonicInstant) -> UnitInputs) {
        var t = start
        for _ in 0..<Int((seconds / 0.1).rounded()) {
            t += 0.1
            let now = Fixture.instant(t)
            site.step(frequency: Timestamped(Hertz(frequency), at: now), inputs: site.units.indices.map { inputs($0, now) },
                      now: now, wallClock: 1_800_000_000 + t)
        }
    }

    static func dispatched(_ kw: Double, tripped: Set<Int> = []) -> (Int, MonotonicInstant) -> UnitInputs {
        { unit, now in
            var inputs = Fixture.healthyInputs(at: now)
            if tripped.contains(unit) { inputs.bms = Fixture.healthyBMS(at: now, dischargeEnabled: false) }
            inputs.dispatch = PowerCommand(power: .kilowatts(kw), expiresAt: Fixture.instant(1000))
            return inputs
        }
    }

    @Test("a tripped unit hands its dispatch share to the others that cycle and takes it back on return")
    func tripMovesDispatch() {
        let site = Self.site(units: 3)
        Self.run(site, from: 0, seconds: 3, Self.dispatched(50))  // 150 kW for the site, 50 each
        for i in 0..<3 { #expect(abs(site.decision(unit: i).setpoint.kilowatts - 50) < 1e-6) }
        // One step with unit 0 unable to discharge.
        Self.run(site, from: 3, seconds: 0.1, Self.dispatched(50, tripped: [0]))
        #expect(site.decision(unit: 0).setpoint == .zero)
        #expect(abs(site.decision(unit: 1).setpoint.kilowatts - 75) < 1e-6)
        #expect(abs(site.decision(unit: 2).setpoint.kilowatts - 75) < 1e-6)
        #expect(site.allocation.shortfall < 1e-6)
        #expect(!site.shortfallActive)
        // Back: the limit ramps up (1000 %/s here) and the shares even out again.
        Self.run(site, from: 3.1, seconds: 2, Self.dispatched(50))
        for i in 0..<3 { #expect(abs(site.decision(unit: i).setpoint.kilowatts - 50) < 1e-6) }
    }

    @Test("site droop: a tripped unit's response is taken up by the others within one cycle")
    func tripMovesDroop() {
        let site = Self.site(units: 3)
        let healthy: (Int, MonotonicInstant) -> UnitInputs = { _, now in Fixture.healthyInputs(at: now) }
        // 48.9 Hz with the seed's 5 % droop and 49.9 Hz edge: (49.9 − 48.9) / 2.5 = 0.4 pu, 40 kW each.
        Self.run(site, from: 0, seconds: 3, frequency: 48.9, healthy)
        for i in 0..<3 { #expect(abs(site.decision(unit: i).setpoint.kilowatts - 40) < 0.01) }
        Self.run(site, from: 3, seconds: 0.1, frequency: 48.9, Self.dispatched(0, tripped: [1]))
        #expect(site.decision(unit: 1).setpoint == .zero)
        #expect(abs(site.decision(unit: 0).setpoint.kilowatts - 60) < 0.01)
        #expect(abs(site.decision(unit: 2).setpoint.kilowatts - 60) < 0.01)
        // Held for 5 s: the others keep carrying it (the tripped unit's own response is still asked for).
        Self.run(site, from: 3.1, seconds: 5, frequency: 48.9, Self.dispatched(0, tripped: [1]))
        #expect(abs(site.decision(unit: 0).setpoint.kilowatts + site.decision(unit: 2).setpoint.kilowatts - 120) < 0.01)
    }

    @Test("an override or dispatch for one unit holds it at its value; the others share the rest")
    func heldUnits() {
        let site = Self.site(units: 3)
        Self.run(site, from: 0, seconds: 3) { unit, now in
            var inputs = Fixture.healthyInputs(at: now)
            switch unit {
            case 0: inputs.override = PowerCommand(power: .kilowatts(-10), expiresAt: Fixture.instant(1000))
            case 1: inputs.dispatch = PowerCommand(power: .kilowatts(30), expiresAt: Fixture.instant(1000), pinned: true)
            default: inputs.dispatch = PowerCommand(power: .kilowatts(40), expiresAt: Fixture.instant(1000))
            }
            return inputs
        }
        #expect(abs(site.decision(unit: 0).setpoint.kilowatts + 10) < 1e-6)
        #expect(site.decision(unit: 0).share == .held && !site.decision(unit: 0).pooled)
        #expect(abs(site.decision(unit: 1).setpoint.kilowatts - 30) < 1e-6)
        #expect(site.decision(unit: 1).share == .held)
        #expect(abs(site.decision(unit: 2).setpoint.kilowatts - 40) < 1e-6)
        #expect(site.decision(unit: 2).share == .headroom)
    }

    @Test("the BMS's SOC steers the shares: the fuller unit gives more, the emptier one takes more", arguments: [40.0, -40.0])
    func socFromBMS(kw: Double) {
        let site = Self.site(units: 2)
        let socs = [30.0, 70.0]
        Self.run(site, from: 0, seconds: 3) { unit, now in
            var inputs = Fixture.healthyInputs(at: now)
            inputs.bms = Fixture.healthyBMS(at: now, soc: socs[unit])
            inputs.dispatch = PowerCommand(power: .kilowatts(kw), expiresAt: Fixture.instant(1000))
            return inputs
        }
        let a = site.decision(unit: 0).setpoint.kilowatts, b = site.decision(unit: 1).setpoint.kilowatts
        #expect(abs(a + b - 2 * kw) < 1e-6)
        // Weights 0.3 : 0.7 discharging, 0.7 : 0.3 charging.
        if kw > 0 { #expect(abs(a - 24) < 1e-6 && abs(b - 56) < 1e-6, "\(a) \(b)") } else { #expect(abs(a + 56) < 1e-6 && abs(b + 24) < 1e-6, "\(a) \(b)") }
    }

    @Test("SITE_SHORTFALL is raised with the missing kW when units fall short, cleared when they can deliver")
    func shortfallReported() {
        let site = Self.site(units: 3)
        Self.run(site, from: 0, seconds: 2, Self.dispatched(80))  // 240 kW
        #expect(!site.shortfallActive)
        while site.events.pop() != nil {}
        Self.run(site, from: 2, seconds: 0.5, Self.dispatched(80, tripped: [0, 1]))
        #expect(site.shortfallActive)
        #expect(abs(site.allocation.shortfall - 140_000) < 1e-6)  // 240 asked, 100 delivered
        var raised: [ControlEvent] = []
        while let event = site.events.pop() { if event.kind == .siteShortfall { raised.append(event) } }
        #expect(raised.count == 1)
        #expect(raised.first.map { abs($0.value - 140) < 1e-6 && abs($0.threshold - 240) < 1e-6 && $0.unit == -1 } == true)
        Self.run(site, from: 2.5, seconds: 2, Self.dispatched(80))
        #expect(!site.shortfallActive)
        var cleared = 0
        while let event = site.events.pop() { if event.kind == .siteShortfallCleared { cleared += 1 } }
        #expect(cleared == 1)
    }
}
