import BessBase
public import ControlCore
public import IEEE2030_5

/// What happened to a control, as a response reports it.
public enum Sep2ResponseEvent: Hashable, Sendable {
    /// The control is in this state now (`EventRules.state`): scheduled is reported as received.
    case state(ControlState)
    /// bessd refuses the control: `notApplicable`, `invalidEvent` or `receivedLate`, with the reason
    /// for the journal (never sent to the server).
    case refused(ResponseStatus, reason: String)
}

/// The responses sent, per control mRID, and the state each control was last seen in; the responses
/// waiting to be sent (`outbox`, in order) and the back-off after a failed one.
struct ResponseLedger: Sendable {
    var sent: [String: Set<UInt8>] = [:]
    var seen: [String: ControlState] = [:]
    static let capacity = 4096
    /// Responses made and not yet accepted by the server, oldest first.
    var outbox: [QueuedResponse] = []
    /// The back-off after a failed response (its failures in a row, and no response sent before its end).
    var hold = RetryHold()
    /// Answers other than 2xx and 4xx to the oldest response, and the wall-clock second (Unix) of the first.
    var answered = 0
    var answeredSince: Int64?
    /// Counts each change to what survives a restart (`sent`, `seen`, `outbox`, `answered`): the worker
    /// writes the ledger when it moved (Sep2Reporter+Store.swift).
    var revision: UInt64 = 0
    /// A response the server keeps answering with failures (5xx, 408, 429, 1xx, 3xx) is given up after
    /// this many answers or this long from the first: it would hold back every later one.
    static let answeredAttempts = 8
    static let answeredSeconds: Int64 = 3600
    /// Responses dropped because the outbox was full, since the count was last taken.
    var dropped = 0
    /// The responses `respond` made since the last `enqueue` (control mRID and status), and the state
    /// `track` saw each changed control in before: a response `enqueue` drops is unmarked as sent and its
    /// control's state put back, so the next round makes it again.
    var made: [Sep2Request: (mRID: String, status: UInt8)] = [:]
    var seenBefore: [String: ControlState?] = [:]
    /// Responses given up after the server answered with failures too long (journal lines), since last taken.
    var givenUp: [String] = []
    /// The most responses waiting at once: beyond it new ones are dropped (coded, journalled).
    static let outboxCapacity = 256
}

/// A response waiting in the outbox, with the control and status it answers (mRID empty and status 0
/// for one `enqueue` was given without `respond` making it).
struct QueuedResponse: Sendable, Equatable {
    var request: Sep2Request
    var mRID: String
    var status: UInt8
}

extension Sep2Reporter {
    /// `responseRequired` bit 0: the device shall say it received the control.
    public static let responseReceived: UInt8 = 1 << 0
    /// `responseRequired` bit 1: the device shall give the specific responses (started, completed,
    /// cancelled, superseded, and the refusals).
    public static let responseSpecific: UInt8 = 1 << 1

    /// The DERControlResponse POSTs `event` calls for: none without a `replyTo`; received (1) when
    /// bit 0 asks, before any other status of the control; started, completed, cancelled and superseded
    /// when bit 1 asks; a refusal when bit 0 or 1 asks (it answers the receipt). Bit 2 (a user's
    /// answer) has no user at a site. Each status goes once per control.
    public mutating func respond(to control: DERControl, _ event: Sep2ResponseEvent, serverTime: Int64) -> [Sep2Request] {
        respond(mRID: control.mRID, replyTo: control.replyTo, responseRequired: control.responseRequired, event, serverTime: serverTime)
    }

    /// The refusals of the controls a DERControlList page refused alone (`DERControlList.refused`): 252 or
    /// 253, each once, where the control's mRID was readable and its `replyTo` and `responseRequired` ask.
    public mutating func respond(refused controls: [RefusedControl], serverTime: Int64) -> [Sep2Request] {
        var out: [Sep2Request] = []
        for control in controls {
            guard let mRID = control.mRID else { continue }
            out += respond(mRID: mRID, replyTo: control.replyTo, responseRequired: control.responseRequired,
                           .refused(control.status, reason: control.reason), serverTime: serverTime)
        }
        return out
    }

    mutating func respond(mRID: String, replyTo: String?, responseRequired asked: UInt8, _ event: Sep2ResponseEvent,
                          serverTime: Int64) -> [Sep2Request] {
        guard let replyTo, let path = Self.path(of: replyTo) else { return [] }
        var statuses: [ResponseStatus] = []
        switch event {
        case .refused(let status, _):
            if asked & (Self.responseReceived | Self.responseSpecific) != 0 { statuses.append(status) }
        case .state(let state):
            if asked & Self.responseReceived != 0 { statuses.append(.received) }
            if state != .scheduled, asked & Self.responseSpecific != 0 { statuses.append(ResponseStatus(state)) }
        }
        var out: [Sep2Request] = []
        for status in statuses where !(responses.sent[mRID]?.contains(status.rawValue) ?? false) {
            let report = ControlResponseReport(endDeviceLFDI: settings.lfdi, status: status, subject: mRID, createdDateTime: serverTime)
            do throws(SEP2Error) {
                let request = Sep2Request(method: .post, path: path, body: try report.xml(), purpose: .post("DERControlResponse"))
                out.append(request)
                responses.sent[mRID, default: []].insert(status.rawValue)
                responses.revision &+= 1
                if responses.made.count >= 4 * ResponseLedger.outboxCapacity { responses.made = [:] }
                responses.made[request] = (mRID, status.rawValue)
            } catch {
                refused(error, "DERControlResponse")
            }
        }
        return out
    }

    /// Whether a control is answered 252 because it sets only `opModFreqDroop` and the configured droop
    /// is disabled. A refusal is kept, and so is a start (both in the sent ledger, which a restart keeps
    /// too): a reload of `droop_settings.enabled` meets only controls not yet started, so one that
    /// started is answered completed, never 252, and one refused is never started; one only received
    /// when the droop is disabled is refused at its next change.
    func refusesDroop(_ control: DERControl) -> Bool {
        responses.decided(control.mRID) ?? (control.base.setsOnlyDroop && !settings.frequencyDroopEnabled)
    }

    /// The reason `control` is answered 252 instead of its state, nil when it is not: droop-only with the
    /// droop disabled; reactive-only with no var points as the last sample says, or with every value left
    /// out at `reactiveScope` (`Sep2VarCapability.leftOut`, neither known: not); decided once, as `refusesDroop`.
    func refusal(_ control: DERControl) -> String? {
        guard control.base.setsOnlyReactive else {
            return refusesDroop(control) ? "opModFreqDroop not applied: the configured droop is disabled" : nil
        }
        if let decided = responses.decided(control.mRID) { return decided ? "reactive controls not applied" : nil }
        if latest.map({ !Self.hasVar($0) }) == true { return "reactive controls not applied: no unit has var points" }
        return reactiveScope.flatMap { Sep2VarCapability.leftOut(control.base, scope: $0) }
    }

    /// The responses the programs' controls call for at `serverTime`: each control's state
    /// (`EventRules.state`) compared with the last one seen, and `respond` for each change. A control
    /// first seen already completed ended before bessd knew it (or before a restart) and is not answered.
    /// Controls gone from the programs are forgotten.
    /// `held`: the worker's held controls (a server clock found behind), judged as `EventRules.resolve` does.
    /// `refused`: the mRIDs of the controls the pages refuse alone, kept when the sent ledger is pruned.
    public mutating func track(_ programs: [ProgramSchedule], serverTime: Int64, randomization: Randomization = .none,
                               held: [ControlKey: Int64] = [:], refused: Set<String> = []) -> [Sep2Request] {
        var out: [Sep2Request] = []
        var present = Set<String>()
        for program in programs {
            for control in program.controls {
                present.insert(control.mRID)
                guard let state = EventRules.state(of: control.mRID, program: program.mRID, in: programs, now: serverTime,
                                                   randomization: randomization, held: held) else { continue }
                let previous = responses.seen[control.mRID]
                responses.seen[control.mRID] = state
                if previous != state { responses.revision &+= 1 }
                guard previous != state, previous != nil || state != .completed else { continue }
                let made = respond(to: control, refusal(control).map { .refused(.notApplicable, reason: $0) } ?? .state(state), serverTime: serverTime)
                if !made.isEmpty, responses.seenBefore.index(forKey: control.mRID) == nil { responses.seenBefore.updateValue(previous, forKey: control.mRID) }
                out += made
            }
        }
        if responses.seen.count > present.count {
            let gone = responses.seen.keys.filter { !present.contains($0) }
            for mRID in gone {
                responses.seen[mRID] = nil
                responses.sent[mRID] = nil
            }
            responses.revision &+= 1
        }
        // Refusals of controls never tracked (their documents were refused) stay bounded too; those the
        // pages still refuse (`refused`) are kept, else they would be answered again.
        if responses.sent.count > ResponseLedger.capacity {
            let before = responses.sent.count
            responses.sent = responses.sent.filter { present.contains($0.key) || refused.contains($0.key) }
            if responses.sent.count != before { responses.revision &+= 1 }
        }
        return out
    }
}

// MARK: - The outbox: responses sent in order, again after a failure

extension ResponseLedger {
    /// Queues `responses` behind those waiting, in order; while the outbox is full a new one is dropped
    /// and counted (`takeDropped`), and not taken as sent: the next round (`track`, `respond`) makes it
    /// again. Returns how many were dropped.
    @discardableResult
    mutating func enqueue(_ requests: [Sep2Request]) -> Int {
        var droppedNow = 0
        for response in requests {
            let maker = made[response]
            guard outbox.count < Self.outboxCapacity else {
                droppedNow += 1
                if let maker {
                    sent[maker.mRID]?.remove(maker.status)
                    if sent[maker.mRID]?.isEmpty == true { sent[maker.mRID] = nil }
                    if let before = seenBefore[maker.mRID] { seen[maker.mRID] = before }
                }
                continue
            }
            outbox.append(QueuedResponse(request: response, mRID: maker?.mRID ?? "", status: maker?.status ?? 0))
        }
        if !requests.isEmpty { revision &+= 1 }
        made = [:]
        seenBefore = [:]
        dropped += droppedNow
        return droppedNow
    }

    /// The responses given up since the last call (for the journal): what and why, the path quoted.
    mutating func takeGivenUp() -> [String] {
        defer { givenUp = [] }
        return givenUp
    }

    /// The responses dropped on a full outbox since the last call (for the journal).
    mutating func takeDropped() -> Int {
        defer { dropped = 0 }
        return dropped
    }

    /// The response to send at monotonic `now`: the oldest waiting, unless a failure holds them back.
    func next(now: MonotonicInstant) -> Sep2Request? {
        if hold.holds(at: now) { return nil }
        return outbox.first?.request
    }

    /// The outcome of sending the oldest response at `now`: a 2xx takes it off the queue; a 4xx other
    /// than 408 and 429 is the server refusing that document: it is dropped, the error says so. Any
    /// other answer (1xx, 3xx, 408, 429, 5xx) or none (`reply` nil, a transport failure) keeps it and holds
    /// every response back for the back-off (2, 4, 8 … 300 s as discovery's, a 429's or 503's `Retry-After`
    /// when longer). No answer (an outage) is retried without end; a server that answers with failures
    /// gets `answeredAttempts` tries or `answeredSeconds` from its first on the wall clock `wall` (Unix
    /// seconds), which the outbox keeps across a restart, then
    /// the response is given up (`takeGivenUp`) so it does not hold back the ones behind it. Returns whether the next one may be
    /// sent at once, and what went wrong (for `lastError`).
    mutating func handle(_ reply: Sep2Reply?, to request: Sep2Request, now: MonotonicInstant, wall: Int64) -> (sendNext: Bool, error: String?) {
        guard outbox.first?.request == request else { return (true, nil) }
        let status = reply?.status
        let at = TextQuoting.quoted(request.path, limit: 64)
        if let status, (200...299).contains(status) || ((400...499).contains(status) && status != 408 && status != 429) {
            takeHead()
            return (true, (200...299).contains(status) ? nil : "HTTP \(status) to DERControlResponse at \(at): dropped")
        }
        if let status {
            answered += 1
            revision &+= 1
            let since = answeredSince ?? wall
            answeredSince = since
            if answered >= Self.answeredAttempts || wall - since >= Self.answeredSeconds {
                let line = "HTTP \(status) to the DERControlResponse at \(at) \(answered) times in \(wall - since) s: given up"
                takeHead()
                if givenUp.count < 16 { givenUp.append(line) }
                return (true, line)
            }
        }
        let delay = hold.fail(at: now, retryAfter: status == 429 || status == 503 ? reply?.retryAfterSeconds : nil, rule: .lengthens)
        return (false, (status.map { "HTTP \($0)" } ?? "no answer") + " to DERControlResponse at \(at); sent again in \(delay) s")
    }

    /// Takes the oldest response off the queue; the next starts with no failures.
    mutating func takeHead() {
        outbox.removeFirst()
        revision &+= 1
        hold.reset()
        answered = 0
        answeredSince = nil
    }
}

extension Sep2Reporter {
    /// Queues `responses` behind those waiting (`ResponseLedger.enqueue`); returns how many were dropped.
    @discardableResult
    public mutating func enqueue(_ requests: [Sep2Request]) -> Int { responses.enqueue(requests) }

    /// The responses given up since the last call (for the journal): what and why, the path quoted.
    public mutating func takeGivenUp() -> [String] { responses.takeGivenUp() }

    /// The responses waiting to be sent, oldest first.
    public var pendingResponses: [Sep2Request] { responses.outbox.map(\.request) }

    /// The responses dropped on a full outbox since the last call (for the journal).
    public mutating func takeDropped() -> Int { responses.takeDropped() }

    /// The response to send at monotonic `now`: the oldest waiting, unless a failure holds them back.
    public func nextResponse(now: MonotonicInstant) -> Sep2Request? { responses.next(now: now) }

    /// The outcome of sending the oldest response at `now` and Unix second `wall`
    /// (`ResponseLedger.handle`); `lastError` says what went wrong. Returns true when the next one may
    /// be sent at once.
    @discardableResult
    public mutating func handleResponse(_ reply: Sep2Reply?, to request: Sep2Request, now: MonotonicInstant, wall: Int64) -> Bool {
        let outcome = responses.handle(reply, to: request, now: now, wall: wall)
        if let error = outcome.error { lastError = error }
        return outcome.sendNext
    }
}
