import BessBase
public import Cycle
import ControlCore
public import IEEE2030_5
import Synchronization

/// The reporter as the worker runs it: its samples' source and when it last took one.
struct Sep2Reporting {
    var reporter: Sep2Reporter
    let sample: @Sendable () -> Sep2SiteSample?
    /// The monotonic second (whole seconds of the clock) the last sample was taken in: one a second.
    var sampledSecond: Int64?
    var versionCheckedAt: MonotonicInstant?
    /// The ledger's revision last written to the state directory, and whether the last write failed
    /// (Sep2Reporter+Store.swift).
    var savedRevision: UInt64?
    /// The checksum of the bytes last written: a new revision whose bytes are the same (an outbox
    /// that is full drops what a round made, and puts back what it had moved) is not written again.
    var savedChecksum: UInt64?
    var storeFailed = false
}

extension Sep2Worker {
    /// Reports `shared`'s site (as the cycle publishes it) to the server with a reporter of `settings`
    /// (Service maps them from the configuration). Call before `start`.
    public func reportSite(_ settings: Sep2ReporterSettings, shared: SharedState) {
        report(Sep2Reporter(settings: settings)) {
            var units = [UnitStatus](repeating: UnitStatus(), count: shared.unitCount)
            var site = SiteStatus()
            var view = SiteView()
            var frequency = Double.nan
            guard shared.read(units: &units, site: &site, view: &view, frequency: &frequency) > 0 else { return nil }
            return Sep2SiteSample(site: site, units: units, view: view, frequency: frequency)
        }
        useFrequencyDroop(settings.frequencyDroopEnabled)
        judgeReactive(against: shared)
    }
}

/// Whether the cycle has published its view once (`Sep2VarCapability.published`).
private final class CyclePublished: Sendable {
    let once = Atomic<Bool>(false)
}

extension Sep2VarCapability {
    /// The var capability and apparent rating of the `SiteView` the cycle last published in `shared` (a
    /// copy under its lock, never a wait for a cycle); nil before its first publication.
    static func published(in shared: SharedState) -> @Sendable () -> (injecting: Double, absorbing: Double, apparentVA: Double)? {
        let published = CyclePublished()
        return {
            if !published.once.load(ordering: .relaxed) {
                // Whether the cycle has published once: the cycle count of a whole read (allocates, on
                // the worker's thread, until it has).
                var units = [UnitStatus](repeating: UnitStatus(), count: shared.unitCount)
                var site = SiteStatus(), view = SiteView(), frequency = Double.nan
                guard shared.read(units: &units, site: &site, view: &view, frequency: &frequency) > 0 else { return nil }
                published.once.store(true, ordering: .relaxed)
            }
            let view = shared.view
            return (view.varMaxInjecting.isFinite ? max(0, view.varMaxInjecting) : 0,
                    view.varMaxAbsorbing.isFinite ? max(0, view.varMaxAbsorbing) : 0,
                    view.apparentPowerVA.isFinite ? max(0, view.apparentPowerVA) : 0)
        }
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
        // No control is answered before the site's var capability is known (it decides a reactive-only one).
        guard var r = reporting, reactive.source == nil || reactive.ratings != nil else { return }
        defer {
            saveResponses(&r)
            reporting = r
        }
        if let droop = frequencyDroop.withLock({ $0 }) { r.reporter.useFrequencyDroop(droop) }
        let second = now.nanoseconds / 1_000_000_000
        let server = Int64(schedule.serverTime(now: now, wall: wall).rounded(.down))
        let refusedMRIDs = Set(controlRefusals.values.joined().compactMap(\.mRID))
        r.reporter.reactiveScope = reactive.ratings.map { Sep2ReactiveScope(injecting: $0.injecting, absorbing: $0.absorbing, ratingW: settings.siteRatingW,
                                                                                  apparentVA: reactive.apparentVA,
                                                                                  curves: schedule.curves) }
        let made = (schedule.known ? r.reporter.track(schedule.programs, serverTime: server, randomization: schedule.randomization, held: schedule.held,
                                                     refused: refusedMRIDs) : [])
            + r.reporter.respond(refused: controlRefusals.keys.sorted().flatMap { controlRefusals[$0] ?? [] }, serverTime: server)
        r.reporter.enqueue(made)
        if schedule.known { noteDroopDisabled(refusing: { [reporter = r.reporter] in reporter.refusesDroop($0) }, serverTime: server) }
        let dropped = r.reporter.takeDropped()
        if dropped > 0 {
            log(.sep2(.responseDropped, "\(dropped) DERControlResponse(s) dropped: \(r.reporter.pendingResponses.count) "
                + "wait unsent for \(settings.serverName) (at most \(ResponseLedger.outboxCapacity))"))
        }
        saveResponses(&r)
        guard reachable != false else { return }
        if r.versionCheckedAt.map({ now - $0 >= .seconds(60) }) ?? true {
            r.versionCheckedAt = now
            r.reporter.use(session.csipaus ?? CSIPAUSVersion.used(in: session.documents) ?? r.reporter.settings.csipaus)
        }
        if r.sampledSecond != second, var sample = r.sample() {
            r.sampledSecond = second
            if reactive.source == nil {
                reactive.ratings = (sample.varMaxInjecting, sample.varMaxAbsorbing)
                reactive.apparentVA = sample.apparentPowerVA
            }
            let limits = state.withLock { $0.limits }
            sample.connectAllowed = limits?.connect ?? true
            sample.energizeAllowed = limits?.energize ?? true
            sample.defaultSetGradW = schedule.programs.sorted { $0.primacy < $1.primacy }.lazy.compactMap { $0.defaultControl?.setGradW }.first
            r.reporter.sample(sample, serverTime: server)
        }
        r.reporter.follow(der: session.ders.first, mirrorUsagePointList: session.deviceCapability?.mirrorUsagePointListLink,
                          postRate: session.endDevice?.postRate)
        let unix = Int64(wall.rounded(.down))
        while let response = r.reporter.nextResponse(now: now) {
            guard let reply = send(response) else {
                r.reporter.handleResponse(nil, to: response, now: now, wall: unix)
                return
            }
            guard r.reporter.handleResponse(reply, to: response, now: now, wall: unix) else { break }
            let givenUp = r.reporter.takeGivenUp()
            for line in givenUp {
                log(.sep2(.responseDropped, "\(settings.serverName) answered \(line); the next sent"))
            }
            if givenUp.isEmpty, !(200...299).contains(reply.status) {
                log(.sep2(.responseRefused, "\(settings.serverName) answered HTTP \(reply.status) to a "
                    + "DERControlResponse at \(TextQuoting.quoted(response.path, limit: 64)); that response is dropped, the next sent"))
            }
        }
        for request in r.reporter.dueRequests(now: now, serverTime: server) {
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
    /// once while the page carries it (told apart by `RefusedControl.key`).
    func noteControlRefusals(_ request: Sep2Request, body: [UInt8]) {
        guard request.purpose == .derControlList else { return }
        let refused = (try? DERControlList.read(body).resource.refused) ?? []
        let before = Set((controlRefusals[request.path] ?? []).enumerated().map { $0.element.key(at: $0.offset) })
        if controlRefusals.count >= 256, controlRefusals[request.path] == nil { controlRefusals = [:] }
        controlRefusals[request.path] = refused.isEmpty ? nil : refused
        for (index, control) in refused.enumerated() where !before.contains(control.key(at: index)) {
            controlRecorder.recordRefused(control)
            log(.sep2(.controlRefused, "\(control.line) (\(TextQuoting.quoted(request.path, limit: 64)) of "
                + "\(settings.serverName)); answered \(control.status.rawValue) where asked, its siblings taken"))
        }
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

extension RefusedControl {
    /// What tells a page's refusals apart: the mRID (else the place among the refused), status and code;
    /// not the reason, whose byte offsets move when the page changes around it.
    func key(at index: Int) -> String {
        (mRID ?? "#\(index)") + " \(status.rawValue) \(code)"
    }

    /// `control "A1": <reason>`, for the journal.
    var line: String {
        "control " + (mRID.map { TextQuoting.quoted($0, limit: 40) } ?? "without a readable mRID") + ": \(reason)"
    }
}

extension CSIPAUSVersion {
    /// The CSIP-AUS namespace the server's documents use, nil when none names one.
    static func used(in documents: [String: [UInt8]]) -> CSIPAUSVersion? {
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
