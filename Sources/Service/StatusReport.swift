import BessBase
import BessSystem
import Config
import ControlCore
import ControlProtocol
import Cycle
import Foundation
import Synchronization
import Uplink
import IEEE2030_5
import Sep2Link

/// The answers of the reading verbs: `status` (units, cycle, uplink, clock, grid operator),
/// `faults` and `site`, built from what the cycle last published.
struct StatusReport {
    let view: OperatorView

    /// Who holds a unit where it is, for `bessctl status`: `operator`, `operator_site`,
    /// `aggregator`, `aggregator_emergency_stop`, `override`, `dispatch`, or nil (auto, base schedule).
    static func heldBy(_ u: UnitStatus) -> (who: String, remaining: Duration?)? {
        if u.holds.operatorUnit { return ("operator", nil) }
        if u.holds.operatorSite { return ("operator_site", nil) }
        if u.remoteRemaining > .zero { return (u.holds.remoteEmergency ? "aggregator_emergency_stop" : "aggregator", u.remoteRemaining) }
        if u.overrideW != nil { return ("override", u.overrideRemaining) }
        if u.dispatchW != nil { return ("dispatch", nil) }
        return nil
    }

    func statusReply(_ configuration: BessdConfiguration) -> StatusReply {
        let units = view.shared.units
        let stats = view.shared.statistics
        let now = SystemClock.wallClockSeconds()
        var list: [UnitReply] = []
        list.reserveCapacity(configuration.units.count)
        for (i, unit) in configuration.units.enumerated() {
            let u = units[i]
            var entry = UnitReply(
                id: unit.id, state: "\(u.state)", mode: u.mode.rawValue, setpointW: u.setpoint, droopW: u.droop,
                allowedChargeW: u.allowedCharge, allowedDischargeW: u.allowedDischarge,
                trips: u.active.map { "\($0.name)" }, latched: u.latched.map { "\($0.name)" }, socPercent: u.soc, powerW: u.power)
            entry.reactive = u.reactiveSource.rawValue
            entry.reactiveKvar = u.reactivePower / 1000
            entry.reactiveSetpointKvar = u.reactiveSetpoint / 1000
            entry.voltagePU = u.voltagePU
            entry.bms = bmsReply(i, unit, u)
            if let o = u.overrideW { entry.override = TimedPowerReply(powerW: o, remainingS: u.overrideRemaining.secondsDouble) }
            if let d = u.dispatchW { entry.dispatch = PowerReply(powerW: d) }
            if let held = Self.heldBy(u) {
                entry.heldBy = held.who
                entry.heldUntilUnix = held.remaining.map { (now + $0.secondsDouble).rounded() }
            }
            list.append(entry)
        }
        let cycle = CycleReply(
            periodMs: stats.periodMs, cycles: stats.cycles, overruns: stats.overruns, lateReadings: stats.lateReadings,
            startedOnReadings: stats.startedOnReadings, alarmCycles: stats.alarmCycles,
            jitterP50Us: stats.histogram.percentile(0.5), jitterP99Us: stats.histogram.percentile(0.99),
            jitterMaxUs: stats.histogram.maxMicroseconds, realtime: stats.realtime,
            longestGapMs: stats.longestGap.secondsDouble * 1000)
        var reply = StatusReply(clock: clockReply(stats), cycle: cycle, frequencyHz: stats.frequency,
                           gridOperator: gridOperatorReply(view.shared.site), mode: configuration.mode.rawValue, units: list,
                           uplink: uplinkReply(configuration), version: BessdVersion.string, agc: Self.agcReply(view.shared.site.agc),
                           frequencySource: stats.frequencySource?.rawValue,
                           frequencyAgeMs: stats.frequencyAge.isFinite ? (stats.frequencyAge * 1000).rounded() : nil)
        reply.ieee2030_5 = ieee2030_5Reply()
        reply.health = healthReply()
        reply.holdState = view.holds.unreadable.map { "\($0)" }
        let blocked = configuration.units.indices.filter { $0 < units.count && units[$0].contactor == .cannotOpen }
        if !blocked.isEmpty { reply.ieee2030_5?.cannotOpen = blocked.map { configuration.units[$0].id } }
        return reply
    }

    /// The grid operator's AGC as the last cycle followed it (status and site).
    static func agcReply(_ a: AGCStatus) -> AGCReply {
        func finite(_ x: Double) -> Double? { x.isFinite ? x : nil }
        return AGCReply(configured: a.configured, inService: a.inService, targetW: finite(a.target), following: a.following,
                        followedW: finite(a.followed), signalLost: a.signalLost, remainingS: a.remaining.secondsDouble,
                        upperLimitW: finite(a.upperLimit), lowerLimitW: finite(a.lowerLimit), rampWPerS: finite(a.ramp))
    }

    /// The system clock as settlement sees it (bessctl status, `CLOCK_UNSYNCED`).
    func clockReply(_ stats: CycleStatistics) -> ClockReply {
        let sync = view.clock.sync
        return ClockReply(synchronized: sync.isSynchronized, source: sync.source,
                          code: sync.isSynchronized == false ? "CLOCK_UNSYNCED" : nil,
                          steps: stats.clockSteps, lastStepS: stats.clockSteps > 0 ? stats.lastClockStep.secondsDouble : nil)
    }

    /// The uplink's transport, connection, last acknowledgement and backlog (bessctl status).
    func uplinkReply(_ configuration: BessdConfiguration) -> UplinkReply? {
        guard let aggregator = configuration.aggregator else { return nil }
        var o = UplinkReply(transport: aggregator.transport.rawValue, url: aggregator.shownURL, site: aggregator.siteID)
        if let spool = view.uplink?.spool {
            let s = spool.state
            o.backlogRecords = s.next - 1 - min(s.acknowledged, s.next - 1)
            o.acknowledgedSeq = s.acknowledged
        }
        if let link = view.uplink?.transport?.link {
            o.connected = link.connected
            o.lastAckUnix = link.lastAckUnix
            o.lastError = link.lastError
        }
        return o
    }

    /// The grid operator's limit and SCADA's setpoint in force, with when they revert (status and site).
    func gridOperatorReply(_ site: SiteStatus) -> GridOperatorReply {
        GridOperatorReply(
            inputs: view.gridInputs.map { InputsReply(configured: true, lost: $0.lost.load(ordering: .relaxed)) }
                ?? InputsReply(configured: false, lost: nil),
            limitPercent: site.operatorLimitPercent, capW: site.operatorCap, limiting: site.operatorLimited,
            scadaLimit: site.scadaLimitPercent.isFinite
                ? ScadaLimitReply(percent: site.scadaLimitPercent, remainingS: site.scadaLimitRemaining.secondsDouble,
                                  reverted: site.scadaLimitReverted) : nil,
            inputLimitPercent: site.inputLimitPercent,
            scadaSetpoint: site.scadaSetpoint.isFinite
                ? TimedPowerReply(powerW: site.scadaSetpoint, remainingS: site.scadaSetpointRemaining.secondsDouble) : nil)
    }

    func faultsReply(_ configuration: BessdConfiguration) -> FaultsReply {
        let units = view.shared.units
        var list: [FaultReply] = []
        for (i, unit) in configuration.units.enumerated() {
            for code in units[i].active {
                list.append(FaultReply(unit: unit.id, code: "\(code.name)", latched: units[i].latched.contains(code),
                                       explanation: "\(code.explanation)"))
            }
        }
        let site = view.shared.site
        if site.meterStale {
            list.append(FaultReply(unit: "site", code: "METER_STALE", latched: false,
                                   explanation: "the connection-point meter has sent no fresh reading: the site application rests and the grid limits hold their last values"))
        }
        if let reader = view.gridInputs, reader.lost.load(ordering: .relaxed) {
            list.append(FaultReply(unit: "site", code: "GRID_LIMIT_INPUT_LOST", latched: false,
                                   explanation: "the I/O module of the grid operator's relay contacts does not answer: the last limit holds"))
        }
        if site.shortfallActive {
            list.append(FaultReply(unit: "site", code: "SITE_SHORTFALL", latched: false,
                                   explanation: "the units cannot deliver \(Int((site.shortfall / 1000).rounded())) kW of what the site is asked"))
        }
        if let unreadable = view.holds.unreadable {
            list.append(FaultReply(unit: "site", code: "\(unreadable.code)", latched: true,
                                   explanation: "\(unreadable.message): every unit started in the operator's standby; check the site, then bessctl mode auto"))
        }
        return FaultsReply(faults: list)
    }

    /// `bessctl site`: the connection point, its limits and which binds, the application, the
    /// decision layer by layer, each unit's share and why.
    func siteReply(_ configuration: BessdConfiguration) -> SiteReply {
        let site = view.shared.site
        let units = view.shared.units
        let siteView = view.shared.view
        let c = configuration.site
        var application = ApplicationReply(name: c.application.name, active: site.applicationActive,
                                           targetW: site.applicationTarget, socReservePercent: c.socReservePercent)
        switch c.application {
        case .peakShaving(let importMax, let recharge):
            application.importMaxW = importMax.value
            application.rechargeBelowW = recharge?.value
        case .selfConsumption(let target): application.targetGridW = target.value
        case .none: break
        }
        var list: [SiteUnitReply] = []
        for (i, unit) in configuration.units.enumerated() where i < units.count {
            let u = units[i]
            list.append(SiteUnitReply(id: unit.id, share: "\(u.share)", pooled: u.pooled, setpointW: u.setpoint, powerW: u.power,
                                      socPercent: u.soc, allowedChargeW: u.allowedCharge, allowedDischargeW: u.allowedDischarge,
                                      contactor: u.contactor == .closed ? nil : "\(u.contactor)"))
        }
        let meter = c.meter.map {
            MeterReply(configured: true, stale: site.meterStale, protocol: $0.protocolName.rawValue,
                       simulated: configuration.meterSimulated, staleAfterS: $0.staleAfter.secondsDouble, maxLagS: $0.maxLag.secondsDouble)
        } ?? MeterReply(configured: false)
        return SiteReply(
            mode: configuration.mode.rawValue, gridPowerW: site.gridPower, meter: meter,
            limits: LimitsReply(importMaxW: c.importMaxKW.map { $0 * 1000 }, exportMaxW: c.exportMaxKW.map { $0 * 1000 },
                                binding: Self.limitBinding(site)),
            application: application, gridOperator: gridOperatorReply(site),
            decision: DecisionReply(requestedW: site.requested, heldW: site.held, applicationW: site.application,
                                    poolW: site.pool, deliveredW: site.delivered),
            loadEstimateW: RangeReply(low: site.loadLow, high: site.loadHigh),
            shortfall: ShortfallReply(active: site.shortfallActive, missingW: site.shortfall), units: list,
            agc: Self.agcReply(site.agc), responseReserve: Self.reserveReply(configuration, units: units))
            .with(utility: Self.utilityReply(site.utility), reactiveKvar: siteView.netVar(hasMeter: c.meter != nil) / 1000,
                  voltagePU: siteView.voltagePU, reactiveShortfallKvar: site.reactiveShortfall / 1000)
            .with(reactive: site.reactiveSource?.rawValue, reactiveSetpointKvar: site.reactiveSetpoint / 1000)
    }

    /// What decided the units' power at the connection point, as `limits.binding` names it: the grid
    /// limit (`import`, `export`), else the site's volt-watt (`volt_watt`); nil when neither did.
    static func limitBinding(_ site: SiteStatus) -> String? {
        if site.binding != .none { return "\(site.binding)" }
        return site.voltWattLimited ? "volt_watt" : nil
    }

    /// The utility's controls as the last cycle applied them; nil when none is in force.
    static func utilityReply(_ u: UtilityDecision) -> UtilityReply? {
        guard u.active else { return nil }
        return UtilityReply(binding: u.binding == .none ? nil : "\(u.binding)", dischargeCapW: u.dischargeCap, chargeCapW: u.chargeCap,
                            exportLimitW: u.exportLimit, importLimitW: u.importLimit, requestW: u.request,
                            unmetered: u.unmetered, disconnected: u.disconnected)
    }

    /// The energy kept for frequency response and whether the units' SOC has reached it; nil when
    /// `sustain_s` keeps none.
    static func reserveReply(_ configuration: BessdConfiguration, units: [UnitStatus]) -> ResponseReserveReply? {
        let reserve = ResponseReserve(droop: configuration.controlSettings.droop, units: configuration.unitSettings)
        guard !reserve.isEmpty else { return nil }
        let reached = reserve.reached { $0 < units.count && units[$0].soc.isFinite ? units[$0].soc : nil }
        let band = reserve.socBand
        return ResponseReserveReply(sustainS: reserve.sustainSeconds, dischargeWh: reserve.dischargeWh, chargeWh: reserve.chargeWh,
                                    socLowPercent: band.low, socHighPercent: band.high, dischargeReached: reached.discharge,
                                    chargeReached: reached.charge)
    }

    /// `health` of `status`.
    func healthReply() -> HealthReply {
        HealthReply(noticesDropped: view.journal.deviceNotices.dropped, stalled: view.journal.stalls().map(\.reply))
    }

    /// `ieee2030_5` of `status`: nil without a running client.
    func ieee2030_5Reply() -> IEEE2030_5Reply? {
        guard let state = view.sep2?.state else { return nil }
        return Self.reply(state)
    }

    static func reply(_ s: Sep2State) -> IEEE2030_5Reply {
        IEEE2030_5Reply(
            lfdi: s.lfdi == DeviceIdentity.unknown.lfdi ? nil : s.lfdi, sfdi: s.lfdi == DeviceIdentity.unknown.lfdi ? nil : s.sfdi,
            server: s.server, source: s.source.rawValue,
            controls: s.controls.map { IEEE2030_5ControlReply(type: $0.type, value: $0.value, program: $0.program, control: $0.control,
                                                              untilUnix: $0.untilUnix) },
            programs: s.programs, reachable: s.reachable, lastStatus: s.lastStatus, lastAnswerUnix: s.lastAnswerUnix,
            lastError: s.lastError, stopped: s.stopped, serverTimeUnix: s.serverTimeUnix)
    }
}
