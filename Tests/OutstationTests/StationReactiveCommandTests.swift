import BessBase
import BessSystem
import Config
import ControlCore
import Cycle
import IEC104
@testable import Outstation
import Testing

/// The grid operator's reactive set-points (issue 59 slice 4, docs/design/0010-reactive-power.md):
/// 3003 Mvar (+ = injecting) into `SiteCommands.reactive`, 3004 a power factor signed by excitation
/// into both `powerFactorInjecting` and `powerFactorAbsorbing`, judged against the published
/// `SiteView`'s capability, under the group's `setpoint` right, held `max_hold_s` as 3002 is.
@Suite("IEC 104: the site's reactive set-points 3003 (Mvar) and 3004 (power factor)")
struct StationReactiveCommandTests {
    /// Two units of 100 kW whose inverters report 50 kvar injecting and 40 kvar absorbing each.
    static var capableUnits: [UnitStatus] {
        var units = [UnitStatus](repeating: UnitStatus(), count: 2)
        for i in units.indices {
            units[i].varMaxInjecting = 50_000
            units[i].varMaxAbsorbing = 40_000
        }
        return units
    }

    static let ratings = SiteView.Settings(capacitiesWh: [250_000, 250_000], ratingsW: [100_000, 100_000])

    /// The view of those units: a site of 200 kW that can inject 100 kvar and absorb 80 kvar, so
    /// it holds 0.894 over-excited (200 / √(200² + 100²)) and 0.928 under-excited (200 / √(200² + 80²)).
    static var view: SiteView { SiteView(units: capableUnits, site: SiteStatus(), settings: ratings) }

    /// What an admitted execute of `value` (a Float on the wire) at `signal` asks of the site.
    static func action(_ signal: IEC104Signal, _ value: Float, view: SiteView = Self.view) -> Result<OutstationCommands.Action, CommandRefusal> {
        OutstationCommands.action(of: .init(signal: signal, value: Double(value), select: false), agcBand: (0, 0), ratingW: 200_000, view: view)
    }

    static func vars(_ megavars: Float, view: SiteView = Self.view) -> Double? {
        guard case .success(.siteReactive(let vars)) = action(.siteReactiveSetpointCommand, megavars, view: view) else { return nil }
        return vars
    }

    static func powerFactor(_ pf: Float, view: SiteView = Self.view) -> Double? {
        guard case .success(.sitePowerFactor(let value)) = action(.sitePowerFactorCommand, pf, view: view) else { return nil }
        return value
    }

    static func refusal(_ signal: IEC104Signal, _ value: Float, view: SiteView = Self.view) -> CommandRefusalCode? {
        guard case .failure(let refusal) = action(signal, value, view: view) else { return nil }
        return refusal.code
    }

    @Test("the view of the units: 100 kvar injecting, 80 kvar absorbing, 200 kW")
    func capableView() {
        #expect(Self.view.varMaxInjecting == 100_000 && Self.view.varMaxAbsorbing == 80_000 && Self.view.ratedPowerW == 200_000)
    }

    @Test("3003: Mvar to var, + injecting up to VarMaxInj and − absorbing up to VarMaxAbs; beyond, NaN or infinite refused")
    func reactiveBounds() {
        #expect(Self.vars(0.1) == 100_000, "the injecting capability itself, whatever the Float's rounding")
        #expect(Self.vars(-0.08) == -80_000, "the absorbing capability itself")
        #expect(Self.vars(0.05).map { abs($0 - 50_000) < 0.01 } == true)
        #expect(Self.vars(-0.02).map { abs($0 + 20_000) < 0.01 } == true, "− = absorbing")
        #expect(Self.vars(0) == 0)
        #expect(Self.refusal(.siteReactiveSetpointCommand, 0.1001) == .setpointOutOfRange, "beyond VarMaxInj")
        #expect(Self.refusal(.siteReactiveSetpointCommand, -0.0801) == .setpointOutOfRange, "beyond VarMaxAbs")
        #expect(Self.refusal(.siteReactiveSetpointCommand, -0.09) == .setpointOutOfRange, "inside the injecting side, not the absorbing")
        #expect(Self.refusal(.siteReactiveSetpointCommand, .nan) == .setpointOutOfRange)
        #expect(Self.refusal(.siteReactiveSetpointCommand, .infinity) == .setpointOutOfRange)
        var none = Self.view
        none.varMaxInjecting = 0
        none.varMaxAbsorbing = 0
        #expect(Self.refusal(.siteReactiveSetpointCommand, 0.001, view: none) == .setpointOutOfRange, "no unit with var points")
        #expect(Self.vars(0, view: none) == 0, "zero var is always within")
    }

    @Test("3004: |pf| in (0, 1], + over-excited, − under-excited, 1 unity; below the capability's PF, 0, >1 refused")
    func powerFactorBounds() {
        #expect(Self.powerFactor(1) == 1 && Self.powerFactor(-1) == -1, "unity either sign")
        #expect(Self.powerFactor(0.95) == 0.95, "0.95 as written, not the Float's 0.949999988")
        #expect(Self.powerFactor(0.9) == 0.9, "over-excited above 0.894")
        #expect(Self.refusal(.sitePowerFactorCommand, 0.89) == .setpointOutOfRange, "over-excited below 0.894")
        #expect(Self.powerFactor(-0.93) == -0.93, "under-excited above 0.928")
        #expect(Self.refusal(.sitePowerFactorCommand, -0.92) == .setpointOutOfRange, "under-excited below 0.928")
        for outside: Float in [0, -0.0, 1.5, -1.01, 2, .nan, .infinity, 0.0000001] {
            #expect(Self.refusal(.sitePowerFactorCommand, outside) == .setpointOutOfRange, "\(outside) is no power factor")
        }
        var none = Self.view
        none.varMaxInjecting = 0
        none.varMaxAbsorbing = 0
        #expect(Self.powerFactor(1, view: none) == 1, "unity needs no capability")
        #expect(Self.refusal(.sitePowerFactorCommand, 0.99, view: none) == .setpointOutOfRange, "no unit with var points")
    }

    /// A station on a site of two 100 kW units whose commands the tests read back.
    struct Bench {
        let shared = SharedState(units: 2, view: StationReactiveCommandTests.ratings)
        let clock = ManualClock()
        let station: StationProcedures

        init() {
            let description = StationDescription(ratingsW: [100_000, 100_000], capacitiesWh: [250_000, 250_000], hasMeter: false,
                                                 frequencyResponseEnabled: false, view: shared.view)
            station = StationProcedures(settings: OutstationSettings(), description: description, shared: shared,
                                        journal: PeerJournal(clock: clock, sink: { _ in }, audit: nil), counters: OutstationCounters(),
                                        audit: nil, clock: clock, wallClock: { 0 })
        }

        /// An admitted execute of `value` (a Float on the wire) at `signal` at `now`: nil when accepted.
        func execute(_ signal: IEC104Signal, _ value: Float, at now: MonotonicInstant) -> CommandRefusal? {
            station.execute(.init(signal: signal, value: Double(value), select: false), now: now, view: StationReactiveCommandTests.view)
        }
    }

    @Test("an executed 3003 writes SiteCommands.reactive, 3004 both power factors, held max_hold_s then off; refused changes nothing")
    func executeWritesCommands() {
        let bench = Bench()
        let shared = bench.shared
        let now = bench.clock.now()
        func execute(_ signal: IEC104Signal, _ value: Float) -> CommandRefusal? { bench.execute(signal, value, at: now) }
        #expect(execute(.siteReactiveSetpointCommand, -0.05) == nil)
        var commands = shared.commands
        let varOnly = commands
        #expect(commands.reactive.enabled && abs(commands.reactive.value + 50_000) < 0.01, "absorbing 50 kvar: \(commands.reactive)")
        #expect(commands.reactive.expiresAt == now + commands.maxHold && !commands.reactive.revertEnabled && !commands.reactive.reverted)
        #expect(!commands.setpoint.enabled && !commands.powerFactorInjecting.enabled, "the other commands untouched")

        #expect(execute(.sitePowerFactorCommand, -0.95) == nil)
        commands = shared.commands
        for pf in [commands.powerFactorInjecting, commands.powerFactorAbsorbing] {
            #expect(pf.enabled && pf.value == -0.95 && pf.expiresAt == now + commands.maxHold && !pf.revertEnabled, "\(pf)")
        }
        #expect(!commands.reactive.enabled && commands.reactive.active(at: now) == nil, "3004 replaces 3003's var set-point")

        #expect(execute(.siteReactiveSetpointCommand, 0.2)?.code == .setpointOutOfRange)
        #expect(execute(.sitePowerFactorCommand, 0.5)?.code == .setpointOutOfRange)
        #expect(shared.commands == commands, "a refused set-point changes nothing")

        // Not refreshed: in force until max_hold_s, then off with no reversion, as 3002's set-point.
        let end = now + commands.maxHold
        #expect(varOnly.settled(at: end - .milliseconds(1)).reactive.active(at: end - .milliseconds(1)) != nil)
        let varAfter = varOnly.settled(at: end).reactive
        #expect(varAfter.active(at: end) == nil && !varAfter.enabled && varAfter.value == 0)
        let before = commands.settled(at: end - .milliseconds(1))
        #expect(before.powerFactorInjecting.active(at: end - .milliseconds(1)) == -0.95)
        let after = commands.settled(at: end)
        #expect(after.reactive == commands.reactive, "the replaced var set-point has no reversion left to apply")
        #expect(after.powerFactorInjecting.active(at: now + commands.maxHold) == nil && after.powerFactorInjecting.value == 1)
        #expect(after.powerFactorAbsorbing.active(at: now + commands.maxHold) == nil && after.powerFactorAbsorbing.value == 1)
    }

    @Test("the latest of 3003 and 3004 replaces the other: a confirmed 3003 after a 3004 is the site's Q, and back")
    func latestOrderReplacesTheOther() {
        let bench = Bench()
        let shared = bench.shared
        let now = bench.clock.now()
        func execute(_ signal: IEC104Signal, _ value: Float, at time: MonotonicInstant) -> CommandRefusal? { bench.execute(signal, value, at: time) }
        // 3004 first: a power factor whose |Q| at full power (0.95: about 66 kvar) is below 3003's 80 kvar.
        #expect(execute(.sitePowerFactorCommand, 0.95, at: now) == nil)
        #expect(shared.commands.powerFactorInjecting.active(at: now) == 0.95 && shared.commands.powerFactorAbsorbing.active(at: now) == 0.95)
        let later = now + .seconds(5)
        #expect(execute(.siteReactiveSetpointCommand, 0.08, at: later) == nil)
        var commands = shared.commands
        #expect(commands.reactive.active(at: later).map { abs($0 - 80_000) < 0.01 } == true, "\(commands.reactive)")
        #expect(commands.powerFactorInjecting.active(at: later) == nil && commands.powerFactorAbsorbing.active(at: later) == nil,
                "the earlier power factor is out of force, so it cannot win the least |Q|")
        for pf in [commands.powerFactorInjecting, commands.powerFactorAbsorbing] {
            #expect(!pf.enabled && pf.value == 1 && pf.expiresAt == nil, "off, reading unity, nothing pending: \(pf)")
        }
        let settled = commands.settled(at: now + commands.maxHold + .seconds(1))
        #expect(settled.powerFactorInjecting == commands.powerFactorInjecting && settled.powerFactorAbsorbing == commands.powerFactorAbsorbing,
                "no reversion of the replaced power factor when its old hold would have ended")
        #expect(settled.reactive.active(at: now + commands.maxHold + .seconds(1)) != nil, "3003 holds its own max_hold_s")

        // And back: a later 3004 takes 3003's var set-point out of force.
        let last = later + .seconds(5)
        #expect(execute(.sitePowerFactorCommand, -0.95, at: last) == nil)
        commands = shared.commands
        #expect(commands.reactive.active(at: last) == nil && !commands.reactive.enabled && commands.reactive.value == 0)
        #expect(commands.powerFactorInjecting.active(at: last) == -0.95 && commands.powerFactorAbsorbing.active(at: last) == -0.95)

        // A refused order replaces nothing.
        #expect(execute(.siteReactiveSetpointCommand, 0.2, at: last)?.code == .setpointOutOfRange)
        #expect(shared.commands == commands, "a refused 3003 leaves the power factor in force")
    }

    @Test("3003 and 3004 need the group's setpoint right and its started connection")
    func rights() {
        let commands = OutstationCommands(settings: OutstationSettings(), timeBase: .utc)
        for signal in [IEC104Signal.siteReactiveSetpointCommand, .sitePowerFactorCommand] {
            #expect(OutstationCommands.right(of: signal) == .setpoint)
            let order = OutstationCommands.Order(signal: signal, value: 1, select: false)
            func context(_ rights: Set<IEC104CommandRight>, started: Bool = true) -> OutstationCommands.Context {
                .init(group: IEC104Group(name: "sldc", commands: rights), started: started, connection: 1, selection: nil,
                      now: MonotonicInstant(nanoseconds: 0), wallClockSeconds: 0)
            }
            #expect(commands.refusal(of: order, in: context([.setpoint])) == nil)
            #expect(commands.refusal(of: order, in: context([.agc, .frequencyResponse]))?.code == .notAllowed)
            #expect(commands.refusal(of: order, in: context([.setpoint], started: false))?.code == .notStarted)
        }
    }

    @Test("the default point list: 3003 and 3004 are command points, in no interrogation")
    func pointList() {
        #expect(IEC104Signal.siteReactiveSetpointCommand.defaultAddress == 3003)
        #expect(IEC104Signal.sitePowerFactorCommand.defaultAddress == 3004)
        #expect(IEC104Signal(rawValue: "site_reactive_setpoint_command") == .siteReactiveSetpointCommand)
        #expect(IEC104Signal(rawValue: "site_power_factor_command") == .sitePowerFactorCommand)
        let image = StationImage(description: StationImageTests.description, settings: OutstationSettings())
        #expect(!image.points.contains { $0.address == 3003 || $0.address == 3004 })
    }

    @Test("iec104.points moves 3003 and 3004 by name; one at another command's address is refused")
    func configuredAddresses() throws {
        let units = "bess_units:\n  - {id: U1, capacity_kwh: 250, max_power_kw: 100}\n"
        let moved = try ConfigLoader.parse(units + "iec104:\n  points:\n    - {signal: site_reactive_setpoint_command, ioa: 3203}\n"
                                           + "    - {signal: site_power_factor_command, ioa: 3204}\n", file: "a.yaml")
        #expect(moved.iec104?.server.address(.siteReactiveSetpointCommand) == 3203)
        #expect(moved.iec104?.server.address(.sitePowerFactorCommand) == 3204)
        do {
            _ = try ConfigLoader.parse(units + "iec104:\n  points:\n    - {signal: site_power_factor_command, ioa: 3002}\n", file: "b.yaml")
            Issue.record("3004 at 3002 accepted")
        } catch {
            #expect("\(error)".contains("gives site_power_factor_command the address of site_setpoint_command"), "\(error)")
        }
    }
}
