import ControlCore
import ControlProtocol
import Foundation
import Synchronization
import Yams

/// A scenario's grid frequency from a PMU (`pmu` steps: the plant serves C37.118.2 over TCP and bessd
/// follows it) and the frequency events bessd assessed (`events:`, read before bessd stops).
extension ScenarioRun {
    /// Starts the plant's PMU on a free loopback port (TCP, and UDP on the same number when the
    /// scenario's transport is `udp`), measuring the start frequency, valid and synchronised, 50 frames/s.
    func startPMU() throws(ScenarioError) {
        do {
            let server = try PMUSender(stream: PMUStream(idcode: ScenarioConfig.pmuIDCode, pmus: 1, float: false, dataRate: 50),
                                       udp: ScenarioConfig.pmuTransport(scenario) == "udp")
            server.set(hz: scenario.startHz, status: .valid)
            server.start()
            pmu = server
        } catch {
            throw ScenarioError(.plantFailed, "the plant's PMU: \(error)")
        }
    }

    /// A `pmu` step: what the PMU measures (pinned from now on), its STAT, and bad frames between good ones.
    func setPMU(hz: Double?, status: PMUSender.Status?, badFrames: PMUSender.BadFrames??) -> String {
        guard let pmu else { return "failed: no PMU" }
        if let hz { pmuPinnedHz = hz }
        pmu.set(hz: hz, status: status, badFrames: badFrames)
        return "(plant PMU, \(pmu.frames) frames sent)"
    }

    /// The PMU's side of a sample: what it sends and its STAT.
    func samplePMU(_ s: inout Sample) {
        guard let pmu else { return }
        let (hz, status, stopped, bad) = pmu.state.withLock { ($0.hz, $0.status, $0.stopped, $0.badFrames) }
        s.pmuHz = stopped ? .nan : hz
        s.pmuBadHz = stopped || bad == nil ? .nan : PMUSender.badFrameHz
        s.pmuStatus = stopped ? "stopped" : PMUSender.Status.allCases.first { $0 != .stopped && $0.word == status }?.rawValue ?? "-"
    }

    /// Reads `bessctl events` while bessd still runs.
    func readEvents() {
        assessedEvents = try? ControlClient.answer(ControlRequest(.events), socket: controlSocket, timeout: .seconds(3))
            .reply(as: EventsReply.self)
        say("  events: " + (assessedEvents.map { "\($0.total) assessed" } ?? "bessctl events did not answer"))
        for event in assessedEvents?.events ?? [] { say("    " + ScenarioReport.describe(event).head + "; " + ScenarioReport.describe(event).powers) }
    }
}

/// A frequency for the CSV: four decimals, `n/a` when there is none.
func hertz(_ v: Double) -> String { v.isFinite ? String(format: "%.4f", v) : "n/a" }
