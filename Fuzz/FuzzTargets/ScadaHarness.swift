import ControlCore
import Cycle
import Fieldbus
import Scada

/// Write requests (start register, values) against the SCADA server's model 704, in sequence, with
/// time passing, judged against a site that has reactive capability (`view`), so the var and
/// power-factor writes are accepted as well as refused. Invariants: a refusal is exception 01, 02
/// or 03 with a reason; what is accepted stays inside its bounds (0–100 %, ±the site's rating, the
/// site's var capability each way, a power factor the site can hold at its rating), holds at most
/// `max_hold_s`, and the image made from it reads back inside the same bounds.
enum ScadaHarness {
    /// Two units of 50 and 100 kW whose inverters report var points: 66 kvar injecting and 50 kvar
    /// absorbing between them, so the site holds 0.915 over-excited (150 / √(150² + 66²)) and
    /// 0.949 under-excited (150 / √(150² + 50²)). Without var points every var write but 0 and
    /// every power factor but unity would be refused, and the accept path go unfuzzed.
    static let view: SiteView = {
        let ratings = SiteView.Settings(capacitiesWh: [100_000, 200_000], ratingsW: [50_000, 100_000])
        var units = [UnitStatus](repeating: UnitStatus(), count: 2)
        (units[0].varMaxInjecting, units[0].varMaxAbsorbing) = (22_000, 16_000)
        (units[1].varMaxInjecting, units[1].varMaxAbsorbing) = (44_000, 34_000)
        return SiteView(units: units, site: SiteStatus(), settings: ratings)
    }()

    static let site = ScadaSiteDescription(siteID: "FUZZ", version: "0", mode: "simulation", unitID: 1,
                                           ratingsW: [50_000, 100_000], capacitiesWh: [100_000, 200_000], hasMeter: true,
                                           nominalVoltageV: 230, view: view)

    static func run(_ input: inout FuzzInput) -> [String] { play(&input).violations }

    /// The writes of `input` in turn; what they broke and the commands they left.
    static func play(_ input: inout FuzzInput) -> (violations: [String], commands: SiteCommands) {
        var image = ScadaImage(site: site)
        var commands = SiteCommands(maxHold: .seconds(60))
        var nanoseconds: Int64 = 1_000_000_000
        var violations = Violations()
        let rated = image.ratedPower
        var writes = 0
        while !input.isEmpty, writes < 32 {
            writes += 1
            let address = 40000 + Int(input.u16() % 2048)
            let count = Int(input.u8() % 24) + 1
            var values: [UInt16] = []
            for _ in 0..<count { values.append(input.u16()) }
            nanoseconds += Int64(input.u8()) * 500_000_000
            let now = MonotonicInstant(nanoseconds: nanoseconds)
            switch image.decodeWrite(address: address, values: values, commands: commands, now: now, view: view) {
            case .failure(let refusal):
                violations.check([1, 2, 3].contains(refusal.exception) && !refusal.reason.isEmpty,
                                 "write at \(address) refused with exception \(refusal.exception) '\(refusal.reason)'")
            case .success(let write):
                // A write that touched a command's points lists each; only 704's VarSetPri, taken at the
                // value the configuration serves, touches none and changes nothing.
                violations.check(write.written.isEmpty || !write.changes.isEmpty, "write at \(address) accepted with no change")
                commands = write.commands
            }
            let c = commands.settled(at: now)
            let within: [(String, ExpiringCommand, (Double) -> Bool)] = [
                ("limit", c.limit, { (0.0...100.0).contains($0) }),
                ("setpoint", c.setpoint, { (-rated...rated).contains($0) }),
                ("var setpoint", c.reactive, { view.acceptsVar($0) }),
                ("power factor injecting", c.powerFactorInjecting, { view.acceptsPowerFactor($0) }),
                ("power factor absorbing", c.powerFactorAbsorbing, { view.acceptsPowerFactor($0) }),
            ]
            for (name, command, inBounds) in within {
                violations.check(inBounds(command.value) && inBounds(command.revertValue),
                                 "\(name) accepted as \(command.value) (revert \(command.revertValue))")
                violations.check(.seconds(Int64(command.timeoutSeconds)) <= commands.maxHold, "\(name) timeout \(command.timeoutSeconds) s")
                if let expires = command.expiresAt {
                    violations.check(expires.nanoseconds - nanoseconds <= commands.maxHold.nanosecondsClamped + 1,
                                     "\(name) holds until \(expires), beyond max_hold_s")
                }
            }
            image.fill(commands: commands, now: now)
            if !violations.list.isEmpty { break }
        }
        return (violations.list, commands.settled(at: MonotonicInstant(nanoseconds: nanoseconds)))
    }

    /// The seeds, each one or more writes; the var and power-factor ones are `reactiveSeeds`.
    static func seeds() -> [[UInt8]] {
        guard let write = writer() else { return [] }
        return [
            write(14, [1], 2) + write(15, [50], 2),   // WMaxLimPctEna, WMaxLimPct 50 %
            write(22, [1, 1, 0, 20_000], 2),         // WSetEna, WSetMod, WSet 20 kW
            write(31, [0, 30], 2) + write(22, [1], 2) + write(24, [0xFFFF, 0x8000], 2),  // WSetRvrtTms 30 s, WSet −32768
        ] + reactiveSeeds.map(\.bytes)
    }

    /// The var and power-factor seeds, with the commands each leaves in force (what
    /// `FuzzTests` checks, so the accept path is known to be reached).
    static var reactiveSeeds: [(bytes: [UInt8], reactive: Double?, powerFactorInjecting: Double?, powerFactorAbsorbing: Double?)] {
        guard let write = writer() else { return [] }
        let sf = image.varSF
        func vars(_ v: Int) -> [UInt16] {
            let raw = Int32(Double(v) / SunSpec.powerOfTen(sf))
            return [UInt16(truncatingIfNeeded: raw >> 16), UInt16(truncatingIfNeeded: raw)]
        }
        return [
            // VarSetEna, VarSetMod VARS, VarSetPri REACTIVE, VarSet 30 kvar injecting in one request;
            // then −60 kvar (beyond the 50 absorbing: refused), VarSetMod 1 (refused), −50 kvar (the edge).
            (write(35, [1, 4, 1] + vars(30_000), 2) + write(38, vars(-60_000), 2) + write(36, [1], 2)
                + write(38, vars(-50_000), 2), -50_000, nil, nil),
            // The revert armed: VarSetRvrt 10 kvar, VarSetEnaRvrt 1, VarSetRvrtTms 20 s, then VarSet
            // 40 kvar with its enable; 30 s on, the revert is in force; VarSetPri ACTIVE (refused).
            (write(40, vars(10_000), 2) + write(44, [1, 0, 20], 2) + write(35, [1, 4, 1] + vars(40_000), 2)
                + write(37, [0], 60), 10_000, nil, nil),
            // PFWInjEna, PFWInj 0.95 over-excited (at least 0.915: taken); PFWAbsEna, PFWAbs 0.90
            // under-excited (below 0.949: refused), then 0.96; PF 1.001 (refused); the sentinel.
            (write(2, [1], 2) + write(59, [950, 0], 2) + write(8, [1], 2) + write(63, [900, 1], 2) + write(63, [960, 1], 2)
                + write(61, [1001, 0], 2) + write(59, [0xFFFF], 2), nil, 0.95, -0.96),
            // Excitation alone: PFWInj's 0.95 turned under-excited (at least 0.949 that way: taken),
            // then 0.92 under-excited written whole (refused), PF 0 (refused).
            (write(2, [1], 2) + write(59, [950, 0], 2) + write(60, [1], 2) + write(59, [920, 1], 2)
                + write(59, [0, 0], 2), nil, -0.95, nil),
        ]
    }

    static var image: ScadaImage { ScadaImage(site: site) }

    /// A write's bytes: 704's point at `offset`, `values`, then `halfSeconds` × 0.5 s passing.
    static func writer() -> ((Int, [UInt16], UInt8) -> [UInt8])? {
        guard let m = image.start(of: 704) else { return nil }
        return { offset, values, halfSeconds in
            let address = m + offset
            return [UInt8(address >> 8), UInt8(address & 0xFF), UInt8(values.count - 1)] + bytes(of: values) + [halfSeconds]
        }
    }
}
