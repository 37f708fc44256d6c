public import IEEE2030_5

/// What happened to a control, as a response reports it.
public enum Sep2ResponseEvent: Hashable, Sendable {
    /// The control is in this state now (`EventRules.state`): scheduled is reported as received.
    case state(ControlState)
    /// bessd refuses the control: `notApplicable`, `invalidEvent` or `receivedLate`, with the reason
    /// for the journal (never sent to the server).
    case refused(ResponseStatus, reason: String)
}

/// The responses sent, per control mRID, and the state each control was last seen in.
struct ResponseLedger: Sendable {
    var sent: [String: Set<UInt8>] = [:]
    var seen: [String: ControlState] = [:]
    static let capacity = 4096
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
        guard let replyTo = control.replyTo, let path = Self.path(of: replyTo) else { return [] }
        let asked = control.responseRequired
        var statuses: [ResponseStatus] = []
        switch event {
        case .refused(let status, _):
            if asked & (Self.responseReceived | Self.responseSpecific) != 0 { statuses.append(status) }
        case .state(let state):
            if asked & Self.responseReceived != 0 { statuses.append(.received) }
            if state != .scheduled, asked & Self.responseSpecific != 0 { statuses.append(ResponseStatus(state)) }
        }
        var out: [Sep2Request] = []
        for status in statuses where !(responses.sent[control.mRID]?.contains(status.rawValue) ?? false) {
            let report = ControlResponseReport(endDeviceLFDI: settings.lfdi, status: status, subject: control.mRID, createdDateTime: serverTime)
            do throws(SEP2Error) {
                out.append(Sep2Request(method: .post, path: path, body: try report.xml(), purpose: .post("DERControlResponse")))
                responses.sent[control.mRID, default: []].insert(status.rawValue)
            } catch {
                refused(error, "DERControlResponse")
            }
        }
        return out
    }

    /// The responses the programs' controls call for at `serverTime`: each control's state
    /// (`EventRules.state`) compared with the last one seen, and `respond` for each change. A control
    /// first seen already completed ended before bessd knew it (or before a restart) and is not answered.
    /// Controls gone from the programs are forgotten.
    public mutating func track(_ programs: [ProgramSchedule], serverTime: Int64, randomization: Randomization = .none) -> [Sep2Request] {
        var out: [Sep2Request] = []
        var present = Set<String>()
        for program in programs {
            for control in program.controls {
                present.insert(control.mRID)
                guard let state = EventRules.state(of: control.mRID, program: program.mRID, in: programs, now: serverTime,
                                                   randomization: randomization) else { continue }
                let previous = responses.seen[control.mRID]
                responses.seen[control.mRID] = state
                guard previous != state, previous != nil || state != .completed else { continue }
                out += respond(to: control, .state(state), serverTime: serverTime)
            }
        }
        if responses.seen.count > present.count {
            let gone = responses.seen.keys.filter { !present.contains($0) }
            for mRID in gone {
                responses.seen[mRID] = nil
                responses.sent[mRID] = nil
            }
        }
        // Refusals of controls never tracked (their documents were refused) stay bounded too.
        if responses.sent.count > ResponseLedger.capacity { responses.sent = responses.sent.filter { present.contains($0.key) } }
        return out
    }
}
