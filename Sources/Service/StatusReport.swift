import BessSystem
import Config
import ControlCore
import ControlProtocol
import Cycle
import Foundation
import Synchronization
import Uplink

/// The answers of the reading verbs: `status` (units, cycle, uplink, clock, grid operator),
/// `faults` and `site`, built from what the cycle last published.
extension Daemon {
    /// Who holds a unit where it is, for `bessctl status`: `operator`, `operator_site`,
    /// `aggregator`, `aggregator_emergency_stop`, `override`, `dispatch`, or nil (auto, base schedule).
    static func heldBy(_ u: UnitStatus) -> (who: String, remaining: Double?)? {
        if u.holds.operatorUnit { return ("operator", nil) }
        if u.holds.operatorSite { return ("operator_site", nil) }
        if u.remoteRemaining > 0 { return (u.holds.remoteEmergency ? "aggregator_emergency_stop" : "aggregator", u.remoteRemaining) }
        if u.overrideW != nil { return ("override", u.overrideRemaining) }
        if u.dispatchW != nil { return ("dispatch", nil) }
        return nil
    }

    func statusObject(_ configuration: BessdConfiguration) -> [String: Any] {
        let units = shared.units
        let stats = shared.statistics
        let now = MonotonicClock.wallClock()
        var list: [[String: Any]] = []
        for (i, unit) in configuration.units.enumerated() {
            let u = units[i]
            var entry: [String: Any] = [
                "id": unit.id, "state": "\(u.state)", "mode": u.mode.rawValue, "setpoint_w": u.setpoint, "droop_w": u.droop,
                "allowed_charge_w": u.allowedCharge, "allowed_discharge_w": u.allowedDischarge,
                "trips": u.active.map { "\($0.name)" }, "latched": u.latched.map { "\($0.name)" },
            ]
            entry["soc_percent"] = u.soc.isFinite ? u.soc : NSNull()
            entry["power_w"] = u.power.isFinite ? u.power : NSNull()
            if let o = u.overrideW { entry["override"] = ["power_w": o, "remaining_s": u.overrideRemaining] }
            if let d = u.dispatchW { entry["dispatch"] = ["power_w": d] }
            if let held = Self.heldBy(u) {
                entry["held_by"] = held.who
                if let remaining = held.remaining { entry["held_until_unix"] = (now + remaining).rounded() }
            } else {
                entry["held_by"] = NSNull()
            }
            list.append(entry)
        }
        return [
            "ok": true, "version": BessdVersion.string, "mode": configuration.mode.rawValue, "units": list,
            "grid_operator": gridOperatorObject(shared.site),
            "frequency_hz": stats.frequency.isFinite ? stats.frequency : NSNull(),
            "cycle": [
                "period_ms": stats.periodMs, "cycles": stats.cycles, "overruns": stats.overruns,
                "late_readings": stats.lateReadings, "started_on_readings": stats.startedOnReadings, "alarm_cycles": stats.alarmCycles,
                "jitter_p50_us": stats.histogram.percentile(0.5), "jitter_p99_us": stats.histogram.percentile(0.99),
                "jitter_max_us": stats.histogram.maxMicroseconds, "realtime": stats.realtime,
            ] as [String: Any],
            "uplink": uplinkObject(configuration),
            "clock": clockObject(stats),
        ]
    }

    /// The system clock as settlement sees it (bessctl status, `CLOCK_UNSYNCED`).
    func clockObject(_ stats: CycleStatistics) -> [String: Any] {
        let sync = clock.sync
        return ["synchronized": sync.isSynchronized.map { $0 as Any } ?? NSNull(), "source": sync.source,
                "code": sync.isSynchronized == false ? "CLOCK_UNSYNCED" : NSNull(),
                "steps": stats.clockSteps, "last_step_s": stats.clockSteps > 0 ? stats.lastClockStepSeconds : NSNull()]
    }

    /// The uplink's transport, connection, last acknowledgement and backlog (bessctl status).
    func uplinkObject(_ configuration: BessdConfiguration) -> Any {
        guard let aggregator = configuration.aggregator else { return NSNull() }
        var o: [String: Any] = ["transport": aggregator.transport.rawValue, "url": aggregator.shownURL, "site": aggregator.siteID]
        if let spool = uplink?.spool {
            let s = spool.state
            o["backlog_records"] = s.next - 1 - min(s.acknowledged, s.next - 1)
            o["acknowledged_seq"] = s.acknowledged
        }
        if let transport = uplink?.transport {
            let link = transport.link
            o["connected"] = link.connected
            if transport is MQTTUplinkSender { o["last_ack_unix"] = link.lastAckUnix ?? NSNull() }
            o["last_error"] = link.lastError ?? NSNull()
        }
        return o
    }

    /// The grid operator's limit and SCADA's setpoint in force, with when they revert (status and site).
    func gridOperatorObject(_ site: SiteStatus) -> [String: Any] {
        func value(_ x: Double) -> Any { x.isFinite ? x : NSNull() }
        return [
            "inputs": gridInputs.map { ["configured": true, "lost": $0.lost.load(ordering: .relaxed)] as [String: Any] }
                ?? ["configured": false],
            "limit_percent": value(site.operatorLimitPercent),
            "cap_w": value(site.operatorCap), "limiting": site.operatorLimited,
            "scada_limit": site.scadaLimitPercent.isFinite
                ? ["percent": site.scadaLimitPercent, "remaining_s": site.scadaLimitRemaining, "reverted": site.scadaLimitReverted]
                    as [String: Any] : NSNull(),
            "input_limit_percent": value(site.inputLimitPercent),
            "scada_setpoint": site.scadaSetpoint.isFinite
                ? ["power_w": site.scadaSetpoint, "remaining_s": site.scadaSetpointRemaining] as [String: Any] : NSNull(),
        ]
    }

    func faultsObject(_ configuration: BessdConfiguration) -> [String: Any] {
        let units = shared.units
        var list: [[String: Any]] = []
        for (i, unit) in configuration.units.enumerated() {
            for code in units[i].active {
                list.append(["unit": unit.id, "code": "\(code.name)", "latched": units[i].latched.contains(code),
                             "explanation": "\(code.explanation)"])
            }
        }
        let site = shared.site
        if site.meterStale {
            list.append(["unit": "site", "code": "METER_STALE", "latched": false,
                         "explanation": "the connection-point meter has sent no fresh reading: the site application rests and the grid limits hold their last values"])
        }
        if let reader = gridInputs, reader.lost.load(ordering: .relaxed) {
            list.append(["unit": "site", "code": "GRID_LIMIT_INPUT_LOST", "latched": false,
                         "explanation": "the I/O module of the grid operator's relay contacts does not answer: the last limit holds"])
        }
        if site.shortfallActive {
            list.append(["unit": "site", "code": "SITE_SHORTFALL", "latched": false,
                         "explanation": "the units cannot deliver \(Int((site.shortfall / 1000).rounded())) kW of what the site is asked"])
        }
        return ["ok": true, "faults": list]
    }

    /// `bessctl site`: the connection point, its limits and which binds, the application, the
    /// decision layer by layer, each unit's share and why.
    func siteObject(_ configuration: BessdConfiguration) -> [String: Any] {
        let site = shared.site
        let units = shared.units
        let c = configuration.site
        func value(_ x: Double) -> Any { x.isFinite ? x : NSNull() }
        var application: [String: Any] = [
            "name": c.application.name, "active": site.applicationActive, "target_w": site.applicationTarget,
            "soc_reserve_percent": c.socReservePercent,
        ]
        switch c.application {
        case .peakShaving(let importMax, let recharge):
            application["import_max_w"] = importMax.value
            application["recharge_below_w"] = recharge.map { $0.value as Any } ?? NSNull()
        case .selfConsumption(let target): application["target_grid_w"] = target.value
        case .none: break
        }
        var list: [[String: Any]] = []
        for (i, unit) in configuration.units.enumerated() where i < units.count {
            let u = units[i]
            list.append([
                "id": unit.id, "share": "\(u.share)", "pooled": u.pooled, "setpoint_w": u.setpoint,
                "power_w": value(u.power), "soc_percent": value(u.soc),
                "allowed_charge_w": u.allowedCharge, "allowed_discharge_w": u.allowedDischarge,
            ])
        }
        return [
            "ok": true, "mode": configuration.mode.rawValue,
            "grid_power_w": value(site.gridPower),
            "meter": c.meter.map { m -> Any in
                ["configured": true, "stale": site.meterStale, "protocol": m.protocolName.rawValue,
                 "simulated": configuration.meterSimulated, "stale_after_s": m.staleAfterSeconds, "max_lag_s": m.maxLagSeconds]
            } ?? ["configured": false],
            "limits": [
                "import_max_w": c.importMaxKW.map { $0 * 1000 as Any } ?? NSNull(),
                "export_max_w": c.exportMaxKW.map { $0 * 1000 as Any } ?? NSNull(),
                "binding": site.binding == .none ? NSNull() : "\(site.binding)" as Any,
            ] as [String: Any],
            "application": application,
            "grid_operator": gridOperatorObject(site),
            "decision": [
                "requested_w": site.requested, "held_w": site.held, "application_w": site.application,
                "pool_w": site.pool, "delivered_w": site.delivered,
            ],
            "load_estimate_w": ["low": value(site.loadLow), "high": value(site.loadHigh)],
            "shortfall": ["active": site.shortfallActive, "missing_w": site.shortfall] as [String: Any],
            "units": list,
        ]
    }
}
