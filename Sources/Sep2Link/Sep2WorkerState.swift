import BessBase
public import ControlCore
public import IEEE2030_5
import GridSupport

/// What the 2030.5 worker last did, for `bessctl ieee2030-5` and `bessctl status --json`
/// (`ieee2030_5`): the device's identity, the server's last answer, the controls in force.
public struct Sep2State: Sendable, Equatable {
    /// Where the schedule in force comes from.
    public enum Source: String, Sendable {
        /// Nothing read yet, nothing stored: no utility control.
        case none
        /// The store's copy (a restart, or the server not answering since).
        case cached
        /// A complete pass over the server's chain.
        case live
    }

    /// One control type in force.
    public struct Control: Sendable, Equatable {
        /// The element (`opModExpLimW`).
        public var type: String
        /// Its value as the site applies it (`1500 W`, `false`).
        public var value: String
        /// The program it comes from (mRID).
        public var program: String
        /// The DERControl's mRID; nil for the program's DefaultDERControl.
        public var control: String?
        /// When it ends (server time, Unix seconds); nil for a default.
        public var untilUnix: Int64?
    }

    /// The LFDI, 40 hex digits.
    public var lfdi: String
    /// The SFDI.
    public var sfdi: UInt64
    /// `host:port`.
    public var server: String
    /// Whether the last exchange got an answer; nil before the first.
    public var reachable: Bool?
    /// The HTTP status of the last answer.
    public var lastStatus: Int?
    /// When it came (local wall clock, Unix seconds).
    public var lastAnswerUnix: Double?
    /// What went wrong with the last exchange (coded), nil when it went well.
    public var lastError: String?
    /// Why all traffic stopped (`SEP2_PIN_MISMATCH: …`), nil while it runs.
    public var stopped: String?
    /// The schedule's source.
    public var source = Source.none
    /// The server's time at the last publication (Unix seconds).
    public var serverTimeUnix: Double?
    /// The programs of the schedule (mRIDs).
    public var programs: [String] = []
    /// The controls in force, one per type.
    public var controls: [Control] = []
    /// What the cycle was last given; nil when nothing was published.
    public var limits: UtilityLimits?

    /// The state before anything happened.
    public init(lfdi: String, sfdi: UInt64, server: String) {
        self.lfdi = lfdi
        self.sfdi = sfdi
        self.server = server
    }

    /// The controls in force, one per type, with their value as the site applies it.
    static func controls(_ active: ActiveControls, limits: UtilityLimits) -> [Control] {
        ControlType.allCases.compactMap { type in
            guard let source = active.sources[type] else { return nil }
            let value = Self.value(type, limits)
            switch source {
            case .event(let program, let control, let until):
                return Control(type: type.rawValue, value: value, program: program, control: control, untilUnix: until)
            case .defaultControl(let program):
                return Control(type: type.rawValue, value: value, program: program, control: nil, untilUnix: nil)
            }
        }
    }

    /// `1500 W`, `false`.
    static func value(_ type: ControlType, _ limits: UtilityLimits) -> String {
        let watts: Double? = switch type {
        case .connect: nil
        case .energize: nil
        case .fixedW: limits.fixedW
        case .maxLimW: limits.maxLimW
        case .targetW: limits.targetW
        case .exportLimitW: limits.exportLimitW
        case .importLimitW: limits.importLimitW
        case .generationLimitW: limits.generationLimitW
        case .loadLimitW: limits.loadLimitW
        case .storageTargetW: limits.storageTargetW
        case .freqDroop, .fixedPFInject, .fixedPFAbsorb, .fixedVar, .targetVar, .voltVar, .wattVar, .voltWatt: nil
        }
        if let text = curveValue(type, limits) { return text }
        if let text = reactiveValue(type, limits) { return text }
        if type == .connect { return "\(limits.connect)" }
        if type == .freqDroop, let d = limits.droop {
            return "deadband -\(d.deadbandUnderHz)/+\(d.deadbandOverHz) Hz, droop \(d.droopUnderPercent)/\(d.droopOverPercent) %, "
                + "\(d.responseTime.secondsDouble) s"
        }
        if type == .energize { return "\(limits.energize)" }
        guard let watts, watts.isFinite else { return "?" }
        return watts == watts.rounded() && abs(watts) < 1e15 ? "\(Int64(watts)) W" : "\(watts) W"
    }

    /// `curve 0.92/44 0.98/0 1.02/0 1.08/-44, 5.0 s` (x in p.u. or % of setMaxW, y in % as the law
    /// takes it), `?` where its curve is not applied; nil for a type that is not a curve.
    static func curveValue(_ type: ControlType, _ limits: UtilityLimits) -> String? {
        let curve: (GridCurve, Duration)?
        switch type {
        case .voltVar: curve = limits.voltVar.map { ($0.curve, $0.responseTime) }
        case .wattVar: curve = limits.wattVar.map { ($0.curve, $0.responseTime) }
        case .voltWatt: curve = limits.voltWatt.map { ($0.curve, $0.responseTime) }
        default: return nil
        }
        guard let (points, response) = curve else { return "?" }
        let text = points.points.map { "\(($0.x * 1000).rounded() / 1000)/\(($0.y * 10).rounded() / 10)" }.joined(separator: " ")
        return "curve \(text), \(response.secondsDouble) s"
    }

    /// `0.95 injecting`, `-1500 var`; nil for a type that is not reactive.
    static func reactiveValue(_ type: ControlType, _ limits: UtilityLimits) -> String? {
        let value: Double?
        switch type {
        case .fixedPFInject: value = limits.powerFactorInjecting
        case .fixedPFAbsorb: value = limits.powerFactorAbsorbing
        case .fixedVar: value = limits.fixedVar
        case .targetVar: value = limits.targetVar
        default: return nil
        }
        guard let value, value.isFinite else { return "?" }
        if type == .fixedPFInject || type == .fixedPFAbsorb { return "\(abs(value)) " + (value < 0 ? "absorbing" : "injecting") }
        return value == value.rounded() && abs(value) < 1e15 ? "\(Int64(value)) var" : "\(value) var"
    }

    /// `control "c1" of program "p1" until Unix 1795000060`, `the default of program "p1"`.
    static func describe(_ source: ControlSource) -> String {
        switch source {
        case .event(let program, let control, let until):
            "control \(TextQuoting.quoted(control, limit: 40)) of program \(TextQuoting.quoted(program, limit: 40)) until Unix \(until)"
        case .defaultControl(let program):
            "the default of program \(TextQuoting.quoted(program, limit: 40))"
        }
    }
}
