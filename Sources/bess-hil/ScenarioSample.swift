import ControlProtocol
import Foundation
import HILPlant
import Simulation

/// How a sample is taken: the plant's side read from the rig, bessd's from its `status` (and
/// `site`) answers.
extension Sample {
    /// What the plant measures at `t`: the first unit's inverter and battery, every unit's power,
    /// reactive power and SOC together, the connection point's voltage and the site meter.
    init(plant rig: PlantRig, t: Double, hz: Double, bessdUp: Bool) {
        let unit = rig.units[0]
        self.init(t: t, frequency: hz, setpointKW: unit.inverter.setpointW / 1000, powerKW: unit.inverter.powerW / 1000,
                  socPercent: unit.battery.soc * 100, reverted: unit.inverter.reverted, bessdUp: bessdUp)
        voltagePU = rig.voltageV / rig.gridVoltage.nominalV
        sitePowerKW = rig.units.reduce(0.0) { $0 + $1.inverter.powerW } / 1000
        reactiveKVAr = rig.units.reduce(0.0) { $0 + $1.inverter.reactiveVar } / 1000
        unitReactiveKVAr = unit.inverter.reactiveVar / 1000
        reactiveSetpointKVAr = rig.units.reduce(0.0) { $0 + $1.inverter.reactiveSetpointVar } / 1000
        let socs = rig.units.map { $0.battery.soc * 100 }
        socSpreadPercent = (socs.max() ?? 0) - (socs.min() ?? 0)
        if rig.meterServer != nil { gridKW = rig.meter.gridPowerW / 1000 }
    }

    /// bessd's side: its first unit's setpoint, limits, SOC, state and codes, the grid operator's
    /// cap and setpoints, AGC, the frequency it used, and the site's codes (`site`, nil without a meter).
    mutating func read(status: StatusReply, site: SiteReply?) {
        guard let first = status.units.first else { return }
        if let site {
            if site.meter.stale == true { active.append("METER_STALE") }
            if site.shortfall.active { active.append("SITE_SHORTFALL") }
        }
        bessdSetpointKW = (first.setpointW ?? .nan) / 1000
        allowedChargeKW = (first.allowedChargeW ?? .nan) / 1000
        allowedDischargeKW = (first.allowedDischargeW ?? .nan) / 1000
        if let soc = first.socPercent { socPercent = soc }
        statusOK = true
        operatorCapKW = (status.gridOperator.capW ?? .nan) / 1000
        scadaSetpointKW = (status.gridOperator.scadaSetpoint?.powerW ?? .nan) / 1000
        if let agc = status.agc {
            agcTargetKW = (agc.targetW ?? .nan) / 1000
            agcFollowedKW = (agc.followedW ?? .nan) / 1000
            agcFollowing = agc.following
            agcSignalLost = agc.signalLost
        }
        state = first.state
        bessdFrequencyHz = status.frequencyHz ?? .nan
        frequencySource = status.frequencySource ?? "-"
        active += first.trips
        latched = first.latched
    }
}
