import BessBase
import BessSystem
import Config
import ControlCore
import Cycle
import IEC104
import Outstation

/// The outstation's server path on one connection, without a socket: the bytes a controlling
/// station sends arrive on an in-memory stream, turn by turn, and `OutstationServer` runs its
/// per-connection procedure on them (frame splitter, link, interrogation, counters, clock
/// synchronisation, commands, negative answers) exactly as after a `poll`, at the instants of a
/// manual clock, over a fixed station image (two units of 2 MW with var points, 2 Mvar injecting
/// and 1.6 Mvar absorbing between them, AGC declared). A second connection, in another redundancy
/// group, is started and answers as a well-behaved station would.
///
/// The harness keeps its own account of the link as the peer sees it (what it sent, what the
/// outstation sent, the timers) and predicts the close: the first refused frame (start, length,
/// control), I-frame while stopped, N(S) ≠ V(R), N(R) outside the unacknowledged frames, STARTDT/
/// STOPDT con, malformed ASDU, or t1 expiry. Invariants: the connection is closed exactly then,
/// with a `IEC104_PROTOCOL_ERROR` journal line naming that code (or `IEC104_BACKLOG` with the
/// window full), and for nothing else; the other connection is never closed; every frame the
/// outstation writes splits and decodes again, its ASDU encodes back to the same octets; its
/// N(S) count 0, 1, 2… modulo 32768, its N(R) never acknowledge more than the peer sent and never
/// go back; nothing is written to a closed stream; once the window is drained, every ASDU the
/// link delivered has exactly one confirmation (ACT_CON, DEACT_CON or COT 44–47) of its type; a
/// var setpoint (3003) or power factor (3004) in force is one the site can hold
/// (`SiteView.acceptsVar`, `acceptsPowerFactor`).
///
/// The first octet picks the delivery: below 0x80 the stream comes in chunks of 1…64 octets (its
/// value + 1, modulo 64); from 0x80 one frame per turn (as its length octet says), which is how
/// the seeds, recorded from scripted sessions, replay exactly. Time moves 0.01…25.5 s per turn
/// (the last octet of the turn's input), so t1, t2 and t3 all fire.
enum IEC104SessionHarness {
    /// Turns per input: the rest of a longer stream is not fed.
    static let maxTurns = 1024
    /// Turns with nothing fed, after the input, for the outstation to send what its window held.
    static let maxDrainTurns = 64

    static func run(_ input: inout FuzzInput) -> [String] {
        let mode = input.u8()
        let stream = input.rest()
        let session = Session()
        var fed = 0
        while fed < stream.count, session.isOpen, session.turns < maxTurns {
            let size = mode >= 0x80 ? Session.frameSize(stream[fed...]) : Int(mode % 64) + 1
            let end = min(stream.count, fed + size)
            session.feed(Array(stream[fed..<end]))
            fed = end
        }
        session.drain()
        return session.violations.list
    }

    /// Sessions recorded from a station that follows the standard (one frame per turn, every
    /// I-frame acknowledged, TESTFR answered), so each replays to its end, plus the same frames
    /// with one thing wrong, and c104's client side of its session with lib60870's server
    /// (hil/peers/iec104_peer.py produce).
    static func seeds() -> [[UInt8]] {
        let time = Self.time
        let interrogation = asdu(.interrogation, .activation, .interrogation(20), address: 0)
        let counters = asdu(.counterInterrogation, .activation, .counterInterrogation(5), address: 0)
        let clock = asdu(.clockSynchronisation, .activation, .clockSynchronisation(time), address: 0)
        let select = SetpointQualifier(select: true)
        let execute = SetpointQualifier(select: false)
        let scripts: [[[UInt8]]] = [
            [interrogation],
            [interrogation, counters, clock],
            [asdu(.interrogation, .activation, .interrogation(20), address: 0, commonAddress: 0xFFFF),
             asdu(.interrogation, .activation, .interrogation(21), address: 0),
             asdu(.interrogation, .deactivation, .interrogation(20), address: 0)],
            // AGC in service, a target (direct); the site set-point select-before-operate, then cancelled.
            [asdu(.singleCommand, .activation, .singleCommand(SingleCommand(on: true)), address: 3101),
             asdu(.setpointFloat, .activation, .setpointFloat(1.5, execute), address: 3001),
             asdu(.setpointFloat, .activation, .setpointFloat(-0.5, select), address: 3002),
             asdu(.setpointFloat, .activation, .setpointFloat(-0.5, execute), address: 3002),
             asdu(.setpointFloat, .activation, .setpointFloat(1, select), address: 3002),
             asdu(.setpointFloat, .deactivation, .setpointFloat(1, select), address: 3002)],
            [asdu(.setpointFloatWithTime, .activation, .setpointFloatWithTime(2, execute, time), address: 3001),
             asdu(.singleCommandWithTime, .activation, .singleCommandWithTime(SingleCommand(on: false), time), address: 3101),
             asdu(.singleCommand, .activation, .singleCommand(SingleCommand(on: true)), address: 3102),
             asdu(.singleCommand, .activation, .singleCommand(SingleCommand(on: true)), address: 3001),
             asdu(.setpointFloat, .activation, .setpointFloat(1, execute), address: 3999)],
            // The reactive set-points (issue 59): 3003 Mvar selected and executed inside the capability
            // (2 injecting, 1.6 absorbing), then beyond it, at the absorbing edge, cancelled; NaN and ∞.
            [asdu(.setpointFloat, .activation, .setpointFloat(1.5, select), address: 3003),
             asdu(.setpointFloat, .activation, .setpointFloat(1.5, execute), address: 3003),
             asdu(.setpointFloat, .activation, .setpointFloat(-2, execute), address: 3003),
             asdu(.setpointFloat, .activation, .setpointFloat(-1.6, select), address: 3003),
             asdu(.setpointFloat, .activation, .setpointFloat(-1.6, execute), address: 3003),
             asdu(.setpointFloat, .activation, .setpointFloat(0.5, select), address: 3003),
             asdu(.setpointFloat, .deactivation, .setpointFloat(0.5, select), address: 3003),
             asdu(.setpointFloat, .activation, .setpointFloat(.nan, execute), address: 3003),
             asdu(.setpointFloat, .activation, .setpointFloat(.infinity, execute), address: 3003)],
            // 3004 with time tags: 0.95 over-excited (at least 0.894) selected and executed, 0.93
            // under-excited (at least 0.928) direct, then refused: 0.9 under-excited, 1.5, 0, NaN.
            [asdu(.setpointFloatWithTime, .activation, .setpointFloatWithTime(0.95, select, time), address: 3004),
             asdu(.setpointFloatWithTime, .activation, .setpointFloatWithTime(0.95, execute, time), address: 3004),
             asdu(.setpointFloatWithTime, .activation, .setpointFloatWithTime(-0.93, execute, time), address: 3004),
             asdu(.setpointFloat, .activation, .setpointFloat(-0.9, execute), address: 3004),
             asdu(.setpointFloat, .activation, .setpointFloat(1.5, select), address: 3004),
             asdu(.setpointFloat, .activation, .setpointFloat(0, execute), address: 3004),
             asdu(.setpointFloatWithTime, .activation, .setpointFloatWithTime(.nan, execute, time), address: 3004),
             asdu(.setpointFloatWithTime, .activation, .setpointFloatWithTime(0.5, execute, time), address: 3003)],
            // Unknown type, a monitor type in the control direction, another common address, a cause not served.
            [[102, 1, 6, 0, UInt8(Session.commonAddress), 0, 0, 0, 0],
             asdu(.measuredFloat, .spontaneous, .measuredFloat(1, .good), address: 1001),
             asdu(.interrogation, .activation, .interrogation(20), address: 0, commonAddress: 9),
             asdu(.counterInterrogation, .spontaneous, .counterInterrogation(5), address: 0)],
        ]
        var seeds = scripts.map { Session.record($0) }
        // A started session, then one thing wrong: N(R) beyond what was sent, N(S) ahead, a truncated
        // ASDU, a bad start octet, a length over 253, a STARTDT con.
        let wrong: [(PeerAccount) -> [UInt8]] = [
            { Frame.supervisory(receive: SequenceNumber($0.stationSent.value &+ 5)).encoded() },
            { Frame.information(send: SequenceNumber($0.peerSent.value &+ 3), receive: $0.stationSent, asdu: interrogation).encoded() },
            { Frame.information(send: $0.peerSent, receive: $0.stationSent, asdu: Array(interrogation.dropLast())).encoded() },
            { _ in [0x69, 0x04, 0x07, 0x00, 0x00, 0x00] },
            { _ in [0x68, 0xFE] + [UInt8](repeating: 0, count: 254) },
            { _ in Frame.unnumbered(.startDataTransferConfirmation).encoded() },
        ]
        seeds += wrong.map { Session.record([interrogation], stop: false, then: $0) }
        // c104's client (lib60870) as it spoke to c104's server: STARTDT, GI, clock sync, counters, a set-point.
        let c104 = ["680407000000", "680e0000000064010600070000000014", "681402000c00670106000700000000e287190e1b0b1a",
                    "680e04000e0065010600070000000005", "681206001400320106000700b90b00000080c000"]
        let stream = c104.flatMap(hexOctets)
        seeds += [[0x80] + stream, [7] + stream]
        return seeds
    }

    /// The seeds' time tag: where the session's wall clock starts (`Session.wallClockAtZero`).
    static let time = CP56Time2a(year: 26, month: 11, day: 27, hour: 2, minute: 14, milliseconds: 7_621)

    /// One ASDU's octets, of one information object.
    static func asdu(_ type: TypeID, _ cause: Cause, _ element: InformationElement, address: UInt32,
                     commonAddress: UInt16 = Session.commonAddress) -> [UInt8] {
        (try? ASDU(type: type, cause: CauseOfTransmission(cause: cause), commonAddress: commonAddress,
                   objects: [InformationObject(address: address, element: element)]).encoded()) ?? []
    }

    static func hexOctets(_ text: String) -> [UInt8] {
        var octets: [UInt8] = []
        var index = text.startIndex
        while let next = text.index(index, offsetBy: 2, limitedBy: text.endIndex), index < text.endIndex {
            octets.append(UInt8(text[index..<next], radix: 16) ?? 0)
            index = next
        }
        return octets
    }
}

/// A connection's stream in memory: what the peer sent waits to be read; what the outstation
/// writes is kept, all of it taken at once.
final class MemoryStream: ByteStream {
    let descriptor: Int32 = -1
    let peer: String
    let peerAddress: UInt32
    var input: [UInt8] = []
    var written: [UInt8] = []
    private(set) var isClosed = false
    /// Writes or reads after the close (the outstation must forget a closed stream).
    private(set) var usedAfterClose = 0

    init(peer: String, address: UInt32) {
        self.peer = peer
        peerAddress = address
    }

    func read(limit: Int) -> StreamRead {
        if isClosed { usedAfterClose += 1 }
        guard !input.isEmpty else { return .wouldBlock }
        let count = min(limit, input.count)
        defer { input.removeFirst(count) }
        return .bytes(Array(input[..<count]))
    }

    func write(_ bytes: ArraySlice<UInt8>) -> Int? {
        if isClosed { usedAfterClose += 1 }
        written += bytes
        return bytes.count
    }

    func close() { isClosed = true }
}

/// The journal lines the outstation wrote: code and fields.
final class JournalRecorder: @unchecked Sendable {
    var lines: [(code: OutstationLogCode, fields: [String: String])] = []
}

/// The link of one connection as its peer sees it: what each side sent, acknowledged and started,
/// and the first reason the outstation must close it.
struct PeerAccount {
    let k: Int
    let t1: Duration
    var splitter = FrameSplitter()
    var started = false
    /// The outstation's V(R): the peer's I-frames it accepted.
    var peerSent = SequenceNumber.zero
    /// The outstation's V(S): its I-frames seen on the wire.
    var stationSent = SequenceNumber.zero
    /// The N(R) the peer last sent (accepted).
    var acknowledged = SequenceNumber.zero
    /// When each of the outstation's unacknowledged I-frames went out.
    var unacknowledged: [MonotonicInstant] = []
    var testSentAt: MonotonicInstant?
    /// The N(R) the outstation last sent.
    var stationAcknowledged = SequenceNumber.zero
    /// ASDUs the link delivered, and the outstation's confirmations, by type id.
    var delivered: [UInt8: Int] = [:]
    var confirmed: [UInt8: Int] = [:]
    var closeExpected: IEC104Error.Code?

    init(k: Int, t1: Duration) {
        self.k = k
        self.t1 = t1
    }

    /// The peer's octets of one turn, frame by frame as the outstation's link takes them.
    mutating func peerSends(_ octets: [UInt8]) {
        splitter.append(octets)
        while closeExpected == nil {
            let frame: Frame?
            do { frame = try splitter.next() } catch {
                closeExpected = error.code
                return
            }
            guard let frame else { return }
            switch frame {
            case let .information(send, receive, asdu):
                guard started else { return closeExpected = .notStarted }
                guard send == peerSent else { return closeExpected = .badSequence }
                guard acknowledge(receive) else { return closeExpected = .badAcknowledgement }
                peerSent = peerSent.next
                do throws(IEC104Error) {
                    delivered[try ASDU(decoding: asdu).type.rawValue, default: 0] += 1
                } catch {
                    closeExpected = error.code
                }
            case let .supervisory(receive):
                guard acknowledge(receive) else { return closeExpected = .badAcknowledgement }
            case .unnumbered(.startDataTransferActivation): started = true
            case .unnumbered(.stopDataTransferActivation): started = false
            case .unnumbered(.testFrameConfirmation): testSentAt = nil
            case .unnumbered(.testFrameActivation): break
            case .unnumbered(.startDataTransferConfirmation), .unnumbered(.stopDataTransferConfirmation):
                closeExpected = .unexpectedFrame
            }
        }
    }

    /// The link's timers at `now`, after the turn's frames: t1 on the oldest unacknowledged I-frame
    /// or an unconfirmed TESTFR act.
    mutating func timers(at now: MonotonicInstant) {
        guard closeExpected == nil else { return }
        if let first = unacknowledged.first, now >= first + t1 { closeExpected = .t1Expired }
        if let testSentAt, now >= testSentAt + t1 { closeExpected = .t1Expired }
    }

    private mutating func acknowledge(_ receive: SequenceNumber) -> Bool {
        let count = receive.distance(from: acknowledged)
        guard count <= stationSent.distance(from: acknowledged) else { return false }
        unacknowledged.removeFirst(count)
        acknowledged = receive
        return true
    }

    /// The outstation's frames of one turn at `now`, checked.
    mutating func stationSends(_ frame: Frame, at now: MonotonicInstant, _ violations: inout Violations) {
        switch frame {
        case let .information(send, receive, octets):
            violations.check(send == stationSent, "the outstation's I-frame N(S) \(send), \(stationSent) expected")
            stationSent = send.next
            unacknowledged.append(now)
            stationAcknowledges(receive, &violations)
            do throws(IEC104Error) {
                let asdu = try ASDU(decoding: octets)
                violations.check((try? asdu.encoded()) == octets, "the outstation's \(asdu.type) does not encode back to its octets")
                if [7, 9, 44, 45, 46, 47].contains(asdu.cause.cause.rawValue) { confirmed[asdu.type.rawValue, default: 0] += 1 }
            } catch {
                violations.check(false, "the outstation sent an ASDU that does not decode: \(error.code)")
            }
        case let .supervisory(receive):
            stationAcknowledges(receive, &violations)
        case .unnumbered(.testFrameActivation):
            testSentAt = now
        case .unnumbered(.startDataTransferActivation), .unnumbered(.stopDataTransferActivation):
            violations.check(false, "the outstation sent \(frame), an activation only a controlling station sends")
        case .unnumbered: break
        }
    }

    private mutating func stationAcknowledges(_ receive: SequenceNumber, _ violations: inout Violations) {
        violations.check(receive.distance(from: stationAcknowledged) <= peerSent.distance(from: stationAcknowledged),
                         "the outstation acknowledges N(R) \(receive) after \(stationAcknowledged), the peer sent up to \(peerSent)")
        stationAcknowledged = receive
    }
}

/// One outstation with the fuzzed connection and a well-behaved one beside it.
final class Session {
    let clock: ManualClock
    let shared: SharedState
    let server: OutstationServer
    let peer = MemoryStream(peer: "127.0.0.1:40000", address: 0x7F00_0001)
    let standby = MemoryStream(peer: "10.0.0.2:40001", address: 0x0A00_0002)
    let journal: JournalRecorder
    var account: PeerAccount
    var standbyAccount: PeerAccount
    var stationOutput = FrameSplitter()
    var standbyOutput = FrameSplitter()
    var violations = Violations()
    var turns = 0
    /// The peer's whole input, one frame per turn (how a seed is recorded).
    var recorded: [UInt8] = [0x80]
    private(set) var isOpen = true
    /// The station's common address: c104's session (the seeds) speaks to 7.
    static let commonAddress: UInt16 = 7

    init() {
        var settings = OutstationSettings()
        settings.commonAddress = Self.commonAddress
        settings.groups = [IEC104Group(name: "centre", commands: Set(IEC104CommandRight.allCases)),
                           IEC104Group(name: "standby", allowFrom: [IPv4Network("10.0.0.0/8")!])]
        let shared = SharedState(units: 2, view: SiteView.Settings(capacitiesWh: [], ratingsW: [2e6, 2e6]))
        shared.publish(unitStatus: Self.reactiveUnits)
        shared.declareAGC(AGCLimits(upper: 4e6, lower: -4e6, expiry: .seconds(30)))
        let description = StationDescription(ratingsW: [2e6, 2e6], capacitiesWh: [4e6, 4e6], hasMeter: false, frequencyResponseEnabled: true)
        let journal = JournalRecorder()
        let clock = ManualClock()
        self.journal = journal
        self.clock = clock
        self.shared = shared
        // The wall clock follows the manual one from the seeds' time tag (2026-11-27 02:14:07.621 UTC
        // at the start), so a time-tagged command's age is the session's and an input replays alike
        // on any day.
        server = OutstationServer(settings: settings, description: description, shared: shared, clock: clock,
                                  wallClock: { Self.wallClockAtZero + Double(clock.now().nanoseconds) / 1e9 }) { notice in
            journal.lines.append((notice.outstationCode!, notice.fieldsByName))
        }
        account = PeerAccount(k: settings.k, t1: settings.t1)
        standbyAccount = PeerAccount(k: settings.k, t1: settings.t1)
        server.admit(peer, group: 0, now: clock.now())
        server.admit(standby, group: 1, now: clock.now())
        standby.input = Frame.unnumbered(.startDataTransferActivation).encoded()
        standbyAccount.peerSends(standby.input)
    }

    /// Two units whose inverters report var points: 1 Mvar injecting and 0.8 Mvar absorbing each, so
    /// the site of 4 MW holds 0.894 over-excited (4 / √(4² + 2²)) and 0.928 under-excited
    /// (4 / √(4² + 1.6²)). Without them 3003 takes only 0 and 3004 only unity.
    static var reactiveUnits: [UnitStatus] {
        var units = [UnitStatus](repeating: UnitStatus(), count: 2)
        for i in units.indices { (units[i].varMaxInjecting, units[i].varMaxAbsorbing) = (1e6, 0.8e6) }
        return units
    }

    /// The wall clock, Unix seconds, when the manual clock reads zero (it starts at 1 s).
    static let wallClockAtZero = 1_795_745_646.621

    /// How many octets make the frame at the start of `octets` (at least one).
    static func frameSize(_ octets: ArraySlice<UInt8>) -> Int {
        octets.count >= 2 ? 2 + Int(octets[octets.startIndex + 1]) : max(1, octets.count)
    }

    /// One turn: the peer's `octets` arrive, time moves on by 0.01…25.5 s (the last octet's worth),
    /// the outstation runs, and what it did is checked against the account.
    func feed(_ octets: [UInt8], step: Duration? = nil) {
        guard isOpen else { return }
        turns += 1
        recorded += octets
        clock.advance(by: step ?? .milliseconds(Int64(octets.last ?? 0) * 100 + 10))
        let now = clock.now()
        peer.input += octets
        account.peerSends(octets)
        account.timers(at: now)
        standbyAccount.timers(at: now)
        let lines = journal.lines.count
        server.turn(now: now)
        let said = journal.lines[lines...].filter { $0.fields["BESS_PEER"] == peer.peer }
        let closes = said.filter { $0.code == .protocolError || $0.code == .backlog }
        observe(peer, &stationOutput, &account, at: now)
        observe(standby, &standbyOutput, &standbyAccount, at: now)
        if let expected = account.closeExpected {
            violations.check(peer.isClosed, "\(expected) expected to close the connection; it is open")
            violations.check(closes.count == 1 && closes.first?.code == .protocolError && closes.first?.fields["BESS_IEC104_ERROR"] == "\(expected)",
                             "closed for \(expected) with journal lines \(closes.map { "\($0.code.rawValue) \($0.fields["BESS_IEC104_ERROR"] ?? "")" })")
        } else if peer.isClosed {
            // Answers pile up only behind a full window or a stopped link.
            let backlog = closes.count == 1 && closes.first?.code == .backlog && (account.unacknowledged.count == account.k || !account.started)
            violations.check(backlog, "closed though nothing the peer did closes it: \(said.map { "\($0.code.rawValue) \($0.fields["BESS_IEC104_ERROR"] ?? "")" })")
        } else {
            violations.check(closes.isEmpty, "a close logged for an open connection: \(closes.map(\.code.rawValue))")
        }
        violations.check(!standby.isClosed, "the standby group's connection closed: \(standbyAccount.closeExpected.map { "\($0)" } ?? "no reason")")
        violations.check(peer.usedAfterClose == 0 && standby.usedAfterClose == 0, "a closed stream read or written")
        checkReactive()
        isOpen = !peer.isClosed && account.closeExpected == nil
        // The standby station acknowledges what it got and confirms TESTFR.
        var answer: [UInt8] = []
        if standbyAccount.stationSent != standbyAccount.acknowledged {
            answer += Frame.supervisory(receive: standbyAccount.stationSent).encoded()
        }
        if standbyAccount.testSentAt != nil { answer += Frame.unnumbered(.testFrameConfirmation).encoded() }
        standby.input += answer
        standbyAccount.peerSends(answer)
    }

    /// A reactive command in force is one the site can hold: 3003 inside the var capability, 3004
    /// a power factor it holds at its rating (both directions carry it).
    private func checkReactive() {
        let commands = shared.commands
        let view = shared.view
        let reactive = commands.reactive
        violations.check(!reactive.enabled || view.acceptsVar(reactive.value), "a var setpoint of \(reactive.value) var in force")
        for pf in [commands.powerFactorInjecting, commands.powerFactorAbsorbing] where pf.enabled {
            violations.check(view.acceptsPowerFactor(pf.value), "a power factor of \(pf.value) in force")
        }
    }

    private func observe(_ stream: MemoryStream, _ splitter: inout FrameSplitter, _ account: inout PeerAccount, at now: MonotonicInstant) {
        splitter.append(stream.written)
        stream.written.removeAll()
        while true {
            do {
                guard let frame = try splitter.next() else { break }
                account.stationSends(frame, at: now, &violations)
            } catch {
                violations.check(false, "the outstation wrote octets that do not split: \(error.code)")
                break
            }
        }
    }

    /// After the input: the peer acknowledges and confirms until the outstation has nothing more
    /// to send; then every delivered ASDU must have had its one confirmation.
    func drain() {
        guard isOpen, account.started else { return }
        for _ in 0..<IEC104SessionHarness.maxDrainTurns where isOpen {
            var octets: [UInt8] = []
            if account.stationSent != account.acknowledged { octets += Frame.supervisory(receive: account.stationSent).encoded() }
            if account.testSentAt != nil { octets += Frame.unnumbered(.testFrameConfirmation).encoded() }
            if octets.isEmpty, turns > 0, account.splitter.bufferedCount == 0 {
                // Nothing left to acknowledge: one more turn shows whether anything is still queued.
                let before = account.stationSent
                feed([], step: .milliseconds(10))
                if account.stationSent == before { break }
                continue
            }
            feed(octets, step: .milliseconds(10))
        }
        guard isOpen, account.started, account.splitter.bufferedCount == 0 else { return }
        violations.check(account.delivered == account.confirmed,
                         "confirmations by type \(account.confirmed.sorted { $0.key < $1.key }) for ASDUs delivered \(account.delivered.sorted { $0.key < $1.key })")
    }

    /// A scripted session: STARTDT, each ASDU as an I-frame acknowledged when answered, then the
    /// frame `last` makes of the account, then TESTFR and STOPDT when `stop`; one frame per turn.
    /// Its recorded input is a seed that replays to the same end.
    static func record(_ asdus: [[UInt8]], stop: Bool = true, then last: ((PeerAccount) -> [UInt8])? = nil) -> [UInt8] {
        play(asdus, stop: stop, then: last).recorded
    }

    /// The session `record` scripts, as it ended (its commands, its journal).
    static func play(_ asdus: [[UInt8]], stop: Bool = true, then last: ((PeerAccount) -> [UInt8])? = nil) -> Session {
        let session = Session()
        func send(_ frame: Frame) { session.feed(frame.encoded()) }
        func settle() {
            for _ in 0..<64 where session.isOpen {
                if session.account.testSentAt != nil { send(.unnumbered(.testFrameConfirmation)) }
                guard session.account.stationSent != session.account.acknowledged else { return }
                send(.supervisory(receive: session.account.stationSent))
            }
        }
        send(.unnumbered(.startDataTransferActivation))
        settle()
        for asdu in asdus where session.isOpen {
            send(.information(send: session.account.peerSent, receive: session.account.stationSent, asdu: asdu))
            settle()
        }
        if let last {
            session.feed(last(session.account))
        }
        if stop {
            send(.unnumbered(.testFrameActivation))
            send(.unnumbered(.stopDataTransferActivation))
        }
        return session
    }
}
