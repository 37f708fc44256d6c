import ControlCore
import Cycle
import Fieldbus
import IEC104
import Testing

/// The fuzz harnesses reach the accept path of the reactive commands (issue 59): SCADA's 704 var
/// and power-factor writes and IEC 104's 3003/3004 are judged against a site with var points, so
/// the seeds leave commands in force, not only refusals, and the fuzzer starts from both.
@Suite("Fuzz harnesses: reactive commands accepted")
struct ReactiveFuzzSeedTests {
    @Test("SCADA: the harness's site can inject 66 kvar and absorb 50 kvar at 150 kW")
    func scadaView() {
        let view = ScadaHarness.view
        #expect(view.varMaxInjecting == 66_000 && view.varMaxAbsorbing == 50_000 && view.ratedPowerW == 150_000)
        #expect(view.acceptsPowerFactor(0.92) && !view.acceptsPowerFactor(0.91), "over-excited down to 0.915")
        #expect(view.acceptsPowerFactor(-0.95) && !view.acceptsPowerFactor(-0.94), "under-excited down to 0.949")
    }

    @Test("SCADA: each var and power-factor seed leaves the commands it writes in force")
    func scadaSeeds() {
        let seeds = ScadaHarness.reactiveSeeds
        #expect(seeds.count == 4)
        for (index, seed) in seeds.enumerated() {
            var input = FuzzInput(seed.bytes)
            let (violations, commands) = ScadaHarness.play(&input)
            #expect(violations.isEmpty, "seed \(index): \(violations.prefix(3))")
            if let vars = seed.reactive {
                #expect(commands.reactive.enabled && commands.reactive.value == vars, "seed \(index): \(commands.reactive)")
            }
            for (expected, command) in [(seed.powerFactorInjecting, commands.powerFactorInjecting),
                                        (seed.powerFactorAbsorbing, commands.powerFactorAbsorbing)] {
                guard let expected else { continue }
                #expect(command.enabled && abs(command.value - expected) < 1e-9, "seed \(index): \(command)")
            }
        }
    }

    @Test("SunSpec: the reactive seeds reach VARS with 702's ratings, VAR_MAX_PCT, and voltages that are no reading")
    func sunspecSeeds() throws {
        let seeds = SunSpecHarness.reactiveSeeds()
        #expect(seeds.count == 4)
        var inverters: [SunSpecInverter] = []
        var voltages: [Double?] = []
        for seed in seeds {
            var input = FuzzInput(seed)
            var device = FuzzDevice(words: input.words())
            let inverter = try #require(try? SunSpecInverter.open(&device))
            inverters.append(inverter)
            voltages.append((try? inverter.readStatus(&device))?.voltage)
            #expect(SunSpecHarness.run(&input).isEmpty)
        }
        guard inverters.count == 4 else { return }
        #expect(inverters[0].reactiveControl?.mode == .vars(scaleFactor: 1))
        #expect(inverters[0].reactiveControl?.maxInjecting == 60_000 && inverters[0].reactiveControl?.maxAbsorbing == 50_000)
        #expect(inverters[1].reactiveControl?.mode == .maxPercent(scaleFactor: -1, maxInjecting: 60_000, maxAbsorbing: 50_000))
        #expect(voltages[2] == nil && voltages[3] == nil, "0 V and a V_SF not implemented read as no voltage: \(voltages)")
    }

    static let select = SetpointQualifier(select: true)
    static let execute = SetpointQualifier(select: false)

    static func setpoint(_ value: Float, _ qualifier: SetpointQualifier, at address: UInt32, tagged: Bool = false) -> [UInt8] {
        tagged
            ? IEC104SessionHarness.asdu(.setpointFloatWithTime, .activation,
                                        .setpointFloatWithTime(value, qualifier, IEC104SessionHarness.time), address: address)
            : IEC104SessionHarness.asdu(.setpointFloat, .activation, .setpointFloat(value, qualifier), address: address)
    }

    @Test("IEC 104 session: 3003 selected and executed inside the capability is in force; beyond it, refused")
    func session3003() {
        let session = Session.play([Self.setpoint(1.5, Self.select, at: 3003), Self.setpoint(1.5, Self.execute, at: 3003)])
        #expect(session.violations.list.isEmpty, "\(session.violations.list.prefix(3))")
        #expect(session.shared.view.varMaxInjecting == 2e6 && session.shared.view.varMaxAbsorbing == 1.6e6)
        let accepted = session.shared.commands.reactive
        #expect(accepted.enabled && accepted.value == 1.5e6, "\(accepted)")

        let refused = Session.play([Self.setpoint(-1.6, Self.execute, at: 3003), Self.setpoint(-2, Self.execute, at: 3003)])
        #expect(refused.violations.list.isEmpty, "\(refused.violations.list.prefix(3))")
        let edge = refused.shared.commands.reactive
        #expect(edge.enabled && edge.value == -1.6e6, "the absorbing edge taken, −2 Mvar refused: \(edge)")
    }

    @Test("IEC 104 session: the harness flags a var setpoint in force that the site can no longer hold")
    func sessionInvariant() {
        let session = Session.play([Self.setpoint(1.5, Self.execute, at: 3003)], stop: false)
        #expect(session.violations.list.isEmpty, "\(session.violations.list.prefix(3))")
        // The units lose their var points: 1.5 Mvar in force is beyond the capability now.
        session.shared.publish(unitStatus: [UnitStatus](repeating: UnitStatus(), count: 2))
        session.feed([])
        #expect(session.violations.list.contains { $0.hasPrefix("a var setpoint of 1500000") }, "\(session.violations.list)")
    }

    @Test("IEC 104 session: 3004 time-tagged (C_SE_TC_1) in force both ways; below the site's bound, refused")
    func session3004() {
        let session = Session.play([Self.setpoint(0.95, Self.select, at: 3004, tagged: true),
                                    Self.setpoint(0.95, Self.execute, at: 3004, tagged: true),
                                    Self.setpoint(-0.93, Self.execute, at: 3004, tagged: true),
                                    Self.setpoint(-0.9, Self.execute, at: 3004)])
        #expect(session.violations.list.isEmpty, "\(session.violations.list.prefix(3))")
        let commands = session.shared.commands
        for pf in [commands.powerFactorInjecting, commands.powerFactorAbsorbing] {
            #expect(pf.enabled && abs(pf.value + 0.93) < 1e-9, "−0.93 in force, −0.9 refused (under 0.928): \(pf)")
        }
        #expect(!commands.reactive.enabled, "a power factor takes the var setpoint out of force")
    }
}
