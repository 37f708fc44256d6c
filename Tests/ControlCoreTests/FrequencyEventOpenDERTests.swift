import ControlCore
import Foundation
import Testing

/// The assessment's required power against EPRI OpenDER's frequency-droop (PyPI `opender`, run by
/// hil/peers/opender_peer.py) on the same frequency profile with the same settings: within 0.5 % of
/// rating at the response time and on average over each event (issue 47 §4).
///
/// OpenDER 2.2 models 60 Hz only and measures the droop from the deadband edge, so the comparison runs
/// at nominal 60 Hz with `reference: edge`; its lag is Tustin-discretised (bessd's is exact), which the
/// 0.5 % bound covers with room (docs/frequency-events.md).
@Suite("Frequency events against OpenDER", .serialized)
struct FrequencyEventOpenDERTests {
    /// One step of OpenDER's run.
    struct Step {
        var t: Double
        var f: Double
        var p: Double
    }

    static let rating = 100_000.0
    static let period = 0.1
    /// IEEE 1547-2018's defaults (OpenDER's too): ±0.036 Hz, 5 % both ways, OLRT 5 s.
    static let droop = DroopSettings(
        enabled: true, nominal: Hertz(60), deadbandLow: Hertz(59.964), deadbandHigh: Hertz(60.036), droopUnderPercent: 5,
        droopOverPercent: 5, reference: .edge, responseTime: .seconds(5))

    /// A ramp down to 59.5 Hz and back, then a step up to 60.4 Hz and back.
    static let profile = "0:60,10:60,12:59.5,40:59.5,42:60,60:60,60.05:60.4,80:60.4,80.05:60,100:60"

    /// Runs the peer; its steps.
    static func openDER(preW: Double) throws -> [Step] {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [
            "python3", root.appendingPathComponent("hil/peers/opender_peer.py").path, "--profile", profile,
            "--period", "\(period)", "--rating-w", "\(rating)", "--db-under", "0.036", "--db-over", "0.036",
            "--k-under", "0.05", "--k-over", "0.05", "--olrt", "5", "--p-dem-w", "\(preW)",
        ]
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        try #require(process.terminationStatus == 0, "opender_peer.py failed (is hil/requirements.txt installed?)")
        return String(decoding: data, as: UTF8.self).split(separator: "\n").compactMap { line in
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                  let t = (object["t"] as? NSNumber)?.doubleValue, let f = (object["f"] as? NSNumber)?.doubleValue,
                  let p = (object["p_w"] as? NSNumber)?.doubleValue
            else { return nil }
            return Step(t: t, f: f, p: p)
        }
    }

    /// bessd on the same frequencies, one 100 kW unit dispatched at `preW` that delivers the previous
    /// cycle's setpoint; the assessments it made.
    static func bessd(_ steps: [Step], preW: Double) -> [FrequencyEventAssessment] {
        var control = ControlSettings(droop: droop, limitRampPercentPerSecond: 1000, scheduleRampPercentPerSecond: 1000)
        control.frequencyEvents = FrequencyEventSettings(entryDelay: .seconds(1), exitDelay: .seconds(5))
        let rules = InterlockRule.defaultTable().filter { $0.code != .gridRocof }
        let site = SiteController(control: control, units: [UnitSettings(rating: Watts(rating), capacity: WattHours(1e6), rules: rules)],
                                  startedAt: .zero)
        var delivered = preW
        var found: [FrequencyEventAssessment] = []
        for step in steps {
            let now = Fixture.instant(step.t)
            var inputs = Fixture.healthyInputs(at: now, power: delivered)
            inputs.dispatch = PowerCommand(power: Watts(preW), expiresAt: now + .seconds(10))
            site.step(frequency: Timestamped(Hertz(step.f), at: now), inputs: [inputs], now: now, wallClock: 1_800_000_000 + step.t)
            delivered = site.decision(unit: 0).setpoint.value
            site.drainFrequencyAssessments { found.append($0) }
        }
        return found
    }

    /// OpenDER's power at the assessment's response time and its mean over the event's steps outside
    /// the deadband, for the excursion that starts at `start` (Unix seconds as bessd stamped it).
    static func reference(_ steps: [Step], from start: Double, to end: Double) -> (atResponse: Double, mean: Double) {
        let inside = steps.filter { $0.t >= start - 1e-9 && $0.t < end - 1e-9 }
        let atResponse = inside.first { $0.t >= start + 5 - 1e-9 }?.p ?? .nan
        return (atResponse, inside.map(\.p).reduce(0, +) / Double(max(1, inside.count)))
    }

    @Test("required power within 0.5 % of rating of OpenDER's, at the response time and on average", arguments: [0.0, 30_000.0])
    func requiredMatchesOpenDER(preW: Double) throws {
        let steps = try Self.openDER(preW: preW)
        try #require(steps.count == 1000, "the peer printed \(steps.count) steps")
        let found = Self.bessd(steps, preW: preW)
        try #require(found.count == 2, "an under- and an over-frequency event")
        let bound = 0.005 * Self.rating
        for (assessment, direction) in zip(found, [FrequencyEventDirection.under, .over]) {
            #expect(assessment.direction == direction)
            // bessd's lag decays towards the end of the last event without end (a few W 18 s on);
            // OpenDER's snaps back once within 0.1 % of rating.
            #expect(abs(assessment.preEventW - preW) < 0.001 * Self.rating)
            let start = assessment.start - 1_800_000_000
            let end = assessment.end - 1_800_000_000
            let opender = Self.reference(steps, from: start, to: end)
            #expect(abs(assessment.requiredW - opender.atResponse) < bound,
                    "\(direction): required \(assessment.requiredW) W, OpenDER \(opender.atResponse) W at \(start + 5) s")
            #expect(abs(assessment.requiredMeanW - opender.mean) < bound,
                    "\(direction): mean required \(assessment.requiredMeanW) W, OpenDER \(opender.mean) W")
            // The comparison means something: OpenDER moved well away from the pre-event power.
            #expect(abs(opender.atResponse - preW) > 10_000)
        }
    }
}
