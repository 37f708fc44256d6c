public import Config
public import Cycle
import ControlCore
public import IEEE2030_5
import Synchronization

/// The reporter as the worker runs it: its samples' source and when it last took one.
struct Sep2Reporting {
    var reporter: Sep2Reporter
    let sample: @Sendable () -> Sep2SiteSample?
    var sampledSecond: Int64?
    var versionCheckedAt: Int64?
    /// The ledger's revision last written to the state directory, and whether the last write failed
    /// (Sep2Reporter+Store.swift).
    var savedRevision: UInt64?
    /// The checksum of the bytes last written: a new revision whose bytes are the same (an outbox
    /// that is full drops what a round made, and puts back what it had moved) is not written again.
    var savedChecksum: UInt64?
    var storeFailed = false
}

extension Sep2ReporterSettings {
    /// The settings of bessd's site: Σ `units[].max_power_kw` and `capacity_kwh`, the schedule ramp
    /// `limits.schedule_ramp_percent_per_s`, `ieee2030_5.post_s` and `ieee2030_5.pen` (0 when none is configured).
    public init(_ configuration: BessdConfiguration, lfdi: String) {
        let ratings = Sep2SiteRatings(unitPowerW: configuration.units.map { $0.maxPowerKW * 1000 },
                                      unitEnergyWh: configuration.units.map { $0.capacityKWh * 1000 },
                                      rampPercentPerSecond: configuration.scheduleRampPercentPerSecond)
        self.init(lfdi: lfdi, pen: configuration.ieee2030_5?.pen ?? 0, csipaus: .v1_2, postSeconds: configuration.ieee2030_5?.postSeconds ?? 300, ratings: ratings)
        frequencyDroopEnabled = configuration.grid.droop.enabled
    }
}

extension Sep2Worker {
    /// Reports `shared`'s site (as the cycle publishes it) to the server with the reporter of
    /// `configuration`. Call before `start`.
    public func reportSite(_ configuration: BessdConfiguration, shared: SharedState) {
        let settings = Sep2ReporterSettings(configuration, lfdi: state.lfdi)
        let ratings = settings.ratings
        report(Sep2Reporter(settings: settings)) {
            var units = [UnitStatus](repeating: UnitStatus(), count: shared.unitCount)
            var site = SiteStatus()
            var frequency = Double.nan
            guard shared.read(units: &units, site: &site, frequency: &frequency) > 0 else { return nil }
            return Sep2SiteSample(site: site, units: units, frequency: frequency, ratings: ratings)
        }
        useFrequencyDroop(settings.frequencyDroopEnabled)
    }
}

extension Sep2Client {
    /// One reporting round, on the worker's thread after the limits are published: the responses the
    /// controls call for queued (also while the server is unreachable: none is lost to an outage), then,
    /// while it answers, a sample a second, the queued responses in order and the reports due, each sent
    /// and its reply handed back. A transport failure ends the round (discovery says the server is
    /// unreachable and backs off; the response is sent again after the reporter's back-off). The responses
    /// are written to the state directory when they changed, before the first is sent and at the end.
    func report(now: MonotonicInstant, wall: Double) {
        guard var r = reporting else { return }
        defer {
            saveResponses(&r)
            reporting = r
        }
        if let droop = frequencyDroop.withLock({ $0 }) { r.reporter.useFrequencyDroop(droop) }
        let second = Self.seconds(now)
        let server = Int64(serverTime(now: now, wall: wall).rounded(.down))
        let refusedMRIDs = Set(controlRefusals.values.joined().compactMap(\.mRID))
        let made = (known ? r.reporter.track(programs, serverTime: server, randomization: randomization, held: held, refused: refusedMRIDs) : [])
            + r.reporter.respond(refused: controlRefusals.keys.sorted().flatMap { controlRefusals[$0] ?? [] }, serverTime: server)
        r.reporter.enqueue(made)
        if known { noteDroopDisabled(refusing: { [reporter = r.reporter] in reporter.refusesDroop($0) }, serverTime: server) }
        let dropped = r.reporter.takeDropped()
        if dropped > 0 {
            log("SEP2_RESPONSE_DROPPED", "SEP2_RESPONSE_DROPPED: \(dropped) DERControlResponse(s) dropped: \(r.reporter.pendingResponses.count) "
                + "wait unsent for \(settings.serverName) (at most \(ResponseLedger.outboxCapacity))", true)
        }
        saveResponses(&r)
        guard reachable != false else { return }
        if r.versionCheckedAt.map({ second - $0 >= 60 }) ?? true {
            r.versionCheckedAt = second
            r.reporter.use(session.csipaus ?? Self.csipausVersion(in: session.documents) ?? r.reporter.settings.csipaus)
        }
        if r.sampledSecond != second, var sample = r.sample() {
            r.sampledSecond = second
            let limits = state.withLock { $0.limits }
            sample.connectAllowed = limits?.connect ?? true
            sample.energizeAllowed = limits?.energize ?? true
            sample.defaultSetGradW = programs.sorted { $0.primacy < $1.primacy }.lazy.compactMap { $0.defaultControl?.setGradW }.first
            r.reporter.sample(sample, serverTime: server)
        }
        r.reporter.follow(der: session.ders.first, mirrorUsagePointList: session.deviceCapability?.mirrorUsagePointListLink,
                          postRate: session.endDevice?.postRate)
        let unix = Int64(wall.rounded(.down))
        while let response = r.reporter.nextResponse(now: second) {
            guard let reply = send(response) else {
                r.reporter.handleResponse(nil, to: response, now: second, wall: unix)
                return
            }
            guard r.reporter.handleResponse(reply, to: response, now: second, wall: unix) else { break }
            let givenUp = r.reporter.takeGivenUp()
            for line in givenUp {
                log("SEP2_RESPONSE_DROPPED", "SEP2_RESPONSE_DROPPED: \(settings.serverName) answered \(line); the next sent", true)
            }
            if givenUp.isEmpty, !(200...299).contains(reply.status) {
                log("SEP2_RESPONSE_REFUSED", "SEP2_RESPONSE_REFUSED: \(settings.serverName) answered HTTP \(reply.status) to a "
                    + "DERControlResponse at \(TextQuoting.quoted(response.path, limit: 64)); that response is dropped, the next sent", true)
            }
        }
        for request in r.reporter.dueRequests(now: second, serverTime: server) {
            guard let reply = send(request) else { return }
            r.reporter.handle(reply, to: request)
        }
    }

    /// Sends one report (the schedule published first); nil, the connection closed, on a transport failure.
    private func send(_ request: Sep2Request) -> Sep2Reply? {
        let http = HTTPRequest(method: request.method.rawValue, path: request.path, body: request.body, contentType: "application/sep+xml")
        republish()
        do throws(HTTPClientError) {
            let response = try transport.send(http)
            return Sep2Reply(status: response.status, retryAfterSeconds: response.retryAfterSeconds, location: response.location)
        } catch {
            transport.close()
            return nil
        }
    }

    /// The controls of a DERControlList page just read that its reader refused alone (253 invalid, 252
    /// not applicable): kept per page for the responses, and each journalled as `SEP2_CONTROL_REFUSED`
    /// once while the page carries it (told apart by `refusalKey`).
    func noteControlRefusals(_ request: Sep2Request, body: [UInt8]) {
        guard request.purpose == .derControlList else { return }
        let refused = (try? DERControlList.read(body).resource.refused) ?? []
        let before = Set((controlRefusals[request.path] ?? []).enumerated().map { Self.refusalKey($0.offset, $0.element) })
        if controlRefusals.count >= 256, controlRefusals[request.path] == nil { controlRefusals = [:] }
        controlRefusals[request.path] = refused.isEmpty ? nil : refused
        for (index, control) in refused.enumerated() where !before.contains(Self.refusalKey(index, control)) {
            recordRefused(control)
            log("SEP2_CONTROL_REFUSED", "SEP2_CONTROL_REFUSED: \(Self.refusalLine(control)) (\(TextQuoting.quoted(request.path, limit: 64)) of "
                + "\(settings.serverName)); answered \(control.status.rawValue) where asked, its siblings taken", true)
        }
    }

    /// What tells a page's refusals apart: the mRID (else the place among the refused), status and code;
    /// not the reason, whose byte offsets move when the page changes around it.
    static func refusalKey(_ index: Int, _ control: RefusedControl) -> String {
        (control.mRID ?? "#\(index)") + " \(control.status.rawValue) \(control.code)"
    }

    static func refusalLine(_ control: RefusedControl) -> String {
        "control " + (control.mRID.map { TextQuoting.quoted($0, limit: 40) } ?? "without a readable mRID") + ": \(control.reason)"
    }

    /// The CSIP-AUS namespace the server's documents use, nil when none names one.
    static func csipausVersion(in documents: [String: [UInt8]]) -> CSIPAUSVersion? {
        let v13 = Array(CSIPAUSVersion.v1_3.namespace.utf8), v12 = Array((CSIPAUSVersion.v1_2.namespace + "\"").utf8)
        var found: CSIPAUSVersion?
        for body in documents.values {
            if contains(body, v13) { return .v1_3 }
            if found == nil, contains(body, v12) { found = .v1_2 }
        }
        return found
    }

    static func contains(_ body: [UInt8], _ needle: [UInt8]) -> Bool {
        guard let first = needle.first, body.count >= needle.count else { return false }
        var i = 0
        while i <= body.count - needle.count {
            if body[i] == first && body[i..<(i + needle.count)].elementsEqual(needle) { return true }
            i += 1
        }
        return false
    }
}

extension Sep2Reporter {
    /// Writes CSIP-AUS elements in `version`'s namespace from now on; the capability and settings are
    /// PUT again when it changes.
    public mutating func use(_ version: CSIPAUSVersion) {
        guard version != settings.csipaus else { return }
        settings.csipaus = version
        resources[.capability] = nil
        resources[.settings] = nil
    }

    /// Follows the configured droop's `enabled` from now on (`frequencyDroopEnabled`); the capability
    /// and settings are PUT again at once when it changes.
    public mutating func useFrequencyDroop(_ enabled: Bool) {
        guard enabled != settings.frequencyDroopEnabled else { return }
        settings.frequencyDroopEnabled = enabled
        resources[.capability] = nil
        resources[.settings] = nil
    }
}
