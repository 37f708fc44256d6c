public import ControlCore
public import Cycle
public import IEC104

/// What the site looks like to the outstation, fixed for the run.
public struct StationDescription: Sendable {
    /// Each unit's rating (W) and capacity (Wh), in configuration order.
    public var ratingsW: [Double]
    public var capacitiesWh: [Double]
    /// The site's rating, W (the bound of the site set-point 3002): the published `SiteView`'s
    /// `ratedPowerW`, never summed here.
    public var ratedPowerW: Double
    /// A site meter measures the connection point (net MW and Mvar are then the meter's).
    public var hasMeter: Bool
    /// `grid_integration.droop_settings.enabled`: primary frequency response is configured on.
    public var frequencyResponseEnabled: Bool

    /// `view`: the site's view as published (`SharedState.view`: the ratings are in it from the
    /// start); nil, the view of a site of these units' ratings and capacities.
    public init(ratingsW: [Double], capacitiesWh: [Double], hasMeter: Bool, frequencyResponseEnabled: Bool, view: SiteView? = nil) {
        self.ratingsW = ratingsW
        self.capacitiesWh = capacitiesWh
        ratedPowerW = (view ?? SiteView(units: [], site: SiteStatus(), settings: SiteView.Settings(capacitiesWh: capacitiesWh, ratingsW: ratingsW)))
            .ratedPowerW
        self.hasMeter = hasMeter
        self.frequencyResponseEnabled = frequencyResponseEnabled
    }
}

/// A monitor point's value as 104 carries it (untimed; the time tag is added when it is sent).
public enum PointValue: Sendable, Equatable {
    case float(Float, Quality)
    case single(Bool, Quality)
    case double(DoublePointState, Quality)

    /// The element of the untimed type (interrogation answers).
    public var untimed: InformationElement {
        switch self {
        case let .float(v, q): .measuredFloat(v, q)
        case let .single(v, q): .singlePoint(v, q)
        case let .double(v, q): .doublePoint(v, q)
        }
    }

    /// The element of the time-tagged type (spontaneous events).
    public func timed(_ tag: CP56Time2a) -> InformationElement {
        switch self {
        case let .float(v, q): .measuredFloatWithTime(v, q, tag)
        case let .single(v, q): .singlePointWithTime(v, q, tag)
        case let .double(v, q): .doublePointWithTime(v, q, tag)
        }
    }
}

/// The outstation's point list filled from one cycle's published state (units, site and AGC status
/// and frequency copied under one lock), with the deadband rule that decides what is spontaneous
/// and the energy counters integrated from the published net power.
public struct StationImage: Sendable {
    /// One monitor point: where it is, what it holds, what was last reported spontaneously.
    public struct Point: Sendable {
        public let signal: IEC104Signal
        public let address: UInt32
        public let deadband: Double
        public var value: PointValue
        var reported: PointValue?
        /// Reported at the next `changes()` whatever it moved (a new frequency event's points).
        var forced = false

        /// The interrogation group (1…16) the point answers in besides the station interrogation:
        /// 1 the measured values, 2 the single and double points (docs/iec104.md).
        public var group: Int {
            switch value {
            case .float: Self.measuredGroup
            case .single, .double: Self.indicationGroup
            }
        }

        /// Group 1: measured values (M_ME_NC_1).
        public static let measuredGroup = 1
        /// Group 2: single and double points (M_SP_NA_1, M_DP_NA_1).
        public static let indicationGroup = 2
    }

    public let description: StationDescription
    public private(set) var points: [Point] = []
    /// Energy exported (+ net power) and imported since the outstation started, Wh.
    public private(set) var exportWh = 0.0
    public private(set) var importWh = 0.0
    /// The counters' sequence number (BCR SQ), advanced at each counter interrogation.
    public private(set) var counterSequence: UInt8 = 0
    public let exportAddress: UInt32
    public let importAddress: UInt32
    private var lastPower: (watts: Double, at: MonotonicInstant)?
    /// The frequency events counted at the last `fill(frequencyEvents:)`.
    private var frequencyEventCount: UInt64 = 0

    public init(description: StationDescription, settings: OutstationSettings) {
        self.description = description
        let invalid = PointValue.float(0, .invalid)
        for signal in IEC104Signal.allCases {
            switch signal {
            case .unitConnection:
                for index in description.ratingsW.indices {
                    points.append(Point(signal: signal, address: settings.address(signal) + UInt32(index), deadband: 0,
                                        value: .double(.indeterminate, .invalid)))
                }
            case .agcInService, .remote, .frequencyResponseEnabled, .frequencyResponseActive, .unitTripped, .communicationFailure:
                points.append(Point(signal: signal, address: settings.address(signal), deadband: 0, value: .single(false, .invalid)))
            case .exportKWh, .importKWh, .agcSetpointCommand, .siteSetpointCommand, .siteReactiveSetpointCommand, .sitePowerFactorCommand,
                 .agcInServiceCommand, .frequencyResponseCommand:
                continue
            default:
                points.append(Point(signal: signal, address: settings.address(signal), deadband: settings.deadband(signal), value: invalid))
            }
        }
        exportAddress = settings.address(.exportKWh)
        importAddress = settings.address(.importKWh)
    }

    /// Fills every point from one published state at `now` (`view`: the site's view that
    /// publication computed); integrates the counters.
    public mutating func fill(units: [UnitStatus], site: SiteStatus, view: SiteView, frequency: Double, now: MonotonicInstant) {
        let net = view.netW(hasMeter: description.hasMeter)
        if let last = lastPower, last.watts.isFinite {
            let hours = (now - last.at).secondsDouble / 3600
            if hours > 0, hours < 1 {
                if last.watts > 0 { exportWh += last.watts * hours } else { importWh -= last.watts * hours }
            }
        }
        lastPower = (net, now)
        var discharge = 0.0, charge = 0.0, tripped = false, commFailure = false, droopActive = false
        for (index, unit) in units.enumerated() where index < description.capacitiesWh.count {
            discharge += max(0, unit.allowedDischarge)
            charge += abs(unit.allowedCharge)
            if unit.state == .tripped || unit.state == .faulted || !unit.latched.isEmpty { tripped = true }
            if !unit.bmsOnline || !unit.inverterOnline { commFailure = true }
            if abs(unit.droop) >= 1 { droopActive = true }
        }
        let local = !units.isEmpty && units.allSatisfy { $0.holds.operatorUnit || $0.holds.operatorSite || $0.overrideW != nil }
        func mw(_ watts: Double) -> PointValue { Self.float(watts / 1e6) }
        var unitIndex = 0
        for i in points.indices {
            let value: PointValue
            switch points[i].signal {
            case .netMW: value = mw(net)
            // + = injecting, as 1001's + = export: the meter's with one, else Σ units' var.
            case .netMVAr: value = Self.float(view.netVar(hasMeter: description.hasMeter) / 1e6)
            // Line to line, from the meter's line-to-neutral voltage only: a unit's terminal
            // voltage is not the connection point's, so without a fresh meter voltage it is invalid.
            case .voltageKV: value = Self.float(Self.lineToLineKV(view.meteredVoltageV))
            case .frequencyHz: value = Self.float(frequency)
            case .socPercent: value = Self.float(view.socPercent)
            case .availableDischargeMW: value = mw(discharge)
            case .availableChargeMW: value = mw(charge)
            case .energyToDischargeMWh: value = Self.float(view.storedWh / 1e6)
            case .energyToChargeMWh: value = Self.float(view.toFullWh / 1e6)
            case .agcSetpointMW: value = mw(site.agc.target)
            case .agcTargetMW: value = mw(site.agc.followed)
            case .regulationUpperMW: value = mw(site.agc.upperLimit)
            case .regulationLowerMW: value = mw(site.agc.lowerLimit)
            case .rampMWPerMin: value = mw(site.agc.ramp * 60)
            // docs/design/0008-agc.md: the point shows AGC followed, so it drops on a lost signal.
            case .agcInService: value = .single(site.agc.following, site.agc.configured ? .good : .invalid)
            case .remote: value = .single(!local, .good)
            case .frequencyResponseEnabled: value = .single(description.frequencyResponseEnabled, .good)
            case .frequencyResponseActive: value = .single(droopActive, .good)
            case .unitTripped: value = .single(tripped, .good)
            case .communicationFailure: value = .single(commFailure, .good)
            case .unitConnection:
                let unit = unitIndex < units.count ? units[unitIndex] : UnitStatus()
                unitIndex += 1
                value = .double(Self.connection(unit), .good)
            default: continue
            }
            points[i].value = value
        }
    }

    /// The frequency-event points from the cycle's tally (`SharedState.frequencyEventTally`): the
    /// events assessed since start, and the last one's score (0…1) and shortfall (MW), invalid before
    /// the first. A new event reports all three spontaneously, even a score equal to the last one's.
    public mutating func fill(frequencyEvents tally: FrequencyEventTally) {
        let isNew = tally.count != frequencyEventCount
        frequencyEventCount = tally.count
        for i in points.indices {
            switch points[i].signal {
            case .frequencyEventCount: points[i].value = .float(Float(tally.count), .good)
            case .frequencyEventScore: points[i].value = Self.float(tally.last?.score ?? .nan)
            case .frequencyEventShortfallMW: points[i].value = Self.float((tally.last?.shortfallW ?? .nan) / 1e6)
            default: continue
            }
            if isNew { points[i].forced = true }
        }
    }

    /// A unit's connection as a double point: ON running or limited, OFF in standby, tripped or
    /// faulted, intermediate while starting, indeterminate while its inverter does not answer.
    static func connection(_ unit: UnitStatus) -> DoublePointState {
        guard unit.inverterOnline else { return .indeterminate }
        switch unit.state {
        case .running, .limited: return .on
        case .standby, .tripped, .faulted: return .off
        case .starting: return .intermediate
        }
    }

    /// A line-to-neutral voltage, V, as the line-to-line voltage of a balanced three-phase
    /// connection, kV (√3 · V / 1000); NaN stays NaN.
    static func lineToLineKV(_ lineToNeutralV: Double) -> Double { 3.0.squareRoot() * lineToNeutralV / 1000 }

    /// A float point; invalid (IV, value 0) when not a number.
    static func float(_ value: Double) -> PointValue {
        value.isFinite ? .float(Float(value), .good) : .float(0, .invalid)
    }

    /// The points whose value moved beyond their deadband (or changed state or quality) since last
    /// reported, and those a new frequency event forces, marked reported; a point's first fill is reported by the interrogation, not here.
    public mutating func changes() -> [Point] {
        var changed: [Point] = []
        for i in points.indices {
            guard let reported = points[i].reported else {
                points[i].reported = points[i].value
                points[i].forced = false
                continue
            }
            let moved: Bool = switch (reported, points[i].value) {
            case let (.float(old, oldQuality), .float(new, newQuality)):
                oldQuality != newQuality || Double(abs(new - old)) > points[i].deadband
            default: reported != points[i].value
            }
            if moved || points[i].forced {
                points[i].reported = points[i].value
                points[i].forced = false
                changed.append(points[i])
            }
        }
        return changed
    }

    /// The two counters as integrated totals (kWh), with the current sequence number.
    public func counters() -> [InformationObject] {
        [InformationObject(address: exportAddress, element: .integratedTotals(BinaryCounterReading(value: Self.kWh(exportWh), sequence: counterSequence))),
         InformationObject(address: importAddress, element: .integratedTotals(BinaryCounterReading(value: Self.kWh(importWh), sequence: counterSequence)))]
    }

    /// Advances the counters' sequence number (after a counter interrogation).
    public mutating func advanceCounterSequence() { counterSequence = (counterSequence + 1) & 0x1F }

    static func kWh(_ wh: Double) -> Int32 { Int32(clamping: Int64((wh / 1000).rounded(.down))) }
}
