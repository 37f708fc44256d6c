import ControlCore
@testable import Cycle
import Fieldbus
import Testing

/// The one write rule of both write paths, as a pure function of the cycle's setpoint and the
/// device's state.
@Suite("The write planner")
struct WritePlanTests {
    /// A register-map inverter: setpoint at 100 (int16, 10 W a step), revert time at 101, enable at 102.
    static let device = ModbusDevice.registerMap(RegisterMapInverter(spec: RegisterMapSpec(
        power: MappedRegister(address: 10, type: .int16, scale: 1),
        setpoint: MappedRegister(address: 100, type: .int16, scale: 10),
        revertTimeout: MappedRegister(address: 101, type: .uint16, scale: 1),
        enable: MappedRegister(address: 102, type: .uint16, scale: 1))))
    static let t0 = MonotonicInstant(nanoseconds: 1_000_000_000)

    func plan(_ watts: Double, lastWritten: Watts?, lastPlain: [(address: Int, values: [UInt16])]? = nil,
              armedAt: MonotonicInstant = t0, now: MonotonicInstant) throws -> WritePlan? {
        try WritePlanner.plan(Self.device, setpoint: Watts(watts), lastWritten: lastWritten, lastPlain: lastPlain,
                              lastArmedAt: armedAt, revert: .seconds(10), now: now)
    }

    @Test("the first write arms the revert: time, enable, then the setpoint")
    func firstWriteArms() throws {
        let first = try #require(try plan(1000, lastWritten: nil, now: Self.t0))
        #expect(first.rearm)
        #expect(first.writes.map(\.address) == [101, 102, 100])
        #expect(first.writes.map(\.values) == [[10], [1], [100]])
        #expect(first.plain.map(\.address) == [100])
    }

    @Test("a fractional revert time is written rounded up: the device never reverts before bessd re-arms it")
    func fractionalRevertRoundsUp() throws {
        for (revert, register) in [(Duration.milliseconds(10_500), UInt16(11)), (.milliseconds(10_001), 11), (.seconds(10), 10),
                                   (.milliseconds(300), 1)] {
            let first = try #require(try WritePlanner.plan(Self.device, setpoint: Watts(1000), lastWritten: nil, lastPlain: nil,
                                                          lastArmedAt: Self.t0, revert: revert, now: Self.t0))
            #expect(first.writes.first?.address == 101 && first.writes.first?.values == [register], "\(revert)")
        }
        #expect(Duration.milliseconds(10_500).wholeSecondsRoundedUp == 11 && Duration.seconds(10).wholeSecondsRoundedUp == 10)
        #expect(Duration.nanoseconds(1).wholeSecondsRoundedUp == 1 && Duration.zero.wholeSecondsRoundedUp == 0)
    }

    @Test("a steady setpoint is not rewritten until half the revert time, then re-armed")
    func rearmAtHalf() throws {
        let plain = [(address: 100, values: [UInt16(100)])]
        #expect(try plan(1000, lastWritten: Watts(1000), lastPlain: plain, now: Self.t0 + .milliseconds(4999)) == nil)
        let rearm = try #require(try plan(1000, lastWritten: Watts(1000), lastPlain: plain, now: Self.t0 + .seconds(5)))
        #expect(rearm.rearm && rearm.writes.count == 3)
    }

    @Test("a setpoint change below a register step is not sent; one that changes the register is, alone")
    func onlyNewRegisters() throws {
        let plain = [(address: 100, values: [UInt16(100)])]
        let now = Self.t0 + .seconds(1)
        #expect(try plan(1004, lastWritten: Watts(1000), lastPlain: plain, now: now) == nil)
        #expect(try plan(1000.5, lastWritten: Watts(1000), lastPlain: plain, now: now) == nil)
        let moved = try #require(try plan(1006, lastWritten: Watts(1000), lastPlain: plain, now: now))
        #expect(!moved.rearm && moved.writes.map(\.address) == [100] && moved.writes[0].values == [101])
    }

    @Test("a setpoint the register cannot hold is a value error")
    func refused() {
        #expect(throws: DeviceError.self) { try plan(1_000_000, lastWritten: Watts(1000), now: Self.t0 + .seconds(1)) }
    }

    @Test("stall rule: zero after a second without hand-over, or five periods if longer; zero on a value fault")
    func stall() {
        let last = Self.t0
        #expect(!WritePlanner.stalled(lastHandOver: last, now: last + .seconds(1), period: .milliseconds(100)))
        #expect(WritePlanner.stalled(lastHandOver: last, now: last + .milliseconds(1001), period: .milliseconds(100)))
        #expect(!WritePlanner.stalled(lastHandOver: last, now: last + .seconds(2), period: .milliseconds(500)))
        #expect(WritePlanner.stalled(lastHandOver: last, now: last + .milliseconds(2501), period: .milliseconds(500)))
        #expect(WritePlanner.setpoint(decided: Watts(5000), stalled: false, valueFault: false) == Watts(5000))
        #expect(WritePlanner.setpoint(decided: Watts(5000), stalled: true, valueFault: false) == .zero)
        #expect(WritePlanner.setpoint(decided: Watts(5000), stalled: false, valueFault: true) == .zero)
    }
}

extension WritePlan: Equatable {
    static func == (a: WritePlan, b: WritePlan) -> Bool {
        a.setpoint == b.setpoint && a.rearm == b.rearm
            && a.writes.elementsEqual(b.writes, by: { $0.address == $1.address && $0.values == $1.values })
    }
}
