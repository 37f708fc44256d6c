import ControlCore
internal import Yams

extension InterlockOverride {
    /// The keys of `interlocks.CODE`.
    static let keys = ConfigKeys("interlocks.CODE", [
        "enabled", "threshold", "hysteresis", "delay_s", "hold_s", "severity", "derate_start", "direction",
    ])

    /// `interlocks:` — overrides of the rule table, keyed by trip code; a latch stays a latch.
    static func decodeTable(_ fields: ConfigReader.Fields?, _ r: ConfigReader) -> [TripCode: InterlockOverride] {
        guard let fields, case .mapping(let mapping) = fields.node else { return [:] }
        var result: [TripCode: InterlockOverride] = [:]
        let defaults = InterlockRule.defaultTable()
        for (keyNode, valueNode) in mapping {
            let name = keyNode.scalar?.string ?? ""
            _ = fields.node(name)
            let path = fields.child(name)
            guard let code = TripCode(name: name), let rule = defaults.first(where: { $0.code == code }) else {
                r.error(keyNode, path, "unknown interlock; see docs/interlocks.md for the codes")
                continue
            }
            guard let o = r.fields(valueNode, path) else { continue }
            var entry = InterlockOverride(enabled: o.bool("enabled", default: true))
            let latches = rule.severity == .latch || o.node("severity")?.scalar?.string == "latch"
            let essential = latches || code == .bmsCommLost || code == .inverterCommLost
            if !entry.enabled, essential {
                let why = latches ? "is a safety latch" : "stops power on stale data"
                r.error(o.mark("enabled"), "\(path).enabled",
                        "cannot be disabled: \(code.name) \(why); adjust its threshold instead", got: "false")
            }
            let physical = physicalRange(rule.metric)
            entry.threshold = o.double("threshold", range: physical, unit: "\(rule.metric.unitSymbol)")
            entry.hysteresis = o.double("hysteresis", range: 0...(physical.upperBound - physical.lowerBound),
                                        unit: "\(rule.metric.unitSymbol)")
            entry.delay = o.double("delay_s", range: 0...3600, unit: "seconds").map { .seconds(fromDouble: $0) }
            entry.hold = o.double("hold_s", range: 0...86_400, unit: "seconds").map { .seconds(fromDouble: $0) }
            entry.severity = o.choice("severity", [("warn", "warn"), ("derate", "derate"), ("trip", "trip"), ("latch", "latch")],
                                      default: nil as String?)
            entry.derateStart = o.double("derate_start", range: physical, unit: "\(rule.metric.unitSymbol)")
            entry.direction = o.choice("direction", [("charge", PowerDirection.charge), ("discharge", .discharge), ("both", .both)],
                                       default: nil as PowerDirection?)
            let isDerate = entry.severity.map { $0 == "derate" } ?? (rule.severity != .trip && { if case .derate = rule.severity { return true }; return false }())
            if isDerate {
                var start = entry.derateStart
                if start == nil, case .derate(let s) = rule.severity { start = s }
                let threshold = entry.threshold ?? rule.threshold
                if let start {
                    let ordered = rule.comparison == .above ? start < threshold : start > threshold
                    if !ordered {
                        r.error(o.mark("derate_start"), "\(path).derate_start",
                                "must be \(rule.comparison == .above ? "below" : "above") the threshold \(format(threshold))",
                                got: format(start))
                    }
                } else {
                    r.error(o.node, "\(path).derate_start", "is required for severity derate")
                }
            } else if entry.derateStart != nil {
                r.error(o.mark("derate_start"), "\(path).derate_start", "applies only to severity derate")
            }
            if rule.severity == .latch, let severity = entry.severity, severity != "latch" {
                r.error(o.mark("severity"), "\(path).severity",
                        "cannot be lowered: \(code.name) is a safety latch that only an operator reset clears",
                        got: severity)
            }
            o.finish(Self.keys)
            result[code] = entry
        }
        return result
    }

    /// The values a metric can physically take; a threshold outside them would never act (or always).
    static func physicalRange(_ metric: InterlockMetric) -> ClosedRange<Double> {
        switch metric {
        case .cellVoltageMax, .cellVoltageMin: 0...5
        case .cellVoltageSpread: 0...5
        case .packVoltage: 0...1500
        case .chargeCurrentPercentOfLimit, .dischargeCurrentPercentOfLimit: 0...1000
        case .temperatureMax, .temperatureMin: -60...200
        case .temperatureRiseRate: 0...100
        case .soc: 0...100
        case .bmsProtection, .bmsAlarm, .bmsCritical, .bmsChargeDisabled, .bmsDischargeDisabled, .inverterFault: 0...1
        case .frequencyDeviation: -10...10
        case .rocof: 0...100
        case .bmsDataAge, .inverterDataAge, .frequencyDataAge: 0...3600
        case .bmsGroupsMissing: 0...255  // a bit per optional BMS group
        case .acVoltage, .gridVoltage: 0.5...1.5  // outside it a reading is absent (VoltageScale.perUnit)
        }
    }
}
