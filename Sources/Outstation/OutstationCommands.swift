public import BessBase
public import ControlCore
import Cycle
import IEC104

/// Why the outstation refused a command (`BESS_REASON`, the negative ACT_CON): a stable code and a
/// sentence, `COMMAND_NOT_ALLOWED: group monitor may not command agc (…)`.
public typealias CommandRefusal = CodedError<CommandRefusalCode>

/// The stable code of a `CommandRefusal`: a struct over a private enum, so the set is closed; an
/// AGC order the control law refused keeps the control law's code (`AGC_OUTSIDE_BAND`).
public struct CommandRefusalCode: Hashable, Sendable, CustomStringConvertible {
    private enum Value: Hashable, Sendable {
        case notSelected, notAllowed, notStarted, badTime, tooOld, selectedElsewhere, notAsSelected
        case setpointOutOfRange, setpointBusy, frequencyResponseNoSwitch, unknown
        case agc(AGCRefusalCode)
    }

    private let value: Value
    private init(_ value: Value) { self.value = value }

    /// `COMMAND_NOT_SELECTED`: a deactivation with nothing of this connection's selected.
    public static let notSelected = Self(.notSelected)
    /// `COMMAND_NOT_ALLOWED`: the connection's group lacks the right (`iec104.groups[].commands`).
    public static let notAllowed = Self(.notAllowed)
    /// `COMMAND_NOT_STARTED`: only the group's started connection commands.
    public static let notStarted = Self(.notStarted)
    /// `COMMAND_BAD_TIME`: a time tag that is no time.
    public static let badTime = Self(.badTime)
    /// `COMMAND_TOO_OLD`: a time tag further from now than `max_command_delay_s`.
    public static let tooOld = Self(.tooOld)
    /// `COMMAND_SELECTED_ELSEWHERE`: another connection holds the point's select.
    public static let selectedElsewhere = Self(.selectedElsewhere)
    /// `COMMAND_NOT_AS_SELECTED`: an execute whose value is not the one selected.
    public static let notAsSelected = Self(.notAsSelected)
    /// `SETPOINT_OUT_OF_RANGE`: a site set-point beyond the site's rating (3002) or reactive
    /// capability (3003, 3004), or a power factor outside (0, 1].
    public static let setpointOutOfRange = Self(.setpointOutOfRange)
    /// `SETPOINT_BUSY`: SCADA's commands changed under every attempt to write the set-point.
    public static let setpointBusy = Self(.setpointBusy)
    /// `FREQUENCY_RESPONSE_NO_SWITCH`: droop is switched by the configuration only.
    public static let frequencyResponseNoSwitch = Self(.frequencyResponseNoSwitch)
    /// `COMMAND_UNKNOWN`: no command at the signal.
    public static let unknown = Self(.unknown)
    /// The control law's code of a refused AGC order.
    public static func agc(_ code: AGCRefusalCode) -> Self { Self(.agc(code)) }

    /// The stable name the journal (`BESS_REASON`), /metrics and the uplink read.
    public var description: String {
        switch value {
        case .notSelected: "COMMAND_NOT_SELECTED"
        case .notAllowed: "COMMAND_NOT_ALLOWED"
        case .notStarted: "COMMAND_NOT_STARTED"
        case .badTime: "COMMAND_BAD_TIME"
        case .tooOld: "COMMAND_TOO_OLD"
        case .selectedElsewhere: "COMMAND_SELECTED_ELSEWHERE"
        case .notAsSelected: "COMMAND_NOT_AS_SELECTED"
        case .setpointOutOfRange: "SETPOINT_OUT_OF_RANGE"
        case .setpointBusy: "SETPOINT_BUSY"
        case .frequencyResponseNoSwitch: "FREQUENCY_RESPONSE_NO_SWITCH"
        case .unknown: "COMMAND_UNKNOWN"
        case .agc(let code): "\(code)"
        }
    }
}

extension CodedError where StableCode == CommandRefusalCode {
    /// The refusal as the journal's sentence says it: `CODE: message`, or the code alone when it
    /// carries no message (an AGC order's refusal, `COMMAND_UNKNOWN`).
    var reason: String { message.isEmpty ? "\(code)" : description }
}

/// The outstation's commands as pure decisions: whether an order may go ahead (rights, the started
/// connection, the time tag's age, the select) and what it asks of the site (an AGC order or the
/// site set-point), or the coded refusal. Nothing here reads a clock or the shared state: the
/// server hands in the instants, the group and the band, and carries out what is decided.
struct OutstationCommands {
    /// What a command asks, once decoded.
    struct Order {
        var signal: IEC104Signal
        var value: Double
        var select: Bool
        var tag: CP56Time2a?
    }

    /// A select held on a command point.
    struct Selection {
        let connection: Int
        let value: Double
        let expires: MonotonicInstant
    }

    /// What an order may do once admitted and not a select.
    enum Action: Equatable {
        case agc(AGCOrder)
        /// SCADA's site set-point, W.
        case siteSetpoint(watts: Double)
        /// SCADA's site var set-point, var (+ = injecting).
        case siteReactive(vars: Double)
        /// SCADA's power factor for both directions, signed by excitation (+ over-excited).
        case sitePowerFactor(Double)
    }

    /// Where an order comes from and what stands when it arrives.
    struct Context {
        /// The connection's group: its name and rights.
        var group: IEC104Group
        /// Whether the connection is its group's started one.
        var started: Bool
        /// The connection's id (a select's owner).
        var connection: Int
        /// The select held on the order's point, if any.
        var selection: Selection?
        /// Now on the monotonic clock (select expiry) and the wall clock (time tags), seconds.
        var now: MonotonicInstant
        var wallClockSeconds: Double
    }

    let maxCommandDelay: Duration
    let selectTimeout: Duration
    let timeBase: TimeBase

    /// The commands of `settings`: the age bound of time tags, the select timeout, the time base.
    init(settings: OutstationSettings, timeBase: TimeBase) {
        maxCommandDelay = settings.maxCommandDelay
        selectTimeout = settings.selectTimeout
        self.timeBase = timeBase
    }

    /// The right a command point needs.
    static func right(of signal: IEC104Signal) -> IEC104CommandRight {
        switch signal {
        case .siteSetpointCommand, .siteReactiveSetpointCommand, .sitePowerFactorCommand: .setpoint
        case .frequencyResponseCommand: .frequencyResponse
        default: .agc
        }
    }

    /// Why `order` is refused before it is selected or executed (rights, the started connection,
    /// the time tag's age, the select), or nil.
    func refusal(of order: Order, in context: Context) -> CommandRefusal? {
        let right = Self.right(of: order.signal)
        guard context.group.commands.contains(right) else {
            return CommandRefusal(.notAllowed, message: "group \(context.group.name) may not command \(right.rawValue) (iec104.groups[].commands)")
        }
        guard context.started else {
            return CommandRefusal(.notStarted, message: "only the group's started connection commands")
        }
        if let tag = order.tag {
            guard let sent = try? tag.unixMilliseconds(base: timeBase) else { return CommandRefusal(.badTime, message: "time tag \(tag)") }
            let age = Double(Int64((context.wallClockSeconds * 1000).rounded(.down)) - sent) / 1000
            guard abs(age) <= maxCommandDelay.secondsDouble else {
                return CommandRefusal(.tooOld, message: "time tag \(trimmed(age, decimals: 3)) s from now, over max_command_delay_s \(trimmed(maxCommandDelay.secondsDouble, decimals: 3))")
            }
        }
        if let selection = context.selection, selection.expires > context.now {
            guard selection.connection == context.connection else {
                return CommandRefusal(.selectedElsewhere, message: "another connection holds the select")
            }
            if !order.select, selection.value != order.value {
                return CommandRefusal(.notAsSelected, message: "execute \(trimmed(order.value, decimals: 3)), selected \(trimmed(selection.value, decimals: 3))")
            }
        }
        return nil
    }

    /// The select an admitted select order takes.
    func selection(for order: Order, in context: Context) -> Selection {
        Selection(connection: context.connection, value: order.value, expires: context.now + selectTimeout)
    }

    /// What an admitted execute asks of the site, or why it cannot: `agcBand` is the regulation
    /// band the site reports (its edges are snapped to), `ratingW` the site's rating (the published
    /// `SiteView`'s), `view` the site's view as last published, whose reactive capability bounds
    /// 3003 and 3004 (`acceptsVar`, `acceptsPowerFactor`).
    static func action(of order: Order, agcBand: (lower: Double, upper: Double), ratingW: Double,
                       view: SiteView) -> Result<Action, CommandRefusal> {
        switch order.signal {
        case .agcSetpointCommand:
            return .success(.agc(.target(watts(megawatts: order.value, edges: [agcBand.lower, agcBand.upper]))))
        case .agcInServiceCommand:
            return .success(.agc(.inService(order.value != 0)))
        case .siteSetpointCommand:
            let watts = watts(megawatts: order.value, edges: [-ratingW, ratingW])
            guard watts.isFinite, abs(watts) <= ratingW else {
                return .failure(CommandRefusal(.setpointOutOfRange,
                                               message: "\(trimmed(order.value, decimals: 3)) MW outside ±\(trimmed(ratingW / 1e6, decimals: 3)) MW"))
            }
            return .success(.siteSetpoint(watts: watts))
        case .siteReactiveSetpointCommand:
            let vars = watts(megawatts: order.value, edges: [-view.varMaxAbsorbing, view.varMaxInjecting])
            guard view.acceptsVar(vars) else {
                return .failure(CommandRefusal(.setpointOutOfRange,
                                               message: "\(trimmed(order.value, decimals: 3)) Mvar outside +\(trimmed(view.varMaxInjecting / 1e6, decimals: 3)) "
                                                   + "(injecting) / −\(trimmed(view.varMaxAbsorbing / 1e6, decimals: 3)) Mvar (absorbing)"))
            }
            return .success(.siteReactive(vars: vars))
        case .sitePowerFactorCommand:
            let pf = powerFactor(order.value)
            guard pf.isFinite, pf != 0, abs(pf) <= 1 else {
                return .failure(CommandRefusal(.setpointOutOfRange, message: "power factor \(trimmed(order.value, decimals: 6)) outside ±(0, 1]"))
            }
            guard view.acceptsPowerFactor(pf) else {
                return .failure(CommandRefusal(.setpointOutOfRange,
                                               message: "power factor \(trimmed(pf, decimals: 6)) \(pf > 0 ? "over" : "under")-excited beyond the site's "
                                                   + "\(trimmed((pf > 0 ? view.varMaxInjecting : view.varMaxAbsorbing) / 1e6, decimals: 3)) Mvar at its rating"))
            }
            return .success(.sitePowerFactor(pf))
        case .frequencyResponseCommand:
            return .failure(CommandRefusal(.frequencyResponseNoSwitch,
                                           message: "droop is switched only by grid_integration.droop_settings.enabled (configuration and reload)"))
        default:
            return .failure(CommandRefusal(.unknown, message: ""))
        }
    }

    /// A set-point's MW or Mvar (a Float on the wire) in W or var. A value that is the Float nearest an edge
    /// (W) counts as that edge: 0.3 MW times 1e6 is 300000.012 W, and a target exactly at the
    /// band the site reports must not be refused for the Float's rounding.
    static func watts(megawatts: Double, edges: [Double]) -> Double {
        let sent = Float(megawatts)
        return edges.first { $0.isFinite && Float($0 / 1e6) == sent } ?? megawatts * 1e6
    }

    /// A power factor sent as a Float, to six decimals: 0.95 arrives as 0.949999988, and the site's
    /// bound (`SiteView.acceptsPowerFactor`) must judge the value the control centre wrote. A Float
    /// holds about seven significant digits, so six decimals keep every one a PF can carry.
    static func powerFactor(_ sent: Double) -> Double {
        guard sent.isFinite else { return sent }
        return (sent * 1e6).rounded() / 1e6
    }
}
