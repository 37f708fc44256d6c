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

    var config: Node
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
    /// bessd's SCADA server (when the timeline writes to it) and where its model 704 sits.
    var scadaPort = 0
    var scadaImage: ScadaImage?
    /// bessd's IEC 104 outstation (when the timeline commands through it): its port, common
    /// address and command IOAs, and the control centre's connection (opened at the first command).
    var iec104Port = 0
    var iec104Server: OutstationSettings?
    var controlCentre: ControlCentre?
    /// `iec104` actions whose confirmation was not the one the file expects.
    var confirmationMisses: [String] = []
    /// How far bessd's log has been read into the samples' `logLines`.
    var logOffset: UInt64 = 0
    /// Steps the plant while the runner waits (for bessd to start).
    var plantStep: () -> Void = {}
    /// gnuplot, found before the run; nil: the verdict stands without a picture.
    var plotter: String? = ScenarioRun.program("gnuplot")
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

    /// `name` on PATH, when it is an executable file.
    static func program(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        return path.split(separator: ":").map { $0 + "/" + name }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// The programs a scenario needs, checked before the first second of it runs: a missing one
    /// costs the verdict at once (`SCENARIO_BESSD_MISSING`, `SCENARIO_AGGREGATOR_MISSING`), not at
    /// the end of the run.
    static func missingPrograms(for scenario: Scenario, bessdPath: String, aggregatorPath: String) -> ScenarioError? {
        if !FileManager.default.isExecutableFile(atPath: bessdPath) {
            return ScenarioError(.bessdMissing, "no bessd at \(bessdPath) (build it: swift build, or pass --bessd PATH)")
        }
        if scenario.needsAggregator, !FileManager.default.isExecutableFile(atPath: aggregatorPath)
        {
            return ScenarioError(.aggregatorMissing,
                                 "this scenario needs bess-aggregator and there is none at \(aggregatorPath) (pass --aggregator PATH)")
        }
        return nil
    }

    init(scenario: Scenario, outputDirectory: String, bessdPath: String, aggregatorPath: String, canInterface: String,
         say: @escaping (String) -> Void) {
        self.scenario = scenario
        self.outputDirectory = outputDirectory
        self.bessdPath = bessdPath
        self.aggregatorPath = aggregatorPath
        self.canInterface = canInterface
        self.say = say
        config = scenario.config
        runDirectory = "/tmp/bess-hil-scenario-\(scenario.name)-\(getpid())"
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
            try prepareConfiguration()
            let plantConfiguration = try load(writeConfig("plant.yaml", offset: 0))
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
        let t0 = SystemClock.shared.now()
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
        stopBessd()
        try writeResults()
        return judge()
    }

    // MARK: configuration

    /// Sets what the rig needs around the scenario's configuration: loopback ports, a private
    /// control socket and state directory, the frequency trace, the BMS transport.
    func prepareConfiguration() throws(ScenarioError) {
        let trace = scenario.frequencyTrace.map { "\($0.0),\($0.1)" }.joined(separator: "\n")
        let tracePath = runDirectory + "/frequency.csv"
        guard (try? ("seconds,hz\n" + trace + "\n").write(toFile: tracePath, atomically: true, encoding: .utf8)) != nil else {
            throw ScenarioError(.io, "cannot write \(tracePath)")
        }
        var root = config.mapping ?? [:]
        root["mode"] = Node("hil")  // scenarios inject faults and may simulate the BMS
        root["control_socket"] = Node(controlSocket)
        root["state_directory"] = Node(runDirectory + "/state")
        root["metrics_listen"] = nil
        var units = root["bess_units"]?.sequence ?? []
        for i in units.indices {
            guard var unit = units[i].mapping else { continue }
            var modbus = unit["modbus"]?.mapping ?? [:]
            modbus["host"] = Node("127.0.0.1")
            modbus["port"] = Node(String(freePort()))  // one simulated inverter server per unit
            modbus["unit_id"] = Node("1")
            unit["modbus"] = .mapping(modbus)
            var bms = unit["bms"]?.mapping ?? [:]
            if scenario.requiresCAN {
                bms["simulated"] = nil
                bms["interface"] = Node(canInterface)
            } else {
                bms["simulated"] = Node("true")
            }
            unit["bms"] = .mapping(bms)
            units[i] = .mapping(unit)
        }
        root["bess_units"] = .sequence(Node.Sequence(units))
        // A site meter the plant serves (unless the scenario simulates it inside bessd).
        if var site = root["site"]?.mapping, var meter = site["meter"]?.mapping, meter["simulated"]?.string != "true" {
            var modbus = meter["modbus"]?.mapping ?? [:]
            modbus["host"] = Node("127.0.0.1")
            modbus["port"] = Node(String(freePort()))
            modbus["unit_id"] = Node("1")
            meter["modbus"] = .mapping(modbus)
            site["meter"] = .mapping(meter)
            root["site"] = .mapping(site)
        }
        // SCADA on a free loopback port, writes on, when the timeline writes to it.
        if scenario.actions.contains(where: { if case .scada = $0.kind { true } else { false } }) {
            scadaPort = freePort()
            var scada = root["scada"]?.mapping ?? [:]
            scada["listen"] = Node("127.0.0.1:\(scadaPort)")
            scada["allow_from"] = .sequence([Node("127.0.0.1")])
            if scada["writes"] == nil { scada["writes"] = Node("true") }
            root["scada"] = .mapping(scada)
        }
        // The IEC 104 outstation on a free loopback port when the timeline commands through it; without
        // groups of its own, one group of loopback clients that may command AGC and the setpoint.
        if scenario.needsIEC104 {
            iec104Port = freePort()
            var iec104 = root["iec104"]?.mapping ?? [:]
            iec104["listen"] = Node("127.0.0.1:\(iec104Port)")
            if iec104["groups"] == nil {
                iec104["groups"] = .sequence([.mapping([Node("name"): Node("hil"), Node("allow_from"): .sequence([Node("127.0.0.1")]),
                                                        Node("commands"): .sequence([Node("agc"), Node("setpoint")])])])
            }
            root["iec104"] = .mapping(iec104)
        }
        var grid = root["grid_integration"]?.mapping ?? [:]
        configureFrequencySource(&grid)
        root["grid_integration"] = .mapping(grid)
        var simulation = root["simulation"]?.mapping ?? [:]
        simulation["frequency_profile"] = Node("trace")
        simulation["trace_file"] = Node(tracePath)
        root["simulation"] = .mapping(simulation)
        configureSep2(&root)
        config = .mapping(root)
    }

    /// Writes the configuration with the scenario's faults, their times moved `offset` seconds
    /// earlier (bessd's own clock starts when it does), and returns its path.
    func writeConfig(_ name: String, offset: Double) throws(ScenarioError) -> String {
        var root = config.mapping ?? [:]
        var simulation = root["simulation"]?.mapping ?? [:]
        var faults: [Node] = []
        for action in scenario.actions {
            guard case .fault(let node) = action.kind, var f = node.mapping else { continue }
            let at = action.at - offset
            let duration = f["duration_s"]?.float ?? 0
            if at < 0 {
                if duration > 0 && duration + at <= 0 { continue }  // over before bessd started
                if duration > 0 { f["duration_s"] = Node(String(duration + at)) }
            }
            f["at_s"] = Node(String(max(0, at)))
            faults.append(.mapping(f))
        }
        simulation["faults"] = .sequence(Node.Sequence(faults))
        root["simulation"] = .mapping(simulation)
        if aggregatorPort > 0 {
            root["aggregator"] = .mapping([Node("url"): Node("http://127.0.0.1:\(aggregatorPort)"), Node("interval_s"): Node("1"),
                                           Node("site_id"): Node("HIL")])
        }
        let path = runDirectory + "/" + name
        guard let text = try? Yams.serialize(node: .mapping(root)),
              (try? text.write(toFile: path, atomically: true, encoding: .utf8)) != nil
        else { throw ScenarioError(.io, "cannot write \(path)") }
        return path
    }

    func load(_ path: String) throws(ScenarioError) -> BessdConfiguration {
        do {
            return try ConfigLoader.load(path: path)
        } catch {
            throw ScenarioError(.configInvalid,
                                "the scenario's bessd configuration is refused:\n" + error.diagnostics.map { "  \($0)" }.joined(separator: "\n"))
        }
    }

    // MARK: processes

    func startBessd(at t: Double) throws(ScenarioError) {
        bessdOffset = t
        let path = try writeConfig("bessd.yaml", offset: t)
        _ = try load(path)
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
        case .frequency, .ramp, .fault: return "(plant)"
        case .reset: return ask(ControlRequest(.reset))
        case .mode(let mode): return ask(ControlRequest(.mode, mode: mode))
        case .override(let kw, let seconds):
            return ask(ControlRequest(.override, unit: unitIDs.first ?? "", powerKW: kw, forSeconds: seconds))
        case .clearOverride: return ask(ControlRequest(.override, unit: unitIDs.first ?? "", clear: true))
        case .dispatch(let kw, let seconds, let unit):
            // A site dispatch names no unit: its power is the site's, shared by the allocation.
            let target = unit == "site" ? "" : "\"unit\":\"\(unit ?? unitIDs.first ?? "")\","
            let command = "{\"id\":\"scenario-\(Int(t * 1000))\",\"kind\":\"power\",\(target)"
                + "\"power_kw\":\(kw),\"expires_unix\":\(Date().timeIntervalSince1970 + seconds)}"
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
            return writeScada(points)
        case .iec104(let orders):
            return commandIEC104(orders, action: action, t: t)
        case .pmu(let hz, let status, let bad):
            return setPMU(hz: hz, status: status, badFrames: bad)
        case .sep2(let order):
            return commandSep2(order, t: t)
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
            config = Scenario.merge(config, over)
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

    /// Writes model 704 points to bessd's SCADA server, one request per run of adjacent points.
    func writeScada(_ points: [(point: String, value: Double)]) -> String {
        guard let image = scadaImage, let m = image.start(of: 704) else { return "failed: no scada: block" }
        var registers: [(address: Int, words: [UInt16])] = []
        for point in SunSpecTables.M704.points {
            guard let value = points.first(where: { $0.point == point.name })?.value else { continue }
            let raw = Int((value / (point.scaleFactor == "WSet_SF" ? SunSpec.powerOfTen(image.wSF) : 1)).rounded())
            let words: [UInt16] = point.size == 2 ? [UInt16(truncatingIfNeeded: raw >> 16), UInt16(truncatingIfNeeded: raw)]
                : [UInt16(truncatingIfNeeded: raw)]
            let address = ScadaImage.base + m + point.offset
            if let last = registers.last, last.address + last.words.count == address {
                registers[registers.count - 1].words += words
            } else {
                registers.append((address, words))
            }
        }
        do {
            let client = try ModbusConnection(endpoint: .tcp(host: "127.0.0.1", port: scadaPort), unitID: 1, timeout: .seconds(1))
            defer { client.close() }
            for run in registers { try client.writeRegisters(unit: 1, at: run.address, run.words) }
            return "ok (\(registers.count) request(s))"
        } catch {
            return "refused: \(error)"
        }
    }

    func sample(_ rig: PlantRig, t: Double, hz: Double) -> Sample {
        let unit = rig.units[0]
        var s = Sample(t: t, frequency: hz, setpointKW: unit.inverter.setpointW / 1000, powerKW: unit.inverter.powerW / 1000,
                       socPercent: unit.battery.soc * 100, reverted: unit.inverter.reverted, bessdUp: bessd?.isRunning == true)
        s.sitePowerKW = rig.units.reduce(0.0) { $0 + $1.inverter.powerW } / 1000
        let socs = rig.units.map { $0.battery.soc * 100 }
        s.socSpreadPercent = (socs.max() ?? 0) - (socs.min() ?? 0)
        if rig.meterServer != nil { s.gridKW = rig.meter.gridPowerW / 1000 }
        s.logLines = newLogLines()
        samplePMU(&s)
        guard s.bessdUp,
              let status = try? ControlClient.answer(ControlRequest(.status), socket: controlSocket, timeout: .seconds(1))
                  .reply(as: StatusReply.self),
              let first = status.units.first
        else { return s }
        if rig.configuration.site.meter != nil,
           let site = try? ControlClient.answer(ControlRequest(.site), socket: controlSocket, timeout: .seconds(1)).reply(as: SiteReply.self) {
            if site.meter.stale == true { s.active.append("METER_STALE") }
            if site.shortfall.active { s.active.append("SITE_SHORTFALL") }
        }
        s.bessdSetpointKW = (first.setpointW ?? .nan) / 1000
        s.allowedChargeKW = (first.allowedChargeW ?? .nan) / 1000
        s.allowedDischargeKW = (first.allowedDischargeW ?? .nan) / 1000
        if let soc = first.socPercent { s.socPercent = soc }
        s.statusOK = true
        s.operatorCapKW = (status.gridOperator.capW ?? .nan) / 1000
        s.scadaSetpointKW = (status.gridOperator.scadaSetpoint?.powerW ?? .nan) / 1000
        if let agc = status.agc {
            s.agcTargetKW = (agc.targetW ?? .nan) / 1000
            s.agcFollowedKW = (agc.followedW ?? .nan) / 1000
            s.agcFollowing = agc.following
            s.agcSignalLost = agc.signalLost
        }
        s.state = first.state
        s.bessdFrequencyHz = status.frequencyHz ?? .nan
        s.frequencySource = status.frequencySource ?? "-"
        sampleSep2(&s)
        s.active += first.trips
        s.latched = first.latched
        return s
    }

    // MARK: judging and results

    func judge() -> [String] {
        scenario.expectations.enumerated().compactMap { index, e in
            miss(e).map { "expect[\(index)]" + (e.why.isEmpty ? "" : " (\(e.why))") + $0 }
        } + confirmationMisses.map { "confirm: \($0)" } + eventMisses()
    }

    /// How the samples miss expectation `e` (nil: met), as the text after its label.
    func miss(_ e: Scenario.Expectation) -> String? {
        if !e.journal.isEmpty { return journalMiss(e) }
        if let check = e.sep2, case .always(let from, let to) = e.window { return sep2Miss(check, from: from, to: to) }
        if let r = e.reversals, case .always(let from, let to) = e.window { return reversalsMiss(r, from: from, to: to) }
        switch e.window {
        case .at(let t):
            guard let s = samples.min(by: { abs($0.t - t) < abs($1.t - t) }), abs(s.t - t) <= 0.25 else {
                return ": no sample within 0.25 s of \(fmt(t)) s"
            }
            return s.check(e).map { " at \(fmt(s.t)) s: \($0)" }
        case .always(let from, let to):
            let window = samples.filter { $0.t >= from && $0.t <= to }
            if window.isEmpty { return ": no samples in \(fmt(from))–\(fmt(to)) s" }
            guard let bad = window.first(where: { $0.check(e) != nil }) else { return nil }
            return " from \(fmt(from)) to \(fmt(to)) s: at \(fmt(bad.t)) s \(bad.check(e)!)"
        case .eventually(let after, let by):
            let window = samples.filter { $0.t >= after && $0.t <= by }
            if window.contains(where: { $0.check(e) == nil }) { return nil }
            let last = window.last.flatMap { $0.check(e) } ?? "no samples"
            return ": never between \(fmt(after)) and \(fmt(by)) s (last: \(last))"
        }
    }

    func writeResults() throws(ScenarioError) {
        let base = outputDirectory + "/" + scenario.name
        var csv = "t_s,frequency_hz,setpoint_kw,power_kw,soc_percent,bessd_setpoint_kw,allowed_charge_kw,allowed_discharge_kw,state,reverted,bessd,active,latched,grid_kw,site_power_kw,soc_spread_percent,operator_cap_kw,scada_setpoint_kw,agc_target_kw,agc_followed_kw,pmu_hz,pmu_stat,bessd_frequency_hz,frequency_source,pmu_bad_hz,"
            + Scenario.sep2Signals.joined(separator: ",") + "\n"
        for s in samples {
            csv += "\(fmt(s.t)),\(String(format: "%.4f", s.frequency)),\(fmt(s.setpointKW)),\(fmt(s.powerKW)),\(fmt(s.socPercent)),"
                + "\(fmt(s.bessdSetpointKW)),\(fmt(s.allowedChargeKW)),\(fmt(s.allowedDischargeKW)),\(s.state),\(s.reverted ? 1 : 0),"
                + "\(s.bessdUp ? 1 : 0),\(s.active.joined(separator: "|")),\(s.latched.joined(separator: "|")),"
                + "\(fmt(s.gridKW)),\(fmt(s.sitePowerKW)),\(fmt(s.socSpreadPercent)),\(fmt(s.operatorCapKW)),\(fmt(s.scadaSetpointKW)),"
                + "\(fmt(s.agcTargetKW)),\(fmt(s.agcFollowedKW)),\(hertz(s.pmuHz)),\(s.pmuStatus),"
                + "\(hertz(s.bessdFrequencyHz)),\(s.frequencySource),\(hertz(s.pmuBadHz)),\(sep2Columns(s))\n"
        }
        guard (try? csv.write(toFile: base + ".csv", atomically: true, encoding: .utf8)) != nil else {
            throw ScenarioError(.io, "cannot write \(base).csv")
        }
        // The verdict never depends on the picture: a plot that cannot be drawn is said, not failed.
        guard let plotter else {
            plotProblem = "no plot: gnuplot is not installed (apt-get install gnuplot-nox)"
            return
        }
        do { try plot(csv: base + ".csv", png: base + ".png", gnuplot: plotter) } catch { plotProblem = "no plot: \(error)" }
    }

    /// Frequency, setpoint and measured power, SOC: three panels sharing the time axis, a dashed
    /// line at each timeline action.
    func plot(csv: String, png: String, gnuplot: String) throws(ScenarioError) {
        var marks = ""
        for (i, e) in executed.enumerated() {
            marks += "set arrow \(i + 1) from \(fmt(e.at)), graph 0 to \(fmt(e.at)), graph 1 nohead dt 3 lc rgb '#888888'\n"
        }
        var labels = ""
        for (i, e) in executed.enumerated() {
            let text = e.label.replacingOccurrences(of: "'", with: "")
            labels += "set label \(i + 1) '\(text)' at \(fmt(e.at)), graph \(0.95 - Double(i % 4) * 0.1) left offset 0.3,0 font ',8' tc rgb '#555555' noenhanced\n"
        }
        let title = "\(scenario.name): \(scenario.description)".replacingOccurrences(of: "'", with: "")
        let script = """
        set terminal pngcairo size 1100,820 font 'DejaVu Sans,9'
        set output '\(png)'
        set datafile separator ','
        set key autotitle columnhead
        set grid
        set termoption noenhanced
        set multiplot layout 3,1 title '\(title)' font ',10'
        set lmargin 10
        set xrange [0:\(fmt(scenario.duration))]
        \(marks)
        \(labels)
        set ylabel 'frequency (Hz)'
        set format x ''
        \(pmuPanel(opening: true))
        plot '\(csv)' using 1:2 with lines lw 1.5 lc rgb '#1f77b4' title 'grid frequency (plant)'\(pmuLines(csv))
        unset label
        \(pmuPanel(opening: false))
        \(eventLabels())
        set ylabel 'power (kW, + discharge)'
        plot '\(csv)' using 1:3 with steps lw 1.5 lc rgb '#d62728' title 'setpoint on the wire', \\
             '' using 1:4 with lines lw 1.5 lc rgb '#2ca02c' title 'measured power'\(siteLines(csv))
        unset label
        set ylabel 'SOC (%)'
        set format x '%g'
        set xlabel 'time (s)'
        plot '\(csv)' using 1:5 with lines lw 1.5 lc rgb '#9467bd' title 'state of charge'
        unset multiplot
        """
        let scriptPath = runDirectory + "/plot.gp"
        try? script.write(toFile: scriptPath, atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: gnuplot)
        process.arguments = [scriptPath]
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        do { try process.run() } catch {
            throw ScenarioError(.plotFailed, "cannot start \(gnuplot): \(error)")
        }
        let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw ScenarioError(.plotFailed, "gnuplot: \(message)")
        }
    }

    /// With a site meter or several units: grid power at the connection point (+ = import) and
    /// the units' power together on the power panel.
    func siteLines(_ csv: String) -> String {
        var lines = ""
        if samples.contains(where: { $0.gridKW.isFinite }) {
            lines += ", \\\n     '\(csv)' using 1:14 with lines lw 2 lc rgb '#ff7f0e' title 'grid power (+ import)'"
        }
        if unitIDs.count > 1 {
            lines += ", \\\n     '\(csv)' using 1:15 with lines lw 1.5 dt 2 lc rgb '#17becf' title 'all units (measured)'"
        }
        if samples.contains(where: { $0.operatorCapKW.isFinite }) {
            lines += ", \\\n     '\(csv)' using 1:($17) with lines lw 1.5 dt 3 lc rgb '#8c564b' title 'grid operator cap'"
        }
        if samples.contains(where: { $0.scadaSetpointKW.isFinite }) {
            lines += ", \\\n     '\(csv)' using 1:($18) with steps lw 1 dt 4 lc rgb '#e377c2' title 'SCADA setpoint'"
        }
        if samples.contains(where: { $0.agcTargetKW.isFinite }) {
            lines += ", \\\n     '\(csv)' using 1:($19) with steps lw 1.5 dt 2 lc rgb '#000000' title 'AGC target (IEC 104)'"
        }
        if samples.contains(where: { $0.agcFollowedKW.isFinite }) {
            lines += ", \\\n     '\(csv)' using 1:($20) with lines lw 1 lc rgb '#7f7f7f' title 'AGC followed (ramped base)'"
        }
        return lines + sep2Lines(csv)
    }

    // MARK: helpers

    func freePort() -> Int { freeLoopbackPort() }

    /// A one-shot HTTP/1.1 request to the scenario's bess-aggregator; the whole answer, or nil.
    func httpRequest(_ method: String, _ path: String, body: String?) -> String? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = in_port_t(UInt16(aggregatorPort).bigEndian)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { return nil }
        var tv = timeval(tv_sec: 3, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        let payload = body ?? ""
        let request = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            + "Content-Length: \(payload.utf8.count)\r\nConnection: close\r\n\r\n\(payload)"
        _ = request.withCString { write(fd, $0, strlen($0)) }
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = read(fd, &chunk, chunk.count)
            if count <= 0 { break }
            received += chunk.prefix(count)
        }
        return received.isEmpty ? nil : String(decoding: received, as: UTF8.self)
    }
}

func tail(_ path: String, lines: Int = 25) -> String {
    guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return "(no log)" }
    return text.split(separator: "\n", omittingEmptySubsequences: false).suffix(lines).joined(separator: "\n")
}
