import BessSystem
import Config
import ControlCore
@testable import Cycle
import Glibc
import IEC104
@testable import Outstation
import Synchronization
import TestSupport
import Testing

/// The journal lines an outstation wrote, collected from its thread.
final class CollectedJournal: Sendable {
    struct Line: Sendable {
        let code: OutstationLogCode
        let message: String
        let fields: [String: String]

        /// The line of one of the outstation's notices.
        init(_ notice: Notice) {
            code = notice.outstationCode!
            message = notice.message
            fields = notice.fieldsByName
        }
    }

    private let lines = Mutex<[Line]>([])

    func append(_ line: Line) { lines.withLock { $0.append(line) } }

    func lines(_ code: OutstationLogCode) -> [Line] { lines.withLock { $0.filter { $0.code == code } } }
}

/// An outstation on a loopback port of the kernel's choice whose timers (t0–t3, select timeout,
/// sampling, the journal window) run on a `ManualClock`: the tests step time, never wait for it.
/// The cycle's published state is written straight into the `SharedState` it samples.
final class SteppedOutstation {
    let clock = ManualClock()
    let shared: SharedState
    let journal = CollectedJournal()
    let server: OutstationServer

    /// `shared`: the state the outstation samples and commands (two units without ratings unless given).
    init(shared: SharedState = SharedState(units: 2), _ configure: (inout OutstationSettings) -> Void = { _ in }) throws {
        self.shared = shared
        var settings = OutstationSettings()
        settings.port = 0
        settings.commonAddress = 7
        settings.groups = [IEC104Group(name: "sldc", commands: [.agc, .setpoint])]
        configure(&settings)
        let journal = journal
        server = OutstationServer(settings: settings, description: StationImageTests.description, shared: shared, clock: clock) {
            journal.append(CollectedJournal.Line($0))
        }
        try server.start()
    }

    deinit { server.stop() }

    /// A new cycle publishes `hertz` (point 1004, deadband 0.01 Hz) and the clock moves one sample
    /// period: true once the outstation has queued the change as an event.
    func publish(frequency hertz: Double) -> Bool {
        let queued = server.counters.eventsQueued.load(ordering: .relaxed)
        shared.contents.withLock { contents in
            contents.stats.cycles &+= 1
            contents.stats.frequency = hertz
        }
        clock.advance(by: .milliseconds(100))
        return waitFor { server.counters.eventsQueued.load(ordering: .relaxed) > queued }
    }

    /// A new cycle publishes `hertz` and signals the publication as the cycle thread does, with the
    /// clock standing still: true once the outstation has queued the change as an event.
    func publishByCycle(frequency hertz: Double) -> Bool {
        let queued = server.counters.eventsQueued.load(ordering: .relaxed)
        shared.contents.withLock { contents in
            contents.stats.cycles &+= 1
            contents.stats.frequency = hertz
        }
        if shared.publicationsAreWatched { shared.publicationWakeup.signal() }
        return waitFor { server.counters.eventsQueued.load(ordering: .relaxed) > queued }
    }

    /// True once the server thread has acted on every move of the clock and waits again (what it
    /// sent meanwhile is in the stations' sockets): the moment a negative check may look.
    func settle() -> Bool { waitFor { clock.settled } }

    /// Moves the clock by `step` and waits until the server thread has acted on it.
    func advance(by step: Duration, sourceLocation: SourceLocation = #_sourceLocation) {
        clock.advance(by: step)
        #expect(settle(), "the outstation acted on the move of \(step) and waits again", sourceLocation: sourceLocation)
    }
}

/// The controlling station these tests speak as (TestSupport's, shared with the daemon's tests).
typealias RawStation = RawControlStation

/// The outstation on its thread, spoken to in raw frames, with time stepped by a `ManualClock`:
/// group interrogation, the journal budget, events requeued at STOPDT, and the timers.
@Suite("IEC 104 outstation: procedures and timers in stepped time", .serialized)
struct OutstationServerTests {
    static func interrogation(_ qoi: UInt8, address: UInt32 = 0) -> ASDU {
        ASDU(type: .interrogation, cause: CauseOfTransmission(cause: .activation), commonAddress: 7,
             objects: [InformationObject(address: address, element: .interrogation(qoi))])
    }

    /// The answers to one interrogation: from its ACT_CON to its ACT_TERM, or its negative ACT_CON.
    static func interrogate(_ station: RawStation, _ qoi: UInt8, address: UInt32 = 0) throws -> [ASDU] {
        try station.send(interrogation(qoi, address: address))
        return station.asdus {
            guard let last = $0.last, last.type == .interrogation else { return false }
            return last.cause.cause == .activationTermination || last.cause.negative
        }
    }

    /// Answers carry COT 21 and COT 22; an empty group answers ACT_CON and ACT_TERM.
    @Test("group interrogation: QOI 21 measured values, QOI 22 points; QOI 37 and a nonzero IOA refused")
    func groupInterrogation() throws {
        let outstation = try SteppedOutstation()
        let station = try RawStation(port: outstation.server.port)
        #expect(station.start())
        let measured = try Self.interrogate(station, 21)
        #expect(measured.first?.cause.cause == .activationConfirmation && measured.first?.cause.negative == false, "\(measured)")
        #expect(measured.last?.cause.cause == .activationTermination)
        let measuredPoints = measured.filter { $0.type != .interrogation && $0.type != .endOfInitialisation }
        #expect(measuredPoints.allSatisfy { $0.type == .measuredFloat && $0.cause.cause == .interrogatedByGroup(1) })
        #expect(measuredPoints.flatMap(\.objects).map(\.address).sorted() == Array(1001...1017))

        let indications = try Self.interrogate(station, 22)
        let indicationPoints = indications.filter { $0.type != .interrogation }
        #expect(indications.first?.cause.cause == .activationConfirmation && indications.last?.cause.cause == .activationTermination)
        #expect(indicationPoints.allSatisfy { [1, 3].contains($0.type.rawValue) && $0.cause.cause == .interrogatedByGroup(2) },
                "\(indicationPoints.map { "\($0.type)/\($0.cause.cause)" })")
        #expect(indicationPoints.flatMap(\.objects).map(\.address).sorted() == Array(2001...2006) + [2101, 2102])

        for qoi: UInt8 in [23, 36] {
            let empty = try Self.interrogate(station, qoi)
            #expect(empty.map(\.cause.cause) == [.activationConfirmation, .activationTermination] && !empty.contains { $0.cause.negative },
                    "QOI \(qoi): \(empty.map(\.cause))")
        }
        let station20 = try Self.interrogate(station, 20)
        #expect(station20.filter { $0.type != .interrogation }.flatMap(\.objects).count == 25, "the station interrogation: every point")

        for qoi: UInt8 in [0, 19, 37, 255] {
            let refused = try Self.interrogate(station, qoi)
            #expect(refused.count == 1 && refused[0].cause.cause == .activationConfirmation && refused[0].cause.negative, "QOI \(qoi): \(refused)")
        }
        let wrongAddress = try Self.interrogate(station, 20, address: 5)
        #expect(wrongAddress.count == 1 && wrongAddress[0].cause.cause == .unknownObjectAddress && wrongAddress[0].cause.negative)
        #expect(outstation.server.counters.interrogations.load(ordering: .relaxed) == 5)
        #expect(outstation.server.counters.negativeAnswers.load(ordering: .relaxed) == 5)
    }

    /// 100 bad ASDUs from one peer.
    @Test("bad ASDUs log 20 lines and one IEC104_LOG_SUPPRESSED summary; the counter counts all")
    func journalBudget() throws {
        let outstation = try SteppedOutstation()
        let station = try RawStation(port: outstation.server.port)
        #expect(station.start())
        // Type 0x66 is unknown: each is answered COT 44 with P/N = 1.
        for _ in 0..<100 { station.send(octets: [0x66, 0x01, 0x06, 0x00, 0x07, 0x00, 0x00, 0x00, 0x00]) }
        #expect(waitFor { outstation.server.counters.negativeAnswers.load(ordering: .relaxed) == 100 })
        let answers = station.asdus { $0.filter { $0.cause.cause == .unknownType }.count == 100 }
        #expect(answers.filter { $0.cause.cause == .unknownType && $0.cause.negative }.count == 100, "every one answered")
        #expect(outstation.journal.lines(.negative).count == OutstationServer.journalLines)
        #expect(outstation.journal.lines(.suppressed).isEmpty, "the window is not over")
        outstation.advance(by: OutstationServer.journalWindow)
        #expect(waitFor { !outstation.journal.lines(.suppressed).isEmpty })
        let summary = outstation.journal.lines(.suppressed)
        #expect(summary.count == 1 && summary.first?.fields["BESS_SUPPRESSED"] == "80", "\(summary.map(\.message))")
        // A new window: the next bad ASDU is written again.
        station.send(octets: [0x66, 0x01, 0x06, 0x00, 0x07, 0x00, 0x00, 0x00, 0x00])
        #expect(waitFor { outstation.journal.lines(.negative).count == OutstationServer.journalLines + 1 })
        #expect(outstation.server.counters.negativeAnswers.load(ordering: .relaxed) == 101)
    }

    /// The spontaneous events (COT 3) among `asdus`, as their octets.
    static func events(_ asdus: [ASDU]) -> [[UInt8]] {
        asdus.filter { $0.cause.cause == .spontaneous }.compactMap { try? $0.encoded() }
    }

    @Test("a cycle's publication is sampled at once: the spontaneous frame leaves with the clock still")
    func publicationWakesTheSample() throws {
        let outstation = try SteppedOutstation()
        #expect(outstation.shared.publicationsAreWatched, "the outstation asks the cycle to signal its publications")
        let station = try RawStation(port: outstation.server.port)
        #expect(station.start())
        #expect(outstation.publishByCycle(frequency: 50.3))
        let events = Self.events(station.asdus { Self.events($0).count == 1 })
        #expect(events.count == 1, "one spontaneous frame for 1004 without the clock moving")
    }

    /// 1015 the count, 1016 the score, 1017 the shortfall in MW.
    @Test("a new frequency event leaves spontaneously as three time-tagged floats at IOAs 1015–1017")
    func frequencyEventSentSpontaneously() throws {
        let outstation = try SteppedOutstation()
        let station = try RawStation(port: outstation.server.port)
        #expect(station.start())
        func eventPoints(_ asdus: [ASDU]) -> [(UInt32, Float)] {
            asdus.filter { $0.cause.cause == .spontaneous }.flatMap(\.objects).compactMap { object in
                guard (1015...1017).contains(object.address), case .measuredFloatWithTime(let v, .good, _) = object.element else { return nil }
                return (object.address, v)
            }
        }
        for sequence: UInt64 in 1...2 {
            outstation.shared.publish(frequencyEvent: FrequencyEventAssessment(sequence: sequence, shortfallW: 70_000, score: 0.75))
            #expect(outstation.publishByCycle(frequency: .nan), "the cycle's publication wakes the sample")
            let sent = eventPoints(station.asdus { eventPoints($0).count == 3 })
            #expect(sent.map(\.0) == [1015, 1016, 1017] && sent.map(\.1) == [Float(sequence), 0.75, 0.07], "event \(sequence): \(sent)")
        }
    }

    @Test("STOPDT then STARTDT on the same connection resends unacknowledged events in order, then newer ones")
    func stopRequeuesOnTheSameConnection() throws {
        let outstation = try SteppedOutstation()
        let station = try RawStation(port: outstation.server.port, acknowledges: false)
        #expect(station.start())
        for step in 1...5 { #expect(outstation.publish(frequency: 50 + Double(step) / 10)) }
        let before = Self.events(station.asdus { Self.events($0).count == 5 })
        #expect(before.count == 5)
        station.send(.unnumbered(.stopDataTransferActivation))
        #expect(outstation.publish(frequency: 50.6), "queued while stopped")
        #expect(station.start(first: false))
        let after = Self.events(station.asdus { Self.events($0).count == 6 })
        #expect(after.count == 6 && Array(after.prefix(5)) == before, "the five unacknowledged first, in order")
        station.acknowledge()
        #expect(outstation.publish(frequency: 50.7))
        let next = Self.events(station.asdus { Self.events($0).count >= 1 })
        #expect(outstation.settle())
        let more = Self.events(RawStation.asdus(of: station.framesArrived()))
        #expect(next.count == 1 && more.isEmpty, "only the new event, nothing repeated: \(next.count) + \(more.count)")
        #expect(!station.closed)
    }

    @Test("after STOPDT, another started connection of the group gets the unacknowledged events first, once")
    func stopRequeuesOnAnotherConnection() throws {
        let outstation = try SteppedOutstation()
        var first: RawStation? = try RawStation(port: outstation.server.port, acknowledges: false)
        #expect(first?.start() == true)
        for step in 1...3 { #expect(outstation.publish(frequency: 50 + Double(step) / 10)) }
        let sentToFirst = Self.events(first?.asdus { Self.events($0).count == 3 } ?? [])
        #expect(sentToFirst.count == 3)
        first?.send(.unnumbered(.stopDataTransferActivation))
        let second = try RawStation(port: outstation.server.port)
        #expect(second.start())
        #expect(outstation.publish(frequency: 50.4))
        let sentToSecond = Self.events(second.asdus { Self.events($0).count == 4 })
        #expect(sentToSecond.count == 4 && Array(sentToSecond.prefix(3)) == sentToFirst, "the stopped connection's events first, in order")
        first = nil
        #expect(waitFor { outstation.server.counters.connectionsClosed.load(ordering: .relaxed) == 1 })
        #expect(outstation.publish(frequency: 50.5))
        let next = Self.events(second.asdus { Self.events($0).count >= 1 })
        #expect(outstation.settle())
        let more = Self.events(RawStation.asdus(of: second.framesArrived()))
        #expect(next.count == 1 && more.isEmpty, "only the new event after the stopped connection closed: \(next.count) + \(more.count)")
    }

    @Test("timers by stepped clock: t3 idle sends TESTFR, t1 unconfirmed closes, t0 closes a silent connection")
    func linkTimersInSteppedTime() throws {
        let outstation = try SteppedOutstation()
        let station = try RawStation(port: outstation.server.port)
        #expect(station.start())
        #expect(outstation.settle())
        _ = station.framesArrived()
        outstation.advance(by: .seconds(19))
        let early = station.framesArrived()
        #expect(early.isEmpty, "no TESTFR (nothing at all) before t3: \(early)")
        outstation.advance(by: .seconds(1))
        #expect(station.frames { $0.contains(.unnumbered(.testFrameActivation)) }.contains(.unnumbered(.testFrameActivation)), "TESTFR act at t3 = 20 s")
        outstation.advance(by: .seconds(15))
        #expect(station.waitClosed(), "closed at t1 = 15 s without TESTFR con")
        #expect(outstation.journal.lines(.protocolError).contains { $0.fields["BESS_IEC104_ERROR"] == "IEC104_T1_EXPIRED" })

        let silent = try RawStation(port: outstation.server.port)
        #expect(waitFor { outstation.server.counters.connected.load(ordering: .relaxed) == 1 })
        outstation.advance(by: .seconds(30))
        #expect(silent.waitClosed(), "closed at t0 = 30 s")
        #expect(outstation.journal.lines(.idle).count == 1)
    }

    @Test("a select holds its point for select_timeout_s: another value's execute refused within, taken after")
    func selectTimeoutInSteppedTime() throws {
        let outstation = try SteppedOutstation()
        let station = try RawStation(port: outstation.server.port)
        #expect(station.start())
        func command(_ megawatts: Float, select: Bool) throws -> [ASDU] {
            try station.send(ASDU(type: .setpointFloat, cause: CauseOfTransmission(cause: .activation), commonAddress: 7,
                                  objects: [InformationObject(address: 3002, element: .setpointFloat(megawatts, SetpointQualifier(select: select)))]))
            return station.asdus {
                guard let last = $0.last(where: { $0.type == .setpointFloat }) else { return false }
                return last.cause.negative || last.cause.cause == .activationTermination || (select && last.cause.cause == .activationConfirmation)
            }.filter { $0.type == .setpointFloat }
        }
        #expect(try command(0.01, select: true).map(\.cause.negative) == [false], "selected")
        outstation.advance(by: .seconds(9))
        #expect(try command(0.02, select: false).map(\.cause.negative) == [true], "within the select timeout: not as selected")
        outstation.advance(by: .seconds(1))
        #expect(try command(0.02, select: false).map(\.cause.cause) == [.activationConfirmation, .activationTermination], "the select lapsed at 10 s")
        #expect(outstation.journal.lines(.commandRefused).first?.fields["BESS_REASON"] == "COMMAND_NOT_AS_SELECTED")
    }
}
