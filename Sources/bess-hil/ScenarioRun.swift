import BessSystem
import ControlCore
import ControlProtocol
import Foundation
import Glibc
import Simulation
import HILPlant
import Scada
import Fieldbus
import Cycle
import Config
import IEC104
import Outstation
import Yams

/// Plays one scenario: the plant in this process, bessd (and bess-aggregator when the timeline
/// dispatches) as child processes, exactly as on a rig.
final class ScenarioRun {
    let scenario: Scenario
    let runDirectory: String
    let outputDirectory: String
    let bessdPath: String
    let aggregatorPath: String
    let canInterface: String
    let say: (String) -> Void

    /// bessd's configuration file as the run writes it.
    var bessdConfig: ScenarioConfig
    var aggregatorPort = 0
    var bessd: Process?
    var bessdOffset = 0.0
    var aggregator: Process?
    var samples: [Sample] = []
    /// Reloads bessd confirmed (its `config` answer became the file written).
    var reloadsApplied = 0
    var executed: [(at: Double, label: String, outcome: String)] = []
    var unitIDs: [String] = []
    var controlSocket: String { runDirectory + "/control.sock" }
    /// Where model 704 sits in bessd's SCADA server (when the timeline writes to it).
    var scadaImage: ScadaImage?
    /// bessd's IEC 104 outstation (when the timeline commands through it): its common address and
    /// command IOAs, and the control centre's connection (opened at the first command).
    var iec104Server: OutstationSettings?
    var controlCentre: ControlCentre?
    /// `iec104` actions whose confirmation was not the one the file expects.
    var confirmationMisses: [String] = []
    /// How far bessd's log has been read into the samples' `logLines`.
    var logOffset: UInt64 = 0
    /// Steps the plant while the runner waits (for bessd to start).
    var plantStep: () -> Void = {}
    /// gnuplot, found before the run; nil: the verdict stands without a picture.
    var plotter: String? = RigPrograms.program("gnuplot")
    /// Why the plot was not drawn (gnuplot missing or failing), for the verdict line.
    var plotProblem: String?
    /// Start bess-aggregator even when the timeline does not name it (the soak's uplink).
    var wantsAggregator = false
    /// Called every tick (50 ms) with the scenario time, after the tick's actions and sample.
    var onTick: ((Double) -> Void)?
    /// Called once after the last tick, bessd still running (the soak's final accounting).
    var beforeStop: (() -> Void)?
    /// The plant's PMU when the timeline has `pmu` steps, and the frequency a step pinned it to
    /// (nil: it measures the plant's grid frequency).
    var pmu: PMUSender?
    var pmuPinnedHz: Double?
    /// `bessctl events` read before bessd stopped (nil: not read).
    var assessedEvents: EventsReply?
    /// The utility's 2030.5 server when the scenario has a `sep2:` section (ScenarioRun+Sep2.swift).
    var sep2Server: Sep2Plant?
    /// Block 0 of the scenario's schedule steps (Unix seconds) and the run's start on the wall clock.
    var scheduleAnchor: Int64?
    var runStartUnix = 0.0

    init(scenario: Scenario, outputDirectory: String, bessdPath: String, aggregatorPath: String, canInterface: String,
         say: @escaping (String) -> Void) {
        self.scenario = scenario
        self.outputDirectory = outputDirectory
        self.bessdPath = bessdPath
        self.aggregatorPath = aggregatorPath
        self.canInterface = canInterface
        self.say = say
        runDirectory = "/tmp/bess-hil-scenario-\(scenario.name)-\(getpid())"
        bessdConfig = ScenarioConfig(scenario: scenario, runDirectory: runDirectory)
    }

    /// Runs the scenario. Returns the failed expectations (empty = pass).
    func run() throws(ScenarioError) -> [String] {
        try? FileManager.default.removeItem(atPath: runDirectory)
        try? FileManager.default.createDirectory(atPath: runDirectory + "/state", withIntermediateDirectories: true)
        try? FileManager.default.createDirectory(atPath: outputDirectory, withIntermediateDirectories: true)
        defer { cleanUp() }
        // The plant's view: every fault on the scenario's clock. Ports are picked free, but another
        // scenario running beside this one may take one first: then pick again.
        if scenario.needsPMU { try startPMU() }
        defer { pmu?.stop() }
        try startSep2()
        defer { sep2Server?.stop() }
        var built: PlantRig?
        var lastError = ""
        for _ in 0..<5 where built == nil {
            ScenarioSchedule.pointOptimiser(&bessdConfig.config, scenario: scenario, runDirectory: runDirectory)
            try bessdConfig.prepare(controlSocket: controlSocket, canInterface: canInterface, pmu: pmu, sep2Server: sep2Server)
            let plantConfiguration = try ScenarioConfig.load(writeConfig("plant.yaml", offset: 0))
            unitIDs = plantConfiguration.units.map(\.id)
            iec104Server = plantConfiguration.iec104?.server
            if let scada = plantConfiguration.scada {
                scadaImage = ScadaImage(site: ScadaSiteDescription(
                    siteID: "HIL", version: "", mode: "hil", unitID: scada.unitID,
                    ratingsW: plantConfiguration.units.map { $0.maxPowerKW * 1000 },
                    capacitiesWh: plantConfiguration.units.map { $0.capacityKWh * 1000 }, hasMeter: plantConfiguration.site.meter != nil))
            }
            do {
                built = try PlantRig(configuration: plantConfiguration, startedAt: SystemClock.shared.now())
            } catch {
                lastError = "\(error)"
            }
        }
        guard let rig = built else { throw ScenarioError(.plantFailed, lastError) }
        defer { rig.stop() }
        if scenario.needsAggregator || wantsAggregator { try startAggregator() }
        // The plant serves (and steps) while bessd starts; the scenario's clock starts once bessd answers.
        plantStep = { _ = rig.step(now: SystemClock.shared.now()) }
        plantStep()
        // Scenario time zero is bessd's launch: its own clock (for the faults it simulates) starts
        // a moment later, so both sides of the rig agree to within its start-up. With a 2030.5
        // server, zero is a whole Unix second (`Sep2Plant.startClock`).
        sep2Server?.startClock()
        if ScenarioSchedule.usesBlocks(scenario) {
            ScenarioSchedule.align(length: ScenarioSchedule.blockLength(bessdConfig.config), step: plantStep)
        }
        let t0 = SystemClock.shared.now()
        runStartUnix = Date().timeIntervalSince1970
        rig.setOrigin(t0)
        try startBessd(at: 0)

        var pending = scenario.actions[...]
        let tick = Duration.milliseconds(50)
        var deadline = t0
        var tickCount = 0
        while true {
            deadline = deadline + tick
            SystemClock.shared.sleep(until: deadline)
            let now = SystemClock.shared.now()
            if deadline < now - tick { deadline = now }  // after a blocking action: no burst of samples
            let t = now.seconds(since: t0)
            if t > scenario.duration { break }
            let hz = rig.step(now: now)
            if pmuPinnedHz == nil { pmu?.set(hz: hz) }
            while let action = pending.first, action.at <= t {
                pending.removeFirst()
                if case .voltage(let pu) = action.kind { rig.gridVoltage.sourcePU = pu }
                let outcome = perform(action, t: t)
                executed.append((t, action.label, outcome))
                say(String(format: "  %7.2f s  %@  %@", t, action.label, outcome))
            }
            tickCount += 1
            if tickCount % 2 == 0 { samples.append(sample(rig, t: t, hz: hz)) }
            onTick?(t)
        }
        if let beforeStop {
            plantStep = { _ = rig.step(now: SystemClock.shared.now()) }
            beforeStop()
        }
        if !scenario.events.isEmpty { readEvents() }
        if let check = scenario.scheduleCheck {
            let reply = ScenarioSchedule.read(socket: controlSocket, say: say)
            confirmationMisses += check.misses(reply, anchor: scheduleAnchor, runStartUnix: runStartUnix).map { "schedule_blocks: \($0)" }
        }
        stopBessd()
        try writeResults()
        return judge.misses()
    }

    // MARK: configuration

    /// Writes bessd's configuration file `name`, the faults moved `offset` seconds earlier; its path.
    func writeConfig(_ name: String, offset: Double) throws(ScenarioError) -> String {
        try bessdConfig.write(name, offset: offset, aggregatorPort: aggregatorPort)
    }

    // MARK: processes

    func startBessd(at t: Double) throws(ScenarioError) {
        bessdOffset = t
        let path = try writeConfig("bessd.yaml", offset: t)
        _ = try ScenarioConfig.load(path)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: bessdPath)
        process.arguments = ["run", "--config", path, "--log", "stderr"]
        // A restarted bessd appends: the first one's lines stay where the samples' offset has read them.
        if !FileManager.default.fileExists(atPath: runDirectory + "/bessd.log") {
            FileManager.default.createFile(atPath: runDirectory + "/bessd.log", contents: nil)
        }
        let log = FileHandle(forWritingAtPath: runDirectory + "/bessd.log")
        log?.seekToEndOfFile()
        process.standardOutput = log ?? FileHandle.nullDevice
        process.standardError = log ?? FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        do { try process.run() } catch { throw ScenarioError(.bessdFailed, "cannot start \(bessdPath): \(error)") }
        try? log?.close()  // the child has its own copy
        bessd = process
        // Ready when its control socket answers (it answers once every device was probed).
        let end = SystemClock.shared.now() + .seconds(15)
        while SystemClock.shared.now() < end {
            if (try? ControlClient.answer(ControlRequest(.status), socket: controlSocket, timeout: .seconds(1))) != nil { return }
            if !process.isRunning { break }
            usleep(20_000)
            plantStep()
        }
        throw ScenarioError(.bessdFailed, "bessd did not answer on \(controlSocket); its log:\n" + tail(runDirectory + "/bessd.log"))
    }

    func stopBessd() {
        guard let process = bessd, process.isRunning else { return }
        kill(process.processIdentifier, SIGTERM)
        let end = SystemClock.shared.now() + .seconds(5)
        while process.isRunning, SystemClock.shared.now() < end { usleep(10_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }

    /// Starts bess-aggregator on a free port, or on the port it had (a restart after an outage: same
    /// port, same database).
    func startAggregator() throws(ScenarioError) {
        if aggregatorPort == 0 { aggregatorPort = freePort() }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: aggregatorPath)
        process.arguments = ["--listen", "127.0.0.1:\(aggregatorPort)", "--database", runDirectory + "/aggregator.sqlite"]
        let logPath = runDirectory + "/aggregator.log"
        if !FileManager.default.fileExists(atPath: logPath) { FileManager.default.createFile(atPath: logPath, contents: nil) }
        let log = FileHandle(forWritingAtPath: logPath)
        log?.seekToEndOfFile()
        process.standardOutput = log ?? FileHandle.nullDevice
        process.standardError = log ?? FileHandle.nullDevice
        do { try process.run() } catch { throw ScenarioError(.aggregatorFailed, "cannot start \(aggregatorPath): \(error)") }
        try? log?.close()
        aggregator = process
        let end = SystemClock.shared.now() + .seconds(10)
        while SystemClock.shared.now() < end {
            if httpRequest("GET", "/metrics", body: nil)?.hasPrefix("HTTP/1.1 200") == true { return }
            usleep(50_000)
            plantStep()
        }
        throw ScenarioError(.aggregatorFailed, "bess-aggregator did not answer on 127.0.0.1:\(aggregatorPort)")
    }

    func cleanUp() {
        controlCentre?.close()
        controlCentre = nil
        stopBessd()
        if let a = aggregator, a.isRunning {
            kill(a.processIdentifier, SIGKILL)
            a.waitUntilExit()
        }
    }

    // MARK: the timeline

    func perform(_ action: Scenario.Action, t: Double) -> String {
        func ask(_ request: ControlRequest) -> String {
            do {
                let answer = try ControlClient.answer(request, socket: controlSocket, timeout: .seconds(3))
                if let refusal = answer.refusal { return "refused: \(refusal)" }
                if request.verb == .reset, let reset = try? answer.reply(as: ResetReply.self) {
                    return "ok (cleared \(reset.cleared.joined(separator: ",")); refused \(reset.refused.joined(separator: ",")))"
                }
                return "ok"
            } catch {
                return "failed: \(error)"
            }
        }
        switch action.kind {
        case .frequency, .ramp, .fault, .voltage: return "(plant)"
        case .reset: return ask(ControlRequest(.reset))
        case .mode(let mode): return ask(ControlRequest(.mode, mode: mode))
        case .override(let kw, let seconds):
            return ask(ControlRequest(.override, unit: unitIDs.first ?? "", powerKW: kw, forSeconds: seconds))
        case .clearOverride: return ask(ControlRequest(.override, unit: unitIDs.first ?? "", clear: true))
        case .dispatch(let kw, let seconds, let unit, let kvar):
            // A site dispatch names no unit: its power is the site's, shared by the allocation.
            let target = unit == "site" ? "" : "\"unit\":\"\(unit ?? unitIDs.first ?? "")\","
            let reactive = kvar.map { "\"reactive_kvar\":\($0)," } ?? ""
            let command = "{\"id\":\"scenario-\(Int(t * 1000))\",\"kind\":\"power\",\(target)"
                + "\"power_kw\":\(kw),\(reactive)\"expires_unix\":\(Date().timeIntervalSince1970 + seconds)}"
            let answer = httpRequest("POST", "/v1/sites/HIL/commands", body: command) ?? "no answer"
            return answer.hasPrefix("HTTP/1.1 200") ? "queued at bess-aggregator" : "refused: \(answer.prefix(80))"
        case .kill:
            guard let process = bessd, process.isRunning else { return "bessd was not running" }
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            return "killed pid \(process.processIdentifier)"
        case .start:
            do {
                try startBessd(at: t)
                return "pid \(bessd?.processIdentifier ?? 0)"
            } catch {
                return "failed: \(error)"
            }
        case .scada(let points):
            return scadaImage?.write704(points, port: bessdConfig.scadaPort) ?? "failed: no scada: block"
        case .iec104(let orders):
            return commandIEC104(orders, action: action, t: t)
        case .pmu(let hz, let status, let bad):
            return setPMU(hz: hz, status: status, badFrames: bad)
        case .sep2(let order):
            return commandSep2(order, t: t)
        case .schedule(let order):
            let length = ScenarioSchedule.blockLength(bessdConfig.config)
            scheduleAnchor = scheduleAnchor ?? ScenarioSchedule.nextBoundary(length)
            return ScenarioSchedule.send(order, anchor: scheduleAnchor!, length: length, socket: controlSocket) {
                httpRequest("POST", "/v1/sites/HIL/commands", body: $0)
            }
        case .forecast(let load, let pv):
            let length = ScenarioSchedule.blockLength(bessdConfig.config)
            scheduleAnchor = scheduleAnchor ?? ScenarioSchedule.nextBoundary(length)
            return ScenarioSchedule.writeForecast(runDirectory, anchor: scheduleAnchor!, length: length, loadKW: load, pvKW: pv)
        case .aggregator(let running):
            if running {
                do { try startAggregator() } catch { return "failed: \(error)" }
                return "pid \(aggregator?.processIdentifier ?? 0) on port \(aggregatorPort)"
            }
            guard let process = aggregator, process.isRunning else { return "bess-aggregator was not running" }
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            return "killed pid \(process.processIdentifier)"
        case .reload(let over):
            bessdConfig.config = Scenario.merge(bessdConfig.config, over)
            guard let path = try? writeConfig("bessd.yaml", offset: bessdOffset), let process = bessd, process.isRunning else {
                return "failed: bessd not running"
            }
            let written = try? String(contentsOfFile: path, encoding: .utf8)
            kill(process.processIdentifier, SIGHUP)
            // Applied when bessd's `config` answer is the file just written (the plant keeps serving meanwhile).
            let end = SystemClock.shared.now() + .seconds(5)
            while SystemClock.shared.now() < end {
                let loaded = try? ControlClient.answer(ControlRequest(.config), socket: controlSocket, timeout: .seconds(1))
                    .reply(as: ConfigReply.self)
                if loaded?.text == written {
                    reloadsApplied += 1
                    return "SIGHUP: applied"
                }
                plantStep()
                usleep(20_000)
            }
            return "SIGHUP sent; not applied within 5 s"
        }
    }

    func sample(_ rig: PlantRig, t: Double, hz: Double) -> Sample {
        var s = Sample(plant: rig, t: t, hz: hz, bessdUp: bessd?.isRunning == true)
        s.logLines = newLogLines()
        samplePMU(&s)
        guard s.bessdUp,
              let status = try? ControlClient.answer(ControlRequest(.status), socket: controlSocket, timeout: .seconds(1))
                  .reply(as: StatusReply.self), !status.units.isEmpty
        else { return s }
        let site = rig.configuration.site.meter == nil ? nil
            : try? ControlClient.answer(ControlRequest(.site), socket: controlSocket, timeout: .seconds(1)).reply(as: SiteReply.self)
        s.read(status: status, site: site)
        sampleSep2(&s)
        return s
    }

    // MARK: judging and results

    /// The run's verdict so far (`ScenarioJudge`).
    var judge: ScenarioJudge {
        ScenarioJudge(scenario: scenario, samples: samples, confirmationMisses: confirmationMisses, events: assessedEvents,
                      sep2Server: sep2Server, say: say)
    }

    /// The CSV and the plot (`ScenarioReport`); why there is no plot goes to the verdict line.
    func writeResults() throws(ScenarioError) {
        let report = ScenarioReport(scenario: scenario, samples: samples, executed: executed, runDirectory: runDirectory,
                                    outputDirectory: outputDirectory, units: unitIDs.count, hasPMU: pmu != nil,
                                    hasSep2: sep2Server != nil, events: assessedEvents)
        plotProblem = try report.write(plotter: plotter)
    }

    // MARK: helpers

    func freePort() -> Int { freeLoopbackPort() }

    /// A one-shot HTTP/1.1 request to the scenario's bess-aggregator; the whole answer, or nil.
    func httpRequest(_ method: String, _ path: String, body: String?) -> String? {
        LoopbackHTTP.request(port: aggregatorPort, method, path, body: body)
    }

}

func tail(_ path: String, lines: Int = 25) -> String {
    guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return "(no log)" }
    return text.split(separator: "\n", omittingEmptySubsequences: false).suffix(lines).joined(separator: "\n")
}
