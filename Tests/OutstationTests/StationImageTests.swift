import BessBase
import BessSystem
import Config
import ControlCore
import Cycle
import IEC104
@testable import Outstation
import Testing

/// The point list from published state: values, deadbands, counters and group matching, without a socket.
@Suite("IEC 104 station image")
struct StationImageTests {
    static let description = StationDescription(ratingsW: [100_000, 100_000], capacitiesWh: [250_000, 250_000], hasMeter: false,
                                                frequencyResponseEnabled: true)

    static func units(power: Double, soc: Double = 60) -> [UnitStatus] {
        (0..<2).map { _ in
            var unit = UnitStatus()
            unit.state = .running
            unit.power = power
            unit.soc = soc
            unit.inverterOnline = true
            unit.bmsOnline = true
            return unit
        }
    }

    func value(_ image: StationImage, _ address: UInt32) -> PointValue? { image.points.first { $0.address == address }?.value }

    @Test("net MW is the units' sum without a meter; changes within the deadband are quiet, beyond once")
    func deadband() {
        var settings = OutstationSettings()
        settings.deadbands[.netMW] = 0.005
        var image = StationImage(description: Self.description, settings: settings)
        let start = MonotonicInstant(nanoseconds: 0)
        image.fill(units: Self.units(power: 10_000), site: SiteStatus(), frequency: 50, now: start)
        #expect(image.changes().isEmpty, "the first fill is the interrogation's, not an event")
        #expect(value(image, 1001) == .float(0.02, .good))
        image.fill(units: Self.units(power: 12_000), site: SiteStatus(), frequency: 50, now: start + .seconds(1))
        #expect(!image.changes().contains { $0.address == 1001 }, "4 kW under the 5 kW deadband")
        image.fill(units: Self.units(power: 13_000), site: SiteStatus(), frequency: 50, now: start + .seconds(2))
        #expect(image.changes().filter { $0.address == 1001 }.map(\.value) == [.float(0.026, .good)], "6 kW from the last reported")
        image.fill(units: Self.units(power: 13_000, soc: .nan), site: SiteStatus(), frequency: 50, now: start + .seconds(3))
        #expect(image.changes().contains { $0.address == 1005 && $0.value == .float(0, .invalid) }, "a quality change is reported")
    }

    @Test("frequency-event points start at 0; each event reports count, IV score and shortfall, even unchanged")
    func frequencyEventPoints() {
        var image = StationImage(description: Self.description, settings: OutstationSettings())
        image.fill(frequencyEvents: FrequencyEventTally())
        #expect(image.changes().isEmpty, "the first fill is the interrogation's")
        #expect(value(image, 1015) == .float(0, .good) && value(image, 1016) == .float(0, .invalid) && value(image, 1017) == .float(0, .invalid))
        var tally = FrequencyEventTally()
        tally.count = 1
        tally.last = FrequencyEventAssessment(sequence: 1, shortfallW: 70_000, score: 0.75)
        image.fill(frequencyEvents: tally)
        let first = image.changes()
        #expect(first.map(\.address) == [1015, 1016, 1017])
        #expect(first.map(\.value) == [.float(1, .good), .float(0.75, .good), .float(0.07, .good)])
        image.fill(frequencyEvents: tally)
        #expect(image.changes().isEmpty, "the same tally again: nothing new")
        tally.count = 2
        tally.last?.sequence = 2
        image.fill(frequencyEvents: tally)
        #expect(image.changes().map(\.address) == [1015, 1016, 1017], "a second event with the same score and shortfall")
    }

    @Test("export and import energy integrated from the published net power, in kWh")
    func counters() {
        var image = StationImage(description: Self.description, settings: OutstationSettings())
        let start = MonotonicInstant(nanoseconds: 0)
        image.fill(units: Self.units(power: 50_000), site: SiteStatus(), frequency: 50, now: start)
        image.fill(units: Self.units(power: -25_000), site: SiteStatus(), frequency: 50, now: start + .seconds(360))
        image.fill(units: Self.units(power: 0), site: SiteStatus(), frequency: 50, now: start + .seconds(720))
        // 100 kW for 0.1 h, then 50 kW charging for 0.1 h.
        let counters = image.counters()
        #expect(counters.map(\.address) == [4001, 4002])
        #expect(counters.map(\.element) == [.integratedTotals(BinaryCounterReading(value: 10, sequence: 0)),
                                            .integratedTotals(BinaryCounterReading(value: 5, sequence: 0))])
    }

    @Test("a client belongs to the first group whose allow_from holds it; an empty list is loopback")
    func groups() throws {
        let groups = [IEC104Group(name: "sldc", allowFrom: [try #require(IPv4Network("10.20.0.0/24"))]), IEC104Group(name: "local")]
        #expect(OutstationServer.group(of: try #require(IPv4Network.parse("10.20.0.7")), in: groups) == 0)
        #expect(OutstationServer.group(of: try #require(IPv4Network.parse("127.0.0.1")), in: groups) == 1)
        #expect(OutstationServer.group(of: try #require(IPv4Network.parse("10.20.1.7")), in: groups) == nil)
    }

    /// 0.3 MW is 300000 W, not 300000.012.
    @Test("a Float MW set-point at a band edge counts as the edge; one Float step beyond does not")
    func setpointSnapsToTheEdge() {
        for (lower, upper) in [(-150_000.0, 300_000.0), (-100_000, 200_000), (-1_234_567, 7_654_321)] {
            let edges = [lower, upper]
            #expect(OutstationCommands.watts(megawatts: Double(Float(upper / 1e6)), edges: edges) == upper)
            #expect(OutstationCommands.watts(megawatts: Double(Float(lower / 1e6)), edges: edges) == lower)
            #expect(OutstationCommands.watts(megawatts: Double(Float(upper / 1e6).nextUp), edges: edges) > upper)
            #expect(OutstationCommands.watts(megawatts: Double(Float(lower / 1e6).nextDown), edges: edges) < lower)
            #expect(AGCLimits(upper: upper, lower: lower, expiry: .seconds(12))
                .contains(OutstationCommands.watts(megawatts: Double(Float(upper / 1e6)), edges: edges)))
        }
        #expect(OutstationCommands.watts(megawatts: 0.25, edges: [.nan, .nan]) == 250_000, "no band: the plain product")
    }
}
