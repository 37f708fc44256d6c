import BessBase
import ControlCore
import IEEE2030_5
import Testing

/// The event rules as a table from IEEE 2030.5-2018 §12.1.3 and the CSIP-AUS procedures that test them
/// (GEN-10 primacy per control type, ALL-23 fallback to the default, cancelled and superseded events).
@Suite("IEEE 2030.5 event rules")
struct EventRuleTests {
    static func limit(_ watts: Int16) -> ActivePower { ActivePower(value: watts, multiplier: 0) }

    static func control(_ mRID: String, created: Int64, start: Int64, duration: UInt32, export: Int16? = nil, importW: Int16? = nil,
                        status: EventState = .scheduled, randomizeStart: Int16 = 0, randomizeDuration: Int16 = 0) -> DERControl {
        var base = DERControlBase()
        base.exportLimitW = export.map(limit)
        base.importLimitW = importW.map(limit)
        return DERControl(mRID: mRID, creationTime: created, status: EventStatus(current: status, dateTime: created),
                          start: start, duration: duration, randomizeStart: randomizeStart, randomizeDuration: randomizeDuration, base: base)
    }

    static func defaults(export: Int16) -> DefaultDERControl {
        var base = DERControlBase()
        base.exportLimitW = limit(export)
        return DefaultDERControl(mRID: "D0", base: base)
    }

    @Test("an event runs over [start, start + duration); before and after it the program's default")
    func windowAndDefault() {
        let programs = [ProgramSchedule(mRID: "P1", primacy: 1, controls: [Self.control("A", created: 0, start: 100, duration: 60, export: 1500)],
                                        defaultControl: Self.defaults(export: 5000))]
        #expect(EventRules.resolve(programs, now: 99).base.exportLimitW?.watts == 5000)
        #expect(EventRules.resolve(programs, now: 99).sources[.exportLimitW] == .defaultControl(program: "P1"))
        #expect(EventRules.resolve(programs, now: 100).base.exportLimitW?.watts == 1500)
        #expect(EventRules.resolve(programs, now: 100).sources[.exportLimitW] == .event(program: "P1", control: "A", until: 160))
        #expect(EventRules.resolve(programs, now: 159).base.exportLimitW?.watts == 1500)
        #expect(EventRules.resolve(programs, now: 160).base.exportLimitW?.watts == 5000)
        #expect(EventRules.state(of: "A", program: "P1", in: programs, now: 99) == .scheduled)
        #expect(EventRules.state(of: "A", program: "P1", in: programs, now: 130) == .active)
        #expect(EventRules.state(of: "A", program: "P1", in: programs, now: 160) == .completed)
    }

    @Test("lower primacy wins per control type; the other program's other type still starts (GEN-10)")
    func primacyPerType() {
        let high = ProgramSchedule(mRID: "HIGH", primacy: 1, controls: [Self.control("H", created: 10, start: 0, duration: 100, export: 1000)])
        let low = ProgramSchedule(mRID: "LOW", primacy: 2, controls: [Self.control("L", created: 20, start: 0, duration: 100, export: 3000, importW: 2000)],
                                  defaultControl: Self.defaults(export: 9000))
        for order in [[high, low], [low, high]] {
            let now = EventRules.resolve(order, now: 50)
            #expect(now.base.exportLimitW?.watts == 1000, "the higher-priority program's export limit, although older")
            #expect(now.base.importLimitW?.watts == 2000, "the lower-priority program's import limit still applies")
            #expect(now.sources[.importLimitW] == .event(program: "LOW", control: "L", until: 100))
        }
        // The higher-priority event ends first: the lower one's export limit resumes (only held back).
        let shorter = ProgramSchedule(mRID: "HIGH", primacy: 1, controls: [Self.control("H", created: 10, start: 0, duration: 40, export: 1000)])
        #expect(EventRules.resolve([shorter, low], now: 50).base.exportLimitW?.watts == 3000)
        #expect(EventRules.state(of: "L", program: "LOW", in: [shorter, low], now: 50) == .active)
    }

    @Test("within a primacy the newer creationTime supersedes the older for its whole window")
    func newerSupersedes() {
        let program = ProgramSchedule(mRID: "P", primacy: 1, controls: [
            Self.control("OLD", created: 10, start: 0, duration: 200, export: 4000),
            Self.control("NEW", created: 20, start: 50, duration: 50, export: 2000),
        ], defaultControl: Self.defaults(export: 7000))
        #expect(EventRules.resolve([program], now: 10).base.exportLimitW?.watts == 7000, "the superseded event never runs")
        #expect(EventRules.resolve([program], now: 60).base.exportLimitW?.watts == 2000)
        #expect(EventRules.resolve([program], now: 150).base.exportLimitW?.watts == 7000, "nor resumes after the newer one")
        #expect(EventRules.state(of: "OLD", program: "P", in: [program], now: 10) == .superseded)
        #expect(EventRules.state(of: "NEW", program: "P", in: [program], now: 10) == .scheduled)
        // Not overlapping: both run in turn.
        let apart = ProgramSchedule(mRID: "P", primacy: 1, controls: [
            Self.control("OLD", created: 10, start: 0, duration: 50, export: 4000),
            Self.control("NEW", created: 20, start: 50, duration: 50, export: 2000),
        ])
        #expect(EventRules.resolve([apart], now: 49).base.exportLimitW?.watts == 4000)
        #expect(EventRules.resolve([apart], now: 50).base.exportLimitW?.watts == 2000)
        // Another type only: the older keeps its import limit, the newer adds an export limit.
        let types = ProgramSchedule(mRID: "P", primacy: 1, controls: [
            Self.control("OLD", created: 10, start: 0, duration: 100, importW: 4000),
            Self.control("NEW", created: 20, start: 0, duration: 100, export: 2000),
        ])
        let both = EventRules.resolve([types], now: 10)
        #expect(both.base.importLimitW?.watts == 4000 && both.base.exportLimitW?.watts == 2000)
        #expect(EventRules.state(of: "OLD", program: "P", in: [types], now: 10) == .active)
    }

    @Test("cancelled and server-superseded events never run; their state says so")
    func cancelledAndSuperseded() {
        for status in [EventState.cancelled, .cancelledWithRandomization, .superseded] {
            let program = ProgramSchedule(mRID: "P", primacy: 1, controls: [Self.control("A", created: 0, start: 0, duration: 100, export: 1, status: status)],
                                          defaultControl: Self.defaults(export: 5000))
            #expect(EventRules.resolve([program], now: 50).base.exportLimitW?.watts == 5000, "\(status)")
            #expect(EventRules.state(of: "A", program: "P", in: [program], now: 50) == (status == .superseded ? .superseded : .cancelled))
        }
    }

    @Test("no event and no default: the type is unset; the highest-priority program's default wins")
    func defaults() {
        let p1 = ProgramSchedule(mRID: "P1", primacy: 5, controls: [], defaultControl: Self.defaults(export: 5000))
        let p2 = ProgramSchedule(mRID: "P2", primacy: 3, controls: [], defaultControl: Self.defaults(export: 3000))
        #expect(EventRules.resolve([p1, p2], now: 0).base.exportLimitW?.watts == 3000)
        #expect(EventRules.resolve([p1, p2], now: 0).sources[.exportLimitW] == .defaultControl(program: "P2"))
        #expect(EventRules.resolve([], now: 0) == ActiveControls())
    }

    @Test("randomization moves start and end within the bound, drawn the same each time")
    func randomization() {
        let draw = Randomization(seed: 42)
        let control = Self.control("R", created: 0, start: 1000, duration: 600, export: 1, randomizeStart: 120, randomizeDuration: -60)
        let window = EventRules.window(control, randomization: draw)
        #expect((1000...1120).contains(window.start))
        #expect((window.start + 540...window.start + 600).contains(window.end))
        let again = EventRules.window(control, randomization: draw)
        #expect(again.start == window.start && again.end == window.end)
        let plain = EventRules.window(control, randomization: .none)
        #expect(plain.start == 1000 && plain.end == 1600)
        var starts = Set<Int64>()
        for seed in 0..<64 { starts.insert(EventRules.window(control, randomization: Randomization(seed: UInt64(seed))).start) }
        #expect(starts.count > 20, "seeds spread the start over the bound: \(starts.sorted())")
    }

    @Test("a start of Int64.max or Int64.min is refused by the reader and cannot trap the rules")
    func startAtTheEdges() throws {
        func document(start: String) -> [UInt8] {
            Array(("<DERControl xmlns=\"urn:ieee:std:2030.5:ns\"><mRID>A1</mRID><creationTime>1</creationTime>"
                + "<EventStatus><currentStatus>0</currentStatus><dateTime>1</dateTime><potentiallySuperseded>false</potentiallySuperseded></EventStatus>"
                + "<interval><duration>4294967295</duration><start>\(start)</start></interval><randomizeStart>3600</randomizeStart>"
                + "<DERControlBase><opModConnect>true</opModConnect></DERControlBase></DERControl>").utf8)
        }
        for start in ["9223372036854775807", "-9223372036854775808", "1099511627777", "-1"] {
            #expect { try DERControl.read(document(start: start)) } throws: { ($0 as? SEP2Error)?.code == .valueInvalid }
        }
        #expect(try DERControl.read(document(start: "\(DERControl.startRange.upperBound)")).resource.start == 1 << 40, "the range's end is read")
        // Controls made in code are not bounded: the rules saturate instead of trapping.
        let draw = Randomization(seed: 7)
        let programs = [ProgramSchedule(mRID: "P1", primacy: 1, controls: [
            Self.control("A", created: 1, start: .max, duration: .max, export: 100, randomizeStart: 3600, randomizeDuration: 3600),
            Self.control("B", created: 2, start: .max - 10, duration: 60, importW: 200),
            Self.control("C", created: 3, start: .min, duration: 60, export: 300, randomizeStart: -3600),
        ], defaultControl: Self.defaults(export: 5000))]
        for now in [Int64.min + 30, 0, .max - 5, .max] {
            let active = EventRules.resolve(programs, now: now, randomization: draw)
            #expect(active.base.exportLimitW?.watts == (now == .min + 30 ? 300 : 5000), "at \(now): C from Int64.min for 60 s, A's window empty")
            #expect(active.sources[.importLimitW] == (now == .max - 5 ? .event(program: "P1", control: "B", until: .max) : nil), "at \(now)")
        }
        #expect(EventRules.state(of: "A", program: "P1", in: programs, now: .max, randomization: draw) == .completed)
    }

    /// `control` with `rampTms`, and `target` (opModTargetW) when given.
    static func ramped(_ control: DERControl, rampTms: UInt16?, target: Int16? = nil) -> DERControl {
        var out = control
        out.base.rampTimeHundredthsSecond = rampTms
        out.base.targetW = target.map(limit)
        return out
    }

    /// 500 → rampSeconds 5.
    @Test("the active control's rampTms reaches the site; the limit's source decides, smallest of several")
    func rampTmsCarried() {
        let limit = Self.ramped(Self.control("A", created: 1, start: 100, duration: 60, export: 1500), rampTms: 500)
        var fallback = Self.defaults(export: 5000)
        fallback.base.rampTimeHundredthsSecond = 3000
        let program = ProgramSchedule(mRID: "P1", primacy: 1, controls: [limit], defaultControl: fallback)
        #expect(EventRules.resolve([program], now: 100).base.rampTimeHundredthsSecond == 500)
        #expect(EventRules.resolve([program], now: 100).utilityLimits(siteRatingW: 300_000).rampSeconds == 5)
        #expect(EventRules.resolve([program], now: 160).utilityLimits(siteRatingW: 300_000).rampSeconds == 30, "the default's own")
        // A request of another program with its own ramp: the limit's ramp still decides.
        let request = Self.ramped(Self.control("T", created: 2, start: 0, duration: 1000), rampTms: 100, target: 50)
        let other = ProgramSchedule(mRID: "P2", primacy: 2, controls: [request])
        #expect(EventRules.resolve([program, other], now: 100).base.rampTimeHundredthsSecond == 500)
        // Without any limit in force the request's ramp applies; two limit sources: the smaller.
        #expect(EventRules.resolve([other], now: 100).base.rampTimeHundredthsSecond == 100)
        let importing = Self.ramped(Self.control("I", created: 3, start: 0, duration: 1000, importW: 900), rampTms: 200)
        let third = ProgramSchedule(mRID: "P3", primacy: 3, controls: [importing])
        #expect(EventRules.resolve([program, third], now: 100).base.rampTimeHundredthsSecond == 200)
        // A limit source without rampTms, no other: none (the site's limit ramp).
        let plain = ProgramSchedule(mRID: "P4", primacy: 1, controls: [Self.control("N", created: 4, start: 0, duration: 1000, export: 10)])
        #expect(EventRules.resolve([plain, other], now: 100).base.rampTimeHundredthsSecond == nil)
    }
}
