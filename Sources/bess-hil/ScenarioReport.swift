import ControlCore
import ControlProtocol
import Foundation

/// A run's results on disk: its samples as CSV and, when gnuplot is there, the plot (frequency,
/// power, SOC on one time axis, a dashed line at each timeline action). The verdict never depends
/// on the picture.
struct ScenarioReport {
    let scenario: Scenario
    let samples: [Sample]
    let executed: [(at: Double, label: String, outcome: String)]
    let runDirectory: String
    let outputDirectory: String
    /// How many units the site has (with more than one, their power together is drawn).
    let units: Int
    /// Whether the plant served a PMU, or a 2030.5 server (their lines and columns).
    let hasPMU: Bool
    let hasSep2: Bool
    /// `bessctl events` as read before bessd stopped.
    let events: EventsReply?

    /// Writes the CSV and, with `plotter` (gnuplot), the plot; returns why there is no plot (nil: drawn).
    func write(plotter: String?) throws(ScenarioError) -> String? {
        let base = outputDirectory + "/" + scenario.name
        var csv = "t_s,frequency_hz,setpoint_kw,power_kw,soc_percent,bessd_setpoint_kw,allowed_charge_kw,allowed_discharge_kw,state,reverted,bessd,active,latched,grid_kw,site_power_kw,soc_spread_percent,operator_cap_kw,scada_setpoint_kw,agc_target_kw,agc_followed_kw,pmu_hz,pmu_stat,bessd_frequency_hz,frequency_source,pmu_bad_hz,"
            + Scenario.sep2Signals.joined(separator: ",") + ",unit_reactive_kvar,reactive_setpoint_kvar,voltage_pu,reactive_kvar\n"
        for s in samples {
            csv += "\(fmt(s.t)),\(String(format: "%.4f", s.frequency)),\(fmt(s.setpointKW)),\(fmt(s.powerKW)),\(fmt(s.socPercent)),"
                + "\(fmt(s.bessdSetpointKW)),\(fmt(s.allowedChargeKW)),\(fmt(s.allowedDischargeKW)),\(s.state),\(s.reverted ? 1 : 0),"
                + "\(s.bessdUp ? 1 : 0),\(s.active.joined(separator: "|")),\(s.latched.joined(separator: "|")),"
                + "\(fmt(s.gridKW)),\(fmt(s.sitePowerKW)),\(fmt(s.socSpreadPercent)),\(fmt(s.operatorCapKW)),\(fmt(s.scadaSetpointKW)),"
                + "\(fmt(s.agcTargetKW)),\(fmt(s.agcFollowedKW)),\(hertz(s.pmuHz)),\(s.pmuStatus),"
                + "\(hertz(s.bessdFrequencyHz)),\(s.frequencySource),\(hertz(s.pmuBadHz)),\(sep2Columns(s)),"
                + "\(fmt(s.unitReactiveKVAr)),\(fmt(s.reactiveSetpointKVAr)),\(String(format: "%.4f", s.voltagePU)),\(fmt(s.reactiveKVAr))\n"
        }
        guard (try? csv.write(toFile: base + ".csv", atomically: true, encoding: .utf8)) != nil else {
            throw ScenarioError(.io, "cannot write \(base).csv")
        }
        // The verdict never depends on the picture: a plot that cannot be drawn is said, not failed.
        guard let plotter else { return "no plot: gnuplot is not installed (apt-get install gnuplot-nox)" }
        do { try plot(csv: base + ".csv", png: base + ".png", gnuplot: plotter) } catch { return "no plot: \(error)" }
        return nil
    }

    /// Frequency, setpoint and measured power, SOC: three panels sharing the time axis, a dashed
    /// line at each timeline action.
    func plot(csv: String, png: String, gnuplot: String) throws(ScenarioError) {
        var marks = ""
        for (i, e) in executed.enumerated() {
            marks += "set arrow \(i + 1) from \(fmt(e.at)), graph 0 to \(fmt(e.at)), graph 1 nohead dt 3 lc rgb '#888888'\n"
        }
        var labels = ""
        for (i, e) in executed.enumerated() {
            let text = e.label.replacingOccurrences(of: "'", with: "")
            labels += "set label \(i + 1) '\(text)' at \(fmt(e.at)), graph \(0.95 - Double(i % 4) * 0.1) left offset 0.3,0 font ',8' tc rgb '#555555' noenhanced\n"
        }
        let title = "\(scenario.name): \(scenario.description)".replacingOccurrences(of: "'", with: "")
        let script = """
        set terminal pngcairo size 1100,820 font 'DejaVu Sans,9'
        set output '\(png)'
        set datafile separator ','
        set key autotitle columnhead
        set grid
        set termoption noenhanced
        set multiplot layout 3,1 title '\(title)' font ',10'
        set lmargin 10
        set xrange [0:\(fmt(scenario.duration))]
        \(marks)
        \(labels)
        set ylabel 'frequency (Hz)'
        set format x ''
        \(pmuPanel(opening: true))
        \(voltageAxis(opening: true))
        plot '\(csv)' using 1:2 with lines lw 1.5 lc rgb '#1f77b4' title 'grid frequency (plant)'\(pmuLines(csv))\(voltageLine(csv))
        unset label
        \(voltageAxis(opening: false))
        \(pmuPanel(opening: false))
        \(eventLabels())
        set ylabel 'power (kW, + discharge)'
        plot '\(csv)' using 1:3 with steps lw 1.5 lc rgb '#d62728' title 'setpoint on the wire', \\
             '' using 1:4 with lines lw 1.5 lc rgb '#2ca02c' title 'measured power'\(siteLines(csv))
        unset label
        set ylabel 'SOC (%)'
        set format x '%g'
        set xlabel 'time (s)'
        plot '\(csv)' using 1:5 with lines lw 1.5 lc rgb '#9467bd' title 'state of charge'
        unset multiplot
        """
        let scriptPath = runDirectory + "/plot.gp"
        try? script.write(toFile: scriptPath, atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: gnuplot)
        process.arguments = [scriptPath]
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        do { try process.run() } catch {
            throw ScenarioError(.plotFailed, "cannot start \(gnuplot): \(error)")
        }
        let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw ScenarioError(.plotFailed, "gnuplot: \(message)")
        }
    }

    /// With a site meter or several units: grid power at the connection point (+ = import) and
    /// the units' power together on the power panel.
    func siteLines(_ csv: String) -> String {
        var lines = ""
        if samples.contains(where: { $0.gridKW.isFinite }) {
            lines += ", \\\n     '\(csv)' using 1:14 with lines lw 2 lc rgb '#ff7f0e' title 'grid power (+ import)'"
        }
        if units > 1 {
            lines += ", \\\n     '\(csv)' using 1:15 with lines lw 1.5 dt 2 lc rgb '#17becf' title 'all units (measured)'"
        }
        if samples.contains(where: { $0.operatorCapKW.isFinite }) {
            lines += ", \\\n     '\(csv)' using 1:($17) with lines lw 1.5 dt 3 lc rgb '#8c564b' title 'grid operator cap'"
        }
        if samples.contains(where: { $0.scadaSetpointKW.isFinite }) {
            lines += ", \\\n     '\(csv)' using 1:($18) with steps lw 1 dt 4 lc rgb '#e377c2' title 'SCADA setpoint'"
        }
        if samples.contains(where: { $0.agcTargetKW.isFinite }) {
            lines += ", \\\n     '\(csv)' using 1:($19) with steps lw 1.5 dt 2 lc rgb '#000000' title 'AGC target (IEC 104)'"
        }
        if samples.contains(where: { $0.agcFollowedKW.isFinite }) {
            lines += ", \\\n     '\(csv)' using 1:($20) with lines lw 1 lc rgb '#7f7f7f' title 'AGC followed (ramped base)'"
        }
        if samples.contains(where: { abs($0.reactiveKVAr) > 0.05 }) {
            lines += ", \\\n     '\(csv)' using 1:\(27 + Scenario.sep2Signals.count) with lines lw 1.5 lc rgb '#9467bd' title 'reactive power (kvar, + injecting)'"
        }
        return lines + sep2Lines(csv)
    }

    /// An assessed event in two parts, as the run's log (one line) and the plot (two) show it: which
    /// event and its cause, then its powers.
    static func describe(_ e: FrequencyEventReply) -> (head: String, powers: String) {
        func kw(_ w: Double?) -> String { w.map { String(format: "%.1f kW", $0 / 1000) } ?? "n/a" }
        let cause = [e.cause, e.causeCode, e.causeUnit].compactMap { $0 }.joined(separator: " ")
        return ("event \(e.sequence) (\(e.direction), \(e.extremeHz.map { String(format: "%.3f Hz", $0) } ?? "n/a")): "
                + "cause \(cause.isEmpty ? "none" : cause)",
                "at the response time required \(kw(e.requiredW)), delivered \(kw(e.deliveredW)), shortfall \(kw(e.shortfallW)); "
                + "mean \(kw(e.requiredMeanW)) / \(kw(e.deliveredMeanW)); worst shortfall \(kw(e.maxShortfallW))")
    }

    /// The PMU's frequency and the frequency bessd used, by source, on the frequency panel.
    func pmuLines(_ csv: String) -> String {
        guard hasPMU else { return "" }
        return ", \\\n     '\(csv)' using 1:21 with lines lw 1.5 dt 2 lc rgb '#ff7f0e' title 'PMU (sent)'"
            + ", \\\n     '' using 1:(strcol(24) eq 'pmu' ? $23 : NaN) with points pt 7 ps 0.4 lc rgb '#2ca02c' title 'bessd used: PMU'"
            + ", \\\n     '' using 1:(strcol(24) eq 'inverter' ? $23 : NaN) with points pt 7 ps 0.4 lc rgb '#d62728' title 'bessd used: inverters'"
            + (samples.contains { $0.pmuBadHz.isFinite }
                ? ", \\\n     '' using 1:25 with lines lw 1.5 dt 3 lc rgb '#9467bd' title 'PMU bad frames (refused)'" : "")
    }

    /// With `voltage_pu` steps: the plant's voltage (the CSV's last column) on the frequency panel's
    /// right axis, in p.u.
    var hasVoltageSteps: Bool { scenario.actions.contains { if case .voltage = $0.kind { true } else { false } } }

    func voltageLine(_ csv: String) -> String {
        guard hasVoltageSteps else { return "" }
        return ", \\\n     '' using 1:\(26 + Scenario.sep2Signals.count) axes x1y2 with lines lw 1.5 lc rgb '#17becf' title 'grid voltage (plant, p.u.)'"
    }

    /// Opening: the right axis, 0.01 p.u. beyond the samples, and a right margin every panel keeps
    /// (their time axes stay aligned).
    func voltageAxis(opening: Bool) -> String {
        guard hasVoltageSteps else { return "" }
        guard opening else { return "unset y2tics\nunset y2label" }
        let values = samples.map(\.voltagePU).filter(\.isFinite)
        let range = values.isEmpty ? "" : "\nset y2range [\(fmt((values.min() ?? 1) - 0.01)):\(fmt((values.max() ?? 1) + 0.01))]"
        return "set rmargin 10\nset y2tics\nset y2label 'voltage (p.u.)'" + range
    }

    /// With a PMU: room above and below the frequency traces and the key beside them, then back.
    func pmuPanel(opening: Bool) -> String {
        guard hasPMU else { return "" }
        return opening ? "set offsets 0, 0, graph 0.15, graph 0.15\nset key right center" : "set offsets 0, 0, 0, 0\nset key top right"
    }

    /// The last two assessed events, as labels on the power panel.
    func eventLabels() -> String {
        (events?.events ?? []).suffix(2).enumerated().flatMap { i, e in
            let (head, powers) = Self.describe(e)
            return [(head, 0.16), (powers, 0.08)].enumerated().map { j, line in
                "set label \(100 + 2 * i + j) '\(line.0.replacingOccurrences(of: "'", with: ""))' at graph 0.01, graph "
                    + "\(line.1 + Double(i) * 0.18) left font ',8' tc rgb '#000000' noenhanced"
            }
        }.joined(separator: "\n")
    }

    /// The CSV's columns for the 2030.5 limits, in `Scenario.sep2Signals`' order.
    func sep2Columns(_ s: Sample) -> String {
        Scenario.sep2Signals.map { fmt(s.sep2[$0] ?? .nan) }.joined(separator: ",")
    }

    /// The limits in force on the power panel, drawn in its sign convention: the export limit as
    /// −limit on the grid's (+ import) axis, the import limit as +limit; the load limit as −limit and
    /// the generation limit as +limit on the battery's (+ discharge).
    func sep2Lines(_ csv: String) -> String {
        guard hasSep2 else { return "" }
        let first = 26  // the CSV column of sep2_export_limit_kw
        let lines: [(sign: String, title: String, colour: String)] = [
            ("-", "utility export limit (grid ≥ −limit)", "#d62728"), ("", "utility import limit (grid ≤ limit)", "#1f77b4"),
            ("", "utility generation limit (battery)", "#bcbd22"), ("-", "utility load limit (battery charge)", "#9467bd"),
        ]
        return lines.enumerated().compactMap { index, line in
            let signal = Scenario.sep2Signals[index]
            guard samples.contains(where: { $0.sep2[signal] != nil }) else { return nil }
            return ", \\\n     '\(csv)' using 1:(\(line.sign)$\(first + index)) with steps lw 2 dt 2 lc rgb '\(line.colour)' title '\(line.title)'"
        }.joined()
    }
}
