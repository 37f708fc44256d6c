import BessBase
import BessSystem
import ControlCore
import Foundation
import Logging
import Simulation
@testable import Service
@testable import Cycle
@testable import Config
import TestSupport
import Testing

/// The one restart-key mechanism a reload runs on (`ReloadRules`): each section's keys declared live
/// or restart, and one sentence that names the changed restart keys.
@Suite("Reload rules")
struct ReloadRulesTests {
    static func configuration() throws -> BessdConfiguration {
        try ConfigLoader.parse(EmbeddedConfiguration.simulationYAML, file: "embedded")
    }

    /// Restart key: frequency_source; live key: droop.
    @Test("SiteRunner.reconfigure refuses a restart key by name, keeps the settings, applies a live key")
    func restartRefusedLiveApplied() throws {
        let c = try Self.configuration()
        let runner = try SiteRunner.make(configuration: c, startedAt: .zero) { _ in }
        var restart = c
        restart.grid.frequencySource = .inverter
        restart.grid.droop.droopUnderPercent = 9
        do throws(RunError) {
            try runner.reconfigure(restart, now: .zero)
            Issue.record("a changed frequency_source was applied")
        } catch {
            #expect(error.code == .reloadRefused)
            #expect(error.message == "frequency_source changed; restart bessd to apply", "\(error)")
        }
        #expect(runner.settings.frequencySource == c.grid.frequencySource, "the refused reload left the running settings")
        #expect(runner.settings.control.droop.droopUnderPercent != 9)

        var live = c
        live.grid.droop.droopUnderPercent = 7
        try runner.reconfigure(live, now: .zero)
        #expect(runner.settings.control.droop.droopUnderPercent == 7)
    }

    /// Settings with a field no rule declares (as a new block is, until its line is added).
    struct Toy: Equatable {
        var port = 1
        var gain = 0.5
        var added: String? = nil
    }

    @Test("a reload's REALTIME_DEGRADED line: the start's code, level and MESSAGE_ID, opening with reload:")
    func realtimeDegradedOnReload() {
        let notice = Reloader.realtimeNotice("REALTIME_DEGRADED: SCHED_FIFO 20 refused (Operation not permitted); the cycle runs SCHED_OTHER")
        let metadata = Journal.metadata(notice)
        #expect(notice.message == "reload: REALTIME_DEGRADED: SCHED_FIFO 20 refused (Operation not permitted); the cycle runs SCHED_OTHER")
        #expect(notice.severity == .warning && metadata["BESS_CODE"] == "REALTIME_DEGRADED")
        #expect(metadata["MESSAGE_ID"] == "\(MessageID.device)", "REALTIME_DEGRADED is on the device row of docs/operations.md, at start and at reload")
    }

    @Test("section rules: live keys report nothing; changed restart keys named once; undeclared keys restart")
    func declaredAndUndeclared() {
        let rules = ReloadRules<Toy>(section: "toy", outcome: .refuse, undeclaredNeedRestart: true, [
            .restart("toy.port", \.port),
            .live("toy.gain", \.gain),
        ])
        let old = Toy()
        var new = old
        new.gain = 2
        #expect(rules.restartNeeded(from: old, to: new) == nil)
        new.port = 2
        #expect(rules.restartNeeded(from: old, to: new)?.description == "toy.port changed; restart bessd to apply")
        new.added = "pmu"
        #expect(rules.restartNeeded(from: old, to: new)?.keys == ["toy.port", "added"])
        // Declared, the new field is named as the file spells it.
        let declared = ReloadRules<Toy>(section: "toy", outcome: .refuse, undeclaredNeedRestart: true,
                                        rules.keys + [.restart("toy.added_block", \.added)])
        #expect(declared.restartNeeded(from: old, to: new)?.keys == ["toy.port", "toy.added_block"])
    }

    /// STATE_DIRECTORY_RESTART_NEEDED.
    @Test("daemon section: a changed control_socket waits for restart, named alone; AGC expiry is live")
    func daemonSections() throws {
        let old = try ConfigLoader.parse(daemonYAML.replacingOccurrences(of: "@SOCKET@", with: "/tmp/reload-rules.sock") + """

            iec104:
              listen: 127.0.0.1:2404
              common_address: 7
              agc: {expiry_s: 30}
              groups:
                - {name: sldc, allow_from: [127.0.0.1], commands: [agc]}
            """, file: "reload.yaml")
        var new = old
        new.iec104?.agc?.expiry = .seconds(20)
        #expect(Reloader.reloadSections.compactMap { $0.restartNeeded(from: old, to: new) }.isEmpty)
        new.controlSocket = "/tmp/reload-rules-2.sock"
        let kept = Reloader.reloadSections.compactMap { section in
            section.restartNeeded(from: old, to: new).map { (section.outcome, $0) }
        }
        #expect(kept.count == 1)
        if case let .keep(code, _)? = kept.first?.0 { #expect(code == "STATE_DIRECTORY_RESTART_NEEDED") } else { Issue.record("\(kept)") }
        #expect(kept.first?.1.description == "control_socket changed; restart bessd to apply")
    }
}
