import BessBase
import BessSystem
import ControlCore
import Cycle
import IEC104
import Synchronization

/// Commands: set-points (C_SE_NC_1, C_SE_TC_1) at 3001 (AGC target), 3002 (site MW setpoint), 3003
/// (site Mvar setpoint) and 3004 (site power factor), single commands (C_SC_NA_1, C_SC_TA_1) at 3101 (AGC in service) and 3102 (frequency response),
/// direct or select-before-operate. `OutstationCommands` decides; here the decision is carried out
/// against the shared state, answered, and journalled, counted and audited.
extension StationProcedures {
    typealias Order = OutstationCommands.Order

    func command(_ asdu: ASDU, _ connection: OutstationConnection, groups: RedundancyGroups, now: MonotonicInstant) {
        guard let object = asdu.objects.first else { return }
        guard asdu.cause.cause == .activation || asdu.cause.cause == .deactivation else {
            return negative(asdu, .unknownCause, connection, "command with COT \(asdu.cause.cause)")
        }
        let signal = (Self.setpointSignals + [.agcInServiceCommand, .frequencyResponseCommand]).first { settings.address($0) == object.address }
        guard let signal else { return negative(asdu, .unknownObjectAddress, connection, "no command at IOA \(object.address)") }
        let group = groups[connection.group].settings
        var order: Order
        switch object.element {
        case let .setpointFloat(v, q): order = Order(signal: signal, value: Double(v), select: q.select)
        case let .setpointFloatWithTime(v, q, t): order = Order(signal: signal, value: Double(v), select: q.select, tag: t)
        case let .singleCommand(c): order = Order(signal: signal, value: c.on ? 1 : 0, select: c.select)
        case let .singleCommandWithTime(c, t): order = Order(signal: signal, value: c.on ? 1 : 0, select: c.select, tag: t)
        default: return
        }
        let setpoint = Self.setpointSignals.contains(signal)
        let isSetpointType = asdu.type == .setpointFloat || asdu.type == .setpointFloatWithTime
        guard setpoint == isSetpointType else {
            return negative(asdu, .unknownType, connection, "IOA \(object.address) takes \(setpoint ? "a set-point" : "a single command"), not \(asdu.type)")
        }
        if asdu.cause.cause == .deactivation {
            // Cancels this connection's select of the point.
            let owned = selections[object.address]?.connection == connection.id
            if owned { selections[object.address] = nil }
            report(order, connection, group: group.name, owned ? .success("select cancelled") : .failure(CommandRefusal(.notSelected, message: "nothing selected to cancel")))
            return answer(asdu.answer(.deactivationConfirmation, negative: !owned), to: connection)
        }
        let context = OutstationCommands.Context(group: group, started: groups.isStarted(connection.id, in: connection.group),
                                                 connection: connection.id, selection: selections[object.address], now: now,
                                                 wallClockSeconds: wallClock())
        if let refusal = commands.refusal(of: order, in: context) {
            report(order, connection, group: group.name, .failure(refusal))
            return answer(asdu.answer(.activationConfirmation, negative: true), to: connection)
        }
        if order.select {
            selections[object.address] = commands.selection(for: order, in: context)
            report(order, connection, group: group.name, .success("selected for \(settings.selectTimeout)"))
            return answer(asdu.answer(.activationConfirmation), to: connection)
        }
        selections[object.address] = nil
        if let refusal = execute(order, now: now, view: shared.view) {
            report(order, connection, group: group.name, .failure(refusal))
            answer(asdu.answer(.activationConfirmation, negative: true), to: connection)
        } else {
            report(order, connection, group: group.name, .success("executed"))
            answer(asdu.answer(.activationConfirmation), to: connection)
            answer(asdu.answer(.activationTermination), to: connection)
        }
    }

    /// The command points that take set-points (C_SE_NC_1, C_SE_TC_1); the others take single commands.
    static let setpointSignals: [IEC104Signal] = [.agcSetpointCommand, .siteSetpointCommand, .siteReactiveSetpointCommand, .sitePowerFactorCommand]

    /// Carries out an admitted execute: the AGC order through `SharedState.applyAGC`, the site
    /// set-points (W, var, power factor) into SCADA's commands, each held `max_hold_s` with no
    /// reversion, a var setpoint and a power factor each taking the other out of force; nil when
    /// accepted, else why not. `view` is the site's view as last published
    /// (`SharedState.view`): its reactive capability bounds 3003 and 3004.
    func execute(_ order: Order, now: MonotonicInstant, view: SiteView) -> CommandRefusal? {
        let band = shared.site.agc
        let action = OutstationCommands.action(of: order, agcBand: (band.lowerLimit, band.upperLimit),
                                               ratingW: image.description.ratedPowerW, view: view)
        switch action {
        case .failure(let refusal):
            return refusal
        case .success(.agc(let agc)):
            do {
                _ = try shared.applyAGC(agc, at: now)
                return nil
            } catch {
                return CommandRefusal(.agc(error.code), message: "")
            }
        case .success(.siteSetpoint(let watts)):
            return write(now) { commands, expiry in commands.setpoint.hold(watts, revertValue: 0, until: expiry) }
        case .success(.siteReactive(let vars)):
            // The control centre's latest reactive order replaces its other kind (in the same
            // compare-and-swap): a 3004 left in force could win the cycle's least |Q| and leave
            // a confirmed 3003 without effect.
            return write(now) { commands, expiry in
                commands.reactive.hold(vars, revertValue: 0, until: expiry)
                commands.powerFactorInjecting.release()
                commands.powerFactorAbsorbing.release()
            }
        case .success(.sitePowerFactor(let pf)):
            // One power factor for both directions: 3004 has no charging counterpart. It replaces
            // a 3003 var setpoint, as 3003 replaces it.
            return write(now) { commands, expiry in
                commands.powerFactorInjecting.hold(pf, revertValue: 1, until: expiry)
                commands.powerFactorAbsorbing.hold(pf, revertValue: 1, until: expiry)
                commands.reactive.release()
            }
        }
    }

    /// Writes SCADA's commands through the compare-and-swap every writer uses, `change` given them
    /// and the expiry of a write at `now` (`max_hold_s` on); nil when stored.
    private func write(_ now: MonotonicInstant, _ change: (inout SiteCommands, MonotonicInstant) -> Void) -> CommandRefusal? {
        let update: Result<Void, Never>? = shared.updateCommands { current in
            var commands = current
            change(&commands, now + current.maxHold)
            return .success((commands, ()))
        }
        if case .success? = update { return nil }
        return CommandRefusal(.setpointBusy, message: "the commands changed under eight attempts in a row")
    }

    /// One count per command and outcome, one journal line (always for an accepted command, it
    /// moves the plant; within the address's journal budget for a refused one, `peerLog`), and one
    /// audit entry whatever the budget decided: /metrics counts every outcome by code.
    func report(_ order: Order, _ connection: OutstationConnection, group: String, _ outcome: Result<String, CommandRefusal>) {
        let accepted: Bool
        let reason: String
        let code: String
        switch outcome {
        case .success(let how): (accepted, reason, code) = (true, how, how)
        case .failure(let refusal): (accepted, reason, code) = (false, refusal.reason, "\(refusal.code)")
        }
        if accepted { counters.commandsAccepted.add(1, ordering: .relaxed) } else { counters.commandsRefused.add(1, ordering: .relaxed) }
        let address = settings.address(order.signal)
        let what = order.select ? "select" : "execute"
        // A power factor to six decimals (0.9995 is not unity); MW and Mvar to the kW and kvar.
        let value = trimmed(order.value, decimals: order.signal == .sitePowerFactorCommand ? 6 : 3)
        let message = "IEC 104 \(what) \(order.signal.rawValue) (IOA \(address)) = \(value) from \(connection.stream.peer) (group \(group)): "
            + (accepted ? "accepted, \(reason)" : "refused, \(reason)")
        let fields: [NoticeField: String] = [.peer: connection.stream.peer, .group: group, .ioa: "\(address)", .value: value,
                      .result: accepted ? "accepted" : "refused", .reason: code]
        let logCode: OutstationLogCode = accepted ? .command : .commandRefused
        let journalled: Bool
        if accepted {
            journal.log(logCode, message, fields)
            journalled = true
        } else {
            journalled = peerLog(connection, logCode, message, fields)
        }
        audit?(.outcome(code: logCode, message: message, fields: fields, journalled: journalled))
    }
}

extension ExpiringCommand {
    /// The command as an IEC 104 set-point writes it: `value` in force until `expiry` (`max_hold_s`
    /// from now, as a 704 write with `…RvrtTms` 0), then off with no reversion; `revertValue` is
    /// what it reads after (0 W or var, unity power factor).
    mutating func hold(_ value: Double, revertValue: Double, until expiry: MonotonicInstant) {
        enabled = true
        self.value = value
        revertEnabled = false
        self.revertValue = revertValue
        timeoutSeconds = 0
        reverted = false
        expiresAt = expiry
    }

    /// The command taken out of force by an IEC 104 order of the other reactive kind: off with
    /// nothing pending, reading as one that expired with no reversion (its `revertValue`), so the
    /// cycle sees no reversion of it.
    mutating func release() {
        enabled = false
        value = revertValue
        revertEnabled = false
        timeoutSeconds = 0
        reverted = true
        expiresAt = nil
    }
}
