import ControlProtocol
import Foundation
import Glibc
import Yams

/// The utility's IEEE 2030.5 server of a scenario: hil/peers/sep2_server.py (envoy-schema's documents,
/// TLS 1.2 CCM8, client certificate required) under pyenv's Python ≥ 3.12, on a loopback port the
/// kernel picks, with certificates made by `openssl` for this run only (none is ever committed). Its
/// admin channel (stdin, one JSON command a line, each acknowledged on its stdout) publishes,
/// replaces and cancels DERControls, replaces the DefaultDERControl and starts or ends an outage.
final class Sep2Plant {
    let directory: String
    let process: Process
    let commands: FileHandle
    let port: Int
    /// The client certificate's LFDI (upper case) and SFDI, as sep2cert derives them.
    let lfdi: String
    let sfdi: UInt64
    /// The server's stdout and stderr: `PORT n`, then a line per request and per command.
    var logPath: String { directory + "/sep2_server.log" }
    /// Whether controls ask for responses (`sep2.responses`).
    let responses: Bool
    /// What the server was told, in scenario seconds (`Sep2Schedule`): the judge's reference.
    var schedule = Sep2Schedule()
    /// Unix seconds at scenario time zero: a whole second, set by `startClock()` just before the
    /// scenario's clock starts, so that a control's whole `start_s` is its instant on the wire too.
    var unixAtZero: Double?

    /// Makes the certificates in `directory` and starts the server; `python` nil: the one
    /// scripts/ensure-python-peers.sh --python names (or $BESS_HIL_SEP2_PYTHON).
    init(settings: Scenario.Sep2Settings, directory: String, python given: String? = nil) throws(ScenarioError) {
        self.directory = directory
        responses = settings.responses
        schedule.defaults = [(-.infinity, settings.defaultLimits.isEmpty ? ["opModExpLimW": 5000] : settings.defaultLimits)]
        signal(SIGPIPE, SIG_IGN)  // a server that died fails the command's write, not bess-hil
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let python: String
        if let given { python = given } else { python = try Self.python(peers: settings.peersDirectory) }
        try Self.makeCertificates(in: directory)
        let identity = try Self.run(python, [settings.peersDirectory + "/sep2_peer.py", "identity", directory + "/client.pem"])
        guard let read = try? JSONDecoder().decode(Sep2Identity.self, from: Data(identity.utf8)) else {
            throw ScenarioError(.plantFailed, "sep2_peer.py identity gave no LFDI and SFDI: \(identity.prefix(200))")
        }
        self.lfdi = read.lfdi.uppercased()
        self.sfdi = read.sfdi
        let sfdi = read.sfdi
        process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = [settings.peersDirectory + "/sep2_server.py", "--port", "0", "--cert", directory + "/server.pem",
                             "--key", directory + "/server.key", "--ca", directory + "/ca.pem", "--lfdi", self.lfdi,
                             "--sfdi", String(sfdi), "--poll", String(settings.pollSeconds), "--admin-stdin"]
        let input = Pipe()
        commands = input.fileHandleForWriting
        let logPath = directory + "/sep2_server.log"
        FileManager.default.createFile(atPath: logPath, contents: nil)
        let log = FileHandle(forWritingAtPath: logPath)
        process.standardInput = input
        process.standardOutput = log ?? FileHandle.nullDevice
        process.standardError = log ?? FileHandle.nullDevice
        do { try process.run() } catch { throw ScenarioError(.plantFailed, "cannot start sep2_server.py: \(error)") }
        try? log?.close()
        var found = 0
        let end = Date().addingTimeInterval(20)
        while found == 0, Date() < end, process.isRunning {
            let text = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
            if let line = text.split(separator: "\n").first(where: { $0.hasPrefix("PORT ") }) { found = Int(line.dropFirst(5)) ?? 0 }
            if found == 0 { usleep(50_000) }
        }
        port = found
        guard found > 0 else {
            stop()
            throw ScenarioError(.plantFailed, "sep2_server.py printed no port; its log:\n" + tail(logPath))
        }
        if !settings.defaultLimits.isEmpty {
            let answer = send(.defaultControl(settings.defaultLimits), now: 0)
            guard answer.hasPrefix("ok") else { stop(); throw ScenarioError(.plantFailed, "sep2_server.py refused the default: \(answer)") }
        }
    }

    /// Sends one command and waits (2 s at most) for its acknowledgement: `ok …` or `refused: …`.
    /// `now`: the scenario's time, so that a control's `start_s` becomes Unix seconds.
    func send(_ order: Scenario.Sep2Order, now: Double) -> String {
        var command = Sep2AdminCommand()
        // One origin for the whole run: starts rounded from it stay whole seconds apart (a series'
        // controls back to back on the wire, not 1 s apart where a later send crossed a half second).
        let zero = unixAtZero ?? (Date().timeIntervalSince1970 - now)
        switch order {
        case .batch(let orders):
            let answers = orders.map { send($0, now: now) }
            let refused = answers.filter { !$0.hasPrefix("ok") }
            return refused.isEmpty ? "ok (\(answers.count) controls)" : "\(refused.count) of \(answers.count) not ok: \(refused[0])"
        case .control(let mrid, let start, let duration, let limits, let reactive):
            let unix = zero + (start ?? now)
            command.control = mrid
            command.start = Int(unix.rounded())
            command.duration = Int(duration.rounded())
            command.base = Sep2AdminBase(limits: limits.mapValues { Int($0) }, fixedVar: reactive.fixedVar, targetVar: reactive.targetVar.map { Int($0) },
                                         curves: reactive.curves)
            if responses { command.responseRequired = 3 }
        case .cancel(let mrid): command.cancel = mrid
        case .defaultControl(let limits): command.defaultLimits = limits.mapValues { Int($0) }
        case .answering(let state): command.answering = state == .start ? .on(true) : state == .stop ? .on(false) : .silent
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        guard process.isRunning, let data = try? encoder.encode(command) else {
            return "failed: sep2_server.py is not running"
        }
        let before = acknowledgements().count
        do { try commands.write(contentsOf: data + Data("\n".utf8)) } catch { return "failed: \(error)" }
        let end = Date().addingTimeInterval(2)
        while Date() < end {
            let all = acknowledgements()
            if all.count > before, let ack = try? JSONDecoder().decode(Sep2AdminAnswer.self, from: Data(all[before].utf8)) {
                if ack.admin == "ok" {
                    record(order, command: command, now: now)
                    return "ok" + (ack.created.map { " (creationTime \($0))" } ?? "")
                }
                return "refused: \(ack.reason ?? all[before])"
            }
            usleep(10_000)
        }
        return "failed: no acknowledgement within 2 s"
    }

    /// Waits for the next whole Unix second and takes it as scenario time zero. The server's times
    /// are whole seconds: from an origin taken anywhere else a control's `start_s` 15 went on the
    /// wire up to half a second (plus the rig's start-up) early or late, and a window judged up to
    /// 14.9 s saw the next limit.
    func startClock() {
        let target = (Date().timeIntervalSince1970 + 0.001).rounded(.up)
        var left = target - Date().timeIntervalSince1970
        while left > 0 {
            usleep(UInt32(min(left, 1) * 1_000_000))
            left = target - Date().timeIntervalSince1970
        }
        unixAtZero = target
    }

    /// Keeps an acknowledged command in `schedule`, on the scenario's clock.
    func record(_ order: Scenario.Sep2Order, command: Sep2AdminCommand, now: Double) {
        let zero = unixAtZero ?? 0
        switch order {
        case .control(let mrid, _, _, let limits, _):
            let start = Double(command.start ?? 0) - zero
            schedule.controls.removeAll { $0.mrid == mrid }
            schedule.controls.append(.init(mrid: mrid, published: now, start: start, end: start + Double(command.duration ?? 0),
                                           limits: limits, responses: command.responseRequired != nil))
        case .cancel(let mrid): schedule.cancelled[mrid] = now
        case .defaultControl(let limits): schedule.defaults.append((now, limits))
        case .answering, .batch: break
        }
    }

    /// The DERControlResponses the server recorded (`{"response": …}` lines), arrival in scenario seconds.
    func receivedResponses() -> [(subject: String, status: Int, at: Double)] {
        let zero = unixAtZero ?? 0
        return ((try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "").split(separator: "\n")
            .filter { $0.hasPrefix("{\"response\"") }
            .compactMap { try? JSONDecoder().decode(Sep2ResponseLine.self, from: Data($0.utf8)).response }
            .map { (Self.hexBinary($0.subject), $0.status, $0.at - zero) }
    }

    /// An mRID as hexBinary writes it: upper case, an even number of digits (envoy-schema pads
    /// `C01` to `0C01`).
    static func hexBinary(_ mrid: String) -> String {
        let upper = mrid.uppercased()
        return upper.utf8.count % 2 == 1 ? "0" + upper : upper
    }

    /// The admin channel's acknowledgements so far, in order.
    func acknowledgements() -> [String] {
        ((try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "").split(separator: "\n").filter { $0.hasPrefix("{\"admin\"") }.map(String.init)
    }

    func stop() {
        try? commands.close()
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
    }

    /// $BESS_HIL_SEP2_PYTHON, else what scripts/ensure-python-peers.sh --python prints.
    static func python(peers: String) throws(ScenarioError) -> String {
        if let given = ProcessInfo.processInfo.environment["BESS_HIL_SEP2_PYTHON"], !given.isEmpty { return given }
        let script = URL(fileURLWithPath: peers + "/../../scripts/ensure-python-peers.sh").standardized.path
        let path = try run(script, ["--python"]).trimmingCharacters(in: .whitespacesAndNewlines)
        guard !path.isEmpty else { throw ScenarioError(.plantFailed, "\(script) --python named no Python >= 3.12") }
        return path
    }

    /// A CA, the server's and the client's certificate and key (ECDSA P-256, two days), in `directory`.
    static func makeCertificates(in directory: String) throws(ScenarioError) {
        func path(_ name: String) -> String { directory + "/" + name }
        let key = ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out"]
        _ = try run("/usr/bin/openssl", key + [path("ca.key")])
        _ = try run("/usr/bin/openssl", ["req", "-x509", "-new", "-key", path("ca.key"), "-subj", "/CN=bess-hil utility CA", "-days", "2",
                                         "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
                                         "-out", path("ca.pem")])
        for (name, subject) in [("server", "/CN=bess-hil utility server"), ("client", "/CN=bess-hil site")] {
            _ = try run("/usr/bin/openssl", key + [path("\(name).key")])
            _ = try run("/usr/bin/openssl", ["req", "-new", "-key", path("\(name).key"), "-subj", subject, "-out", path("\(name).csr")])
            _ = try run("/usr/bin/openssl", ["x509", "-req", "-in", path("\(name).csr"), "-CA", path("ca.pem"), "-CAkey", path("ca.key"),
                                             "-CAcreateserial", "-days", "2", "-out", path("\(name).pem")])
        }
    }

    /// Runs `program` to its end; its stdout, or `SCENARIO_PLANT_FAILED` with its output.
    static func run(_ program: String, _ arguments: [String]) throws(ScenarioError) -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: program)
        process.arguments = arguments
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        do { try process.run() } catch { throw ScenarioError(.plantFailed, "cannot run \(program): \(error)") }
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let errors = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw ScenarioError(.plantFailed, "\(program) \(arguments.first ?? ""): exit \(process.terminationStatus): \(errors.suffix(400))")
        }
        return text
    }
}

extension ScenarioRun {
    /// Starts the plant's 2030.5 server when the scenario has a `sep2:` section.
    func startSep2() throws(ScenarioError) {
        guard let settings = scenario.sep2 else { return }
        sep2Server = try Sep2Plant(settings: settings, directory: runDirectory + "/sep2")
    }

    /// A `sep2` step.
    func commandSep2(_ order: Scenario.Sep2Order, t: Double) -> String {
        guard let server = sep2Server else { return "failed: no 2030.5 server" }
        return server.send(order, now: t)
    }

    /// The controls bessd says are in force (`status` → `ieee2030_5.controls`, values `1500 W`), kW.
    func sampleSep2(_ s: inout Sample) {
        guard sep2Server != nil,
              let answer = try? ControlClient.answer(ControlRequest(.status), socket: controlSocket, timeout: .seconds(1)) else { return }
        s.sep2 = Self.sep2Limits(statusJSON: answer.bytes)
    }

    /// `ieee2030_5.controls` of a status answer as the scenario's signals (kW); a limit not in force is absent.
    static func sep2Limits(statusJSON: [UInt8]) -> [String: Double] {
        guard let status = try? JSONDecoder().decode(Sep2StatusControls.self, from: Data(statusJSON)),
              let controls = status.ieee2030_5?.controls else { return [:] }
        var limits: [String: Double] = [:]
        for control in controls {
            let value = control.value
            guard let index = Scenario.sep2Limits.firstIndex(of: control.type),
                  value.hasSuffix(" W"), let watts = Double(value.dropLast(2)) else { continue }
            limits[Scenario.sep2Signals[index]] = watts / 1000
        }
        return limits
    }

}

/// What the plant's 2030.5 server was told, in scenario seconds: the schedule an expectation judges
/// bessd's limits against.
struct Sep2Schedule {
    struct Control {
        var mrid: String
        var published: Double
        var start: Double
        var end: Double
        var limits: [String: Double]
        var responses: Bool
    }
    /// In publication order; a replaced mRID keeps only its last version.
    var controls: [Control] = []
    var cancelled: [String: Double] = [:]
    /// The DefaultDERControl from each instant on (the first from the start).
    var defaults: [(at: Double, limits: [String: Double])] = []

    /// The limit `key` in force at `t`, W, and what puts it there (a control's mRID, `default`);
    /// nil when nothing does. The latest-published control in its window wins.
    func limit(_ key: String, at t: Double) -> (watts: Double, source: String)? {
        if let c = controls.last(where: { $0.start <= t && t < $0.end && $0.limits[key] != nil && (cancelled[$0.mrid].map { t < $0 } ?? true) }) {
            return (c.limits[key]!, c.mrid)
        }
        return defaults.last(where: { $0.at <= t })?.limits[key].map { ($0, "default") }
    }

    /// Every limit the schedule ever names.
    var keys: [String] {
        let named = Set(controls.flatMap(\.limits.keys) + defaults.flatMap(\.limits.keys))
        return Scenario.sep2Limits.filter(named.contains)
    }
}

/// One `{"response": …}` line of sep2_server.py.
private struct Sep2ResponseLine: Decodable {
    struct Response: Decodable {
        var subject: String
        var status: Int
        var at: Double
    }
    var response: Response
}

/// `sep2_peer.py identity`'s answer: the certificate's LFDI and SFDI as sep2cert derives them.
private struct Sep2Identity: Decodable {
    var lfdi: String
    var sfdi: UInt64
}

/// One command on sep2_server.py's admin channel (a JSON line; keys a command does not use are left out).
struct Sep2AdminCommand: Encodable {
    var control: String?
    var start: Int?
    var duration: Int?
    var base: Sep2AdminBase?
    var cancel: String?
    var defaultLimits: [String: Int]?
    var answering: Answering?
    var responseRequired: Int?

    /// `true`, `false` or `"silent"` on the wire.
    enum Answering: Encodable {
        case on(Bool)
        case silent

        func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            switch self {
            case .on(let on): try container.encode(on)
            case .silent: try container.encode("silent")
            }
        }
    }

    enum CodingKeys: String, CodingKey {
        case control, start, duration, base, cancel, answering, responseRequired
        case defaultLimits = "default"
    }
}

/// A control's `base` on the admin channel: each limit in W, `opModFixedVar` as `{refType, value}`
/// (hundredths of a percent), `opModTargetVar` in var.
struct Sep2AdminBase: Encodable {
    var limits: [String: Int] = [:]
    var fixedVar: Scenario.Sep2Reactive.FixedVar?
    var targetVar: Int?
    /// `opModVoltVar`, `opModWattVar`, `opModVoltWatt`: `{points, openLoopTms}` each (sep2_server.py serves
    /// the curve each links to).
    var curves: [String: Sep2Curve] = [:]

    struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(_ name: String) { stringValue = name }
        init?(stringValue: String) { self.init(stringValue) }
        init?(intValue: Int) { nil }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        for (name, watts) in limits { try container.encode(watts, forKey: Key(name)) }
        if let fixedVar {
            var fixed = container.nestedContainer(keyedBy: Key.self, forKey: Key("opModFixedVar"))
            try fixed.encode(fixedVar.refType, forKey: Key("refType"))
            try fixed.encode(fixedVar.hundredthsPercent, forKey: Key("value"))
        }
        if let targetVar { try container.encode(targetVar, forKey: Key("opModTargetVar")) }
        for (element, curve) in curves { try container.encode(curve, forKey: Key(element)) }
    }
}

/// sep2_server.py's acknowledgement of an admin command: `ok` (with the control's creationTime) or
/// `error` with its reason.
private struct Sep2AdminAnswer: Decodable {
    var admin: String
    var created: Int64?
    var reason: String?
}

/// The part of a `status` answer the scenario samples: the 2030.5 controls in force, as
/// `IEEE2030_5ControlReply` writes them (`type`, `value` such as `1500 W`).
private struct Sep2StatusControls: Decodable {
    struct Section: Decodable {
        struct Control: Decodable {
            var type: String
            var value: String
        }
        var controls: [Control]
    }
    var ieee2030_5: Section?
}
