import BessSystem
import Config
import ControlCore
import Cycle
import IEC104
import Synchronization

/// Commands: set-points (C_SE_NC_1, C_SE_TC_1) at 3001 (AGC target) and 3002 (site MW setpoint),
/// single commands (C_SC_NA_1, C_SC_TA_1) at 3101 (AGC in service) and 3102 (frequency response),
/// direct or select-before-operate. Every command and its outcome is journalled, counted and audited.
extension OutstationServer {
    /// What a command asks, once decoded.
    struct Order {
        var signal: IEC104Signal
        var value: Double
        var select: Bool
        var tag: CP56Time2a?
    }

    func command(_ asdu: ASDU, _ connection: Connection, now: MonotonicInstant) {
        guard let object = asdu.objects.first else { return }
        guard asdu.cause.cause == .activation || asdu.cause.cause == .deactivation else {
            return negative(asdu, .unknownCause, connection, "command with COT \(asdu.cause.cause)")
        }
        let signal = [IEC104Signal.agcSetpointCommand, .siteSetpointCommand, .agcInServiceCommand, .frequencyResponseCommand]
            .first { settings.address($0) == object.address }
        guard let signal else { return negative(asdu, .unknownObjectAddress, connection, "no command at IOA \(object.address)") }
        var order: Order
        switch object.element {
        case let .setpointFloat(v, q): order = Order(signal: signal, value: Double(v), select: q.select)
        case let .setpointFloatWithTime(v, q, t): order = Order(signal: signal, value: Double(v), select: q.select, tag: t)
        case let .singleCommand(c): order = Order(signal: signal, value: c.on ? 1 : 0, select: c.select)
        case let .singleCommandWithTime(c, t): order = Order(signal: signal, value: c.on ? 1 : 0, select: c.select, tag: t)
        default: return
        }
        let setpoint = signal == .agcSetpointCommand || signal == .siteSetpointCommand
        let isSetpointType = asdu.type == .setpointFloat || asdu.type == .setpointFloatWithTime
        guard setpoint == isSetpointType else {
            return negative(asdu, .unknownType, connection, "IOA \(object.address) takes \(setpoint ? "a set-point" : "a single command"), not \(asdu.type)")
        }
        if asdu.cause.cause == .deactivation {
            // Cancels this connection's select of the point.
            let owned = selections[object.address]?.connection == connection.id
            if owned { selections[object.address] = nil }
            report(order, connection, accepted: owned, reason: owned ? "select cancelled" : "COMMAND_NOT_SELECTED: nothing selected to cancel")
            return answer(asdu.answer(.deactivationConfirmation, negative: !owned), to: connection)
        }
        if let refusal = refusal(of: order, connection, now: now) {
            report(order, connection, accepted: false, reason: refusal)
            return answer(asdu.answer(.activationConfirmation, negative: true), to: connection)
        }
        if order.select {
            selections[object.address] = Selection(connection: connection.id, value: order.value, expires: now + settings.selectTimeout)
            report(order, connection, accepted: true, reason: "selected for \(settings.selectTimeout)")
            return answer(asdu.answer(.activationConfirmation), to: connection)
        }
        selections[object.address] = nil
        switch execute(order, now: now) {
        case .some(let refusal):
            report(order, connection, accepted: false, reason: refusal)
            answer(asdu.answer(.activationConfirmation, negative: true), to: connection)
        case .none:
            report(order, connection, accepted: true, reason: "executed")
            answer(asdu.answer(.activationConfirmation), to: connection)
            answer(asdu.answer(.activationTermination), to: connection)
        }
    }

    /// Why a command is refused before it is executed (rights, age, the select), or nil.
    func refusal(of order: Order, _ connection: Connection, now: MonotonicInstant) -> String? {
        let group = groups[connection.group].settings
        let right: IEC104CommandRight = switch order.signal {
        case .siteSetpointCommand: .setpoint
        case .frequencyResponseCommand: .frequencyResponse
        default: .agc
        }
        guard group.commands.contains(right) else {
            return "COMMAND_NOT_ALLOWED: group \(group.name) may not command \(right.rawValue) (iec104.groups[].commands)"
        }
        guard groups[connection.group].started == connection.id else {
            return "COMMAND_NOT_STARTED: only the group's started connection commands"
        }
        if let tag = order.tag {
            guard let sent = try? tag.unixMilliseconds(base: timeBase) else { return "COMMAND_BAD_TIME: time tag \(tag)" }
            let age = Double(Int64((SystemClock.wallClockSeconds() * 1000).rounded(.down)) - sent) / 1000
            guard abs(age) <= settings.maxCommandDelay.secondsDouble else {
                return "COMMAND_TOO_OLD: time tag \(Self.number(age)) s from now, over max_command_delay_s \(Self.number(settings.maxCommandDelay.secondsDouble))"
            }
        }
        let address = settings.address(order.signal)
        if let selection = selections[address], selection.expires > now {
            guard selection.connection == connection.id else { return "COMMAND_SELECTED_ELSEWHERE: another connection holds the select" }
            if !order.select, selection.value != order.value {
                return "COMMAND_NOT_AS_SELECTED: execute \(Self.number(order.value)), selected \(Self.number(selection.value))"
            }
        }
        return nil
    }

    /// A set-point's MW (a Float on the wire) in W. A value that is the Float nearest an edge
    /// (W) counts as that edge: 0.3 MW times 1e6 is 300000.012 W, and a target exactly at the
    /// band the site reports must not be refused for the Float's rounding.
    static func watts(megawatts: Double, edges: [Double]) -> Double {
        let sent = Float(megawatts)
        return edges.first { $0.isFinite && Float($0 / 1e6) == sent } ?? megawatts * 1e6
    }

    /// Executes `order`; nil when accepted, else why not.
    func execute(_ order: Order, now: MonotonicInstant) -> String? {
        switch order.signal {
        case .agcSetpointCommand, .agcInServiceCommand:
            let band = shared.site.agc
            let agc: AGCOrder = order.signal == .agcSetpointCommand
                ? .target(Self.watts(megawatts: order.value, edges: [band.lowerLimit, band.upperLimit])) : .inService(order.value != 0)
            do {
                _ = try shared.applyAGC(agc, at: now)
                return nil
            } catch {
                return "\(error.code)"
            }
        case .siteSetpointCommand:
            let rating = image.description.ratingsW.reduce(0, +)
            let watts = Self.watts(megawatts: order.value, edges: [-rating, rating])
            guard watts.isFinite, abs(watts) <= rating else {
                return "SETPOINT_OUT_OF_RANGE: \(Self.number(order.value)) MW outside ±\(Self.number(rating / 1e6)) MW"
            }
            for _ in 0..<8 {
                var generation: UInt64 = 0
                var commands = shared.commands(generation: &generation)
                commands.setpoint.enabled = true
                commands.setpoint.value = watts
                commands.setpoint.revertEnabled = false
                commands.setpoint.revertValue = 0
                commands.setpoint.timeoutSeconds = 0
                commands.setpoint.reverted = false
                commands.setpoint.expiresAt = now + commands.maxHold
                if shared.commit(commands, ifGeneration: generation) { return nil }
            }
            return "SETPOINT_BUSY: the commands changed under eight attempts in a row"
        case .frequencyResponseCommand:
            return "FREQUENCY_RESPONSE_NO_SWITCH: droop is switched only by grid_integration.droop_settings.enabled (configuration and reload)"
        default:
            return "COMMAND_UNKNOWN"
        }
    }

    /// One count per command and outcome, one journal line (always for an accepted command, it
    /// moves the plant; within the address's journal budget for a refused one, `peerLog`), and one
    /// audit entry whatever the budget decided: /metrics counts every outcome by code.
    func report(_ order: Order, _ connection: Connection, accepted: Bool, reason: String) {
        if accepted { commandsAccepted.add(1, ordering: .relaxed) } else { commandsRefused.add(1, ordering: .relaxed) }
        let group = groups[connection.group].settings.name
        let address = settings.address(order.signal)
        let what = order.select ? "select" : "execute"
        let message = "IEC 104 \(what) \(order.signal.rawValue) (IOA \(address)) = \(Self.number(order.value)) from \(connection.stream.peer) (group \(group)): "
            + (accepted ? "accepted, \(reason)" : "refused, \(reason)")
        let fields = ["BESS_PEER": connection.stream.peer, "BESS_GROUP": group, "BESS_IOA": "\(address)", "BESS_VALUE": Self.number(order.value),
                      "BESS_RESULT": accepted ? "accepted" : "refused", "BESS_REASON": String(reason.prefix { $0 != ":" })]
        let code: OutstationLogCode = accepted ? .command : .commandRefused
        let journalled: Bool
        if accepted {
            log(code, message, fields)
            journalled = true
        } else {
            journalled = peerLog(connection, code, message, fields)
        }
        audit?(.outcome(code: code, message: message, fields: fields, journalled: journalled))
    }
}
