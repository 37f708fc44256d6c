import BessSystem
import Config
import ControlCore
import ControlProtocol
import Cycle
import Foundation
import Logging
import Simulation
import Service

/// Control-socket request lines from callers of each role, answered by a real (not started) daemon on
/// the simulated site. Invariants: a caller with no role is refused everything and a reader every act,
/// with `PERMISSION_DENIED`; every answer given at once is valid JSON with `ok`, and a refusal carries a
/// code and changes nothing; whatever reaches the cycle's mailbox is inside the unit's rating and
/// expires within 24 h.
enum ControlHarness {
    nonisolated(unsafe) static let daemon: Daemon = {
        var configuration = try! ConfigLoader.parse(EmbeddedConfiguration.simulationYAML, file: "(embedded)")
        let directory = NSTemporaryDirectory() + "bess-fuzz-control-\(getpid())"
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        configuration.stateDirectory = directory
        configuration.aggregator = nil
        configuration.scada = nil
        let logger = Logger(label: "fuzz", factory: { _ in SwiftLogNoOpLogHandler() })
        return try! Daemon(configuration: configuration, configPath: nil, logger: logger, say: { _ in }) { started, output throws(RunError) in
            try SiteRunner.make(configuration: configuration, startedAt: started, output: output)
        }
    }()

    static func run(_ input: inout FuzzInput) -> [String] {
        let role: ControlCaller.Role = switch input.u8() % 3 { case 0: .none; case 1: .reader; default: .operator }
        let line = input.rest()
        // As the socket reads it (ServiceServer): a line that is not a JSON object is refused there.
        guard let request = try? JSONDecoder().decode(ControlRequest.self, from: Data(line)) else { return [] }
        let verb = request.verb.name
        var violations = Violations()
        let before = daemon.shared.peekMailbox().generation
        let reply = daemon.handle(request, caller: ControlCaller(uid: 4242, pid: 1, role: role))
        switch reply {
        case .now(let answer):
            // The line the socket would send, through the writer the service thread uses.
            let sent = answer.line
            let outcome = try? JSONDecoder().decode(ControlOutcome.self, from: Data(sent.dropLast()))
            violations.check(sent.last == 0x0A && sent.firstIndex(of: 0x0A) == sent.count - 1, "\(verb): answer is not one line")
            violations.check(outcome?.ok != nil, "\(verb): answer is not JSON with ok: \(answer)")
            if outcome?.ok != true {
                violations.check(!(outcome?.code ?? "").isEmpty, "\(verb): refusal without a code: \(answer)")
                violations.check(daemon.shared.peekMailbox().generation == before, "\(verb): a refusal changed the mailbox")
            }
            if role < ControlCaller.needed(request.verb) {
                violations.check(outcome?.code == "PERMISSION_DENIED", "\(verb) by a \(role): answered \(answer)")
            }
        case .afterCycle:
            violations.check(role == .operator, "\(verb) by a \(role) reached the cycle")
        }
        let mailbox = daemon.shared.peekMailbox()
        for (i, unit) in daemon.configuration.units.enumerated() {
            if let override = mailbox.override[i] {
                violations.check(override.power.value.isFinite && abs(override.power.value) <= unit.maxPowerKW * 1000 + 1e-6,
                                 "unit \(unit.id): override \(override.power) beyond ±\(unit.maxPowerKW) kW")
                violations.check(override.lasting >= .seconds(1) && override.lasting <= .seconds(86_400), "unit \(unit.id): override for \(override.lasting)")
            }
        }
        return violations.list
    }

    static func seeds() -> [[UInt8]] {
        let lines = [
            #"{"verb": "status"}"#, #"{"verb": "faults"}"#, #"{"verb": "site"}"#, #"{"verb": "reset", "unit": "BESS_SIM_01"}"#,
            #"{"verb": "mode", "mode": "standby"}"#, #"{"verb": "mode", "mode": "auto", "unit": -1}"#,
            #"{"verb": "override", "unit": "BESS_SIM_01", "power_kw": 20, "for_s": 60}"#, #"{"verb": "override", "unit": "BESS_SIM_01", "clear": true}"#,
        ]
        return lines.flatMap { line in (0..<3).map { [UInt8($0)] + Array(line.utf8) } }
    }
}
