/// `site`: the connection point, its limits and which binds, the application, the decision layer by
/// layer, each unit's share and why.
public struct SiteReply: ControlReply, Equatable {
    /// The grid operator's AGC (absent from a bessd that predates it).
    public var agc: AGCReply?
    public var application: ApplicationReply
    public var decision: DecisionReply
    public var gridOperator: GridOperatorReply
    /// + = import; nil while the meter is stale or absent.
    public var gridPowerW: Double?
    public var limits: LimitsReply
    public var loadEstimateW: RangeReply
    public var meter: MeterReply
    public var mode: String
    /// Net reactive power at the connection point, kvar (+ = injecting): the meter's when the site
    /// has one, else the units' sum; null when unknown (and from a bessd that predates it).
    public var reactiveKvar: Double?
    /// The part of the site's var ask (a party's var setpoint, the connection point's law) no unit
    /// could take, kvar (+ = injecting; 0 when all was taken); null from a bessd that predates it.
    public var reactiveShortfallKvar: Double?
    /// Who sets the site's Q (`volt_var`, `scada`, `stale_voltage`…; absent: nobody at the site, each
    /// unit's own), and the site's var setpoint, kvar (+ = injecting): at the connection point while
    /// the meter is fresh, else for the units' sum; null when none.
    public var reactive: String?
    public var reactiveSetpointKvar: Double?
    /// The energy kept for frequency response (absent from a bessd that predates it).
    public var responseReserve: ResponseReserveReply?
    public var shortfall: ShortfallReply
    public var units: [SiteUnitReply]
    /// The utility's IEEE 2030.5 controls as applied (absent when none is in force).
    public var utility: UtilityReply?
    /// The site's voltage, p.u.: the meter's while fresh and plausible, else the units' mean; null
    /// when unknown.
    public var voltagePU: Double?

    public init(mode: String, gridPowerW: Double?, meter: MeterReply, limits: LimitsReply, application: ApplicationReply,
                gridOperator: GridOperatorReply, decision: DecisionReply, loadEstimateW: RangeReply, shortfall: ShortfallReply,
                units: [SiteUnitReply], agc: AGCReply? = nil, responseReserve: ResponseReserveReply? = nil) {
        self.agc = agc
        self.responseReserve = responseReserve
        self.mode = mode
        self.gridPowerW = gridPowerW
        self.meter = meter
        self.limits = limits
        self.application = application
        self.gridOperator = gridOperator
        self.decision = decision
        self.loadEstimateW = loadEstimateW
        self.shortfall = shortfall
        self.units = units
    }

    /// This reply with the utility's controls (`utility`), and the site's reactive power and voltage.
    public func with(utility: UtilityReply?, reactiveKvar: Double? = nil, voltagePU: Double? = nil,
                     reactiveShortfallKvar: Double? = nil) -> SiteReply {
        var reply = self
        reply.reactiveShortfallKvar = reactiveShortfallKvar
        reply.utility = utility
        reply.reactiveKvar = reactiveKvar
        reply.voltagePU = voltagePU
        return reply
    }

    /// This reply with who sets the site's Q and its var setpoint, kvar (NaN: none, written null).
    public func with(reactive: String?, reactiveSetpointKvar: Double) -> SiteReply {
        var reply = self
        reply.reactive = reactive
        reply.reactiveSetpointKvar = reactiveSetpointKvar.isFinite ? reactiveSetpointKvar : nil
        return reply
    }

    enum CodingKeys: String, CodingKey {
        case agc, application, decision, limits, meter, mode, shortfall, units, utility
        case gridOperator = "grid_operator", gridPowerW = "grid_power_w", loadEstimateW = "load_estimate_w"
        case responseReserve = "response_reserve", reactiveKvar = "reactive_kvar", voltagePU = "voltage_pu"
        case reactiveShortfallKvar = "reactive_shortfall_kvar", reactive, reactiveSetpointKvar = "reactive_setpoint_kvar"
    }

    public func write(to json: inout JSONText) {
        json.beginObject()
        json.field(CodingKeys.agc, ifPresent: agc)
        json.field(CodingKeys.application, application)
        json.field(CodingKeys.decision, decision)
        json.field(CodingKeys.gridOperator, gridOperator)
        json.field(CodingKeys.gridPowerW, gridPowerW)
        json.field(CodingKeys.limits, limits)
        json.field(CodingKeys.loadEstimateW, loadEstimateW)
        json.field(CodingKeys.meter, meter)
        json.field(CodingKeys.mode, mode)
        json.field(okKey, true)
        // Left out while nobody at the site sets Q, so a reply reads as before the site's law.
        if let reactive { json.field(CodingKeys.reactive, reactive) }
        json.field(CodingKeys.reactiveKvar, reactiveKvar)
        json.field(CodingKeys.reactiveSetpointKvar, reactiveSetpointKvar)
        json.field(CodingKeys.reactiveShortfallKvar, reactiveShortfallKvar)
        json.field(CodingKeys.responseReserve, ifPresent: responseReserve)
        json.field(CodingKeys.shortfall, shortfall)
        json.field(CodingKeys.units, units)
        json.field(CodingKeys.utility, ifPresent: utility)
        json.field(CodingKeys.voltagePU, voltagePU)
        json.endObject()
    }
}

/// The utility's controls as the site applies them (docs/design/0009-utility-limits.md), W; a limit
/// is null when none stands.
public struct UtilityReply: Codable, Sendable, Equatable, JSONWritable {
    /// The control that decided the site's power (`export`, `import`, `generation`, `load`,
    /// `max_limit`, `disconnected`); null when none did.
    public var binding: String?
    /// The caps on the units' charge and discharge, as ramped.
    public var chargeCapW: Double?
    public var dischargeCapW: Double?
    /// `opModConnect` or `opModEnergize` false: every unit at zero.
    public var disconnected: Bool
    /// Export and import limits at the connection point, as ramped.
    public var exportLimitW: Double?
    public var importLimitW: Double?
    /// The utility's request, + = discharge.
    public var requestW: Double?
    /// The export or import limit bounds Σ units (no meter reading places it at the connection point).
    public var unmetered: Bool

    public init(binding: String?, dischargeCapW: Double?, chargeCapW: Double?, exportLimitW: Double?, importLimitW: Double?,
                requestW: Double?, unmetered: Bool, disconnected: Bool) {
        self.binding = binding
        self.dischargeCapW = dischargeCapW
        self.chargeCapW = chargeCapW
        self.exportLimitW = exportLimitW
        self.importLimitW = importLimitW
        self.requestW = requestW
        self.unmetered = unmetered
        self.disconnected = disconnected
    }

    enum CodingKeys: String, CodingKey {
        case binding, disconnected, unmetered
        case chargeCapW = "charge_cap_w", dischargeCapW = "discharge_cap_w", exportLimitW = "export_limit_w"
        case importLimitW = "import_limit_w", requestW = "request_w"
    }

    public func write(to json: inout JSONText) {
        json.beginObject()
        json.field(CodingKeys.binding, binding)
        json.field(CodingKeys.chargeCapW, chargeCapW)
        json.field(CodingKeys.dischargeCapW, dischargeCapW)
        json.field(CodingKeys.disconnected, disconnected)
        json.field(CodingKeys.exportLimitW, exportLimitW)
        json.field(CodingKeys.importLimitW, importLimitW)
        json.field(CodingKeys.requestW, requestW)
        json.field(CodingKeys.unmetered, unmetered)
        json.endObject()
    }
}

/// The energy the site keeps for frequency response (`droop_settings.sustain_s`): full response
/// power for the sustain time, each way, which dispatch, AGC, SCADA and the application may not use.
public struct ResponseReserveReply: Codable, Sendable, Equatable, JSONWritable {
    /// Whether the site's stored energy is at the reserve now: dispatch stops that way.
    public var chargeReached: Bool
    public var chargeWh: Double
    public var dischargeReached: Bool
    public var dischargeWh: Double
    /// The SOC band the schedule may use (capacity-weighted over the units), %.
    public var socHighPercent: Double
    public var socLowPercent: Double
    public var sustainS: Double

    public init(sustainS: Double, dischargeWh: Double, chargeWh: Double, socLowPercent: Double, socHighPercent: Double,
                dischargeReached: Bool, chargeReached: Bool) {
        self.sustainS = sustainS
        self.dischargeWh = dischargeWh
        self.chargeWh = chargeWh
        self.socLowPercent = socLowPercent
        self.socHighPercent = socHighPercent
        self.dischargeReached = dischargeReached
        self.chargeReached = chargeReached
    }

    enum CodingKeys: String, CodingKey {
        case chargeReached = "charge_reached", chargeWh = "charge_wh", dischargeReached = "discharge_reached"
        case dischargeWh = "discharge_wh", socHighPercent = "soc_high_percent", socLowPercent = "soc_low_percent"
        case sustainS = "sustain_s"
    }

    public func write(to json: inout JSONText) {
        json.beginObject()
        json.field(CodingKeys.chargeReached, chargeReached)
        json.field(CodingKeys.chargeWh, chargeWh)
        json.field(CodingKeys.dischargeReached, dischargeReached)
        json.field(CodingKeys.dischargeWh, dischargeWh)
        json.field(CodingKeys.socHighPercent, socHighPercent)
        json.field(CodingKeys.socLowPercent, socLowPercent)
        json.field(CodingKeys.sustainS, sustainS)
        json.endObject()
    }
}

/// The site application (`none`, peak shaving, self-consumption) and its target.
public struct ApplicationReply: Codable, Sendable, Equatable, JSONWritable {
    public var active: Bool
    /// Peak shaving's import bound (absent for other applications).
    public var importMaxW: Double?
    public var name: String
    /// Peak shaving's recharge bound, null when none (written only with `importMaxW`).
    public var rechargeBelowW: Double?
    public var socReservePercent: Double?
    /// Self-consumption's grid target (absent for other applications).
    public var targetGridW: Double?
    public var targetW: Double?

    public init(name: String, active: Bool, targetW: Double?, socReservePercent: Double?, importMaxW: Double? = nil,
                rechargeBelowW: Double? = nil, targetGridW: Double? = nil) {
        self.name = name
        self.active = active
        self.targetW = targetW
        self.socReservePercent = socReservePercent
        self.importMaxW = importMaxW
        self.rechargeBelowW = rechargeBelowW
        self.targetGridW = targetGridW
    }

    enum CodingKeys: String, CodingKey {
        case active, name
        case importMaxW = "import_max_w", rechargeBelowW = "recharge_below_w", socReservePercent = "soc_reserve_percent"
        case targetGridW = "target_grid_w", targetW = "target_w"
    }

    public func write(to json: inout JSONText) {
        json.beginObject()
        json.field(CodingKeys.active, active)
        json.field(CodingKeys.importMaxW, ifPresent: importMaxW)
        json.field(CodingKeys.name, name)
        if importMaxW != nil { json.field(CodingKeys.rechargeBelowW, rechargeBelowW) }
        json.field(CodingKeys.socReservePercent, socReservePercent)
        json.field(CodingKeys.targetGridW, ifPresent: targetGridW)
        json.field(CodingKeys.targetW, targetW)
        json.endObject()
    }
}

/// The site's decision layer by layer, W.
public struct DecisionReply: Codable, Sendable, Equatable, JSONWritable {
    public var applicationW: Double?
    public var deliveredW: Double?
    public var heldW: Double?
    public var poolW: Double?
    public var requestedW: Double?

    public init(requestedW: Double?, heldW: Double?, applicationW: Double?, poolW: Double?, deliveredW: Double?) {
        self.requestedW = requestedW
        self.heldW = heldW
        self.applicationW = applicationW
        self.poolW = poolW
        self.deliveredW = deliveredW
    }

    enum CodingKeys: String, CodingKey {
        case applicationW = "application_w", deliveredW = "delivered_w", heldW = "held_w", poolW = "pool_w"
        case requestedW = "requested_w"
    }

    public func write(to json: inout JSONText) {
        json.beginObject()
        json.field(CodingKeys.applicationW, applicationW)
        json.field(CodingKeys.deliveredW, deliveredW)
        json.field(CodingKeys.heldW, heldW)
        json.field(CodingKeys.poolW, poolW)
        json.field(CodingKeys.requestedW, requestedW)
        json.endObject()
    }
}

/// The connection point's import and export bounds and which binds now (null: none).
public struct LimitsReply: Codable, Sendable, Equatable, JSONWritable {
    public var binding: String?
    public var exportMaxW: Double?
    public var importMaxW: Double?
    public init(importMaxW: Double?, exportMaxW: Double?, binding: String?) {
        self.importMaxW = importMaxW
        self.exportMaxW = exportMaxW
        self.binding = binding
    }
    enum CodingKeys: String, CodingKey { case binding, exportMaxW = "export_max_w", importMaxW = "import_max_w" }
    public func write(to json: inout JSONText) {
        json.beginObject()
        json.field(CodingKeys.binding, binding)
        json.field(CodingKeys.exportMaxW, exportMaxW)
        json.field(CodingKeys.importMaxW, importMaxW)
        json.endObject()
    }
}

/// `{"high": …, "low": …}` (the load estimate's bounds, W).
public struct RangeReply: Codable, Sendable, Equatable, JSONWritable {
    public var high: Double?
    public var low: Double?
    public init(low: Double?, high: Double?) {
        self.low = low
        self.high = high
    }
    public func write(to json: inout JSONText) {
        json.beginObject()
        json.field(CodingKeys.high, high)
        json.field(CodingKeys.low, low)
        json.endObject()
    }
}

/// The connection-point meter: `{"configured": false}`, or its protocol, staleness and bounds.
public struct MeterReply: Codable, Sendable, Equatable, JSONWritable {
    public var configured: Bool
    public var maxLagS: Double?
    public var `protocol`: String?
    public var simulated: Bool?
    public var stale: Bool?
    public var staleAfterS: Double?

    public init(configured: Bool, stale: Bool? = nil, protocol: String? = nil, simulated: Bool? = nil, staleAfterS: Double? = nil,
                maxLagS: Double? = nil) {
        self.configured = configured
        self.stale = stale
        self.protocol = `protocol`
        self.simulated = simulated
        self.staleAfterS = staleAfterS
        self.maxLagS = maxLagS
    }

    enum CodingKeys: String, CodingKey { case configured, `protocol`, simulated, stale, maxLagS = "max_lag_s", staleAfterS = "stale_after_s" }

    public func write(to json: inout JSONText) {
        json.beginObject()
        json.field(CodingKeys.configured, configured)
        json.field(CodingKeys.maxLagS, ifPresent: maxLagS)
        json.field(CodingKeys.protocol, ifPresent: `protocol`)
        json.field(CodingKeys.simulated, ifPresent: simulated)
        json.field(CodingKeys.stale, ifPresent: stale)
        json.field(CodingKeys.staleAfterS, ifPresent: staleAfterS)
        json.endObject()
    }
}

/// `SITE_SHORTFALL`: whether it stands and what the units cannot deliver, W.
public struct ShortfallReply: Codable, Sendable, Equatable, JSONWritable {
    public var active: Bool
    public var missingW: Double?
    public init(active: Bool, missingW: Double?) {
        self.active = active
        self.missingW = missingW
    }
    enum CodingKeys: String, CodingKey { case active, missingW = "missing_w" }
    public func write(to json: inout JSONText) {
        json.beginObject()
        json.field(CodingKeys.active, active)
        json.field(CodingKeys.missingW, missingW)
        json.endObject()
    }
}

/// One unit in `site`: its share of the site's decision and why.
public struct SiteUnitReply: Codable, Sendable, Equatable, JSONWritable {
    public var allowedChargeW: Double?
    public var allowedDischargeW: Double?
    /// The unit's contactor when not simply closed: `opening`, `open`, or `cannot_open` (asked to open
    /// by the utility, but the inverter has no usable SunSpec 123 `Conn`: absent, no `Conn_RvrtTms`, or
    /// refused; held at zero); nil (left out) when closed.
    public var contactor: String?
    public var id: String
    public var pooled: Bool
    public var powerW: Double?
    public var setpointW: Double?
    /// Why the allocation gave it its setpoint: `headroom`, `full`, `held`, `idle`.
    public var share: String
    public var socPercent: Double?

    public init(id: String, share: String, pooled: Bool, setpointW: Double?, powerW: Double?, socPercent: Double?,
                allowedChargeW: Double?, allowedDischargeW: Double?, contactor: String? = nil) {
        self.id = id
        self.contactor = contactor
        self.share = share
        self.pooled = pooled
        self.setpointW = setpointW
        self.powerW = powerW
        self.socPercent = socPercent
        self.allowedChargeW = allowedChargeW
        self.allowedDischargeW = allowedDischargeW
    }

    enum CodingKeys: String, CodingKey {
        case contactor, id, pooled, share
        case allowedChargeW = "allowed_charge_w", allowedDischargeW = "allowed_discharge_w", powerW = "power_w"
        case setpointW = "setpoint_w", socPercent = "soc_percent"
    }

    public func write(to json: inout JSONText) {
        json.beginObject()
        json.field(CodingKeys.allowedChargeW, allowedChargeW)
        json.field(CodingKeys.allowedDischargeW, allowedDischargeW)
        if let contactor { json.field(CodingKeys.contactor, contactor) }
        json.field(CodingKeys.id, id)
        json.field(CodingKeys.pooled, pooled)
        json.field(CodingKeys.powerW, powerW)
        json.field(CodingKeys.setpointW, setpointW)
        json.field(CodingKeys.share, share)
        json.field(CodingKeys.socPercent, socPercent)
        json.endObject()
    }
}

