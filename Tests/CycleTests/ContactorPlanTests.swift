import BessSystem
import ControlCore
import Fieldbus
import Foundation
import HILPlant
@testable import Cycle
import Synchronization
import TestSupport
import Testing

@Suite("Contactor plan (opModConnect / opModEnergize false)")
struct ContactorPlanTests {
    typealias P = ContactorPlanner
    static let t0 = MonotonicInstant(nanoseconds: 100_000_000_000)
    static func at(_ seconds: Double) -> MonotonicInstant { t0 + .milliseconds(Int64(seconds * 1000)) }
    static func reading(_ watts: Double, at seconds: Double) -> Timestamped<InverterReading> {
        Timestamped(InverterReading(activePower: Watts(watts), ratedPower: .kilowatts(100)), at: at(seconds))
    }
    static func step(open: Bool = true, canOpen: Bool = true, conn: UInt16? = nil, armedAt: Double = 0, zeroSince: Double? = 0,
                     reading: Timestamped<InverterReading>? = nil, now: Double, onWire: Watts = .zero,
                     unitRating: Watts? = nil, stalled: Bool = false) -> P.Step {
        P.step(wantOpen: open, canOpen: canOpen, conn: conn, armedAt: at(armedAt), zeroSince: zeroSince.map(at),
               reading: reading, revert: .seconds(10), now: at(now), onWire: onWire, unitRating: unitRating, stalled: stalled)
    }

    @Test("no open before 0 W is on the wire, whatever the unit reads")
    func waitsForZeroSetpoint() {
        #expect(Self.step(zeroSince: nil, reading: Self.reading(0, at: 1), now: 60) == .none)
    }

    @Test("opens once a reading taken since the zero shows |W| ≤ max(50 W, 1 % of the rating)")
    func opensAtZero() {
        #expect(P.threshold(rated: .kilowatts(100)) == 1000)
        #expect(P.threshold(rated: nil) == 50)
        #expect(Self.step(reading: Self.reading(8_000, at: 1), now: 1) == .none, "still at 8 kW")
        #expect(Self.step(reading: Self.reading(-900, at: 2), now: 2) == .open)
        // A reading from before the zero went out says nothing about it.
        #expect(Self.step(zeroSince: 3, reading: Self.reading(0, at: 2), now: 3.5) == .none)
    }

    @Test("opens after the bounded wait when the unit never reads near zero")
    func opensAfterBound() {
        #expect(Self.step(reading: Self.reading(5_000, at: 4.9), now: 4.9) == .none)
        #expect(P.openAfter == .seconds(5))
        #expect(Self.step(reading: Self.reading(5_000, at: 5), now: 5) == .open)
        #expect(Self.step(reading: nil, now: 5) == .open, "no reading at all: opened at the bound")
    }

    @Test("an open is re-armed every half revert time, closed when the request ends, never unasked")
    func rearmAndClose() {
        #expect(Self.step(conn: 0, armedAt: 0, now: 4.9) == .none)
        #expect(Self.step(conn: 0, armedAt: 0, now: 5) == .open)
        #expect(Self.step(open: false, conn: 0, now: 6) == .close)
        #expect(Self.step(open: false, conn: 1, now: 6) == .none)
        #expect(Self.step(open: false, conn: nil, now: 6) == .none, "bessd never opened it: nothing written")
    }

    @Test("an open whose revert ran out, or that reads connected again, is opened afresh under the zero rule")
    func expiredOpenIsNotRearmed() {
        // The revert (10 s) ran out during an outage: not open any more; 0 W not acknowledged since.
        #expect(Self.step(conn: 0, armedAt: 0, zeroSince: nil, now: 11) == .none)
        #expect(Self.step(conn: 0, armedAt: 0, zeroSince: 10.5, reading: Self.reading(8_000, at: 10.8), now: 11) == .none,
                "8 kW since the zero: not opened under load")
        #expect(Self.step(conn: 0, armedAt: 0, zeroSince: 10.5, reading: Self.reading(0, at: 10.8), now: 11) == .open)
        // Within the revert, the inverter reads connected (rebooted): the zero rule too.
        func connected(_ watts: Double, at seconds: Double) -> Timestamped<InverterReading> {
            Timestamped(InverterReading(activePower: Watts(watts), ratedPower: .kilowatts(100), connected: true), at: Self.at(seconds))
        }
        #expect(Self.step(conn: 0, armedAt: 0, zeroSince: nil, reading: connected(5_000, at: 6), now: 6) == .none)
        #expect(Self.step(conn: 0, armedAt: 0, zeroSince: 0, reading: connected(5_000, at: 3), now: 3) == .none,
                "armed 3 s ago, reads connected at 5 kW: not re-armed")
        // A readback right after the open may not show it yet: still open, re-armed on time.
        #expect(Self.step(conn: 0, armedAt: 0, zeroSince: 0, reading: connected(0, at: 0.5), now: 5) == .open)
        #expect(Self.step(conn: 0, armedAt: 0, zeroSince: 0, reading: connected(0, at: 0.5), now: 4) == .none)
    }

    @Test("a first open only when the plan leaves 0 W on the wire")
    func firstOpenOnlyAtZeroOnWire() {
        #expect(Self.step(zeroSince: 0, reading: Self.reading(0, at: 6), now: 6, onWire: .kilowatts(5)) == .none)
        #expect(Self.step(zeroSince: 0, reading: nil, now: 60, onWire: .kilowatts(5)) == .none, "not at the bound either")
        #expect(Self.step(zeroSince: 0, reading: Self.reading(0, at: 6), now: 6, onWire: .zero) == .open)
    }

    @Test("at zero is 1 % of the lower of the device's rating and the unit's")
    func thresholdBoundedByUnitRating() {
        #expect(P.threshold(rated: .kilowatts(10_000), unit: .kilowatts(100)) == 1000)
        #expect(P.threshold(rated: .kilowatts(100), unit: .kilowatts(10_000)) == 1000)
        #expect(P.threshold(rated: nil, unit: .kilowatts(100)) == 1000)
        let overstated = Timestamped(InverterReading(activePower: .kilowatts(50), ratedPower: .kilowatts(10_000)), at: Self.at(1))
        #expect(Self.step(reading: overstated, now: 1, unitRating: .kilowatts(100)) == .none, "50 kW on a 100 kW unit")
        #expect(Self.step(reading: overstated, now: 5, unitRating: .kilowatts(100)) == .open, "at the bound")
    }

    @Test("a stalled cycle: nothing opened or re-armed, so the revert closes the unit; a close still goes")
    func stalledStopsRearming() {
        #expect(Self.step(conn: 0, armedAt: 0, now: 5, stalled: true) == .none)
        #expect(Self.step(conn: 0, armedAt: 0, now: 9, stalled: true) == .none)
        #expect(Self.step(reading: Self.reading(0, at: 1), now: 6, stalled: true) == .none)
        #expect(Self.step(open: false, conn: 0, now: 6, stalled: true) == .close)
    }

    @Test("a unit without model 123 cannot open; its state says so")
    func cannotOpen() {
        #expect(Self.step(canOpen: false, now: 10) == .cannotOpen)
        #expect(P.state(wantOpen: true, canOpen: false, conn: nil) == .cannotOpen)
        #expect(P.state(wantOpen: true, canOpen: true, conn: nil) == .opening)
        #expect(P.state(wantOpen: true, canOpen: true, conn: 0) == .open)
        #expect(P.state(wantOpen: false, canOpen: true, conn: 0) == .open, "open until Conn 1 is acknowledged")
        #expect(P.state(wantOpen: false, canOpen: true, conn: 1) == .closed)
        // The open's revert ran out: the unit reconnected on its own, whatever bessd last wrote.
        #expect(P.state(wantOpen: true, canOpen: true, conn: 0, expired: true) == .opening)
        #expect(P.state(wantOpen: false, canOpen: true, conn: 0, expired: true) == .closed)
        #expect(ContactorState.cannotOpen.closed && !ContactorState.opening.closed && !ContactorState.open.closed)
        #expect(ContactorState.opening.connected && ContactorState.cannotOpen.connected && !ContactorState.open.connected)
    }
}

@Suite("Contactor through the endpoint worker", .serialized)
struct ContactorWorkerTests {
    /// The plant's SunSpec inverter, with each change of 123 `Conn`, `Conn_RvrtTms` and the commanded
    /// W recorded as [Conn, Conn_RvrtTms, W] at the write that made it.
    final class Inverter: Sendable {
        final class Log: Sendable { let list = Mutex<[[Double]]>([]) }
        let server: SunSpecServer
        let conns = Log()
        init(immediateControls: Bool = true) throws {
            let profile = SunSpecDeviceProfile(measurementModel: 701, ratingW: 100_000, immediateControls: immediateControls)
            server = try SunSpecServer(transport: .tcp(host: "127.0.0.1", port: 0), profile: profile)
            server.writeObserver = { [conns] image, _ in
                let pair = [Double(image[SunSpec.Controls.id, SunSpec.Controls.conn]),
                            Double(image[SunSpec.Controls.id, SunSpec.Controls.connRvrtTms]),
                            SunSpecPlantLink.commandedWatts(image, profile: profile) ?? .nan]
                conns.list.withLock { if $0.last != pair { $0.append(pair) } }
            }
            // The unit measures 0 W (the plant's image starts with W not implemented).
            server.withImage { image, _ in image[SunSpec.Measurement.id, SunSpec.Measurement.w] = 0 }
            try server.start()
        }
        var written: [[Double]] { conns.list.withLock { $0 } }
    }

    final class Notices: Sendable {
        let list = Mutex<[DeviceNotice]>([])
        var all: [DeviceNotice] { list.withLock { $0 } }
    }

    /// A worker on its own 50 ms period driving the inverter as unit id 1 (`u1`), revert 2 s, asked
    /// to hold it at 0 W and open it.
    func start(_ inverter: Inverter, _ notices: Notices) -> (DeviceSlot, EndpointWorker) {
        let slot = DeviceSlot()
        let worker = EndpointWorker(endpoint: .tcp(host: "127.0.0.1", port: inverter.server.port),
                                    devices: [.init(unitID: 1, slot: slot, name: "u1")], period: .milliseconds(50),
                                    timeout: .milliseconds(500), revert: .seconds(2)) { n in notices.list.withLock { $0.append(n) } }
        slot.setSetpoint(.zero)
        slot.setConnect(false)
        worker.start()
        return (slot, worker)
    }

    @Test("asked to open: 0 W, then Conn 0 armed, re-armed; asked to close: Conn 1; the slot follows")
    func opensRearmsCloses() throws {
        let inverter = try Inverter()
        defer { inverter.server.stop() }
        let notices = Notices()
        let (slot, worker) = start(inverter, notices)
        defer { worker.stop() }
        // The image reads 0 W: the open follows the zero setpoint's acknowledgement.
        #expect(waitFor { slot.contactor == .open }, "contactor \(slot.contactor), writes \(inverter.written)")
        // The first Conn 0 carries Conn_RvrtTms 2 s and finds 0 W already written.
        #expect(inverter.written.first { $0[0] == 0 } == [0, 2, 0], "\(inverter.written)")
        // A Conn the device let go back to 1 (its timer run out) is opened afresh: the unit reads
        // 0 W since the zero, so Conn 0 is written again.
        typealias C = SunSpec.Controls
        inverter.server.withImage { image, _ in image[C.id, C.conn] = C.connect }
        #expect(waitFor { inverter.server.withImage { image, _ in image[C.id, C.conn] } == C.disconnect })
        slot.setConnect(true)
        #expect(waitFor { slot.contactor == .closed })
        #expect(inverter.written.last?.first == 1, "Conn 1 at the end: \(inverter.written)")
        #expect(!notices.all.contains { $0.code == "CONTACTOR_UNAVAILABLE" })
    }

    @Test("closing with a new setpoint in the same round: Conn 1 goes before the setpoint")
    func closeBeforeSetpoint() throws {
        let inverter = try Inverter()
        defer { inverter.server.stop() }
        let notices = Notices()
        let (slot, worker) = start(inverter, notices)
        defer { worker.stop() }
        #expect(waitFor { slot.contactor == .open })
        slot.setConnect(true)
        slot.setSetpoint(.kilowatts(5))
        #expect(waitFor { inverter.written.last == [1, 0, 5000] }, "\(inverter.written)")
        // The first record with Conn 1 after the open still has the 0 W: the close left first.
        #expect(inverter.written.drop { $0[0] != 0 }.first { $0[0] == 1 } == [1, 0, 0], "\(inverter.written)")
    }

    @Test("a unit without model 123 says once, coded, that it cannot open, and stays at 0 W")
    func cannotOpenSaidOnce() throws {
        let inverter = try Inverter(immediateControls: false)
        defer { inverter.server.stop() }
        let notices = Notices()
        let (slot, worker) = start(inverter, notices)
        defer { worker.stop() }
        #expect(waitFor { slot.contactor == .cannotOpen })
        let rounds = inverter.server.requests
        #expect(waitFor { inverter.server.requests >= rounds + 20 })
        let said = notices.all.filter { $0.code == "CONTACTOR_UNAVAILABLE" }
        #expect(said.count == 1, "\(said)")
        #expect(said.first?.units == ["u1"] && said.first?.severity == .warning)
        #expect(said.first?.text.contains("cannot open") == true)
        slot.setConnect(true)
        #expect(waitFor { slot.contactor == .closed })
    }
}

@Suite("Contactor through the bus poller", .serialized)
struct ContactorPollerTests {
    @Test("with the poller a healthy endpoint's Conn 0 and Conn 1 go on the poller's wire")
    func throughThePoller() throws {
        let site = try BusPollerTests.Site(units: 1, periodMs: 20)
        site.start()
        defer { site.stop() }
        #expect(site.bringUp([0]))
        typealias C = SunSpec.Controls
        func conn() -> [UInt16] { site.plant.servers[0].withImage { image, _ in [image[C.id, C.conn], image[C.id, C.connRvrtTms]] } }
        func cycle(until done: () -> Bool) -> Bool { Self.cycle(site, until: done) }
        site.slots[0].setConnect(false)
        #expect(cycle { site.slots[0].contactor == .open })
        #expect(conn() == [C.disconnect, 10], "Conn 0 with Conn_RvrtTms 10 s")
        #expect(site.allHandedOver, "the poller wrote it: the endpoint never went back to its worker")
        site.slots[0].setConnect(true)
        #expect(cycle { site.slots[0].contactor == .closed })
        #expect(conn()[0] == C.connect)
        #expect(site.allHandedOver)
    }

    /// Cycles (0 W handed over each, `handOver` false: none) until `done`: after each move of the
    /// clock and each hand-over, until the threads have acted on it (`ManualClock.settled`).
    static func cycle(_ site: BusPollerTests.Site, handOver: Bool = true, rounds: Int = 500, until done: () -> Bool) -> Bool {
        for _ in 0..<rounds where !done() {
            site.toNextDeadline()
            guard waitFor(seconds: 5, { site.clock.settled }) else { return false }
            if handOver {
                site.handOver([0])
                guard waitFor(seconds: 5, { site.clock.settled }) else { return false }
            }
        }
        return done()
    }

    @Test("a stalled cycle: the poller re-arms no open, so the device's own timer closes it")
    func stalledCycleStopsRearming() throws {
        let site = try BusPollerTests.Site(units: 1, periodMs: 20)
        site.start()
        defer { site.stop() }
        #expect(site.bringUp([0]))
        typealias C = SunSpec.Controls
        let server = site.plant.servers[0]
        site.slots[0].setConnect(false)
        #expect(Self.cycle(site) { site.slots[0].contactor == .open })
        // The cycle stops handing over: 100 rounds of 20 ms take it past the stall (1 s). The
        // device's timer is then taken as run out (Conn back to 1), and 600 more rounds pass the
        // revert (10 s), whose half would have re-armed it.
        var rounds = 0
        #expect(Self.cycle(site, handOver: false, rounds: 100) { rounds += 1; return false } == false)
        server.withImage { image, _ in image[C.id, C.conn] = C.connect }
        #expect(Self.cycle(site, handOver: false, rounds: 600) { rounds += 1; return false } == false)
        #expect(rounds == 100 + 600 + 2, "the rounds went on (and `done` is asked once more at each end): \(rounds)")
        #expect(server.withImage { image, _ in image[C.id, C.conn] } == C.connect, "no Conn 0 written while stalled")
    }
}
