import BessSystem
import Config
import ControlCore
@testable import Cycle
import Fieldbus
import Foundation
import Synchronization
import TestSupport
import Testing

/// Reactive power on the wire (docs/design/0010-reactive-power.md, "the wire"): SunSpec 704's var
/// points against independent inverters (pymodbus serving pysunspec2's model definitions).
@Suite("Reactive power on the wire: 704 VarSet, VarSetPct, the revert, the VA-safe order", .serialized)
struct ReactiveWireTests {
    /// Notices a worker gave.
    final class Notices: Sendable {
        let list = Mutex<[Notice]>([])
        var all: [Notice] { list.withLock { $0 } }
        func codes(_ code: String) -> [Notice] { all.filter { $0.code == code } }
    }

    func worker(_ peer: UnitsPeer, _ slots: [(Int, DeviceSlot)], revert: Duration = .seconds(10), notices: Notices = Notices())
        -> EndpointWorker
    {
        EndpointWorker(endpoint: .tcp(host: "127.0.0.1", port: peer.port), devices: slots.map { .init(unitID: $0.0, slot: $0.1, name: "U\($0.0)") },
                       period: .milliseconds(100), timeout: .milliseconds(500), revert: revert) { notice in
            notices.list.withLock { $0.append(notice) }
        }
    }

    /// The device bessd discovers at unit `unit` of `peer`.
    func discover(_ peer: UnitsPeer, unit: Int) throws -> (ModbusDevice, ModbusConnection) {
        let connection = try ModbusConnection(endpoint: .tcp(host: "127.0.0.1", port: peer.port), unitID: unit, timeout: .seconds(2))
        var access = connection.unit(unit)
        return (.sunspec(try SunSpecInverter.open(&access)), connection)
    }

    /// The VARSET line of a unit bessd commands in VARS mode with the revert armed (10 s, to 0 var).
    func varset(_ unit: Int, ena: Int = 1, raw: Int, pri: Int = 0) -> String {
        "VARSET unit=\(unit) ena=\(ena) mod=4 pri=\(pri) var=\(raw) pct=0 rvrt_tms=10 rvrt=0 ena_rvrt=1"
    }

    static let t0 = MonotonicInstant(nanoseconds: 1_000_000_000)

    /// The writes the peer counted for `unit` so far (its REQUESTS line, every 0.5 s).
    static func writes(_ peer: UnitsPeer, unit: Int) -> Int {
        peer.last("REQUESTS unit=\(unit) ")?.split(separator: " ").first { $0.hasPrefix("writes=") }.flatMap { Int($0.dropFirst(7)) } ?? 0
    }

    @Test("VARS: 702's ratings and 704's VarSet_SF read at discovery; VarSet at its scale factor, armed; 0 var at stop")
    func vars() throws {
        let peer = try UnitsPeer(["1:702,varsetsf=1,lnv=2301,vsf=-1,var=-150"])
        defer { peer.stop() }
        #expect(peer.ready)
        let (device, connection) = try discover(peer, unit: 1)
        guard case .sunspec(let inverter) = device else { Issue.record("not SunSpec"); return }
        #expect(inverter.reactiveControl?.mode == .vars(scaleFactor: 1))
        #expect(inverter.reactiveRatings == SunSpecReactiveRatings(apparentPower: 55_000, maxInjecting: 30_000, maxAbsorbing: 25_000))
        // A var beyond 702's VarMaxInj / VarMaxAbs is held at them, never sent for the device to refuse.
        let control = try #require(inverter.reactiveControl)
        func varSet(_ q: Double) -> [UInt16]? {
            control.writes(q, reactivePriority: false, revert: .seconds(10), rearm: false).last.map { Array($0.values.suffix(2)) }
        }
        #expect(varSet(40_000) == SunSpec.words(UInt32(bitPattern: 3_000)), "30,000 var at VarSet_SF 1")
        #expect(varSet(-40_000) == SunSpec.words(UInt32(bitPattern: -2_500)), "25,000 var absorbed at VarSet_SF 1")
        #expect(varSet(12_340) == SunSpec.words(UInt32(bitPattern: 1_234)))
        var access = connection.unit(1)
        let reading = try inverter.readStatus(&access)
        #expect(reading.voltage.map { abs($0 - 230.1) < 1e-9 } == true && reading.reactivePower == -150, "\(reading)")
        connection.close()

        let slot = DeviceSlot()
        slot.setSetpoint(.kilowatts(10), reactive: 12_340)
        let w = worker(peer, [(1, slot)])
        w.start()
        #expect(waitFor(seconds: 10) { peer.last("VARSET unit=1 ") == varset(1, raw: 1234) }, "\(peer.all)")
        #expect(slot.reactiveCapability == SunSpecReactiveCapability(available: true, ratings: inverter.reactiveRatings))
        // The cycle's sample carries the peer's 702 ratings and its var points (the reactive stage's rating).
        #expect(waitFor(seconds: 5) {
            slot.sample.reading.map { ($0.value.apparentPowerRating, $0.value.varMaxInjecting, $0.value.varMaxAbsorbing) } ?? (nil, nil, nil)
                == (55_000, 30_000, 25_000) && slot.sample.reading?.value.reactiveAvailable == true
        })
        #expect(waitFor(seconds: 5) { peer.last("WSET unit=1 ") == "WSET unit=1 ena=1 mod=1 w=10000 rvrt_tms=10 rvrt=0 ena_rvrt=1" })
        // Absorbing, with reactive priority (VarSetPri REACTIVE).
        slot.setReactivePriority(true)
        slot.setSetpoint(.kilowatts(10), reactive: -5_000)
        #expect(waitFor(seconds: 5) { peer.last("VARSET unit=1 ") == varset(1, raw: -500, pri: 1) }, "\(peer.all)")
        // A clean stop: 0 var with the revert armed (and 0 W).
        w.stop()
        #expect(waitFor(seconds: 5) { peer.last("VARSET unit=1 ") == varset(1, raw: 0, pri: 1) }, "\(peer.all)")
        #expect(peer.last("WSET unit=1 ") == "WSET unit=1 ena=1 mod=1 w=0 rvrt_tms=10 rvrt=0 ena_rvrt=1")
    }

    @Test("VAR_MAX_PCT without VarSet: VarSetPct in % of VarMaxInj (+) and VarMaxAbs (−), VarSetPctRvrt 0")
    func maxPercent() throws {
        let peer = try UnitsPeer(["1:varpct,varpctsf=-1"])
        defer { peer.stop() }
        let (device, connection) = try discover(peer, unit: 1)
        connection.close()
        #expect(device.reactiveControl?.mode == .maxPercent(scaleFactor: -1, maxInjecting: 30_000, maxAbsorbing: 25_000))
        let slot = DeviceSlot()
        slot.setSetpoint(.kilowatts(-3), reactive: 15_000)
        let w = worker(peer, [(1, slot)])
        w.start()
        defer { w.stop() }
        let absent = Int(Int32.min)
        func line(_ pct: Int) -> String {
            "VARSET unit=1 ena=1 mod=1 pri=0 var=\(absent) pct=\(pct) rvrt_tms=10 rvrt=\(absent) ena_rvrt=1"
        }
        // 15 kvar of 30 kvar injecting: 50.0 %; 5 kvar of 25 kvar absorbing: −20.0 %.
        #expect(waitFor(seconds: 10) { peer.last("VARSET unit=1 ") == line(500) }, "\(peer.all)")
        slot.setSetpoint(.kilowatts(-3), reactive: -5_000)
        #expect(waitFor(seconds: 5) { peer.last("VARSET unit=1 ") == line(-200) }, "\(peer.all)")
        #expect(peer.last("WSET unit=1 ") == "WSET unit=1 ena=1 mod=1 w=-3000 rvrt_tms=10 rvrt=0 ena_rvrt=1")
    }

    @Test("the revert: armed first, re-armed every half revert while bessd writes; VarSet back to VarSetRvrt when it stops")
    func revert() throws {
        let peer = try UnitsPeer(["1:varsetsf=1"])
        defer { peer.stop() }
        let (device, connection) = try discover(peer, unit: 1)
        defer { connection.close() }
        let control = try #require(device.reactiveControl)
        typealias C = SunSpec.ACControls
        let base = control.model.address
        // The first write arms: revert value, then enable and time (one request), then the setpoint.
        let armed = control.writes(5_000, reactivePriority: false, revert: .seconds(2), rearm: true)
        #expect(armed.map(\.address) == [base + C.varSetRvrt, base + C.varSetEnaRvrt, base + C.varSetEna])
        #expect(armed.map(\.values) == [[0, 0], [1, 0, 2], [1, 4, 0, 0, 500]])
        // Planned as the worker plans it: armed at first, quiet until half the revert, then re-armed.
        let plain = control.writes(5_000, reactivePriority: false, revert: .seconds(2), rearm: false)
        let first = try #require(try WritePlanner.plan(device, setpoint: .zero, reactive: 5_000, reactivePriority: false,
                                                       lastWritten: nil, lastPlain: nil, lastArmedAt: .zero,
                                                       axis: ReactiveWriteState(), revert: .seconds(2), now: Self.t0))
        #expect(first.reactive?.lastArmedAt == Self.t0 && first.reactive?.enabled == true)
        #expect(first.writes.prefix(3).map(\.address) == armed.map(\.address))
        let steady = ReactiveWriteState(lastWritten: 5_000, lastPlain: plain, lastArmedAt: Self.t0, enabled: true)
        let wset = try device.writes(.zero, revert: .seconds(2), rearm: false)
        func plan(at now: MonotonicInstant) throws -> WritePlan? {
            try WritePlanner.plan(device, setpoint: .zero, reactive: 5_000, reactivePriority: false, lastWritten: .zero,
                                  lastPlain: wset, lastArmedAt: now, axis: steady, revert: .seconds(2), now: now)
        }
        #expect(try plan(at: Self.t0 + .milliseconds(999)) == nil)
        let again = try #require(try plan(at: Self.t0 + .seconds(1)))
        #expect(again.writes.map(\.address) == armed.map(\.address) && again.reactive?.lastArmedAt == Self.t0 + .seconds(1))

        // On the wire: bessd arms it (2 s) and stops writing: VarSet falls back to VarSetRvrt (0).
        var access = connection.unit(1)
        for write in armed { try access.writeRegisters(at: write.address, write.values) }
        let on = "VARSET unit=1 ena=1 mod=4 pri=0 var=500 pct=0 rvrt_tms=2 rvrt=0 ena_rvrt=1"
        let back = "VARSET unit=1 ena=1 mod=4 pri=0 var=0 pct=0 rvrt_tms=2 rvrt=0 ena_rvrt=1"
        #expect(waitFor(seconds: 5) { peer.all.contains(on) }, "\(peer.all)")
        #expect(waitFor(seconds: 10) { peer.last("VARSET unit=1 ") == back }, "\(peer.all)")
    }

    @Test("while the worker writes, the revert is refreshed: the device never reverts")
    func refreshed() throws {
        let peer = try UnitsPeer(["1:varsetsf=1"])
        defer { peer.stop() }
        let slot = DeviceSlot()
        slot.setSetpoint(.kilowatts(1), reactive: 5_000)
        let w = worker(peer, [(1, slot)], revert: .seconds(2))
        w.start()
        defer { w.stop() }
        let on = "VARSET unit=1 ena=1 mod=4 pri=0 var=500 pct=0 rvrt_tms=2 rvrt=0 ena_rvrt=1"
        #expect(waitFor(seconds: 10) { peer.last("VARSET unit=1 ") == on }, "\(peer.all)")
        // Writes go on (a re-arm of both axes every second) past two revert periods: still 500.
        // (From a count taken after the first writes: the peer says its counts every 0.5 s.)
        #expect(waitFor(seconds: 5) { Self.writes(peer, unit: 1) >= 6 })
        let before = Self.writes(peer, unit: 1)
        #expect(waitFor(seconds: 15) { Self.writes(peer, unit: 1) >= before + 24 }, "\(peer.all.suffix(5))")
        #expect(peer.last("VARSET unit=1 ") == on, "\(peer.all)")
    }

    @Test("VA-safe order: |P| falling and |Q| rising, WSet first; otherwise VarSet first")
    func vaSafeOrder() throws {
        let peer = try UnitsPeer(["1:varsetsf=1"])
        defer { peer.stop() }
        let (device, connection) = try discover(peer, unit: 1)
        connection.close()
        let control = try #require(device.reactiveControl)
        typealias C = SunSpec.ACControls
        let wSet = control.model.address + C.wSetEna, varSet = control.model.address + C.varSetEna
        func plan(from: (p: Double, q: Double), to: (p: Double, q: Double)) throws -> [Int] {
            let lastPlain = try device.writes(Watts(from.p), revert: .seconds(10), rearm: false)
            let axis = ReactiveWriteState(lastWritten: from.q, lastArmedAt: Self.t0, enabled: true)
            let plan = try #require(try WritePlanner.plan(device, setpoint: Watts(to.p), reactive: to.q, reactivePriority: false,
                                                         lastWritten: Watts(from.p), lastPlain: lastPlain, lastArmedAt: Self.t0,
                                                         axis: axis, revert: .seconds(10), now: Self.t0 + .seconds(1)))
            return plan.writes.map(\.address)
        }
        #expect(try plan(from: (40_000, 0), to: (20_000, 30_000)) == [wSet, varSet])
        #expect(try plan(from: (-40_000, 0), to: (-20_000, -30_000)) == [wSet, varSet])
        #expect(try plan(from: (20_000, 30_000), to: (40_000, 0)) == [varSet, wSet])
        #expect(try plan(from: (20_000, 10_000), to: (30_000, 20_000)) == [varSet, wSet])
        #expect(try plan(from: (30_000, 20_000), to: (20_000, 10_000)) == [varSet, wSet])
        // Stall, value fault: 0 var where bessd commands or had enabled it; nothing where it never did.
        #expect(WritePlanner.reactive(decided: 5_000, stalled: true, valueFault: false, enabled: false) == 0)
        #expect(WritePlanner.reactive(decided: 5_000, stalled: false, valueFault: true, enabled: true) == 0)
        #expect(WritePlanner.reactive(decided: nil, stalled: true, valueFault: false, enabled: true) == 0)
        #expect(WritePlanner.reactive(decided: nil, stalled: true, valueFault: false, enabled: false) == nil)
        #expect(WritePlanner.reactive(decided: -7, stalled: false, valueFault: false, enabled: false) == -7)
    }

    @Test("no var points (novar, 124): REACTIVE_UNAVAILABLE once per unit, its active power commanded as before")
    func unavailable() throws {
        let peer = try UnitsPeer(["1:novar", "2:124", "3"])
        defer { peer.stop() }
        let (device, connection) = try discover(peer, unit: 1)
        connection.close()
        #expect(device.reactiveControl == nil)
        let notices = Notices()
        let slots = [1, 2, 3].map { ($0, DeviceSlot()) }
        for (id, slot) in slots { slot.setSetpoint(.kilowatts(Double(id)), reactive: 4_000) }
        let w = worker(peer, slots, revert: .seconds(2), notices: notices)
        w.start()
        defer { w.stop() }
        #expect(waitFor(seconds: 10) { peer.last("WSET unit=1 ") == "WSET unit=1 ena=1 mod=1 w=1000 rvrt_tms=2 rvrt=0 ena_rvrt=1" })
        #expect(waitFor(seconds: 5) { peer.last("VARSET unit=3 ") == "VARSET unit=3 ena=1 mod=4 pri=0 var=4000 pct=0 rvrt_tms=2 rvrt=0 ena_rvrt=1" })
        #expect(waitFor(seconds: 5) { (peer.last("STORAGE unit=2 ") ?? "").contains(" rvrt_tms=2") }, "\(peer.all)")
        // Past a few re-arms: said once for each of the two, never for unit 3.
        #expect(waitFor(seconds: 10) { slots[0].1.reading != nil && notices.codes("REACTIVE_UNAVAILABLE").count == 2 })
        let before = Self.writes(peer, unit: 1)
        #expect(waitFor(seconds: 10) { Self.writes(peer, unit: 1) >= before + 8 }, "\(peer.all.suffix(5))")
        let said = notices.codes("REACTIVE_UNAVAILABLE")
        #expect(said.count == 2 && Set(said.flatMap(\.units)) == ["U1", "U2"], "\(said)")
        #expect(said.allSatisfy { $0.severity == .warning && $0.message.contains("704") })
        #expect(!peer.all.contains { $0.hasPrefix("VARSET unit=1 ") })
        #expect(slots[0].1.lastError == nil && slots[1].1.lastError == nil)
        #expect(slots.map { $0.1.reactiveCapability?.available } == [false, false, true])
    }

    @Test("reactive_priority reaches each real inverter's VarSetPri (true, false, and false without a law)")
    func priority() throws {
        func site(_ law: String) throws -> HardwareSite {
            let c = try ConfigLoader.parse("""
                mode: hil
                bess_units:
                  - {id: A, capacity_kwh: 100, max_power_kw: 50, bms: {simulated: true}, modbus: {host: 127.0.0.1, port: 1, unit_id: 1}}
                \(law)
                """, file: "priority.yaml")
            return HardwareSite.beside(simulated: c.cycleSettings, phase: CyclePhase(period: .milliseconds(100))) { _ in }
        }
        let law = "grid_integration:\n  reactive_power: {mode: constant_var, var_percent: 10, nominal_voltage_v: 230, reactive_priority: %@}"
        for (text, expected) in [("true", true), ("false", false)] {
            let s = try site(law.replacingOccurrences(of: "%@", with: text))
            #expect(s.inverterSlots[0]?.reactiveRequest.priority == expected, "\(text)")
        }
        #expect(try site("").inverterSlots[0]?.reactiveRequest.priority == false)
    }

    @Test("reactive nil: nothing on the var points; once bessd enabled them, VarSetEnaRvrt 0 and VarSetEna 0 once to hand them back")
    func leftAlone() throws {
        let peer = try UnitsPeer(["1:varsetsf=1"])
        defer { peer.stop() }
        let (device, connection) = try discover(peer, unit: 1)
        connection.close()
        let control = try #require(device.reactiveControl)
        let varPoints = (control.model.address + SunSpec.ACControls.varSetEna)...(control.model.address + SunSpec.ACControls.varSetRvrtRem + 1)
        // Planned: no request reaches the var points, armed or not, stalled or not.
        for (armed, stalled) in [(false, false), (true, false), (false, true)] {
            let decided = WritePlanner.reactive(decided: nil, stalled: stalled, valueFault: false, enabled: false)
            let plan = try WritePlanner.plan(device, setpoint: .kilowatts(2), reactive: decided, reactivePriority: false,
                                             lastWritten: armed ? nil : .kilowatts(1), lastPlain: nil, lastArmedAt: Self.t0,
                                             axis: ReactiveWriteState(), revert: .seconds(10), now: Self.t0 + .seconds(1))
            #expect(plan?.writes.isEmpty == false)
            #expect(plan?.writes.allSatisfy { !varPoints.overlaps($0.address...($0.address + $0.values.count - 1)) } == true)
            #expect(plan?.reactive == nil)
        }
        // On the wire: P only, through re-arms; the var points never change.
        let slot = DeviceSlot()
        slot.setSetpoint(.kilowatts(2))
        let w = worker(peer, [(1, slot)], revert: .seconds(2))
        w.start()
        defer { w.stop() }
        #expect(waitFor(seconds: 10) { peer.last("WSET unit=1 ") == "WSET unit=1 ena=1 mod=1 w=2000 rvrt_tms=2 rvrt=0 ena_rvrt=1" })
        slot.setSetpoint(.kilowatts(3))
        #expect(waitFor(seconds: 5) { peer.last("WSET unit=1 ")?.contains(" w=3000 ") == true })
        #expect(!peer.all.contains { $0.hasPrefix("VARSET") }, "\(peer.all)")
        // Enabled, then left: VarSetEna 0, the rest as it was.
        slot.setSetpoint(.kilowatts(3), reactive: 1_000)
        #expect(waitFor(seconds: 5) { peer.last("VARSET unit=1 ") == "VARSET unit=1 ena=1 mod=4 pri=0 var=100 pct=0 rvrt_tms=2 rvrt=0 ena_rvrt=1" })
        slot.setSetpoint(.kilowatts(3), reactive: nil)
        // VarSetEnaRvrt 0 too, so that the armed revert cannot enable the setpoint again.
        #expect(waitFor(seconds: 5) { peer.last("VARSET unit=1 ") == "VARSET unit=1 ena=0 mod=4 pri=0 var=100 pct=0 rvrt_tms=2 rvrt=0 ena_rvrt=0" })
    }
}
