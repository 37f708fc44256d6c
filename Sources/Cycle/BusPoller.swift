import BessBase
import BessSystem
import ControlCore
import Fieldbus
import Glibc
import Synchronization

/// One thread that drives the per-cycle exchanges of every healthy Modbus TCP endpoint of the site:
/// just before each cycle it sends every endpoint's poll requests at once and takes the answers as
/// they arrive; when the cycle hands over its setpoints it sends the writes at once and takes their
/// answers while it waits for the next round. Requests on one endpoint stay strictly one at a time
/// (gateways and devices need not accept more than one outstanding request); different endpoints
/// run side by side. A cycle thus costs a handful of wake-ups for the whole site instead of three or
/// four per endpoint, which on a virtual machine is most of the CPU a bus costs.
///
/// Endpoints' sessions (`EndpointSession`: the connection and the device states) are moved to it by
/// their `EndpointWorker` once connected, discovered and answering; while it holds one, the poller
/// alone reads and writes it, and it never calls into the worker. It moves the session back at the
/// first failure (with its error, which the worker acts on exactly as if it had met it itself), when
/// the worker's minute's refresh of static values comes due, and at stop.
/// A dead endpoint only ever costs its own request's timeout: the poller never waits on one
/// endpoint while another has work.
public final class BusPoller: @unchecked Sendable {
    let endpoints: [EndpointWorker]
    let phase: CyclePhase
    /// SCHED_FIFO priority and CPU of the poller's thread (the workers'), or nil for the default policy.
    let realtime: RealtimeThread?
    /// True when this poller reads every real device of the site each cycle: it then tells the
    /// cycle the moment all readings for it are in, and the cycle starts then (`CyclePhase`).
    let startsCycles: Bool
    /// The time and the waits (the system's clock in bessd; tests step a `ManualClock`).
    let clock: any MonotonicClock
    let log: @Sendable (Notice) -> Void
    private let worker = WorkerThread()
    /// The cycle's hand-over of setpoints, and workers' hand-overs of endpoints.
    private let kicked = Wakeup()
    private let adopted = Wakeup()
    // The poller thread's own state.
    /// The sessions the poller owns, by endpoint.
    private var sessions: HeldSessions
    /// True from a round's reads to its writes: endpoints are not handed back meanwhile.
    private var holdReleases = false
    /// Whether the reads' answers are taken together (`serve`'s `takeBy`); nil: only when the
    /// poller runs with real-time priority. With it, the poller preempts whatever runs at every
    /// answer; without it, the scheduler already lets answers gather between wake-ups, and taking
    /// them together saved no CPU.
    let takesAnswersTogether: Bool?
    /// Set when a `serve` poll saw the cycle's hand-over; `takeKick()` consumes it. Looking at the
    /// eventfd only then spares a read that finds it empty at every other wake-up of a round, each
    /// a system call.
    private var kickSeen = false
    /// `serve`'s poll set and which endpoint each entry belongs to (kept: no allocation per call).
    private var fds: [pollfd] = []
    private var owners: [Int] = []
    /// The registers of the read answer being taken (kept: filled in place, no allocation per answer).
    private var words: [UInt16] = []

    /// True while the poller's thread runs its loop (the watchdog checks it).
    public var isAlive: Bool { worker.isAlive }
    /// When the thread's loop last turned (the watchdog's view of its progress, `WorkerTurn`).
    var lastTurn: MonotonicInstant? { worker.lastTurn }
    /// The thread's kernel id once it runs (tests read its affinity and policy from /proc).
    var threadID: Int32 { worker.threadID }

    /// - Parameter takesAnswersTogether: nil (bessd) when the poller runs with real-time priority;
    ///   tests set it either way.
    init(endpoints: [EndpointWorker], phase: CyclePhase, realtime: RealtimeThread?, startsCycles: Bool = false,
         takesAnswersTogether: Bool? = nil, clock: any MonotonicClock = SystemClock.shared,
         log: @escaping @Sendable (Notice) -> Void) {
        self.endpoints = endpoints
        self.takesAnswersTogether = takesAnswersTogether
        self.phase = phase
        self.realtime = realtime
        self.startsCycles = startsCycles
        self.clock = clock
        self.log = log
        sessions = HeldSessions(count: endpoints.count)
        if startsCycles { phase.enableStartOnReadings() }
        for endpoint in endpoints { endpoint.poller = self }
    }

    public func start() { worker.start(name: "bessd-poller") { [self] in loop() } }

    /// Stops the poller; every endpoint it drives is handed back to its worker (which writes the
    /// safe zero when it stops).
    public func stop() { worker.stop { [adopted] in adopted.signal() } }

    /// The cycle has handed over its setpoints (the cycle's side: one eventfd write).
    public func kick() { kicked.signal() }

    /// A worker handed its endpoint over, or wants it back.
    func adopt() { adopted.signal() }

    /// One request of one endpoint's queue.
    enum Job {
        case read(device: Int, address: Int, count: Int)
        case write(device: Int, address: Int, values: [UInt16], last: (setpoint: Watts, rearm: Bool, conn: UInt16?)?)
    }

    /// The request in flight on an endpoint: what it asks, without the values it wrote (plain
    /// numbers, so looking at it or copying it retains nothing).
    enum Flight {
        case read(device: Int, address: Int, count: Int)
        case write(device: Int, address: Int, count: Int, last: (setpoint: Watts, rearm: Bool, conn: UInt16?)?)
    }

    /// What the poller holds for one endpoint besides its session: the round's requests.
    struct Lane {
        /// True while the poller holds the endpoint's session.
        var active = false
        var queue: [Job] = []
        var next = 0
        var pending: (flight: Flight, exchange: ModbusConnection.Pending)?
        /// How long this endpoint's last answer took.
        var roundTrip: Duration = .zero
        var idle: Bool { pending == nil && next >= queue.count }
        /// True while the request in flight is a read and the last one queued: nothing else on this
        /// endpoint waits for its answer, so the answer may be taken together with others (`serve`).
        /// A write's answer is taken as it comes: the endpoint's read for the round waits on it.
        var onLastRead: Bool {
            guard let pending, next >= queue.count, case .read = pending.flight else { return false }
            return true
        }
        /// Until when the answer of a last read may wait unwatched: twice the endpoint's last round
        /// trip and half a millisecond past its sending.
        var unwatchedUntil: MonotonicInstant { sentAt + roundTrip * 2 + .microseconds(500) }
        /// When the request in flight went out (the connection's own stamp).
        var sentAt: MonotonicInstant { pending?.exchange.started ?? .zero }
    }

    private func loop() {
        var isRealtime = false
        if let realtime {
            let entered = Realtime.enter(realtime, as: "the bus poller")
            for notice in entered.notices { log(Notice(DeviceCode.realtimeDegraded, "bus poller: \(notice)")) }
            isRealtime = entered.isFIFO
        }
        let together = takesAnswersTogether ?? isRealtime
        var lanes = [Lane](repeating: Lane(), count: endpoints.count)
        // Which endpoints have read in the current round.
        var readThisRound = [Bool](repeating: false, count: endpoints.count)
        fds = [pollfd](repeating: pollfd(), count: endpoints.count + 2)
        owners = [Int](repeating: -1, count: endpoints.count + 2)
        words.reserveCapacity(125)
        var lead = ReadLead()
        var lastKick = clock.now()
        let never = MonotonicInstant.zero
        while worker.turn() {
            guard let deadline = phase.upcoming else {
                serve(&lanes, until: clock.now() + .milliseconds(10))
                continue
            }
            let period = phase.period
            manage(&lanes)
            guard Self.anyActive(lanes) else {
                // Nothing handed over: wait for a hand-over, not for the cycle.
                serve(&lanes, until: deadline) { lanes in Self.anyActive(lanes) }
                continue
            }
            // Every endpoint with the poller: the cycle will start on this round's readings, so a
            // longer lead costs no latency and leaves a slow round time to land.
            let wholeSite = startsCycles && Self.allActive(lanes)
            // Halved once per round, not at each use (Duration's `/` is a generic 128-bit division).
            let halfPeriod = period / 2
            var readAt = deadline - lead.lead(period: period, startsOnReadings: wholeSite)
            if readAt < clock.now() - halfPeriod { readAt = clock.now() }
            // Until the reads: hand-overs in both directions, and the answers of endpoints with more
            // requests queued. The answer to an endpoint's last write is taken when the reads start,
            // not as it arrives: one wake-up less per endpoint and cycle. A hand-over meanwhile (an
            // extra cycle's, woken by a BMS alarm, or a cycle later than half a period) puts its
            // setpoints on the wire now, not after the next round's reads: a setpoint leaves as
            // soon as its cycle has decided it.
            while worker.isRunning {
                var handedOverMeanwhile = false
                serve(&lanes, until: readAt, watchKick: true, lastAnswersLater: true) { _ in
                    if takeKick() { handedOverMeanwhile = true }
                    return handedOverMeanwhile
                }
                guard handedOverMeanwhile else { break }
                lastKick = clock.now()
                for i in lanes.indices where lanes[i].pending != nil { answer(&lanes, i) }
                queueWrites(&lanes, stalled: false)
            }
            // From the reads to the writes, an endpoint whose worker wants it back (the minute's
            // refresh) stays: it goes back after the writes, between rounds, and misses no reading.
            holdReleases = true
            for i in lanes.indices where lanes[i].pending != nil { answer(&lanes, i) }
            kickSeen = false
            if kicked.drain() {
                // A hand-over that came as the serve above ended: its writes leave before the reads.
                lastKick = clock.now()
                queueWrites(&lanes, stalled: false)
            }
            manage(&lanes)
            var reading = false
            for i in lanes.indices { readThisRound[i] = false }
            var handedOver = false
            while true {
                // Every endpoint ready to read (and one handed over while the others read) reads now.
                var started = false
                for i in lanes.indices where lanes[i].active && lanes[i].idle && !readThisRound[i] {
                    // The lane is idle: its queue is refilled in place (no allocation per round).
                    lanes[i].queue.removeAll(keepingCapacity: true)
                    for d in endpoints[i].devices.indices {
                        guard let read = sessions[i].devices[d].pollRequest else { continue }
                        lanes[i].queue.append(.read(device: d, address: read.address, count: read.count))
                    }
                    lanes[i].next = 0
                    start(&lanes, i)
                    readThisRound[i] = true
                    reading = true
                    started = true
                }
                if !started && reading { break }
                // The reads: until every endpoint has answered (or failed), or the cycle hands over.
                // Answers that wait unwatched are taken a margin before the deadline at the latest:
                // one slow endpoint never makes the others' readings miss their cycle.
                serve(&lanes, until: deadline + halfPeriod, watchKick: true,
                      takeBy: together ? deadline - max(.milliseconds(2), period / 20) : never) { lanes in
                    if takeKick() { handedOver = true }
                    return handedOver || Self.noneReading(lanes)
                }
                if handedOver || !reading { break }
            }
            if reading { lead.record(readAt: readAt, done: clock.now()) }
            // Every endpoint read this round and none failed: the cycle may start now.
            if startsCycles, !handedOver, !readThisRound.contains(false), Self.allActive(lanes) {
                let current = clock.now()
                if current < deadline { phase.readingsIn(for: deadline, at: current) }
            }
            if !handedOver {
                serve(&lanes, until: max(deadline, clock.now()) + halfPeriod, watchKick: true) { _ in
                    if takeKick() { handedOver = true }
                    return handedOver
                }
            }
            if handedOver { lastKick = clock.now() }
            let stalled = WritePlanner.stalled(lastHandOver: lastKick, now: clock.now(), period: period)
            queueWrites(&lanes, stalled: stalled)
            holdReleases = false
            // Sleep at least to this cycle's deadline, so the next round reads for the next cycle —
            // unless the cycle handed over: it published its next deadline before it ran, so the
            // next round can be planned now (one timer less per cycle when it started on its readings).
            // The last writes' answers wait for the next reads: one wake-up per round, not one per endpoint.
            if !handedOver, clock.now() < deadline { serve(&lanes, until: deadline, lastAnswersLater: true) }
        }
        // Hand every session back, taken up or not yet; a request in flight is the worker's to settle.
        for i in lanes.indices {
            if lanes[i].active {
                release(&lanes, i, failure: nil)
            } else if let waiting = endpoints[i].toPoller.take() {
                endpoints[i].toWorker.put(waiting)
                endpoints[i].handback.signal()
            }
        }
    }

    /// Queues on every endpoint it drives what the cycle's setpoints need written (`WritePlanner`:
    /// a changed setpoint, or the revert timer's re-arm) and starts it where the line is free.
    private func queueWrites(_ lanes: inout [Lane], stalled: Bool) {
        let now = clock.now()
        for i in lanes.indices where lanes[i].active {
            // The writes go on the lane's own queue (no allocation per round), ahead of any read it
            // has not sent yet: the cycle that decided them has run, so they leave first, right
            // after the request in flight. A failure hands the endpoint back and empties the lane.
            lanes[i].queue.removeFirst(min(lanes[i].next, lanes[i].queue.count))
            lanes[i].next = 0
            var at = 0
            let endpoint = endpoints[i]
            for d in endpoint.devices.indices {
                do throws(DeviceError) {
                    let planned = try sessions[i].plan(d, decided: endpoint.devices[d].slot.setpoint, stalled: stalled,
                                                       revert: endpoint.revert, now: now, slot: endpoint.devices[d].slot,
                                                       rating: endpoint.devices[d].rating)
                    if sessions[i].devices[d].contactorNotice {
                        sessions[i].devices[d].contactorNotice = false
                        EndpointWorker.cannotOpen(endpoint.devices[d], on: endpoint.endpoint, log)
                    }
                    if sessions[i].devices[d].reactiveNotice {
                        sessions[i].devices[d].reactiveNotice = false
                        log(endpoint.devices[d].reactiveUnavailable(on: endpoint.endpoint))
                    }
                    guard let plan = planned else { continue }
                    for (k, w) in plan.writes.enumerated() {
                        lanes[i].queue.insert(.write(device: d, address: w.address, values: w.values,
                                                     last: k == plan.writes.count - 1
                                                        ? (plan.setpoint, plan.rearm, sessions[i].devices[d].plannedConn) : nil),
                                                at: at)
                        at += 1
                    }
                } catch {
                    // A setpoint the device cannot take: its worker replaces it by 0 W.
                    release(&lanes, i, failure: (d, error))
                    break
                }
            }
            guard lanes[i].active else { continue }
            if lanes[i].pending == nil { start(&lanes, i) }
        }
    }

    /// Takes the sessions workers handed over; hands back those whose worker wants them (when idle).
    private func manage(_ lanes: inout [Lane]) {
        for i in lanes.indices {
            if !lanes[i].active, let session = endpoints[i].toPoller.take() {
                sessions.hold(i, session)
                lanes[i] = Lane()
                lanes[i].active = true
            }
            if lanes[i].active, lanes[i].idle, !holdReleases, endpoints[i].wantsBack.load(ordering: .relaxed) {
                release(&lanes, i, failure: nil)
            }
        }
    }

    /// Moves endpoint `i`'s session back to its worker, with the failure that made it, if any.
    private func release(_ lanes: inout [Lane], _ i: Int, failure: (index: Int, error: DeviceError)?) {
        lanes[i] = Lane()
        var session = sessions.release(i)
        session.count(into: endpoints[i].counters)
        session.failure = failure
        endpoints[i].toWorker.put(session)
        endpoints[i].handback.signal()
    }

    /// Sends the next request of endpoint `i`'s queue, if any.
    private func start(_ lanes: inout [Lane], _ i: Int) {
        guard lanes[i].active, lanes[i].pending == nil, lanes[i].next < lanes[i].queue.count,
              let connection = sessions[i].connection else { return }
        let endpoint = endpoints[i]
        let n = lanes[i].next
        lanes[i].next += 1
        do throws(DeviceError) {
            // Each request's frame is built straight into the connection's send buffer.
            switch lanes[i].queue[n] {
            case .read(let d, let address, let count):
                lanes[i].pending = (.read(device: d, address: address, count: count),
                                    try connection.beginRead(unit: endpoint.devices[d].unitID, at: address, count: count))
            case .write(let d, let address, let values, let last):
                lanes[i].pending = (.write(device: d, address: address, count: values.count, last: last),
                                    try connection.beginWrite(unit: endpoint.devices[d].unitID, at: address, values))
            }
        } catch {
            release(&lanes, i, failure: (device(lanes[i].queue[n]), error))
        }
    }

    private func device(_ job: Job) -> Int {
        switch job {
        case .read(let d, _, _), .write(let d, _, _, _): d
        }
    }

    private func device(_ flight: Flight) -> Int {
        switch flight {
        case .read(let d, _, _), .write(let d, _, _, _): d
        }
    }

    /// Takes answers and starts the next requests until `end`, or until `done` says so (checked
    /// after every wake-up; with `watchKick`, a hand-over from the cycle also wakes it). Expired
    /// requests hand their endpoint back with a timeout.
    ///
    /// With `takeBy` (the reads), answers that nothing else waits on (each endpoint's last read of
    /// the round) are taken together: of those, only the one sent last is watched, since answers
    /// come back in about the order the requests went out; when it arrives, one poll takes every
    /// other that has arrived too. Each other waits unwatched at most twice its endpoint's last
    /// round trip plus 0.5 ms after it was sent (rounded up to the millisecond), and never past
    /// `takeBy`, so an endpoint slower than usual (or silent) never makes the others' readings miss
    /// their cycle. With real-time priority the poller otherwise wakes for every answer, each
    /// wake-up a poll over every socket.
    private func serve(_ lanes: inout [Lane], until end: MonotonicInstant, watchKick: Bool = false, lastAnswersLater: Bool = false,
                       takeBy: MonotonicInstant = .zero, done: (borrowing [Lane]) -> Bool = { _ in false }) {
        var sweep = false
        while worker.turn() {
            manage(&lanes)
            if done(lanes) { return }
            let current = clock.now()
            var wakeAt = end
            var n = 0
            fds[n] = pollfd(fd: adopted.descriptor, events: Int16(POLLIN), revents: 0); n += 1
            if watchKick { fds[n] = pollfd(fd: kicked.descriptor, events: Int16(POLLIN), revents: 0); n += 1 }
            // A last answer left for the next reads is neither waited on nor timed out here: the
            // gap to the next reads may be longer than the timeout (a 1 s period, a 200 ms
            // timeout). If it never came, the next reads find it still pending and time it out
            // then. An endpoint whose worker wants it back has its last answer taken as it comes,
            // so it goes back (and returns) between rounds rather than at the next reads.
            func later(_ i: Int) -> Bool {
                lastAnswersLater && lanes[i].next >= lanes[i].queue.count && !endpoints[i].wantsBack.load(ordering: .relaxed)
            }
            func mayWait(_ i: Int) -> Bool {
                guard lanes[i].onLastRead, let pending = lanes[i].pending else { return false }
                return current < min(lanes[i].unwatchedUntil, takeBy, pending.exchange.deadline)
            }
            // The last request sent of those whose answer may wait unwatched.
            var watched = -1
            if !sweep, current < takeBy {
                for i in lanes.indices where mayWait(i) && !later(i) && (watched < 0 || lanes[i].sentAt > lanes[watched].sentAt) {
                    watched = i
                }
            }
            var watchedAt = -1
            var unwatched = false
            for i in lanes.indices {
                guard let pending = lanes[i].pending, let connection = sessions[i].connection else { continue }
                if later(i) { continue }
                if current >= pending.exchange.deadline {
                    let error = connection.expired(pending.exchange)
                    release(&lanes, i, failure: (device(pending.flight), error))
                    continue
                }
                wakeAt = min(wakeAt, pending.exchange.deadline)
                if watched >= 0, i != watched, mayWait(i) {
                    wakeAt = min(wakeAt, lanes[i].unwatchedUntil, takeBy)
                    unwatched = true
                    continue
                }
                if i == watched { watchedAt = n }
                fds[n] = pollfd(fd: connection.socket, events: Int16(POLLIN), revents: 0)
                owners[n] = i
                n += 1
            }
            if current >= end { return }
            let count = n
            let ready = fds.withUnsafeMutableBufferPointer { clock.poll($0.baseAddress!, count: count, until: sweep ? .zero : wakeAt) }
            // The watched answer came: the next poll takes, without waiting, every other that came.
            sweep = !sweep && unwatched && watchedAt >= 0 && fds[watchedAt].revents != 0
            guard ready > 0 else { continue }
            if fds[0].revents != 0 { adopted.drain() }
            if watchKick, fds[1].revents != 0 { kickSeen = true }
            for k in (watchKick ? 2 : 1)..<n where fds[k].revents != 0 { answer(&lanes, owners[k]) }
        }
    }

    /// True when the cycle handed over since a poll last saw it (the hand-over is consumed). A
    /// hand-over made before a `serve` started is seen by that serve's first poll, which returns at once.
    private func takeKick() -> Bool {
        guard kickSeen else { return false }
        kickSeen = false
        return kicked.drain()
    }

    /// Takes what arrived for endpoint `i`'s request in flight, into the session the poller holds.
    private func answer(_ lanes: inout [Lane], _ i: Int) {
        guard i >= 0, let pending = lanes[i].pending, let connection = sessions[i].connection else { return }
        let endpoint = endpoints[i]
        let d = device(pending.flight)
        do throws(DeviceError) {
            // The answer is decoded where it arrived: a read's registers into the poller's own
            // array, a write's echo checked in the receive buffer.
            let complete = switch pending.flight {
            case .read(_, _, let count): try connection.collectRegisters(pending.exchange, count: count, into: &words)
            case .write(_, let address, let count, _): try connection.collectEcho(pending.exchange, address: address, count: count)
            }
            guard complete else { return }
            let now = clock.now()
            lanes[i].pending = nil
            lanes[i].roundTrip = now - pending.exchange.started
            switch pending.flight {
            case .read(_, let address, _):
                try sessions[i].answered(d, address: address, words: words, unitID: endpoint.devices[d].unitID,
                                         slot: endpoint.devices[d].slot, now: now)
            case .write(_, _, _, let last):
                if let last { sessions[i].written(d, setpoint: last.setpoint, rearm: last.rearm, conn: last.conn, at: now) }
            }
            start(&lanes, i)
            if lanes[i].active, lanes[i].idle { sessions[i].count(into: endpoint.counters) }
        } catch {
            // A refused `Conn` is the contactor's (the unit cannot open), not the unit's: the worker
            // takes the endpoint back without rediscovering it.
            if error.kind == .deviceRefused, case .write(_, let address, _, _) = pending.flight,
               sessions[i].refusedConn(d, address: address) {
                release(&lanes, i, failure: nil)
            } else {
                release(&lanes, i, failure: (d, error))
            }
        }
    }

    // Questions over every lane, asked at each wake-up of a round. Index loops: a sequence
    // algorithm's iterator would hand each lane over as a copy (a retain of its queue, per lane).
    private static func anyActive(_ lanes: borrowing [Lane]) -> Bool {
        for i in lanes.indices where lanes[i].active { return true }
        return false
    }

    private static func allActive(_ lanes: borrowing [Lane]) -> Bool {
        for i in lanes.indices where !lanes[i].active { return false }
        return true
    }

    private static func noneReading(_ lanes: borrowing [Lane]) -> Bool {
        for i in lanes.indices where lanes[i].active && lanes[i].isReading { return false }
        return true
    }
}

extension BusPoller.Lane {
    /// True while a read of this round is queued or in flight.
    var isReading: Bool {
        if let pending, case .read = pending.flight { return true }
        var k = next
        while k < queue.count {
            if case .read = queue[k] { return true }
            k += 1
        }
        return false
    }
}
