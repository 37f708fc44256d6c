import ControlCore
import Cycle
import IEEE2030_5
@testable import Sep2Link
import Testing

/// What the site reports to the utility's server, driven with fixed samples and times: the documents
/// and their values and signs (read back with the module's reader), PUTs only on change, averages over
/// a post interval, the usage points' Location, and responses once each as `responseRequired` asks.
@Suite("2030.5 reporter")
struct Sep2ReporterTests {
    static let lfdi = "3E4F45AB31EDFE5B67E343E5E4562E31984E23E5"
    static let ns = "urn:ieee:std:2030.5:ns"

    /// Two 5 kW / 10 kWh units, ramp 0.5 %/s.
    static func settings(_ version: CSIPAUSVersion = .v1_2, post: UInt32 = 60) -> Sep2ReporterSettings {
        Sep2ReporterSettings(lfdi: lfdi, pen: 12345, csipaus: version, postSeconds: post,
                             ratings: Sep2SiteRatings(unitPowerW: [5000, 5000], unitEnergyWh: [10_000, 10_000], rampPercentPerSecond: 0.5))
    }

    static func der() throws -> DER {
        let xml = #"<DERList xmlns="urn:ieee:std:2030.5:ns" all="1" results="1"><DER href="/edev/1/der/1">"#
            + #"<DERAvailabilityLink href="/edev/1/der/1/dera"/><DERCapabilityLink href="/edev/1/der/1/dercap"/>"#
            + #"<DERSettingsLink href="/edev/1/der/1/derg"/><DERStatusLink href="/edev/1/der/1/ders"/></DER></DERList>"#
        return try #require(try DERList.read(Array(xml.utf8)).resource.ders.first)
    }

    /// A site importing 2 kW while its two units discharge 1.5 kW each at SOC 40 and 60 %.
    static func snapshot() -> Sep2SiteSample {
        var site = SiteStatus()
        site.gridPower = 2000
        var a = UnitStatus(), b = UnitStatus()
        a.state = .running
        b.state = .running
        a.inverterOnline = true
        b.inverterOnline = true
        a.power = 1500
        b.power = 1500
        a.soc = 40
        b.soc = 60
        a.allowedDischarge = 5000
        b.allowedDischarge = 4000
        b.latched.insert(.gridOverfrequency)
        return Sep2SiteSample(site: site, units: [a, b], frequency: 50.02, ratings: settings().ratings)
    }

    static func root(_ request: Sep2Request) throws -> XMLElement { try XMLDocument.parse(request.body) }

    static func text(_ element: XMLElement, _ path: String...) -> String? {
        var node = element
        for name in path {
            guard let next = node.children.first(where: { $0.name.local == name }) else { return nil }
            node = next
        }
        return node.text
    }

    static func ok(_ reporter: inout Sep2Reporter, _ requests: [Sep2Request], location: (Sep2Request) -> String? = { _ in nil }) {
        for request in requests { reporter.handle(Sep2Reply(status: 201, location: location(request)), to: request) }
    }

    @Test("a snapshot aggregates units: site + = export, Σ power, energy-weighted SOC, trips")
    func sampleFromSnapshot() {
        let s = Self.snapshot()
        #expect(s.siteW == -2000)
        #expect(s.derW == 3000)
        #expect(s.storedWh == 10_000)
        #expect(s.socPercent == 50)
        #expect(s.availableDischargeW == 9000)
        #expect(s.connected && s.available && !s.faulted)
        #expect(s.trips.contains(.gridOverfrequency))
        var stale = SiteStatus()
        stale.gridPower = 100
        stale.meterStale = true
        #expect(Sep2SiteSample(site: stale, units: [], frequency: .nan, ratings: Self.settings().ratings).siteW.isNaN)
    }

    @Test("the four DER documents go to their links with Σ ratings, ramp, SOC, storage mode and alarms")
    func derDocuments() throws {
        var reporter = Sep2Reporter(settings: Self.settings())
        reporter.follow(der: try Self.der(), mirrorUsagePointList: nil, postRate: nil)
        reporter.sample(Self.snapshot(), serverTime: 1_800_000_000)
        let requests = reporter.dueRequests(now: .at(100), serverTime: 1_800_000_000)
        #expect(requests.map(\.path) == ["/edev/1/der/1/dercap", "/edev/1/der/1/derg", "/edev/1/der/1/ders", "/edev/1/der/1/dera"])
        #expect(requests.allSatisfy { $0.method == .put })
        let cap = try Self.root(requests[0])
        #expect(cap.name == XMLName(Self.ns, "DERCapability"))
        #expect(Self.text(cap, "rtgMaxW", "value") == "10000" && Self.text(cap, "rtgMaxW", "multiplier") == "0")
        #expect(Self.text(cap, "rtgMaxWh", "value") == "20000")
        #expect(Self.text(cap, "type") == "80")
        #expect(Self.text(cap, "doeModesSupported") == "0F")
        let settings = try Self.root(requests[1])
        #expect(Self.text(settings, "setMaxW", "value") == "10000")
        #expect(Self.text(settings, "setGradW") == "50")
        #expect(Self.text(settings, "doeModesEnabled") == "0F")
        #expect(Self.text(settings, "updatedTime") == "1800000000")
        let status = try Self.root(requests[2])
        #expect(Self.text(status, "stateOfChargeStatus", "value") == "5000")
        #expect(Self.text(status, "storageModeStatus", "value") == "1")
        #expect(Self.text(status, "alarmStatus") == "00000008")
        #expect(Self.text(status, "genConnectStatus", "value") == "07")
        #expect(Self.text(status, "operationalModeStatus", "value") == "2")
        #expect(Self.text(status, "readingTime") == "1800000000")
        let availability = try Self.root(requests[3])
        #expect(Self.text(availability, "statWAvail", "value") == "9000")
        #expect(Self.text(availability, "availabilityDuration") == "3600")
    }

    @Test("a DER document is PUT again only if changed, at most once per interval, and after a refusal")
    func changeOnly() throws {
        var reporter = Sep2Reporter(settings: Self.settings(post: 60))
        reporter.follow(der: try Self.der(), mirrorUsagePointList: nil, postRate: nil)
        var sample = Self.snapshot()
        reporter.sample(sample, serverTime: 1000)
        Self.ok(&reporter, reporter.dueRequests(now: .at(0), serverTime: 1000))
        reporter.sample(sample, serverTime: 1100)
        #expect(reporter.dueRequests(now: .at(100), serverTime: 1100).isEmpty, "nothing changed: nothing sent, the reading time aside")
        sample.utilityDisconnect()
        reporter.sample(sample, serverTime: 1101)
        let changed = reporter.dueRequests(now: .at(101), serverTime: 1101)
        #expect(changed.map(\.path) == ["/edev/1/der/1/ders"])
        let status = try Self.root(try #require(changed.first))
        #expect(Self.text(status, "genConnectStatus", "value") == "00")
        #expect(Self.text(status, "genConnectStatus", "dateTime") == "1101")
        // The server refuses it: sent again, but not before the post interval has passed.
        for request in changed { reporter.handle(Sep2Reply(status: 500), to: request) }
        #expect(reporter.dueRequests(now: .at(130), serverTime: 1130).isEmpty)
        #expect(reporter.dueRequests(now: .at(161), serverTime: 1161).map(\.path) == ["/edev/1/der/1/ders"])
    }

    /// 27 → 100 → 27; the site's ramp without one.
    @Test("ALL-13: DERSettings follows the default's setGradW, one PUT per change")
    func settingsFollowSetGradW() throws {
        func programs(_ gradient: UInt16?) -> [ProgramSchedule] {
            [ProgramSchedule(mRID: "P1", primacy: 1, controls: [],
                             defaultControl: DefaultDERControl(mRID: "D1", base: DERControlBase(), setGradW: gradient))]
        }
        var reporter = Sep2Reporter(settings: Self.settings(post: 60))
        reporter.follow(der: try Self.der(), mirrorUsagePointList: nil, postRate: nil)
        var sample = Self.snapshot()
        var put: [String] = []
        for (step, gradient) in [UInt16?.none, 27, 100, 27].enumerated() {
            sample.defaultSetGradW = EventRules.setGradW(programs(gradient))
            let t = Int64(step) * 100
            reporter.sample(sample, serverTime: 1000 + t)
            let requests = reporter.dueRequests(now: .at(t), serverTime: 1000 + t)
            let settings = requests.filter { $0.path == "/edev/1/der/1/derg" }
            #expect(settings.count == 1, "step \(step): \(requests.map(\.path))")
            put += try settings.map { try #require(Self.text(try Self.root($0), "setGradW")) }
            Self.ok(&reporter, requests)
        }
        #expect(put == ["50", "27", "100", "27"], "\(put)")
    }

    @Test("usage points are POSTed once; each interval's averages go to their Location, signed per 2030.5")
    func mirror() throws {
        var reporter = Sep2Reporter(settings: Self.settings(.v1_3, post: 300))
        reporter.follow(der: nil, mirrorUsagePointList: "/mup", postRate: 60)  // the server's postRate wins
        var sample = Sep2SiteSample()
        sample.frequencyHz = 50
        let points = reporter.dueRequests(now: .at(0), serverTime: 2000)
        #expect(points.map(\.path) == ["/mup", "/mup"])
        #expect(points.allSatisfy { $0.method == .post })
        let site = try Self.root(points[0])
        #expect(site.name == XMLName(Self.ns, "MirrorUsagePoint"))
        #expect(Self.text(site, "roleFlags") == "0003" && Self.text(site, "postRate") == "60")
        #expect(try Self.root(points[1]).children.filter { $0.name.local == "MirrorMeterReading" }.count == 4, "W, var, V and Wh in 1.3")
        Self.ok(&reporter, points) { "https://server.example:8443/mup/" + (Self.text(try! Self.root($0), "roleFlags") == "0003" ? "1" : "2") }
        #expect(reporter.mirrorPaths == [.site: "/mup/1", .der: "/mup/2"])
        #expect(reporter.dueRequests(now: .at(1), serverTime: 2001).isEmpty, "no usage point twice, no interval ended")
        // 60 samples: site exporting 1000 W then 2000 W (bessd +), DER discharging 500 W then charging 1500 W.
        for t in Int64(0)..<60 {
            sample.siteW = t < 30 ? 1000 : 2000
            sample.derW = t < 30 ? 500 : -1500
            sample.storedWh = 7000
            reporter.sample(sample, serverTime: 2000 + t)
            if t < 59 { #expect(reporter.dueRequests(now: .at(2 + t), serverTime: 2000 + t).isEmpty) }
        }
        let readings = reporter.dueRequests(now: .at(62), serverTime: 2060)
        #expect(readings.map(\.path) == ["/mup/1", "/mup/2"])
        func value(_ request: Sep2Request, _ quantity: MirrorQuantity, _ location: MirrorLocation) throws -> String? {
            let mrid = MirrorMRID.make(lfdi: Self.lfdi, location: location, quantity: quantity, pen: 12345)
            let reading = try Self.root(request).children.first { Self.text($0, "mRID") == mrid }
            return reading.flatMap { Self.text($0, "Reading", "value") }
        }
        #expect(try value(readings[0], .activePowerW, .site) == "-1500", "site + = import: an export of 1500 W is −1500")
        #expect(try value(readings[0], .frequencyHz, .site) == "5000")
        #expect(try value(readings[0], .voltageV, .site) == nil, "no voltage measured: no reading")
        #expect(try value(readings[1], .activePowerW, .der) == "-500", "DER + = discharge: the mean of +500 and −1500")
        #expect(try value(readings[1], .storedEnergyWh, .der) == "7000")
        #expect(Self.text(try Self.root(readings[1]), "MirrorMeterReading", "Reading", "timePeriod", "start") == "2000")
        #expect(Self.text(try Self.root(readings[1]), "MirrorMeterReading", "Reading", "timePeriod", "duration") == "60")
    }

    static func control(_ mRID: String, required: UInt8, start: Int64 = 1000, status: EventState = .scheduled) -> DERControl {
        var base = DERControlBase()
        base.exportLimitW = ActivePower(value: 15, multiplier: 2)
        var control = DERControl(mRID: mRID, creationTime: 1, status: EventStatus(current: status, dateTime: 1), start: start, duration: 60, base: base)
        control.replyTo = "/edev/1/rsps/1/rsp"
        control.responseRequired = required
        return control
    }

    static func statuses(_ requests: [Sep2Request]) throws -> [String] {
        try requests.map { try #require(Self.text(try Self.root($0), "status")) + " " + (Self.text(try Self.root($0), "subject") ?? "") }
    }

    @Test("responses follow the control's states, once each, only as responseRequired asks")
    func responses() throws {
        var reporter = Sep2Reporter(settings: Self.settings())
        let all = Self.control("A1", required: 0x03), receivedOnly = Self.control("B2", required: 0x01)
        let specificOnly = Self.control("C3", required: 0x02), none = Self.control("D4", required: 0x00)
        // One program each: within one primacy the newest would supersede the others.
        let programs = [all, receivedOnly, specificOnly, none].enumerated().map {
            ProgramSchedule(mRID: "P\($0.offset)", primacy: UInt8($0.offset + 1), controls: [$0.element])
        }
        let before = reporter.track(programs, serverTime: 900)
        #expect(try Self.statuses(before) == ["1 A1", "1 B2"])
        #expect(before.allSatisfy { $0.path == "/edev/1/rsps/1/rsp" && $0.method == .post })
        #expect(Self.text(try Self.root(before[0]), "endDeviceLFDI") == Self.lfdi)
        #expect(reporter.track(programs, serverTime: 950).isEmpty, "nothing twice")
        #expect(try Self.statuses(reporter.track(programs, serverTime: 1000)) == ["2 A1", "2 C3"])
        #expect(reporter.track(programs, serverTime: 1030).isEmpty)
        #expect(try Self.statuses(reporter.track(programs, serverTime: 1060)) == ["3 A1", "3 C3"])
        // A control cancelled by the server, seen once scheduled: received went, cancelled follows.
        var cancelled = Self.control("E5", required: 0x03, start: 2000)
        #expect(try Self.statuses(reporter.track([ProgramSchedule(mRID: "P", primacy: 1, controls: [cancelled])], serverTime: 1500)) == ["1 E5"])
        cancelled.status = EventStatus(current: .cancelled, dateTime: 1501)
        #expect(try Self.statuses(reporter.track([ProgramSchedule(mRID: "P", primacy: 1, controls: [cancelled])], serverTime: 1502)) == ["6 E5"])
        // One first seen already completed ended before bessd knew it: nothing.
        #expect(reporter.track([ProgramSchedule(mRID: "P", primacy: 1, controls: [Self.control("F6", required: 0x03, start: 10)])],
                               serverTime: 1502).isEmpty)
    }

    @Test("a server clock found behind: held controls answer as they were, none started or completed twice")
    func responsesHeld() throws {
        var reporter = Sep2Reporter(settings: Self.settings())
        let ended = Self.control("D4", required: 0x03, start: 800), running = Self.control("A1", required: 0x03, start: 980)
        let programs = [ProgramSchedule(mRID: "P", primacy: 1, controls: [ended]), ProgramSchedule(mRID: "Q", primacy: 2, controls: [running])]
        #expect(try Self.statuses(reporter.track(programs, serverTime: 1000)) == ["1 A1", "2 A1"], "D4 first seen completed: not answered")
        // The server's time is 200 s behind; both were resolved at 1000.
        let held = [ControlKey(program: "P", control: "D4"): Int64(1000), ControlKey(program: "Q", control: "A1"): Int64(1000)]
        for t in stride(from: Int64(800), through: 1039, by: 10) {
            #expect(reporter.track(programs, serverTime: t, held: held).isEmpty, "at \(t)")
        }
        #expect(try Self.statuses(reporter.track(programs, serverTime: 1040, held: held)) == ["3 A1"], "A1 completes at its end")
        var fresh = Sep2Reporter(settings: Self.settings())
        _ = fresh.track(programs, serverTime: 1000)
        #expect(try Self.statuses(fresh.track(programs, serverTime: 810)).contains("2 D4"), "without held, D4 would start after its end")
    }

    @Test("a refusal is answered once when bit 0 or 1 asks, never without a replyTo")
    func refusals() throws {
        var reporter = Sep2Reporter(settings: Self.settings())
        let control = Self.control("A1", required: 0x01)
        let first = reporter.respond(to: control, .refused(.notApplicable, reason: "opModFixedVar"), serverTime: 5)
        #expect(try Self.statuses(first) == ["252 A1"])
        #expect(reporter.respond(to: control, .refused(.notApplicable, reason: "again"), serverTime: 6).isEmpty)
        #expect(reporter.respond(to: Self.control("B2", required: 0x04), .refused(.invalidEvent, reason: "x"), serverTime: 6).isEmpty)
        var orphan = Self.control("C3", required: 0x03)
        orphan.replyTo = nil
        #expect(reporter.respond(to: orphan, .state(.active), serverTime: 6).isEmpty)
    }
}

extension Sep2ReporterTests {
    /// The `Reading.value` of `quantity` at `location` in a posted reading list, nil when absent.
    static func reading(_ request: Sep2Request, _ quantity: MirrorQuantity, _ location: MirrorLocation) throws -> String? {
        let mrid = MirrorMRID.make(lfdi: Self.lfdi, location: location, quantity: quantity, pen: 12345)
        return try Self.root(request).children.first { Self.text($0, "mRID") == mrid }.flatMap { Self.text($0, "Reading", "value") }
    }

    /// Units running at `power`, their inverters answering with `reactive` var at `volts` V.
    static func units(_ readings: [(power: Double, reactive: Double, volts: Double)]) -> [UnitStatus] {
        readings.map { reading in
            var unit = UnitStatus()
            unit.state = .running
            unit.inverterOnline = true
            unit.power = reading.power
            unit.reactivePower = reading.reactive
            unit.acVoltage = reading.volts
            return unit
        }
    }

    /// Site var and V from the meter; DER var (Σ) and V (mean) from the inverters.
    @Test("ALL-06, MUL-02: var and V from meter and inverters with 2030.5's signs; unmeasured left out")
    func reactivePowerAndVoltage() throws {
        var site = SiteStatus()
        site.gridPower = -1500  // SiteStatus: + = import; exporting 1.5 kW
        site.gridReactivePower = 800  // absorbing 800 var, signed as the meter's W
        site.gridVoltage = 231.44
        let units = Self.units([(1000, 300, 232), (1000, -100, 234), (500, .nan, .nan)])
        let s = Sep2SiteSample(site: site, units: units, frequency: 50, ratings: Self.settings().ratings)
        #expect(s.siteW == 1500 && s.siteVar == -800 && s.siteV == 231.44, "bessd's convention: + = export")
        #expect(s.derVar.isNaN && s.derV == 233, "an answering unit without var: no Σ var (a partial sum would understate it); the mean voltage")
        var measured = units
        measured[2].inverterOnline = false
        let m = Sep2SiteSample(site: site, units: measured, frequency: 50, ratings: Self.settings().ratings)
        #expect(m.derVar == 200 && m.derV == 233, "every answering unit measures var: their Σ")
        var stale = site
        stale.meterStale = true
        let staleSample = Sep2SiteSample(site: stale, units: [], frequency: .nan, ratings: Self.settings().ratings)
        #expect(staleSample.siteVar.isNaN && staleSample.siteV.isNaN && staleSample.derVar.isNaN && staleSample.derV.isNaN)

        var reporter = Sep2Reporter(settings: Self.settings(.v1_2, post: 60))
        reporter.follow(der: nil, mirrorUsagePointList: "/mup", postRate: nil)
        let points = reporter.dueRequests(now: .at(0), serverTime: 3000)
        let declared = try points.map { try Self.root($0).children.filter { $0.name.local == "MirrorMeterReading" }.compactMap { Self.text($0, "ReadingType", "uom") } }
        #expect(declared == [["38", "63", "29", "33"], ["38", "63", "29"]], "site W, var, V, Hz; DER W, var, V")
        Self.ok(&reporter, points) { "/mup/" + (Self.text(try! Self.root($0), "roleFlags") == "0003" ? "1" : "2") }
        for t in Int64(0)..<60 {
            reporter.sample(m, serverTime: 3000 + t)
            _ = reporter.dueRequests(now: .at(1 + t), serverTime: 3000 + t)
        }
        let readings = reporter.dueRequests(now: .at(61), serverTime: 3060)
        #expect(readings.map(\.path) == ["/mup/1", "/mup/2"])
        #expect(try Self.reading(readings[0], .activePowerW, .site) == "-1500", "site W: + = import")
        #expect(try Self.reading(readings[0], .reactivePowerVar, .site) == "800", "site var signed as site W: absorbing is +")
        #expect(try Self.reading(readings[0], .voltageV, .site) == "2314", "0.1 V")
        #expect(try Self.reading(readings[1], .activePowerW, .der) == "2500", "DER W: + = discharge")
        #expect(try Self.reading(readings[1], .reactivePowerVar, .der) == "200", "DER var signed as DER W: supplied is +")
        #expect(try Self.reading(readings[1], .voltageV, .der) == "2330")

        // A meter and inverters that measure neither: W only, nothing made up.
        var plain = SiteStatus()
        plain.gridPower = 100
        let none = Sep2SiteSample(site: plain, units: Self.units([(0, .nan, .nan)]), frequency: .nan, ratings: Self.settings().ratings)
        for t in Int64(60)..<120 {
            reporter.sample(none, serverTime: 3000 + t)
            _ = reporter.dueRequests(now: .at(1 + t), serverTime: 3000 + t)
        }
        let bare = reporter.dueRequests(now: .at(121), serverTime: 3120)
        #expect(try Self.reading(bare[0], .activePowerW, .site) == "100")
        #expect(try Self.reading(bare[0], .reactivePowerVar, .site) == nil && Self.reading(bare[0], .voltageV, .site) == nil)
        #expect(try Self.reading(bare[1], .reactivePowerVar, .der) == nil && Self.reading(bare[1], .voltageV, .der) == nil)
    }

    /// Operational (2) with genConnectStatus bits 0–2; off (1) with them clear.
    @Test("MUL-01: DERStatus operational with connect bits while a unit runs; off when every inverter is silent")
    func unitsSwitchedOff() throws {
        var reporter = Sep2Reporter(settings: Self.settings())
        reporter.follow(der: try Self.der(), mirrorUsagePointList: nil, postRate: nil)
        let on = Self.units([(1000, 0, 230)])[0]
        var off = UnitStatus()  // switched off: its inverter silent, the comm-loss trip standing
        off.state = .tripped
        off.active.insert(.inverterCommLost)
        var seen: [String] = []
        for (step, units) in [[on, on], [off, on], [off, off]].enumerated() {
            let t = Int64(step) * 100
            reporter.sample(Sep2SiteSample(site: SiteStatus(), units: units, frequency: 50, ratings: Self.settings().ratings), serverTime: 1000 + t)
            let requests = reporter.dueRequests(now: .at(t), serverTime: 1000 + t)
            for status in requests where status.path == "/edev/1/der/1/ders" {
                let root = try Self.root(status)
                seen.append("\(step): \(Self.text(root, "genConnectStatus", "value") ?? "?") \(Self.text(root, "operationalModeStatus", "value") ?? "?")")
            }
            Self.ok(&reporter, requests)
        }
        #expect(seen == ["0: 07 2", "2: 00 1"], "one unit off changes nothing; all off: \(seen)")
    }

    /// 253 invalid, 252 not applicable.
    @Test("controls refused alone get 253 or 252 at replyTo, once each, as responseRequired asks")
    func controlsRefusedAlone() throws {
        func control(_ mRID: String?, _ base: String, required: String = "03") -> String {
            #"<DERControl replyTo="/rsps/1/rsp" responseRequired="\#(required)">"# + (mRID.map { "<mRID>\($0)</mRID>" } ?? "")
                + "<creationTime>1</creationTime><EventStatus><currentStatus>0</currentStatus><dateTime>1</dateTime><potentiallySuperseded>false</potentiallySuperseded></EventStatus>"
                + "<interval><duration>60</duration><start>1000</start></interval><DERControlBase>\(base)</DERControlBase></DERControl>"
        }
        let limit = { (value: String) in "<csipaus:opModExpLimW><multiplier>0</multiplier><value>\(value)</value></csipaus:opModExpLimW>" }
        let xml = #"<DERControlList xmlns="urn:ieee:std:2030.5:ns" xmlns:csipaus="https://csipaus.org/ns/v1.3" all="6" results="6">"#
            + control("A1", limit("1500")) + control("B2", limit("99999")) + control("C3", "<opModFixedVar><refType>0</refType><value>5</value></opModFixedVar><rampTms>10</rampTms>")
            + control(nil, limit("10")) + control("E5", limit("x"), required: "00") + control("F6", "") + "</DERControlList>"
        let list = try DERControlList.read(Array(xml.utf8)).resource
        #expect(list.controls.map(\.mRID) == ["A1"])
        #expect(list.refused.map { $0.mRID ?? "-" } == ["B2", "C3", "-", "E5", "F6"])
        #expect(list.refused.map(\.status) == [.invalidEvent, .notApplicable, .invalidEvent, .invalidEvent, .notApplicable])
        #expect(list.items == 6)
        var reporter = Sep2Reporter(settings: Self.settings())
        #expect(try Self.statuses(reporter.respond(refused: list.refused, serverTime: 5)) == ["253 B2", "252 C3", "252 F6"],
                "none without an mRID, none where responseRequired asks none")
        #expect(reporter.respond(refused: list.refused, serverTime: 6).isEmpty, "once each")
    }

    /// A refused (5xx) or unanswered response goes again after the back-off; a full queue drops and counts.
    @Test("responses wait in order and retry after back-off, none lost while there is room; a full queue counts")
    func responseOutbox() throws {
        var reporter = Sep2Reporter(settings: Self.settings())
        reporter.enqueue(reporter.respond(to: Self.control("A1", required: 0x03), .state(.active), serverTime: 1))
        #expect(try Self.statuses(reporter.pendingResponses) == ["1 A1", "2 A1"])
        let first = try #require(reporter.nextResponse(now: .at(100)))
        let refused = reporter.handleResponse(Sep2Reply(status: 500), to: first, now: .at(100), wall: 100)
        #expect(!refused)
        #expect(reporter.nextResponse(now: .at(101)) == nil, "held for the back-off (2 s)")
        #expect(reporter.nextResponse(now: .at(102)) == first, "then the same one, first")
        let unanswered = reporter.handleResponse(nil, to: first, now: .at(102), wall: 102)
        #expect(!unanswered)
        #expect(reporter.nextResponse(now: .at(105)) == nil && reporter.nextResponse(now: .at(106)) == first, "4 s after the second failure")
        let taken = reporter.handleResponse(Sep2Reply(status: 201), to: first, now: .at(106), wall: 106)
        #expect(taken)
        let second = try #require(reporter.nextResponse(now: .at(106)))
        #expect(try Self.statuses([second]) == ["2 A1"], "in order, and at once after a success")
        let dropped = reporter.handleResponse(Sep2Reply(status: 400), to: second, now: .at(106), wall: 106)
        #expect(dropped, "a 400 refuses that document: dropped, not sent again")
        #expect(reporter.pendingResponses.isEmpty && reporter.lastError?.contains("HTTP 400") == true)
        let many = (0..<300).map { Sep2Request(method: .post, path: "/r", body: Array("\($0)".utf8), purpose: .post("DERControlResponse")) }
        let overflow = reporter.enqueue(many)
        #expect(overflow == 44)
        #expect(reporter.pendingResponses == Array(many.prefix(256)), "the oldest kept, in order")
        let counted = reporter.takeDropped(), again = reporter.takeDropped()
        #expect(counted == 44 && again == 0)
    }
}

extension Sep2SiteSample {
    /// The utility's `opModConnect` false, as the worker applies it, the units' contactors opened.
    mutating func utilityDisconnect() {
        connectAllowed = false
        connected = false
    }
}
