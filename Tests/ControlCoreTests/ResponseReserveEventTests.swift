import ControlCore
import Testing

/// The response reserve reached and left, as coded events the cycle queues (issue 47 §2):
/// `responseReserveReached` and `responseReserveCleared`, once each way per unit and direction.
@Suite("Response reserve events")
struct ResponseReserveEventTests {
    /// Steps `site` one cycle at `t` with the unit's SOC (nil: no BMS data) and returns the reserve events it queued.
    static func step(_ site: SiteController, at t: Double, soc: Double?) -> [ControlEvent] {
        let now = Fixture.instant(t)
        var inputs = Fixture.healthyInputs(at: now)
        if let soc { inputs.bms = Fixture.healthyBMS(at: now, soc: soc) } else { inputs.bms = BMSSnapshot() }
        site.step(frequency: Timestamped(Hertz(50), at: now), inputs: [inputs], now: now, wallClock: 1_800_000_000 + t)
        var found: [ControlEvent] = []
        site.events.drain { if $0.kind == .responseReserveReached || $0.kind == .responseReserveCleared { found.append($0) } }
        return found
    }

    /// An unknown SOC reports nothing.
    @Test("reserve reached once at the band's edge, not repeated by jitter, cleared past the resume margin")
    func onceEachWay() {
        let site = ResponseReserveTests.sustaining(900)
        var t = 0.0
        func run(_ socs: [Double?]) -> [ControlEvent] {
            socs.flatMap { soc in
                t += 0.1
                return Self.step(site, at: t, soc: soc)
            }
        }
        // The start, before the BMS answers: held at the reserve (dispatch stops) but not reported.
        #expect(run([nil, nil]).isEmpty)
        #expect(site.unitReserveReached[0].discharge, "an unknown SOC holds the reserve")
        #expect(run([40, 16]).isEmpty, "inside the band 15–85.2 %: nothing to report")
        let reached = run((0..<20).map { $0 % 2 == 0 ? 14.95 : 15.05 })
        #expect(reached.count == 1, "\(reached)")
        let event = reached.first
        #expect(event?.kind == .responseReserveReached && event?.reserve == .discharge && event?.unit == 0)
        #expect(event?.value == 14.95 && abs((event?.threshold ?? 0) - 15) < 1e-9 && event?.metric == .soc)
        #expect(run([15.4, nil, 15.3]).isEmpty, "within the resume margin, or unknown: still held, nothing new")
        let cleared = run([15.6, 15.6])
        #expect(cleared.map(\.kind) == [.responseReserveCleared] && cleared.first?.reserve == .discharge && cleared.first?.value == 15.6)
        // The charge side on its own.
        let charge = run([86, 86, 84.6])
        #expect(charge.map(\.kind) == [.responseReserveReached, .responseReserveCleared] && charge.allSatisfy { $0.reserve == .charge })
        #expect(abs((charge.first?.threshold ?? 0) - 85.2) < 1e-9)
    }

    @Test("no reserve kept (sustain_s 0): no event at any SOC")
    func noReserveNoEvent() {
        let site = ResponseReserveTests.sustaining(0)
        var events: [ControlEvent] = []
        for (k, soc) in [50, 2, 99, 50].enumerated() { events += Self.step(site, at: Double(k + 1) / 10, soc: Double(soc)) }
        #expect(events.isEmpty)
    }
}
