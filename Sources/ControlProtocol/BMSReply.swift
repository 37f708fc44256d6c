/// A unit's BMS in `status` (`units[].bms`): the values its protocol or profile maps, as the cycle last
/// judged them fresh (null while stale or not sent), and the limits in watts.
public struct BMSReply: Codable, Sendable, Equatable, JSONWritable {
    /// Active alarm conditions (`cell_overvoltage`, …, the profile's names), empty when none.
    public var alarms: [String]
    public var cellVoltageMaxV: Double?
    public var cellVoltageMinV: Double?
    public var chargeCurrentLimitA: Double?
    /// Whether the BMS allows charging (null when it does not say).
    public var chargeEnabled: Bool?
    /// The charge limit in W: the profile's power limit when it maps one, else the current limit
    /// times the pack voltage.
    public var chargeLimitW: Double?
    public var chargeVoltageLimitV: Double?
    /// Pack current, A, positive while charging (the BMS convention).
    public var currentA: Double?
    public var dischargeCurrentLimitA: Double?
    public var dischargeEnabled: Bool?
    public var dischargeLimitW: Double?
    public var dischargeVoltageLimitV: Double?
    /// The link's fault code (`CAN_BUS_OFF`, `MODBUS_TIMEOUT`, …), null when healthy or simulated.
    public var fault: String?
    /// True while the BMS's measurements are fresh.
    public var online: Bool
    /// The profile the BMS is read with (`pylontech-lv`, `byd-c130`, …), `simulated` for a simulated one.
    public var profile: String
    /// Active protections, as `alarms`.
    public var protections: [String]
    public var socPercent: Double?
    public var sohPercent: Double?
    public var temperatureMaxC: Double?
    public var temperatureMinC: Double?
    /// `can` or `modbus` (absent for a simulated BMS).
    public var transport: String?
    public var voltageV: Double?

    public init(profile: String, transport: String?, online: Bool) {
        self.profile = profile
        self.transport = transport
        self.online = online
        alarms = []
        protections = []
    }

    enum CodingKeys: String, CodingKey {
        case alarms, fault, online, profile, protections, transport
        case cellVoltageMaxV = "cell_voltage_max_v", cellVoltageMinV = "cell_voltage_min_v"
        case chargeCurrentLimitA = "charge_current_limit_a", chargeEnabled = "charge_enabled", chargeLimitW = "charge_limit_w"
        case chargeVoltageLimitV = "charge_voltage_limit_v", currentA = "current_a"
        case dischargeCurrentLimitA = "discharge_current_limit_a", dischargeEnabled = "discharge_enabled"
        case dischargeLimitW = "discharge_limit_w", dischargeVoltageLimitV = "discharge_voltage_limit_v"
        case socPercent = "soc_percent", sohPercent = "soh_percent"
        case temperatureMaxC = "temperature_max_c", temperatureMinC = "temperature_min_c", voltageV = "voltage_v"
    }

    public func write(to json: inout JSONText) {
        json.beginObject()
        json.field(CodingKeys.alarms, alarms)
        json.field(CodingKeys.cellVoltageMaxV, cellVoltageMaxV)
        json.field(CodingKeys.cellVoltageMinV, cellVoltageMinV)
        json.field(CodingKeys.chargeCurrentLimitA, chargeCurrentLimitA)
        json.field(CodingKeys.chargeEnabled, chargeEnabled)
        json.field(CodingKeys.chargeLimitW, chargeLimitW)
        json.field(CodingKeys.chargeVoltageLimitV, chargeVoltageLimitV)
        json.field(CodingKeys.currentA, currentA)
        json.field(CodingKeys.dischargeCurrentLimitA, dischargeCurrentLimitA)
        json.field(CodingKeys.dischargeEnabled, dischargeEnabled)
        json.field(CodingKeys.dischargeLimitW, dischargeLimitW)
        json.field(CodingKeys.dischargeVoltageLimitV, dischargeVoltageLimitV)
        json.field(CodingKeys.fault, fault)
        json.field(CodingKeys.online, online)
        json.field(CodingKeys.profile, profile)
        json.field(CodingKeys.protections, protections)
        json.field(CodingKeys.socPercent, socPercent)
        json.field(CodingKeys.sohPercent, sohPercent)
        json.field(CodingKeys.temperatureMaxC, temperatureMaxC)
        json.field(CodingKeys.temperatureMinC, temperatureMinC)
        if let transport { json.field(CodingKeys.transport, transport) }
        json.field(CodingKeys.voltageV, voltageV)
        json.endObject()
    }
}
