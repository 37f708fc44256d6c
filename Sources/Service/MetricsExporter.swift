import BessSystem
import Config
import ControlCore
import ControlProtocol
import Cycle
import PMULink
import Fieldbus
import Scada
import Synchronization

/// The Prometheus text for `GET /metrics` (and `bessctl metrics`): the cycle's own lines, then each
/// component's (the clock watch, the site, the relay contacts, SCADA, the units, the event journal,
/// the bus and CAN workers, the uplink, the control socket's answers), in that order.
struct MetricsExporter {
    let view: OperatorView

    /// The whole text; `answerCosts`, the operator server's own lines, come last.
    func text(answerCosts: AnswerCosts?) -> String {
        let stats = view.shared.statistics
        let units = view.shared.units
        let configuration = view.configuration.current
        var m = MetricsText()
        m.metric("bessd_info", "gauge", "1, labelled with the version and the run mode (simulation, hil, hardware).",
                 [("version=\"\(MetricsText.label(BessdVersion.string))\",mode=\"\(configuration.mode.rawValue)\"", 1)])
        Self.cycleMetrics(into: &m, stats)
        view.clock.metrics(into: &m, stats: stats)
        m.metric("bessd_cycle_lateness_seconds", "summary", "Wake-up lateness of the cycle.",
                 [0.5, 0.9, 0.99, 1.0].map { q in ("quantile=\"\(q)\"", Double(stats.histogram.percentile(q)) / 1e6) })
        let ids = configuration.units.map { MetricsText.label($0.id) }
        m.metric("bessd_unit_setpoint_watts", "gauge", "Setpoint written, + = discharge.",
                 zip(ids, units).map { ("unit=\"\($0)\"", $1.setpoint) })
        m.metric("bessd_unit_power_watts", "gauge", "Measured power, + = discharge.", zip(ids, units).map { ("unit=\"\($0)\"", $1.power) })
        m.metric("bessd_unit_allocation_watts", "gauge",
                 "The unit's share of the site's decision, + = discharge, labelled with why (headroom, full, held, idle).",
                 zip(ids, units).map { ("unit=\"\($0)\",share=\"\($1.share)\"", $1.setpoint) })
        Self.siteMetrics(into: &m, view.shared.site, hasMeter: configuration.site.meter != nil)
        Self.frequencyMetrics(into: &m, stats, pmu: view.pmu)
        view.gridInputs?.metrics(into: &m)
        ScadaServer.metrics(into: &m, view.scada?.servers ?? [])
        view.iec104?.outstation?.metrics(into: &m)
        view.iec104?.audit?.metrics(into: &m)
        m.metric("bessd_unit_soc_percent", "gauge", "State of charge.", zip(ids, units).map { ("unit=\"\($0)\"", $1.soc) })
        m.metric("bessd_unit_active_trips", "gauge", "Interlock rules acting now.",
                 zip(ids, units).map { ("unit=\"\($0)\"", Double($1.active.count)) })
        m.metric("bessd_unit_state", "gauge", "1 for the unit's state.",
                 zip(ids, units).map { ("unit=\"\($0)\",state=\"\($1.state)\"", 1) })
        view.journal.metrics(into: &m)
        Self.busMetrics(into: &m, view.runner, ids: ids)
        view.uplink?.metrics(into: &m)
        answerCosts?.metrics(into: &m)
        return m.text
    }

    /// The cycle's counters.
    static func cycleMetrics(into m: inout MetricsText, _ stats: CycleStatistics) {
        m.metric("bessd_cycles_total", "counter", "Control cycles completed (scheduled and alarm-woken; see bessd_cycle_alarm_cycles_total).", [("", Double(stats.cycles))])
        m.metric("bessd_cycle_overruns_total", "counter", "Cycles that woke more than a period late.", [("", Double(stats.overruns))])
        m.metric("bessd_cycle_alarm_cycles_total", "counter", "Extra cycles a BMS frame calling for less power woke.",
                 [("", Double(stats.alarmCycles))])
        m.metric("bessd_cycle_late_readings_total", "counter",
                 "Unit-cycles that ran on an inverter reading taken for an earlier cycle.", [("", Double(stats.lateReadings))])
        m.metric("bessd_cycle_started_on_readings_total", "counter",
                 "Cycles started before their deadline because the bus poller had every reading for them.",
                 [("", Double(stats.startedOnReadings))])
        m.metric("bessd_cycle_period_seconds", "gauge", "Configured control period.", [("", Double(stats.periodMs) / 1000)])
        m.metric("bessd_cycle_longest_gap_seconds", "gauge", "The longest interval between the starts of two cycles since start, reloads included.",
                 [("", stats.longestGap.secondsDouble)])
    }

    /// The connection point: shortfall, meter, grid limits, the operator's limit and SCADA's setpoint.
    static func siteMetrics(into m: inout MetricsText, _ site: SiteStatus, hasMeter: Bool) {
        m.metric("bessd_site_shortfall_watts", "gauge", "What the units cannot deliver of the site's request (SITE_SHORTFALL while above its threshold).",
                 [("", site.shortfall)])
        if hasMeter {
            m.metric("bessd_site_grid_power_watts", "gauge", "Power at the grid connection point, + = import (absent while METER_STALE).",
                     [("", site.gridPower)])
            m.metric("bessd_site_meter_stale", "gauge", "1 while the connection-point meter is stale (METER_STALE).",
                     [("", site.meterStale ? 1 : 0)])
            m.metric("bessd_site_grid_limit_binding", "gauge", "1 for the grid limit that decides the batteries' power now.",
                     [("limit=\"import\"", site.binding == .importLimit ? 1 : 0), ("limit=\"export\"", site.binding == .exportLimit ? 1 : 0)])
        }
        m.metric("bessd_site_operator_limit_percent", "gauge",
                 "The grid operator's limit in force, percent of the site's rating (SCADA WMaxLimPct or relay contacts; absent when none).",
                 site.operatorLimitPercent.isFinite ? [("", site.operatorLimitPercent)] : [])
        m.metric("bessd_site_operator_cap_watts", "gauge", "The cap on the units' summed power as ramped (absent when none).",
                 site.operatorCap.isFinite ? [("", site.operatorCap)] : [])
        m.metric("bessd_site_scada_setpoint_watts", "gauge", "SCADA's site setpoint in force, + = discharge (absent when none).",
                 site.scadaSetpoint.isFinite ? [("", site.scadaSetpoint)] : [])
        m.metric("bessd_site_utility_cap_watts", "gauge",
                 "The utility's (IEEE 2030.5) cap on the units' discharge and charge as ramped (absent when none).",
                 [("direction=\"discharge\"", site.utility.dischargeCap), ("direction=\"charge\"", site.utility.chargeCap)].filter { $0.1.isFinite })
        agcMetrics(into: &m, site.agc)
    }

    /// The frequency source in use and its age; the PMU's frames, refusals and connection when one is read.
    static func frequencyMetrics(into m: inout MetricsText, _ stats: CycleStatistics, pmu: PMUReader?) {
        let sources: [FrequencySource] = [.pmu, .inverter, .meter, .simulated]
        m.metric("bessd_frequency_source", "gauge", "1 for the source of the frequency the last cycle used (inverter while a PMU falls back).",
                 sources.map { ("source=\"\($0.rawValue)\"", stats.frequencySource == $0 ? 1 : 0) })
        m.metric("bessd_frequency_age_seconds", "gauge", "Age of the frequency the last cycle used (absent when it had none).",
                 stats.frequencyAge.isFinite ? [("", stats.frequencyAge)] : [])
        guard let pmu else { return }
        m.metric("bessd_pmu_frames_total", "counter", "C37.118 frames received from the PMU.",
                 [("", Double(pmu.frames.load(ordering: .relaxed)))])
        m.metric("bessd_pmu_rejected_frames_total", "counter", "PMU frames refused (CRC, IDCODE, layout).",
                 [("", Double(pmu.rejectedFrames.load(ordering: .relaxed)))])
        m.metric("bessd_pmu_unusable_samples_total", "counter", "PMU samples whose STAT says invalid data or an unsynchronised PMU.",
                 [("", Double(pmu.unusableSamples.load(ordering: .relaxed)))])
        m.metric("bessd_pmu_connects_total", "counter", "Connections made to the PMU.", [("", Double(pmu.connects.load(ordering: .relaxed)))])
        m.metric("bessd_pmu_connected", "gauge", "1 while bessd is connected to the PMU.", [("", pmu.connected.load(ordering: .relaxed) ? 1 : 0)])
    }

    /// The grid operator's AGC, when the site declares a regulation band (`iec104.agc`).
    static func agcMetrics(into m: inout MetricsText, _ agc: AGCStatus) {
        guard agc.configured else { return }
        m.metric("bessd_site_agc_in_service", "gauge", "1 while the control centre has AGC in service.", [("", agc.inService ? 1 : 0)])
        m.metric("bessd_site_agc_following", "gauge", "1 while the site follows the AGC target (in service and fresh).",
                 [("", agc.following ? 1 : 0)])
        m.metric("bessd_site_agc_signal_lost", "gauge", "1 while AGC_SIGNAL_LOST stands (in service, not refreshed within expiry_s).",
                 [("", agc.signalLost ? 1 : 0)])
        m.metric("bessd_site_agc_target_watts", "gauge", "The last AGC target accepted, + = discharge (absent when none).",
                 agc.target.isFinite ? [("", agc.target)] : [])
        m.metric("bessd_site_agc_followed_watts", "gauge", "The schedule as ramped toward the AGC target (absent when not following).",
                 agc.followed.isFinite ? [("", agc.followed)] : [])
        m.metric("bessd_site_agc_remaining_seconds", "gauge", "How long the AGC signal stays fresh without a refresh.",
                 [("", agc.remaining.secondsDouble)])
        m.metric("bessd_site_agc_regulation_limit_watts", "gauge", "The regulation band the site declares to AGC.",
                 [("limit=\"lower\"", agc.lowerLimit), ("limit=\"upper\"", agc.upperLimit)])
    }

    /// The bus workers' Modbus round trips and errors, and the CAN workers' frame counts.
    static func busMetrics(into m: inout MetricsText, _ runner: SiteRunner, ids: [String]) {
        let slots = runner.slots
        m.metric("bessd_inverter_round_trip_seconds", "gauge", "Last Modbus round trip.",
                 zip(ids, slots).compactMap { id, slot in slot.map { ("unit=\"\(id)\"", $0.roundTrip.secondsDouble) } })
        m.metric("bessd_inverter_errors_total", "counter", "Failed Modbus exchanges.",
                 zip(ids, slots).compactMap { id, slot in slot.map { ("unit=\"\(id)\"", Double($0.errors)) } })
        var frames: [(String, Double)] = []
        for (id, slot) in zip(ids, runner.bmsSlots) {
            guard let c = slot?.counters else { continue }
            frames += [("unit=\"\(id)\",result=\"accepted\"", Double(c.accepted)), ("unit=\"\(id)\",result=\"short\"", Double(c.shortFrames)),
                       ("unit=\"\(id)\",result=\"invalid\"", Double(c.invalidValues)),
                       ("unit=\"\(id)\",result=\"wrong_kind\"", Double(c.wrongKind)),
                       ("unit=\"\(id)\",result=\"unknown_id\"", Double(c.unknownIDs))]
        }
        m.metric("bessd_bms_frames_total", "counter", "CAN frames from the BMS, by what the decoder did.", frames)
    }
}


extension GridLimitInputReader {
    /// Whether the relay contacts' module answers, and its readings by result.
    func metrics(into m: inout MetricsText) {
        m.metric("bessd_grid_limit_inputs_lost", "gauge", "1 while GRID_LIMIT_INPUT_LOST stands (the relay contacts' module does not answer).",
                 [("", lost.load(ordering: .relaxed) ? 1 : 0)])
        m.metric("bessd_grid_limit_input_reads_total", "counter", "Readings of the relay contacts' module, by result.",
                 [("result=\"ok\"", Double(reads.load(ordering: .relaxed))),
                  ("result=\"failed\"", Double(failures.load(ordering: .relaxed)))])
    }
}

extension ScadaServer {
    /// SCADA's requests, writes by result, refused connections and open clients, summed over `servers`
    /// (TCP and RTU); nothing when SCADA is not served.
    static func metrics(into m: inout MetricsText, _ servers: [ScadaServer]) {
        guard !servers.isEmpty else { return }
        func sum(_ counter: (ScadaServer) -> UInt64) -> Double { Double(servers.reduce(0) { $0 + counter($1) }) }
        m.metric("bessd_scada_requests_total", "counter", "Modbus requests SCADA clients sent.",
                 [("", sum { $0.answered.load(ordering: .relaxed) })])
        m.metric("bessd_scada_writes_total", "counter", "SCADA writes, by result (refused: by Modbus exception).",
                 [("result=\"accepted\"", sum { $0.writesAccepted.load(ordering: .relaxed) }),
                  ("result=\"refused\",exception=\"01\"", sum { $0.refusedIllegalFunction.load(ordering: .relaxed) }),
                  ("result=\"refused\",exception=\"02\"", sum { $0.refusedIllegalAddress.load(ordering: .relaxed) }),
                  ("result=\"refused\",exception=\"03\"", sum { $0.refusedIllegalValue.load(ordering: .relaxed) })])
        m.metric("bessd_scada_connections_refused_total", "counter", "SCADA connections closed at accept (allow_from, max_clients).",
                 [("", sum { $0.connectionsRefused.load(ordering: .relaxed) })])
        m.metric("bessd_scada_clients", "gauge", "SCADA connections open now.",
                 [("", Double(servers.reduce(0) { $0 + $1.connected.load(ordering: .relaxed) }))])
    }
}
