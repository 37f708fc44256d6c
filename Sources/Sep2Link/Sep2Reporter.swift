import BessBase
public import ControlCore
public import IEEE2030_5

/// What the reporter needs to know besides the samples.
public struct Sep2ReporterSettings: Sendable, Equatable {
    /// The device's LFDI (40 hex digits).
    public var lfdi: String
    /// The IANA private enterprise number ending the mirror's mRIDs.
    public var pen: UInt32
    /// The CSIP-AUS namespace the server uses (the DERControl documents' version).
    public var csipaus: CSIPAUSVersion
    /// `ieee2030_5.post_s`: the post rate where the server's EndDevice names none, s.
    public var postSeconds: UInt32
    /// The site's ratings.
    public var ratings: Sep2SiteRatings
    /// Within ±this DER power (W) the storage mode is holding.
    public var holdingDeadbandW: Double = 50
    /// The configured droop is enabled (`droop_settings.enabled`): DERCapability and DERSettings claim
    /// `opModFreqDroop` (bit 8) and a control that sets only it is answered as any other; false:
    /// neither claimed, and such a control is answered 252 (not applicable), never started.
    public var frequencyDroopEnabled = false
    /// `rtgMaxVA`, `rtgVNom`, `rtgNormalCategory` and their settings, said while some unit has var points.
    public var reference = Sep2ReferenceRatings()

    /// Settings.
    public init(lfdi: String, pen: UInt32, csipaus: CSIPAUSVersion, postSeconds: UInt32, ratings: Sep2SiteRatings) {
        self.lfdi = lfdi
        self.pen = pen
        self.csipaus = csipaus
        self.postSeconds = postSeconds
        self.ratings = ratings
    }
}

/// What the site reports to the utility's 2030.5 server, as a value the worker drives: it takes one
/// `Sep2SiteSample` per cycle (or per second), and returns the requests that are due, which the
/// worker sends through its transport and whose replies it hands back (`handle`).
///
/// - DERCapability, DERSettings, DERStatus and DERAvailability of the one aggregated DER are PUT to the
///   DER's links when the document differs from the last one the server accepted (compared with its
///   reading time left out), each at most once per post interval.
/// - The metering mirror: on first use one MirrorUsagePoint for the site and one for the DER is POSTed
///   to the MirrorUsagePointListLink, its `Location` kept; then each post interval's averages are
///   POSTed to each as a MirrorMeterReadingList. The server's `postRate` overrides the configured one.
/// - Responses (`respond`, `track`): a DERControlResponse to `replyTo` as `responseRequired` asks,
///   each status once per control.
public struct Sep2Reporter: Sendable {
    /// The settings (the CSIP-AUS version follows the server's: `use`).
    public internal(set) var settings: Sep2ReporterSettings
    /// The DER's resource links (from the DERList), nil until read.
    public private(set) var der: DER?
    /// The MirrorUsagePointListLink (from the DeviceCapability), nil until read.
    public private(set) var mirrorListPath: String?
    /// The server's `postRate`, nil when it names none.
    public private(set) var serverPostRate: UInt32?
    /// Each usage point's href as the server's `Location` gave it.
    public private(set) var mirrorPaths: [MirrorLocation: String] = [:]
    /// The last document a writer refused or a reply the server refused, for `bessctl` and the journal.
    public internal(set) var lastError: String?

    var latest: Sep2SiteSample?
    /// The var capability a reactive-only control is judged against (`refusal`), as the worker knows it; nil: not judged.
    var reactiveScope: Sep2ReactiveScope?
    var accumulator = Sep2MirrorAccumulator()
    var resources: [DERResource: ResourceState] = [:]
    var mirrorPostedAt: MonotonicInstant?
    var status = StatusSince()
    var settingsSince: (key: [UInt8], time: Int64)?
    var responses = ResponseLedger()

    /// A reporter that has sent nothing.
    public init(settings: Sep2ReporterSettings) { self.settings = settings }

    /// The post interval in force: the server's `postRate`, else the configured `post_s` (at least 1 s).
    public var postSeconds: UInt32 { max(1, serverPostRate ?? settings.postSeconds) }

    /// Follows what discovery read: the DER (the DERList's first), the MirrorUsagePointListLink and
    /// the EndDevice's `postRate`. A different list link forgets the usage points made under the old one.
    public mutating func follow(der: DER?, mirrorUsagePointList: String?, postRate: UInt32?) {
        if der != self.der { resources = [:] }
        self.der = der
        if mirrorUsagePointList != mirrorListPath {
            mirrorPaths = [:]
            mirrorPostedAt = nil
        }
        mirrorListPath = mirrorUsagePointList
        serverPostRate = postRate
    }

    /// Takes one sample at `serverTime` (s since the Unix epoch): into the interval's averages and as
    /// the state the DER documents describe. Allocates nothing.
    public mutating func sample(_ sample: Sep2SiteSample, serverTime: Int64) {
        if accumulator.start == nil { accumulator.start = serverTime }
        accumulator.add(sample)
        latest = sample
    }

    /// The requests due at monotonic `now` and server time `serverTime`: DER documents that
    /// changed, the usage points not yet made, and the readings of an interval that has ended.
    public mutating func dueRequests(now: MonotonicInstant, serverTime: Int64) -> [Sep2Request] {
        var out: [Sep2Request] = []
        derRequests(now: now, serverTime: serverTime, into: &out)
        mirrorRequests(now: now, serverTime: serverTime, into: &out)
        return out
    }

    /// Takes the server's reply to a request this reporter made: a 2xx to a PUT makes its document
    /// the one compared with; a 201 to a usage point's POST gives its `Location`. Other requests are ignored.
    public mutating func handle(_ reply: Sep2Reply, to request: Sep2Request) {
        guard case .post(let name) = request.purpose else { return }
        let ok = (200...299).contains(reply.status)
        if !ok { lastError = "HTTP \(reply.status) to \(name) at \(TextQuoting.quoted(request.path, limit: 64))" }
        if let resource = DERResource(rawValue: name), var state = resources[resource], state.pending?.path == request.path {
            if ok { state.accepted = state.pending?.key }
            state.pending = nil
            resources[resource] = state
        } else if let location = MirrorLocation.allCases.first(where: { Self.mirrorPurpose($0) == name }), ok {
            guard let path = reply.location.flatMap(Self.path(of:)) else {
                lastError = "\(name) created without a Location"
                return
            }
            mirrorPaths[location] = path
        }
    }

    /// The absolute path of `link` (a path, or an `https://host…` URL); nil when it has none.
    static func path(of link: String) -> String? {
        if link.hasPrefix("/") { return link }
        let bytes = Array(link.utf8)
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")), bytes[colon...].starts(with: Array("://".utf8)) else { return nil }
        guard let slash = bytes[(colon + 3)...].firstIndex(of: UInt8(ascii: "/")) else { return "/" }
        return String(decoding: bytes[slash...], as: UTF8.self)
    }

    mutating func refused(_ error: SEP2Error, _ what: String) { lastError = "\(what): \(error)" }
}

// MARK: - The DER's resources

/// The four DER resources the site PUTs, named as their purpose.
enum DERResource: String, CaseIterable, Sendable {
    case capability = "DERCapability", settings = "DERSettings", status = "DERStatus", availability = "DERAvailability"
}

/// What the server holds of one resource: the key (the document without its reading time) it
/// accepted, the one in flight, and when the last PUT went.
struct ResourceState: Sendable {
    var accepted: [UInt8]?
    var pending: (key: [UInt8], path: String)?
    var sentAt: MonotonicInstant?
}

/// Each DERStatus value and since when it holds (server time).
struct StatusSince: Sendable {
    var connect: StatusValue<ConnectStatus>?
    var inverter: StatusValue<InverterStatus>?
    var mode: StatusValue<OperationalModeStatus>?
    var soc: StatusValue<Double>?
    var storage: StatusValue<StorageModeStatus>?

    static func stamp<V>(_ value: V, _ old: StatusValue<V>?, _ time: Int64) -> StatusValue<V> {
        old?.value == value ? old! : StatusValue(value, since: time)
    }
}

extension Sep2Reporter {
    /// DERControlType bits the site carries out.
    static let modes: DERControlModes = [.charge, .discharge, .connect, .energize, .fixedW, .maxLimW, .targetW]

    /// `modes`, with `opModFreqDroop` (bit 8) while the configured droop is enabled.
    var modesCarriedOut: DERControlModes { settings.frequencyDroopEnabled ? Self.modes.union(.frequencyDroop) : Self.modes }

    /// `modes` and `opModFreqDroop` as `modesCarriedOut`, with the reactive controls (bits 4, 5, 6, 21)
    /// while some unit has var points (`s`'s var capability).
    func modesCarriedOut(_ s: Sep2SiteSample) -> DERControlModes {
        Self.hasVar(s) ? modesCarriedOut.union(.reactive) : modesCarriedOut
    }

    /// True while some unit has var points.
    static func hasVar(_ s: Sep2SiteSample) -> Bool { s.varMaxInjecting > 0 || s.varMaxAbsorbing > 0 }

    /// The least power factor at rating `w` and var capability `q`: `w / √(w² + q²)`, at most
    /// `most`; nil without a rating.
    static func leastPowerFactor(w: Double, q: Double, most: Double = 1) -> Double? {
        guard w > 0, w.isFinite, q.isFinite else { return nil }
        return min(most, w / (w * w + q * q).squareRoot())
    }

    /// `DERCapability` of the aggregated DER (Σ units), its reactive ratings while some unit has var points.
    func capability(_ s: Sep2SiteSample = Sep2SiteSample()) -> DERCapabilityReport {
        let r = settings.ratings
        var c = DERCapabilityReport(modesSupported: modesCarriedOut(s), type: .storage, ratedMaxW: r.maxDischargeW, doeModesSupported: .all)
        if Self.hasVar(s) {
            c.ratedMaxVar = s.varMaxInjecting
            c.ratedMaxVarNeg = s.varMaxAbsorbing
            c.ratedMinPFOverExcited = Self.leastPowerFactor(w: r.maxDischargeW, q: s.varMaxInjecting)
            c.ratedMinPFUnderExcited = Self.leastPowerFactor(w: r.maxDischargeW, q: s.varMaxAbsorbing)
            settings.reference.apply(to: &c)
        }
        c.ratedMaxWh = r.energyWh > 0 ? r.energyWh : nil
        c.ratedMaxChargeW = r.maxChargeW
        c.ratedMaxDischargeW = r.maxDischargeW
        c.vppModesSupported = .storageTarget
        return c
    }

    /// `DERSettings`: `setMaxW` the site's rating, `setGradW` the DefaultDERControl's or the site's ramp.
    func settingsReport(_ s: Sep2SiteSample, updatedTime: Int64) -> DERSettingsReport {
        let r = settings.ratings
        let ramp = (max(0, r.rampPercentPerSecond) * 100).rounded()
        var d = DERSettingsReport(setMaxW: r.maxDischargeW, setGradW: s.defaultSetGradW ?? UInt16(min(ramp, Double(UInt16.max))),
                                  updatedTime: updatedTime)
        d.setMaxChargeW = r.maxChargeW
        d.setMaxDischargeW = r.maxDischargeW
        d.setMaxWh = r.energyWh > 0 ? r.energyWh : nil
        d.modesEnabled = modesCarriedOut(s)
        if Self.hasVar(s) {
            d.setMaxVar = s.varMaxInjecting
            d.setMaxVarNeg = s.varMaxAbsorbing
            d.setMinPFOverExcited = Self.leastPowerFactor(w: r.maxDischargeW, q: s.varMaxInjecting, most: 0.9999)
            d.setMinPFUnderExcited = Self.leastPowerFactor(w: r.maxDischargeW, q: s.varMaxAbsorbing, most: 0.9999)
            settings.reference.apply(to: &d)
        }
        d.doeModesEnabled = .all
        d.vppModesEnabled = .storageTarget
        return d
    }

    /// `DERStatus`: connect bits (connected as the units' contactors are; available and operating
    /// cleared as `opModConnect` and `opModEnergize` ask), operational mode, inverter status, SOC, storage mode, alarms from the trips.
    /// Each value's `dateTime` is when it last changed (`since`, kept across documents).
    func statusReport(_ s: Sep2SiteSample, serverTime t: Int64, since status: inout StatusSince) -> DERStatusReport {
        var connect: ConnectStatus = []
        // Bit 0 is the real state: a unit bessd cannot open stays connected under opModConnect false.
        if s.connected { connect.insert(.connected) }
        if s.connectAllowed && s.available { connect.insert(.available) }
        if s.connectAllowed && s.energizeAllowed && s.available { connect.insert(.operating) }
        if s.faulted { connect.insert(.fault) }
        let inverter: InverterStatus = s.faulted && !s.available ? .faults
            : !s.connected ? .off : s.allStandby ? .standby : s.available ? .forcedPowerReduction : .starting
        let operating = connect.contains(.operating)
        status.connect = StatusSince.stamp(connect, status.connect, t)
        status.inverter = StatusSince.stamp(operating && inverter == .forcedPowerReduction ? .trackingMPPT : inverter, status.inverter, t)
        status.mode = StatusSince.stamp(operating ? .operational : .off, status.mode, t)
        status.storage = StatusSince.stamp(StorageModeStatus(dischargeW: s.derW.isFinite ? s.derW : 0, deadbandW: settings.holdingDeadbandW),
                                           status.storage, t)
        if s.socPercent.isFinite {
            status.soc = StatusSince.stamp((min(max(s.socPercent, 0), 100) * 100).rounded() / 100, status.soc, t)
        }
        var report = DERStatusReport(readingTime: t)
        report.connect = status.connect
        report.inverter = status.inverter
        report.operationalMode = status.mode
        report.stateOfChargePercent = status.soc
        report.storageMode = status.storage
        report.trips = s.trips
        return report
    }

    /// `DERAvailability`: the allowed powers to 1 % of the rating, durations to the minute, `statVarAvail` `setMaxVar`.
    func availabilityReport(_ s: Sep2SiteSample, serverTime t: Int64) -> DERAvailabilityReport {
        let r = settings.ratings, step = max(1, settings.ratings.maxDischargeW / 100)
        var a = DERAvailabilityReport(readingTime: t)
        a.availableW = (s.availableDischargeW / step).rounded() * step
        a.availableVar = Self.hasVar(s) ? settingsReport(s, updatedTime: t).setMaxVar : nil
        if s.storedWh.isFinite {
            if r.maxDischargeW > 0 { a.availabilityDurationSeconds = Self.minutes(s.storedWh / r.maxDischargeW * 3600) }
            if r.maxChargeW > 0 { a.maxChargeDurationSeconds = Self.minutes(max(0, r.energyWh - s.storedWh) / r.maxChargeW * 3600) }
        }
        return a
    }

    static func minutes(_ seconds: Double) -> UInt32 {
        UInt32(min(max(0, (seconds / 60).rounded(.down) * 60), Double(UInt32.max - 60)))
    }

    /// The document of `resource` at `time` (0 for the comparison key), nil when a writer refuses it.
    mutating func document(_ resource: DERResource, _ s: Sep2SiteSample, time: Int64) -> [UInt8]? {
        do throws(SEP2Error) {
            switch resource {
            case .capability: return try capability(s).xml(csipaus: settings.csipaus)
            case .settings: return try settingsReport(s, updatedTime: time).xml(csipaus: settings.csipaus)
            case .status where time == 0:
                var unstamped = StatusSince()
                return try statusReport(s, serverTime: 0, since: &unstamped).xml()
            case .status: return try statusReport(s, serverTime: time, since: &status).xml()
            case .availability: return try availabilityReport(s, serverTime: time).xml()
            }
        } catch {
            refused(error, resource.rawValue)
            return nil
        }
    }

    func link(_ resource: DERResource) -> String? {
        switch resource {
        case .capability: der?.capabilityLink
        case .settings: der?.settingsLink
        case .status: der?.statusLink
        case .availability: der?.availabilityLink
        }
    }

    mutating func derRequests(now: MonotonicInstant, serverTime: Int64, into out: inout [Sep2Request]) {
        guard let s = latest else { return }
        for resource in DERResource.allCases {
            guard let link = link(resource), let path = Self.path(of: link) else { continue }
            var state = resources[resource] ?? ResourceState()
            if let sentAt = state.sentAt, now - sentAt < .seconds(postSeconds) { continue }
            guard let key = document(resource, s, time: 0), key != state.accepted else { continue }
            var time = serverTime
            if resource == .settings {
                // `updatedTime`: when the settings last changed, not when they were sent.
                if settingsSince?.key != key { settingsSince = (key, serverTime) }
                time = settingsSince?.time ?? serverTime
            }
            guard let body = document(resource, s, time: time) else { continue }
            state.pending = (key, path)
            state.sentAt = now
            resources[resource] = state
            out.append(Sep2Request(method: .put, path: path, body: body, purpose: .post(resource.rawValue)))
        }
    }
}
