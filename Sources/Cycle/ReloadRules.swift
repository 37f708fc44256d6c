/// How a reload takes one changed key of the configuration.
public enum ReloadRule: Sendable {
    /// Applied at the reload.
    case live
    /// Taken only when bessd starts (its section's `ReloadRules.Outcome` says what the reload does
    /// meanwhile).
    case restart
    /// Compared elsewhere: by another section (the daemon's `realtime:`, against what bessd
    /// started with), or by the keys it is derived from.
    case elsewhere
}

/// A reload that changed keys only a restart applies: `X, Y changed; restart bessd to apply`.
/// The one sentence every section's restart is said in (a refusal's message, the journal's notice).
public struct RestartNeeded: Sendable, Equatable, CustomStringConvertible {
    /// The changed restart keys, as the configuration file spells them, in declaration order.
    public var keys: [String]

    /// `keys, joined, changed; restart bessd to apply`.
    public var description: String { "\(keys.joined(separator: ", ")) changed; restart bessd to apply" }
}

/// One section of the configuration as a reload sees it: each of its keys declared live or
/// restart, and what a reload does when a restart key changed. `restartNeeded(from:to:)` is the
/// one check; `RestartNeeded` the one sentence that reports it.
///
/// A section that sets `undeclaredNeedRestart` treats every field no key declares as a restart key
/// named after the field, so a field added to its settings is never applied live by accident.
public struct ReloadRules<Settings> {
    /// What a reload does when one of this section's restart keys changed.
    public enum Outcome {
        /// The whole reload is refused; the running configuration stays (`RELOAD_REFUSED`).
        case refuse
        /// The rest is applied; the part these keys configure keeps running as it started, and
        /// the journal says so under `code`. `keeps`: what keeps running as it was.
        case keep(code: String, keeps: String)
    }

    /// One declared key.
    public struct Key {
        /// Its name in the configuration file (`site.meter`).
        public let name: String
        public let rule: ReloadRule
        let differs: (Settings, Settings) -> Bool
        let carry: (inout Settings, Settings) -> Void

        /// A key applied at the reload.
        public static func live<Value>(_ name: String, _ path: WritableKeyPath<Settings, Value>) -> Self {
            Self(name: name, rule: .live, differs: { _, _ in false }, carry: { $0[keyPath: path] = $1[keyPath: path] })
        }

        /// A key another section compares, or a value derived from other keys.
        public static func elsewhere<Value>(_ name: String, _ path: WritableKeyPath<Settings, Value>) -> Self {
            Self(name: name, rule: .elsewhere, differs: { _, _ in false }, carry: { $0[keyPath: path] = $1[keyPath: path] })
        }

        /// A key only a restart applies, compared whole.
        public static func restart<Value: Equatable>(_ name: String, _ path: WritableKeyPath<Settings, Value>) -> Self {
            restart(name, path, comparing: { $0 })
        }

        /// A key only a restart applies, compared through `part` (what of it a reload cannot move; the
        /// rest is applied elsewhere).
        public static func restart<Value, Part: Equatable>(_ name: String, _ path: WritableKeyPath<Settings, Value>,
                                                          comparing part: @escaping (Value) -> Part) -> Self {
            Self(name: name, rule: .restart, differs: { part($0[keyPath: path]) != part($1[keyPath: path]) },
                carry: { $0[keyPath: path] = $1[keyPath: path] })
        }
    }

    /// The section's name in the configuration file (`scada`), for a person.
    public let section: String
    public let outcome: Outcome
    public let keys: [Key]
    public let undeclaredNeedRestart: Bool

    public init(section: String, outcome: Outcome, undeclaredNeedRestart: Bool = false, _ keys: [Key]) {
        self.section = section
        self.outcome = outcome
        self.undeclaredNeedRestart = undeclaredNeedRestart
        self.keys = keys
    }

    /// The restart keys whose values differ from `old` to `new`; nil when the reload may apply it all.
    public func restartNeeded(from old: Settings, to new: Settings) -> RestartNeeded? {
        var changed: [String] = []
        for key in keys where key.rule == .restart && key.differs(old, new) && !changed.contains(key.name) {
            changed.append(key.name)
        }
        if undeclaredNeedRestart {
            // What is left once every declared key is set back to its old value.
            var rest = new
            for key in keys { key.carry(&rest, old) }
            for (was, now) in zip(Mirror(reflecting: old).children, Mirror(reflecting: rest).children)
            where !Self.same(was.value, now.value) {
                changed.append(was.label ?? "?")
            }
        }
        return changed.isEmpty ? nil : RestartNeeded(keys: changed)
    }

    /// Equal by `==` when the value is `Equatable`, else by its reflection.
    static func same(_ a: Any, _ b: Any) -> Bool {
        if let a = a as? any Equatable { return a.equals(b) }
        return String(reflecting: a) == String(reflecting: b)
    }
}

extension Equatable {
    /// `self == other` when `other` is a `Self`.
    fileprivate func equals(_ other: Any) -> Bool { (other as? Self) == self }
}

extension CycleSettings {
    /// The cycle's keys on reload. The devices, their buses and where the frequency comes from are
    /// the workers' and threads' made at start: a reload that changes them is refused whole. The
    /// control law's settings apply between two cycles, with the controller's running state carried.
    public static var reloadRules: ReloadRules<CycleSettings> {
        ReloadRules(section: "the cycle", outcome: .refuse, undeclaredNeedRestart: true, [
            .restart("bess_units (the list, or a unit's modbus, inverter or bms)", \.devices),
            .restart("mode", \.mode),
            .restart("frequency_source", \.frequencySource),
            .restart("grid_integration.pmu", \.pmu),
            .restart("site.meter", \.meter),
            .elsewhere("site.meter's simulation (from mode and site.meter)", \.meterSimulated),
            .elsewhere("the simulated inputs (from mode, frequency_source and the units)", \.usesSimulation),
            .live("period_ms", \.period),
            .live("the control settings (grid, interlocks, limits, schedule)", \.control),
            .live("bess_units' control settings (ratings, interlocks, staleness)", \.units),
            .live("site", \.site),
            .live("schedule", \.schedule),
            .elsewhere("realtime", \.realtime),
        ])
    }
}
